"""Hand-computed optima: the case type, the registry and the small builders the tables in
``hand_basic.py`` and ``hand_advanced.py`` are written with (``test_hand_optima.py`` solves
them).

Every case is a tiny instance whose optimum was worked out by hand from docs/cost-model.md,
the arithmetic in a comment beside it, and the facts of its optimal plan that are unique
(region, hours, GPU count, contract, segments, reserved pools, cost components). The
builders keep the configuration space small: a GPU type with round numbers (``G``: 100
TFLOP/s, 1 kW, 10 per node, no idle draw, no failures), phases whose work is given in
GPU-hours on ``G`` (so ``n = gpu_hours / gpus`` hours on ``G``), GPU counts, spare nodes,
contracts and storage tiers pinned.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from builders import FREE_STORAGE, ROUND_GPU, instance_from

from planner.instance.model import Instance
from planner.model.plan import PhasePlan, Plan

#: The GPU of every case unless named otherwise (test_milp's ROUND_GPU): 100 TFLOP/s bf16,
#: 1 kW board power, no idle draw, ten per node, no host overhead, no failures.
G: dict[str, Any] = dict(ROUND_GPU)
#: A faster, dearer GPU: twice G's peak (the same GPU-hours take half the hours), 2 kW.
F: dict[str, Any] = {**G, "peak_tflops": {"bf16": 200.0}, "board_power_w": 2000}
#: One storage tier that costs nothing and reads and writes 1 GB/s per node.
FREE: dict[str, Any] = FREE_STORAGE
MONDAY = "2023-06-05T00:00:00Z"

Doc = dict[str, Any]


def od(price: float | Mapping[str, Any] = 1.0, **extra: Any) -> dict[str, Any]:
    """An on-demand offer."""
    return {"on_demand": {"usd_per_gpu_hour": price, **extra}}


def region(
    electricity: float | Mapping[str, Any] = 50.0,
    *,
    tz: str = "UTC",
    cap: int | list[int] | Mapping[str, Any] = 10,
    offers: Mapping[str, Any] | None = None,
    offers_by: Mapping[str, Any] | None = None,
    pue: float | None = 1.0,
    storage: Mapping[str, Any] | None = None,
    gpu: str = "G",
    **extra: Any,
) -> Doc:
    """A region: electricity a constant price (USD/MWh) or a series; capacity (a number or a
    series of ``gpu``, or a mapping by GPU type); ``offers`` of ``gpu`` by contract (default
    on demand at $1/GPU-h) or ``offers_by`` GPU type; free storage; PUE 1."""
    elec = {"constant": electricity} if isinstance(electricity, int | float) else electricity
    d: Doc = {
        "timezone": tz,
        "electricity": elec,
        "capacity": dict(cap) if isinstance(cap, Mapping) else {gpu: cap},
        "offers": dict(offers_by) if offers_by is not None else {gpu: dict(offers or od())},
        "storage": dict(storage or FREE),
    }
    if pue is not None:
        d["pue"] = pue
    d.update(extra)
    return copy.deepcopy(d)


def job(
    name: str = "job",
    gpu_hours: float = 40.0,
    *,
    gpus: tuple[float, ...] = (10,),
    spares: tuple[int, ...] = (0,),
    gpu: str = "G",
    preemptible: bool = False,
    options: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Doc:
    """A phase without a model whose work is ``gpu_hours`` measured on ``gpu``: on ``gpu``
    it runs ``gpu_hours / gpus`` hours, at full board power (power_load 1). ``gpus`` are the
    counts it may use (fractions below 1 among them), ``spares`` the extra spare nodes."""
    opts: dict[str, Any] = {
        "gpu_counts": [int(g) for g in gpus if g >= 1],
        "fractions": [g for g in gpus if g < 1],
        "extra_spare_nodes": list(spares),
    }
    opts.update(options or {})
    d: Doc = {
        "name": name,
        "kind": "data_preparation",
        "work": {"gpu_hours": gpu_hours, "gpu": gpu},
        "preemptible": preemptible,
        "power_load": 1.0,
        "options": opts,
    }
    d.update(copy.deepcopy(extra))
    return d


def instance(
    regions: Mapping[str, Doc],
    phases: list[Doc],
    *,
    hours: int = 24,
    start: str = MONDAY,
    gpu_types: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Doc:
    """An instance document: horizon, GPU types (default ``G`` alone), regions, phases."""
    d: Doc = {
        "name": "hand",
        "horizon": {"start": start, "hours": hours},
        "gpu_types": copy.deepcopy(dict(gpu_types or {"G": G})),
        "regions": copy.deepcopy(dict(regions)),
        "phases": copy.deepcopy(phases),
    }
    d.update(copy.deepcopy(extra))
    return d


def tou(default: float, *bands: tuple[int, int, float], **extra: Any) -> dict[str, Any]:
    """A time-of-use series: ``default`` and bands (start hour, end hour, price) in local
    time."""
    return {
        "tou": {
            "default": default,
            "bands": [{"start_hour": s, "end_hour": e, "price": p} for s, e, p in bands],
            **extra,
        }
    }


def values(*v: float) -> dict[str, Any]:
    """An inline hourly series."""
    return {"values": list(v)}


# ----------------------------------------------------------------------------- cases

#: A case's families: the basic cases, and those for segments, reserved terms, hourly
#: prices and re-plans (issue 22 counts the two sets apart).
ADVANCED = ("segments", "terms", "hourly", "replan")


@dataclass(frozen=True)
class Case:
    """One hand-computed optimum.

    ``build`` returns the instance (a document, or an Instance for re-plans derived from an
    earlier plan); ``optimum`` is the hand figure (the objective, USD); ``facts`` the optimal
    plan's unique facts (:func:`check_facts`); ``xfail`` maps a solver (or ``*`` for all) to
    the defect that makes it miss the figure."""

    id: str
    family: str
    build: Callable[[], Doc | Instance]
    optimum: float
    facts: Mapping[str, Any] = field(default_factory=dict)
    tol: float = 1e-6
    xfail: Mapping[str, str] = field(default_factory=dict)

    @property
    def basic(self) -> bool:
        return self.family not in ADVANCED

    def instance(self) -> Instance:
        """The case's instance, built once."""
        if self.id not in _BUILT:
            built = self.build()
            _BUILT[self.id] = (
                built if isinstance(built, Instance) else instance_from(built, self.id)
            )
        return _BUILT[self.id]


