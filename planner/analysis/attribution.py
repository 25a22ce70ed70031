"""Why a plan is cheaper: its saving against THE baseline, per cost component and per lever.

One attribution, shared by ``trainplan solve`` (printed, and written into the plan file
under ``"attribution"``), ``trainplan levers`` and ``trainplan report`` (its first screen).

- **Baseline**: the lever-free plan of :mod:`formulations.heuristics.baseline`, on the instance
itself.
- **Per component**: ``saving_k = baseline.costs[k] - plan.costs[k]`` for every cost
  component (rental, energy, storage, failure, transfer, porting, carbon); they add up to the
  total saving. A negative entry is a component the plan pays more of (spot's failure cost,
  say) to save more elsewhere.
- **Per lever**, measured, not asserted: the levers are switched on one at a time in the order
  :data:`ORDER`, starting from the baseline. After each lever the cheapest plan found so far is
  kept: the best as-soon-as-possible greedy plan of the instance with the levers switched on so
  far, or the previous step's plan (still allowed: switching a lever on only widens the
  choice). The lever is credited with the cost its step removes, ``saving_i = cost_{i-1} -
  cost_i``. Time shifting comes last, and its step ends at the plan itself, so the steps add
  up exactly to the plan's saving: ``sum_i saving_i = baseline - plan``. Its share includes
  what the optimiser finds beyond greedy choices (placing phases jointly).

The order matters for the split between levers that overlap (spot and region, say); ``trainplan
levers`` also measures every lever alone and all together, and the difference of the sum of
single savings and the joint saving (the interaction). Every cost is the objective
``sum_k weights[k] x cost[k]`` (USD with the default weights).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from formulations.heuristics.baseline import (
    LEVERS,
    SEGMENT_LEVERS,
    BaselineError,
    Lever,
    LeverFree,
    asap_plans,
    lever_free,
)
from planner.collector import fewer_collections
from planner.instance.model import Instance
from planner.model.configs import full_config_space
from planner.model.plan import COST_KEYS, Plan
from planner.model.schedule import Schedule

ATTRIBUTION_FORMAT = "trainplan-attribution/1"

#: The order levers are switched on in: the coarse choices a team makes first (contracts,
#: hardware, site), then the finer ones, and time shifting last (it ends at the plan).
ORDER = (
    "contracts",
    "gpu_type",
    "region",
    "elastic",
    "precision",
    "storage",
    "spares",
    "follow_sun",
    "elastic_scaling",
    "time_shifting",
)

#: One sentence for people: how the attribution per lever is made.
METHOD = (
    "levers switched on one at a time from the lever-free baseline (order: "
    + ", ".join(ORDER)
    + "); each is credited with the cost its step removes (the cheapest as-soon-as-possible "
    "plan so far); the last step ends at the plan, so the savings add up to the total"
)

_BY_KEY: dict[str, Lever] = {lv.key: lv for lv in LEVERS}

__all__ = [
    "ATTRIBUTION_FORMAT",
    "METHOD",
    "ORDER",
    "Attribution",
    "BaselineError",
    "DayEarlier",
    "LeverChain",
    "LeverStep",
    "attribute",
    "day_earlier",
    "lever_chain",
]


@dataclass(frozen=True)
class LeverStep:
    """One lever's step: the cost after it and the saving credited to it."""

    key: str
    label: str
    section: str
    cost: float
    saving: float
    method: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The step as the plan file's attribution block stores it: every field by its name."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LeverStep:
        """A step read back from the attribution block (:meth:`to_dict`'s form)."""
        return cls(
            str(d["key"]),
            str(d.get("label", d["key"])),
            str(d.get("section", "")),
            float(d["cost"]),
            float(d["saving"]),
            str(d.get("method", "")),
            str(d.get("note", "")),
        )


