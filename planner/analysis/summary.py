"""What ``trainplan check`` reports: a short, machine-readable summary of a valid instance.

:func:`summarize` answers, before any model is built, the questions a person asks of an
instance file: what is the horizon, how big is each phase, how many ways are there to run it,
how fast could it possibly go, what do electricity prices look like in each region, and which
phases can never fit. It is the consistency check of the planner (STYLE.md, convention 3):

- per phase, the configurations left after pruning
  (:func:`planner.model.configs.build_config_space`) and the reason when there are none (memory
  never fits, the fastest configuration is longer than the window, no capacity);
- per phase, a precedence bound: with ``fastest(p)`` the fewest hours of any configuration of
  ``p``, the earliest finish is ``EF(p) = max(release(p), max_q EF(q)) + fastest(p)`` over the
  predecessors ``q`` that are not ``done`` (the critical-path forward pass, Kelley & Walker
  1959). A phase with ``EF(p) > deadline(p)`` can never fit, whatever the solver does, even
  though each phase alone has configurations;
- notes about offers that can never be used (a GPU offered in a region without capacity there,
  or capacity without an offer).

The summary is a plain ``dict`` of JSON types, the same one ``trainplan check --json`` prints.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from planner.instance.model import Instance
from planner.instance.offers import power_note, site_of
from planner.instance.schema import Phase
from planner.model.configs import ConfigSpace, config_space
from planner.model.consistency import fastest_hours, late_reasons, numeric_findings
from planner.model.windows import earliest_finish
from planner.model.workload import work_flops

#: Version tag of the summary layout.
SUMMARY_FORMAT = "trainplan-check/1"


def _utc(t: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: ``2023-06-05T00:00:00Z``."""
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _stats(series: np.ndarray | None) -> dict[str, float] | None:
    if series is None:
        return None
    return {
        "min": float(np.min(series)),
        "mean": float(np.mean(series)),
        "max": float(np.max(series)),
    }


def _work(inst: Instance, p: Phase) -> dict[str, Any]:
    """The phase's work as given (tokens, FLOPs or GPU-hours on a reference GPU) and in FLOPs."""
    w = p.work
    out: dict[str, Any] = {"flops": work_flops(inst, p)}
    if w.tokens is not None:
        out.update(tokens=w.tokens, passes=w.passes)
    if w.gpu_hours is not None:
        out.update(gpu_hours=w.gpu_hours, gpu=w.gpu, precision=w.precision)
    return out


def _offer_notes(inst: Instance) -> list[str]:
    notes: list[str] = []
    for rname, r in inst.spec.regions.items():
        for g in r.offers:
            if g not in r.capacity:
                notes.append(
                    f"regions.{rname}.offers.{g}: offered but no capacity given; never used"
                )
        for g, _cap in r.capacity.items():
            if g not in r.offers:
                notes.append(f"regions.{rname}.capacity.{g}: capacity but no offer; never used")
            elif float(np.max(inst.capacity[(rname, g)])) == 0.0:
                notes.append(f"regions.{rname}.capacity.{g}: capacity is 0 in every hour")
    return notes


#: The GPU type figures a summary states as they are.
_GPU_FIGURES = [
    "family",
    "memory_gb",
    "memory_unit",
    "board_power_w",
    "idle_power_w",
    "gpus_per_node",
]