_BUILT: dict[str, Instance] = {}


CASES: list[Case] = []


def case(
    id: str,
    family: str,
    optimum: float,
    facts: Mapping[str, Any] | None = None,
    *,
    tol: float = 1e-6,
    xfail: Mapping[str, str] | None = None,
) -> Callable[[Callable[[], Doc | Instance]], Callable[[], Doc | Instance]]:
    """Register the decorated builder as a case."""

    def register(build: Callable[[], Doc | Instance]) -> Callable[[], Doc | Instance]:
        assert all(c.id != id for c in CASES), f"duplicate case id {id}"
        CASES.append(Case(id, family, build, optimum, facts or {}, tol, xfail or {}))
        return build

    return register


def exact_solvers(inst: Instance) -> tuple[str, ...]:
    """The solvers whose model is exact for ``inst``: the hourly MILP always (and ``auto``);
    CP-SAT and the start-time MILP when every phase is non-preemptive, on one configuration,
    no phase runs on a configuration already and no offer has reserved terms (they restrict
    such instances and say so in their notes)."""
    active = inst.active_phases
    restricted = any(
        p.preemptible or p.options.max_segments > 1 or p.running for p in active
    ) or _has_terms(inst)
    return ("auto", "milp") if restricted else ("auto", "milp", "starttime", "cpsat")


def _has_terms(inst: Instance) -> bool:
    return any(
        o.reserved is not None and o.reserved.terms
        for r in inst.spec.regions.values()
        for o in r.offers.values()
    )


# ----------------------------------------------------------------------------- facts

_SEGMENT_KEYS = ("region", "gpu", "gpus", "contract", "hours")


def check_facts(plan: Plan, facts: Mapping[str, Any]) -> None:
    """Assert the plan's facts: per phase name a mapping of entry fields (``region``,
    ``hours`` as a tuple, ``gpus``, ``contract``, ``spare_gpus``, ``gpu``, ``tier``,
    ``term``, ``checkpoint``), ``segments`` as (region, gpu, gpus, contract, hours) tuples
    (``()`` for a phase on one configuration), ``migration`` the total of each segment's
    migration (None: none), ``costs`` some of the phase's cost components; at the plan level
    ``reserved`` and ``reserved_terms`` (the pools), ``costs`` (components) and
    ``emissions_t``."""
    for key, want in facts.items():
        if key == "reserved":
            assert plan.reserved == tuple(want), plan.reserved
        elif key == "reserved_terms":
            assert plan.reserved_terms == tuple(want), plan.reserved_terms
        elif key == "costs":
            for k, v in want.items():
                assert plan.costs[k] == pytest.approx(v, abs=1e-6), (k, plan.costs)
        elif key == "emissions_t":
            assert plan.emissions_t == pytest.approx(want, abs=1e-9)
        else:
            _check_phase(plan.phase(key), want)


def _check_phase(p: PhasePlan, want: Mapping[str, Any]) -> None:
    for k, v in want.items():
        if k == "segments":
            got = tuple(tuple(getattr(s, f) for f in _SEGMENT_KEYS) for s in p.segments)
            assert got == tuple(tuple(s) for s in v), (p.name, got)
        elif k == "migration":
            got_m = [s.migration.get("total") for s in p.segments]
            assert len(got_m) == len(v), (p.name, got_m)
            for g, x in zip(got_m, v, strict=True):
                assert (g is None) if x is None else g == pytest.approx(x, abs=1e-6), got_m
        elif k == "costs":
            for key, x in v.items():
                assert p.costs[key] == pytest.approx(x, abs=1e-6), (p.name, key, p.costs)
        elif k == "hours":
            assert p.hours == tuple(v), (p.name, p.hours)
        else:
            assert getattr(p, k) == v, (p.name, k, getattr(p, k))