@dataclass(frozen=True)
class Attribution:
    """The plan's saving against the baseline, per component and per lever."""

    baseline_objective: float
    baseline_costs: Mapping[str, float]
    plan_objective: float
    plan_costs: Mapping[str, float]
    levers: tuple[LeverStep, ...]
    rules: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    baseline_energy_kwh: float = 0.0
    baseline_emissions_t: float = 0.0
    method: str = METHOD
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: What finishing a day earlier would cost (:func:`day_earlier`), when it was measured.
    day_earlier: DayEarlier | None = None

    @property
    def saving(self) -> float:
        """Baseline objective minus the plan's (USD with the default weights)."""
        return self.baseline_objective - self.plan_objective

    @property
    def saving_pct(self) -> float | None:
        """The saving as a share of the baseline, or None for a free baseline."""
        return self.saving / self.baseline_objective if self.baseline_objective else None

    def component_savings(self) -> dict[str, float]:
        """``baseline.costs[k] - plan.costs[k]`` per component and for ``total``."""
        keys = (*COST_KEYS, "total")
        return {
            k: float(self.baseline_costs.get(k, 0.0)) - float(self.plan_costs.get(k, 0.0))
            for k in keys
        }

    def headline(self) -> str:
        """``$15,212 against the lever-free baseline's $18,286: saves $3,074 (16.8%)``."""
        pct = "" if self.saving_pct is None else f" ({self.saving_pct:.1%})"
        verb = "saves" if self.saving >= 0 else "costs"
        return (
            f"${self.plan_objective:,.2f} against the lever-free baseline's "
            f"${self.baseline_objective:,.2f}: {verb} ${abs(self.saving):,.2f}{pct}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The attribution block of a plan file: the baseline's costs, every lever step and the
        day-earlier price; what the report reads back."""
        return {
            "format": ATTRIBUTION_FORMAT,
            "method": self.method,
            "baseline": {
                "objective": self.baseline_objective,
                "costs": dict(self.baseline_costs),
                "energy_kwh": self.baseline_energy_kwh,
                "emissions_t": self.baseline_emissions_t,
                "rules": list(self.rules),
            },
            "plan": {"objective": self.plan_objective, "costs": dict(self.plan_costs)},
            "saving": {
                "objective": self.saving,
                "pct": self.saving_pct,
                "components": self.component_savings(),
            },
            "levers": [s.to_dict() for s in self.levers],
            "notes": list(self.notes),
            **({} if self.day_earlier is None else {"day_earlier": self.day_earlier.to_dict()}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Attribution:
        """Read back :meth:`to_dict` (a plan file's ``"attribution"``); raises KeyError,
        TypeError or ValueError on a malformed object."""
        if d.get("format") != ATTRIBUTION_FORMAT:
            raise ValueError(f"expected format {ATTRIBUTION_FORMAT!r}, got {d.get('format')!r}")
        base, plan = d["baseline"], d["plan"]
        return cls(
            float(base["objective"]),
            {str(k): float(v) for k, v in base["costs"].items()},
            float(plan["objective"]),
            {str(k): float(v) for k, v in plan["costs"].items()},
            tuple(LeverStep.from_dict(s) for s in d["levers"]),
            tuple(str(r) for r in base.get("rules", [])),
            tuple(str(n) for n in d.get("notes", [])),
            float(base.get("energy_kwh", 0.0)),
            float(base.get("emissions_t", 0.0)),
            str(d.get("method", METHOD)),
            day_earlier=None
            if d.get("day_earlier") is None
            else DayEarlier.from_dict(d["day_earlier"]),
        )


@dataclass(frozen=True)
class DayEarlier:
    """What finishing a day earlier costs: the plan finishes at hour ``finish``; the best plan
    found with every phase done by ``finish - 24`` (``by``) has objective ``objective`` (None:
    none found, ``status`` says whether none exists or the solve ran out of time), ``extra``
    more than the plan's."""

    finish: int
    by: int
    objective: float | None
    extra: float | None
    status: str
    seconds: float

    def sentence(self) -> str:
        """One line for people."""
        head = f"finishing a day earlier (by hour {self.by} instead of {self.finish})"
        if self.extra is None or self.objective is None:
            why = (
                "no plan does" if self.status == "infeasible" else f"no plan found ({self.status})"
            )
            return f"{head}: {why}"
        if self.extra >= 0:
            return f"{head} costs ${self.extra:,.2f} more (${self.objective:,.2f}, {self.status})"
        return (
            f"{head} costs ${-self.extra:,.2f} less (${self.objective:,.2f}, {self.status}): "
            "the plan was not optimal"
        )

    def to_dict(self) -> dict[str, Any]:
        """The day-earlier figure as the attribution block stores it."""
        return {
            "finish_hour": self.finish,
            "by_hour": self.by,
            "objective": self.objective,
            "extra": self.extra,
            "status": self.status,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DayEarlier:
        """The day-earlier figure read back from the attribution block."""
        obj, extra = d.get("objective"), d.get("extra")
        return cls(
            int(d["finish_hour"]),
            int(d["by_hour"]),
            None if obj is None else float(obj),
            None if extra is None else float(extra),
            str(d.get("status", "")),
            float(d.get("seconds", 0.0)),
        )


#: Seconds at most for the solve that prices finishing a day earlier (``solve --day-earlier``
#: or ``report``; less when the solve's own limit is less).
DAY_EARLIER_S = 20.0


def day_earlier(
    inst: Instance, plan: Plan, time_limit: float = 20.0, gap: float = 1e-4
) -> DayEarlier | None:
    """What finishing 24 hours earlier would cost: the instance with every phase still to
    run due by ``finish - 24`` (``finish`` the hour after the plan's last running hour),
    solved by ``planner.solve`` within ``time_limit`` seconds; the difference of the
    objectives (weighted bill and value of time). None for an empty plan. Phases given a
    deadline here keep the instance's ``deadline_confidence`` reserve like any other."""
    import time

    from planner.instance.errors import InstanceError
    from planner.solve import solve

    finish = _finish(plan)
    if finish <= 0:
        return None
    by = finish - 24
    t0 = time.perf_counter()
    ups = {
        f"phases.{p.name}.deadline": by for p in inst.active_phases if inst.deadline[p.name] > by
    }
    if any(inst.release[p.name] >= by for p in inst.active_phases) or by <= 0:
        return DayEarlier(finish, by, None, None, "infeasible", time.perf_counter() - t0)
    try:
        variant = inst.replace(ups)
    except InstanceError:  # a deadline before a release: no plan finishes that early
        return DayEarlier(finish, by, None, None, "infeasible", time.perf_counter() - t0)
    res = solve(variant, time_limit=time_limit, gap=gap)
    seconds = time.perf_counter() - t0
    if res.plan is None or res.objective is None:
        term = str(res.termination.value)
        status = "infeasible" if term in ("infeasible", "no_configuration") else term
        return DayEarlier(finish, by, None, None, status, seconds)
    extra = res.objective - _objective(plan)
    return DayEarlier(finish, by, res.objective, extra, str(res.status.value), seconds)


def _finish(p: Plan) -> int:
    """The hour after the plan's last running hour (0 for an empty plan)."""
    return max((ph.end_hour for ph in p.phases), default=0)


def _objective(p: Plan) -> float:
    return p.objective if p.objective is not None and math.isfinite(p.objective) else math.inf


@dataclass(frozen=True)
class LeverChain:
    """What an attribution compares a plan with, and none of it depends on the plan: the
    lever-free baseline, its steps lever by lever (:data:`ORDER` but time shifting, the
    last), and ``last``, the cheapest as-soon-as-possible plan with every lever but time
    shifting. Plain data: the command line computes it in another process while the plan is
    solved (:mod:`planner.interfaces.cli.background`)."""

    baseline: LeverFree
    steps: tuple[LeverStep, ...]
    last: Plan


@fewer_collections()
def lever_chain(
    inst: Instance,
    baseline: LeverFree | None = None,
    on_step: Callable[[str], None] | None = None,
) -> LeverChain:
    """The lever-free baseline of ``inst`` (``baseline`` when the caller has it) and its steps
    (module docstring): each lever switched on in turn, credited with what the cheapest
    as-soon-as-possible plan so far saves. Raises :class:`BaselineError` when the instance
    has no lever-free baseline."""
    lf = baseline if baseline is not None else lever_free(inst)
    full = full_config_space(inst)  # the lever-free baseline's, built once per instance
    prev: Schedule = lf.schedule
    prev_plan = lf.plan
    steps: list[LeverStep] = []
    on: list[str] = []
    for key in ORDER[:-1]:
        lv = _BY_KEY[key]
        if on_step is not None:
            on_step(f"lever {len(steps) + 1} of {len(ORDER)}: {key}")
        if not lf.restricts(key) or key in SEGMENT_LEVERS:
            why = (
                "kept in the baseline (needed to meet the deadlines)"
                if key in lf.kept
                else "only the hourly MILP runs a phase in segments: its worth is in the last step"
                if lf.restricts(key)
                else "nothing to choose here"
            )
            steps.append(
                LeverStep(key, lv.label, lv.section, _objective(prev_plan), 0.0, "none", why)
            )
            continue
        on.append(key)
        cands = [(prev_plan, prev), *asap_plans(inst, lf.variant_phases(inst, on), full)]
        best_plan, best = min(cands, key=lambda x: _objective(x[0]))
        note = "" if best is not prev else "no cheaper plan as soon as possible"
        steps.append(
            LeverStep(
                key,
                lv.label,
                lv.section,
                _objective(best_plan),
                _objective(prev_plan) - _objective(best_plan),
                "greedy, as soon as possible",
                note,
            )
        )
        prev, prev_plan = best, best_plan
    return LeverChain(lf, tuple(steps), prev_plan)


def attribute(
    inst: Instance,
    plan: Plan,
    *,
    baseline: LeverFree | None = None,
    on_step: Callable[[str], None] | None = None,
    chain: LeverChain | None = None,
) -> Attribution:
    """The attribution of ``plan``'s saving on ``inst`` (module docstring): the steps of
    :func:`lever_chain` (``chain`` when the caller computed it, else from ``baseline``),
    then time shifting, which ends at the plan. Raises :class:`BaselineError` when the
    instance has no lever-free baseline."""
    ch = chain if chain is not None else lever_chain(inst, baseline, on_step)
    lf, prev_plan = ch.baseline, ch.last
    notes: list[str] = list(lf.notes)
    if inst.spec.objective.carbon_cap_tonnes is not None:
        notes.append(
            "the baseline and the greedy steps do not know objective.carbon_cap_tonnes: they "
            "may emit more than the cap the plan keeps"
        )
    assert ORDER[-1] == "time_shifting"
    lv = _BY_KEY["time_shifting"]
    steps = [
        *ch.steps,
        LeverStep(
            "time_shifting",
            lv.label,
            lv.section,
            _objective(plan),
            _objective(prev_plan) - _objective(plan),
            "the plan",
            "ends at the plan: cheap hours, pauses, joint placement",
        ),
    ]
    last = steps[-1]
    if last.saving < -1e-6:
        mine, theirs = _finish(plan), _finish(prev_plan)
        if mine < theirs:
            notes.append(
                "the plan costs more than the best as-soon-as-possible plan with every other "
                f"lever (by ${-last.saving:,.2f}) and finishes earlier (hour {mine} against "
                f"{theirs}): among the plans within the solver's gap it takes the earliest"
            )
        else:
            notes.append(
                "the plan costs more than the best as-soon-as-possible plan with every other "
                f"lever (by ${-last.saving:,.2f}): the solver stopped before optimality; raise "
                "--time-limit"
            )
    base_plan = lf.plan
    return Attribution(
        _objective(base_plan),
        dict(base_plan.costs),
        _objective(plan),
        dict(plan.costs),
        tuple(steps),
        lf.rules,
        tuple(notes),
        base_plan.energy_kwh,
        base_plan.emissions_t,
    )
