"""What each cost lever is worth on one instance, measured rather than asserted.

Every run starts from THE baseline (:mod:`formulations.heuristics.baseline`: the lever-free plan,
the one ``solve`` and ``report`` compare against), and every plan is costed on the instance itself
with :func:`planner.model.costs.cost_plan`, so each is a plan ``trainplan verify`` accepts:

- **each lever alone**: the instance with only that lever switched on. Without time shifting
  the plan is the greedy as-soon-as-possible schedule of that variant; with it, the hourly
  MILP (:func:`planner.solve.solve`) places the hours. The baseline plan stays available when
  a lever is switched on, so a lever is never reported to cost money because a greedy rule
  is myopic;
- **all levers together**: :func:`planner.solve.solve` on the instance (the plan ``solve``
  gives);
- **the attribution** (:mod:`planner.analysis.attribution`): the all-levers saving split over the
  levers, one at a time in a fixed order, summing to the total. Single savings do not add up
  to the joint one; ``interaction_usd`` is the difference.

docs/levers.md lists the levers, what the baseline does without each, and the claims of the
article they come from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from formulations.heuristics.baseline import (
    LEVER_KEYS,
    LEVERS,
    MILP_LEVERS,
    SEGMENT_NEEDS,
    BaselineError,
    LeverFree,
    asap_plans,
    lever_free,
    plan_schedule,
)
from planner.analysis.attribution import Attribution, attribute
from planner.instance.model import Instance
from planner.jsonable import record
from planner.model.configs import full_config_space
from planner.model.costs import cost_plan, weights
from planner.model.plan import COST_KEYS, Plan

__all__ = [
    "LEVERS",
    "LEVER_KEYS",
    "LeverError",
    "LeverReport",
    "LeverRun",
    "build_baseline",
    "evaluate_levers",
]


class LeverError(ValueError):
    """The lever analysis cannot run on this instance; the message says why."""


def build_baseline(inst: Instance) -> LeverFree:
    """THE baseline (:func:`formulations.heuristics.baseline.lever_free`), as a :class:`LeverError`
    when there is none."""
    try:
        return lever_free(inst)
    except BaselineError as e:
        raise LeverError(str(e)) from None


@dataclass(frozen=True)
class LeverRun:
    """One plan of the analysis: the baseline, one lever on, or all levers on."""

    key: str
    label: str
    section: str
    method: str
    plan: Plan | None
    instance: Instance = field(repr=False, compare=False)
    cost: float | None = None
    components: dict[str, float] = field(default_factory=dict)
    saving_usd: float | None = None
    saving_pct: float | None = None
    cycle_h: int | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The lever's run as ``levers --json`` writes it, with its plan."""
        out = record(self, {"cycle_h": "cycle_hours"}, skip=("instance", "plan"))
        return {**out, "plan": self.plan.to_dict() if self.plan is not None else None}


@dataclass(frozen=True)
class LeverReport:
    instance: str
    baseline: LeverRun
    levers: tuple[LeverRun, ...]
    all_levers: LeverRun
    rules: tuple[str, ...]
    notes: tuple[str, ...] = ()
    attribution: Attribution | None = None
    runtime_s: float = 0.0

    def run(self, key: str) -> LeverRun:
        """The run of lever ``key`` (``all`` and ``baseline`` name the all-levers and lever-free
        runs); KeyError for an unknown key."""
        for r in self.levers:
            if r.key == key:
                return r
        if key == "all":
            return self.all_levers
        if key == "baseline":
            return self.baseline
        raise KeyError(key)

    @property
    def interaction_usd(self) -> float | None:
        """All levers' saving minus the sum of the single savings: levers overlap (negative)
        or reinforce each other (positive)."""
        if self.all_levers.saving_usd is None:
            return None
        return self.all_levers.saving_usd - sum(r.saving_usd or 0.0 for r in self.levers)

    def headline(self) -> str:
        """The report's first line: what all levers together save against the lever-free
        baseline."""
        pct = self.all_levers.saving_pct
        if pct is None:
            return "all levers: n/a"
        return f"all levers: {-pct * 100:+.1f}% against the lever-free baseline".replace("+-", "-")

    def cycle_headline(self) -> str:
        """How the training cycle (first start to last finish) changes with all levers; empty when
        either run has none."""
        b, a = self.baseline.cycle_h, self.all_levers.cycle_h
        if not b or a is None:
            return ""
        return f"training cycle: {b} h -> {a} h ({(a - b) / b * 100:+.1f}%)"

    def to_dict(self) -> dict[str, Any]:
        """The report as ``levers --json`` writes it (trainplan-levers/2)."""
        return {
            "format": "trainplan-levers/2",
            "instance": self.instance,
            "baseline": self.baseline.to_dict(),
            "levers": [r.to_dict() for r in self.levers],
            "all_levers": self.all_levers.to_dict(),
            "interaction_usd": self.interaction_usd,
            "attribution": None if self.attribution is None else self.attribution.to_dict(),
            "headline": self.headline(),
            "rules": list(self.rules),
            "notes": list(self.notes),
            "runtime_s": self.runtime_s,
        }


def _cycle(plan: Plan | None) -> int | None:
    if plan is None or not plan.phases:
        return None
    return max(p.end_hour for p in plan.phases) - min(p.start_hour for p in plan.phases)


def _cheapest(cands: list[Plan]) -> Plan | None:
    return min(
        cands, key=lambda p: p.objective if p.objective is not None else math.inf, default=None
    )