def summarize(inst: Instance, space: ConfigSpace | None = None) -> dict[str, Any]:
    """The check summary of a valid instance (``space`` is built when not given).

    ``feasible`` is True when every active phase has a configuration and meets its deadline
    after its predecessors' fastest configurations (:mod:`planner.model.consistency`)."""
    space = space if space is not None else config_space(inst)
    infeasible = {i.phase: i.reason for i in space.infeasible}
    fastest = fastest_hours(space)
    ef = {name: f.finish for name, f in earliest_finish(inst, fastest).items()}
    for name, why in late_reasons(inst, fastest).items():
        infeasible.setdefault(name, why)

    phases: list[dict[str, Any]] = []
    for p in inst.phases:
        active = not p.done
        rel, dl = inst.release[p.name], inst.deadline[p.name]
        phases.append(
            {
                "name": p.name,
                "kind": p.kind,
                "done": p.done,
                "model": p.model,
                "work": _work(inst, p),
                "release_hour": rel,
                "deadline_hour": dl,
                "release": _utc(inst.time_of(rel)),
                "deadline": _utc(inst.time_of(dl)),
                "window_hours": dl - rel,
                "predecessors": list(p.predecessors),
                "preemptible": p.preemptible,
                "configurations": len(space.by_phase.get(p.name, ())) if active else None,
                "dropped_dominated": space.dropped.get(p.name, 0) if active else None,
                "fastest_hours": fastest.get(p.name) if active else None,
                "earliest_finish_hour": ef.get(p.name) if active else None,
                "infeasible": infeasible.get(p.name),
            }
        )

    gpus = [
        {
            "name": gname,
            **{k: getattr(g, k) for k in _GPU_FIGURES},
            "peak_tflops": {k: v for k, v in g.peak_tflops.items() if v},
            "failures_per_gpu_hour": inst.failures_per_gpu_hour[gname],
            "regions": sorted(r for r, reg in inst.spec.regions.items() if gname in reg.offers),
        }
        for gname, g in inst.spec.gpu_types.items()
    ]

    regions: list[dict[str, Any]] = []
    for rname, r in inst.spec.regions.items():
        regions.append(
            {
                "name": rname,
                "timezone": r.timezone,
                "pue": r.effective_pue,
                "cooling": r.cooling,
                "zones": r.zones,
                "price_usd_per_mwh": _stats(inst.price[rname]),
                "carbon_g_per_kwh": _stats(inst.carbon[rname]),
                "gpus": {
                    g: {
                        "max_capacity": int(np.max(inst.capacity[(rname, g)]))
                        if (rname, g) in inst.capacity
                        else 0,
                        "contracts": [
                            k
                            for k in ("on_demand", "spot", "reserved")
                            if getattr(r.offers[g], k) is not None
                        ]
                        if g in r.offers
                        else [],
                    }
                    for g in sorted(set(r.capacity) | set(r.offers))
                },
                "storage_tiers": sorted(r.storage),
                "site": site_of(r),
                "power": power_note(r),
            }
        )

    active_names = [p.name for p in inst.active_phases]
    return {
        "format": SUMMARY_FORMAT,
        "name": inst.name,
        "description": inst.spec.description,
        "source": inst.source,
        "horizon": {
            "start": _utc(inst.start),
            "hours": inst.hours,
            "end": _utc(inst.time_of(inst.hours)),
        },
        "phases": phases,
        "gpu_types": gpus,
        "regions": regions,
        "configurations": space.size,
        "infeasible": [
            {"phase": n, "reason": infeasible[n]} for n in active_names if n in infeasible
        ],
        "warnings": [
            *inst.warnings,
            *kind_notes(inst),
            *_offer_notes(inst),
            *(f.message for f in numeric_findings(inst)),
        ],
        "feasible": not any(n in infeasible for n in active_names),
    }


#: Phase kinds that usually mean forward passes only (a label: the physics follows ``work``).
FORWARD_KINDS = ("evaluation", "eval", "validation", "inference", "scoring", "benchmark")


def kind_notes(inst: Instance) -> list[str]:
    """Phases labelled as forward-only work whose tokens are priced as training: ``kind`` is
    a label, ``work.passes`` decides (6ND FLOPs for train, 2ND for forward)."""
    return [
        f"phases.{p.name}: kind {p.kind!r} is a label; its tokens are priced as training "
        "(6ND FLOPs): add work.passes: forward for a forward pass only"
        for p in inst.active_phases
        if p.work.tokens is not None
        and p.work.passes == "train"
        and any(p.kind.lower().startswith(k) for k in FORWARD_KINDS)
    ]