def _alone(
    inst: Instance, base: LeverFree, key: str, time_limit: float, backend: str
) -> tuple[Plan | None, str, str]:
    """(plan on ``inst``, method, note) with only lever ``key`` switched on (a segment lever
    with the lever whose choice it changes at checkpoints, :data:`SEGMENT_NEEDS`)."""
    on = [key, *([SEGMENT_NEEDS[key]] if key in SEGMENT_NEEDS else [])]
    full = full_config_space(inst)
    cands: list[Plan] = []
    note = ""
    if key in MILP_LEVERS:
        from planner.solve import solve

        method = "milp"
        if key in SEGMENT_NEEDS:
            note = (
                f"measured with the hourly MILP (time shifting and {SEGMENT_NEEDS[key]} on): "
                "its own worth is this saving minus theirs"
            )
        res = solve(base.variant(inst, on), solver="milp", time_limit=time_limit, backend=backend)
        if res.plan is not None:
            again = plan_schedule(full, res.plan)
            if again is not None:
                cands.append(cost_plan(inst, again))
            if res.gap is not None and res.gap > 1e-3:
                note = (note + "; " if note else "") + f"MILP gap {res.gap:.1%} at the time limit"
        else:
            note = f"MILP found no plan ({res.termination.value})"
    else:
        method = "greedy-asap"
        cands += [plan for plan, _ in asap_plans(inst, base.variant_phases(inst, on), full)]
    best = _cheapest(cands)
    if best is None or (best.objective or 0.0) > (base.plan.objective or 0.0) + 1e-9:
        note = (note + "; " if note else "") + "kept the baseline plan (cheaper here)"
        best = base.plan
    return best, method, note


def _make_run(
    inst: Instance,
    key: str,
    label: str,
    section: str,
    method: str,
    plan: Plan | None,
    base_cost: float | None,
    note: str,
) -> LeverRun:
    cost = plan.objective if plan is not None else None
    comps: dict[str, float] = {}
    if plan is not None:
        w = weights(inst)
        comps = {k: w[k] * plan.costs.get(k, 0.0) for k in COST_KEYS}
    saving = pct = None
    if cost is not None and base_cost is not None:
        saving = base_cost - cost
        pct = saving / base_cost if base_cost else 0.0
    return LeverRun(
        key, label, section, method, plan, inst, cost, comps, saving, pct, _cycle(plan), note
    )


def evaluate_levers(
    inst: Instance,
    time_limit: float = 60.0,
    backend: str = "highs",
    levers: Iterable[str] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> LeverReport:
    """Cost the baseline, each lever alone (``levers``, default all), all levers together and
    the attribution on ``inst``. ``time_limit`` applies to each MILP solve (two: time
    shifting alone and all levers). A carbon cap is lifted (a cap is a constraint, not a
    lever, and the greedy runs cannot honour it). Raises :class:`LeverError` when no
    baseline exists."""
    t0 = time.perf_counter()
    keys = list(levers) if levers is not None else list(LEVER_KEYS)
    for k in keys:
        if k not in LEVER_KEYS:
            raise LeverError(f"unknown lever {k!r}; expected one of {', '.join(LEVER_KEYS)}")
    step = on_step or (lambda _text: None)
    lifted: list[str] = []
    if inst.spec.objective.carbon_cap_tonnes is not None:
        inst = inst.replace({"objective.carbon_cap_tonnes": None})
        lifted.append(
            "objective.carbon_cap_tonnes is lifted: the lever-free baseline and the "
            "greedy lever runs do not know it (see `trainplan pareto --vs carbon`)"
        )
    step("the lever-free baseline")
    base = build_baseline(inst)
    base_cost = base.plan.objective
    baseline = _make_run(
        inst, "baseline", "lever-free baseline", "", "greedy-asap", base.plan, base_cost, ""
    )
    runs: list[LeverRun] = []
    for lv in LEVERS:
        if lv.key not in keys:
            continue
        step(f"{lv.key} alone")
        if not base.restricts(lv.key):
            why = (
                "kept in the baseline: it cannot meet the deadlines without this lever"
                if lv.key in base.kept
                else "nothing to choose: the instance offers no alternative"
            )
            runs.append(
                _make_run(inst, lv.key, lv.label, lv.section, "none", base.plan, base_cost, why)
            )
            continue
        plan, method, note = _alone(inst, base, lv.key, time_limit, backend)
        runs.append(_make_run(inst, lv.key, lv.label, lv.section, method, plan, base_cost, note))
    step("all levers (the MILP)")
    from planner.solve import solve

    res = solve(inst, solver="milp", time_limit=time_limit, backend=backend)
    note = ""
    if res.plan is None:
        note = f"MILP found no plan ({res.termination.value})"
    elif res.gap is not None and res.gap > 1e-3:
        note = f"MILP gap {res.gap:.1%} at the time limit"
    all_run = _make_run(inst, "all", "all levers", "", "milp", res.plan, base_cost, note)
    attribution = None
    if res.plan is not None:
        step("attribution")
        attribution = attribute(inst, res.plan, baseline=base)
    notes = [*lifted, *base.notes]
    for r in runs:
        if r.plan is None:
            notes.append(f"{r.key}: no plan ({r.note})")
    best_single = min(
        (r for r in runs if r.cost is not None), key=lambda r: r.cost or 0.0, default=None
    )
    if (
        best_single is not None
        and all_run.cost is not None
        and best_single.cost is not None
        and all_run.cost > best_single.cost * (1 + 1e-6) + 1e-6
    ):
        notes.append(
            f"all levers cost more than {best_single.key} alone: the solver stopped "
            "before optimality; raise --time-limit"
        )
    return LeverReport(
        inst.name,
        baseline,
        tuple(runs),
        all_run,
        base.rules,
        tuple(notes),
        attribution,
        time.perf_counter() - t0,
    )
