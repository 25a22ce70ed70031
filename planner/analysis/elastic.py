"""Elastic (penalised-slack) variants of the hourly MILP, for explaining infeasibility and for
finding the shortest makespan.

:func:`build_elastic` builds the hourly MILP (:mod:`formulations.exact.milp.model`) of a *relaxed*
instance, whose deadlines lie at the horizon end, whose capacities are raised and whose carbon
cap is lifted, and adds back each original limit with a penalised slack (Chinneck, "Feasibility
and Infeasibility in Optimization", 2008, ch. 6, the elastic filter):

- lateness ``L[p] >= 0`` of each phase p with an original deadline ``d_p`` before the horizon
  end:  ``L[p] >= (t + 1 - d_p) sum_c x[p,c,t]``  for every hour ``t >= d_p`` of p's window,
  so ``L[p] = max(0, end_p - d_p)`` at the optimum (hours past the deadline);
- capacity slack ``S[r,g,t] >= 0``:  ``sum_{p,c in (r,g)} G_c x[p,c,t] - S[r,g,t] <= cap[r,g,t]``
  with the *original* capacity (GPUs above the pool in hour t);
- carbon slack ``E >= 0``:  ``sum kW_c ci_t / 1e6 x[p,c,t] - E <= carbon_cap`` (tonnes).

:func:`solve_elastic` minimises the weighted slack first and, with the slack held at its
optimum, the plan's cost second (two solves: lexicographic, no big-M weight to tune).
:func:`min_makespan` adds ``M >= (t + 1) sum_c x[p,c,t]`` for every phase and hour and
minimises M, the earliest hour by which every phase can have finished.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from formulations.exact.milp.model import MilpModel, build, carbon_columns, pool_columns
from formulations.exact.milp.solution import point_from_schedule, schedule_from_point
from formulations.heuristics.greedy import Usage, list_schedule
from formulations.lp.highs_runner import solve_highs
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.costs import carbon_row_scale, emissions_t, hourly_cost, weights
from planner.model.schedule import Assignment, Schedule

#: Slack kinds, in the order they are added.
KINDS = ("late", "capacity", "carbon")


@dataclass(frozen=True)
class ElasticWeights:
    """Penalty per unit of slack: an hour past a deadline, a GPU-hour above a pool's capacity,
    a tonne of CO2 above the cap. Equal weights make "smallest" mean the fewest such units."""

    late_hour: float = 1.0
    gpu_hour: float = 1.0
    tonne: float = 1.0


@dataclass
class ElasticModel:
    mm: MilpModel
    original: Instance
    late: dict[str, int] = field(default_factory=dict)
    over: dict[tuple[str, str, int], int] = field(default_factory=dict)
    carbon: int | None = None
    #: Penalty weight per slack variable.
    penalty: dict[int, float] = field(default_factory=dict)

    def slack_vars(self, kind: str) -> list[int]:
        """The columns of one kind of slack (``late`` hours, ``capacity`` overuse, ``carbon`` above
        the cap); ValueError for another kind."""
        if kind == "late":
            return list(self.late.values())
        if kind == "capacity":
            return list(self.over.values())
        if kind == "carbon":
            return [] if self.carbon is None else [self.carbon]
        raise ValueError(f"unknown slack kind {kind!r}; expected one of {KINDS}")


@dataclass
class ElasticSolution:
    status: str  # optimal | time_limit | infeasible | error | unknown
    penalty: float | None
    penalty_bound: float | None
    schedule: Schedule | None
    x: np.ndarray | None
    runtime_s: float
    message: str = ""

    @property
    def proven(self) -> bool:
        """The penalty is proved minimal (the first stage solved to optimality)."""
        return self.status == "optimal"


def add_lateness(em: ElasticModel, w: ElasticWeights) -> None:
    """L[p] - (t + 1 - d_p) sum_c x[p,c,t] >= 0 for t >= d_p;  0 <= L[p] <= T - d_p."""
    mm, lp = em.mm, em.mm.lp
    T = em.original.hours
    for name, configs in mm.space.by_phase.items():
        d = em.original.deadline[name]
        if d >= T or not configs:
            continue
        j = int(lp.add_vars("late", [name], 0.0, float(T - d), False, 0.0)[0])
        em.late[name] = j
        em.penalty[j] = w.late_hour
        by_hour: dict[int, list[int]] = defaultdict(list)
        for col in mm.columns[name]:  # every configuration (and segment) of the phase
            for t, i in zip(col.hours.tolist(), col.xi.tolist(), strict=True):
                if t >= d:
                    by_hour[t].append(i)
        for t, ids in sorted(by_hour.items()):
            lp.add_row(
                "lateness", (name, t), [j, *ids], [1.0, *([-(t + 1.0 - d)] * len(ids))], lower=0.0
            )


def add_capacity_slack(em: ElasticModel, w: ElasticWeights) -> None:
    """sum G_c x[p,c,t] - S[r,g,t] <= cap_orig[r,g,t] wherever the pool could exceed it."""
    lp = em.mm.lp
    for (r, g, t), (ids, vals) in sorted(pool_columns(em.mm).items()):
        cap = float(em.original.capacity[(r, g)][t])
        if sum(vals) <= cap:
            continue
        s = int(lp.add_vars("over", [(r, g, t)], 0.0, float(sum(vals) - cap), False, 0.0)[0])
        em.over[(r, g, t)] = s
        em.penalty[s] = w.gpu_hour
        lp.add_row("capacity_elastic", (r, g, t), [*ids, s], [*vals, -1.0], upper=cap)


def add_carbon_slack(em: ElasticModel, w: ElasticWeights) -> None:
    """sum kW_c ci_t / 1e6 x[p,c,t] - E <= carbon_cap (tonnes), when the original has a cap."""
    lp = em.mm.lp
    cap = em.original.spec.objective.carbon_cap_tonnes
    if cap is None:
        return
    idx, val = carbon_columns(em.mm)  # the relaxed instance has the original's carbon data
    if sum(val) <= cap:
        return
    e = int(lp.add_vars("carbon_over", ["total"], 0.0, math.inf, False, 0.0)[0])
    em.carbon = e
    em.penalty[e] = w.tonne
    k = carbon_row_scale(cap)  # the solver's tolerance as a share of the cap
    lp.add_row("carbon_elastic", "total", [*idx, e], [v * k for v in (*val, -1.0)], upper=cap * k)


def build_elastic(
    original: Instance, relaxed: Instance, space: ConfigSpace, weights: ElasticWeights | None = None
) -> ElasticModel:
    """The hourly MILP of ``relaxed`` (over ``space``, its configuration space) with the
    deadlines, capacities and carbon cap of ``original`` added back as penalised slack.
    ``relaxed`` must differ from ``original`` only in deadlines (later), capacities (higher),
    the carbon cap (none) and phases marked done."""
    w = weights or ElasticWeights()
    mm = build(relaxed, space)
    em = ElasticModel(mm, original)
    add_lateness(em, w)
    add_capacity_slack(em, w)
    add_carbon_slack(em, w)
    return em


def start_from_schedule(em: ElasticModel, schedule: Schedule) -> np.ndarray | None:
    """A full point of the elastic model from a schedule of the relaxed instance: the MILP
    variables (:func:`point_from_schedule`) and each slack at the least value the schedule
    needs. None if the schedule is not a point of the model."""
    x = point_from_schedule(em.mm, schedule)
    if x is None:
        return None
    inst = em.original
    for name, j in em.late.items():
        if name in schedule:
            x[j] = max(0.0, max(schedule[name][1]) + 1.0 - inst.deadline[name])
    usage: dict[tuple[str, str], np.ndarray] = {}
    emis = 0.0
    for c, hours in schedule.values():
        u = usage.setdefault((c.region, c.gpu), np.zeros(inst.hours))
        u[list(hours)] += c.total_gpus
        emis += emissions_t(inst, c, hours)
    for (r, g, t), j in em.over.items():
        used = usage.get((r, g))
        x[j] = 0.0 if used is None else max(0.0, float(used[t] - inst.capacity[(r, g)][t]))
    cap = inst.spec.objective.carbon_cap_tonnes
    if em.carbon is not None and cap is not None:
        x[em.carbon] = max(0.0, emis - cap)
    return x


def earliest_finish_schedule(
    original: Instance, relaxed: Instance, space: ConfigSpace
) -> Schedule | None:
    """A start for the elastic model that keeps lateness small: phases in topological order,
    each on the configuration and contiguous start that finish first (then cost least),
    within the *original* capacities left by the phases placed before it, anywhere up to
    the relaxed deadline; a phase that fits nowhere within capacity runs as early as it can
    above it (capacity slack). None if some phase cannot be placed even so."""
    wts = weights(relaxed)

    def place(name: str, ready: int, used: Usage) -> Assignment | None:
        best: tuple[int, int, float, int] | None = None  # (over capacity, end, cost, start)
        pick = None
        for c in space.by_phase[name]:
            if c.contract == "reserved":
                continue
            cap = original.capacity.get((c.region, c.gpu))
            if cap is None:
                continue
            free = cap - used[(c.region, c.gpu)] >= c.total_gpus - 1e-9
            cost = hourly_cost(relaxed, c, wts)
            for start in range(ready, relaxed.deadline[name] - c.hours + 1):
                over = 0 if free[start : start + c.hours].all() else 1
                key = (over, start + c.hours, float(cost[start : start + c.hours].sum()), start)
                if best is None or key < best:
                    best, pick = key, c
                if over == 0:
                    break
        if best is None or pick is None:
            return None
        return Assignment(pick, tuple(range(best[3], best[3] + pick.hours)))

    out = list_schedule(relaxed, space, relaxed.release, place)
    return None if out is None else Schedule(out)


def penalty_of(em: ElasticModel, x: np.ndarray) -> float:
    """The weighted slack of solution ``x``: how far it is from meeting every relaxed constraint (0:
    feasible)."""
    return float(sum(wt * x[j] for j, wt in em.penalty.items()))


def _restricted(em: ElasticModel, allow: tuple[str, ...]) -> list[float]:
    """Upper bounds with the slack of kinds outside ``allow`` fixed at 0."""
    upper = list(em.mm.lp.upper)
    for kind in KINDS:
        if kind not in allow:
            for j in em.slack_vars(kind):
                upper[j] = 0.0
    return upper


def minimise_slack(
    em: ElasticModel,
    time_limit: float = 60.0,
    allow: tuple[str, ...] = KINDS,
    threads: int | None = None,
    starts: tuple[Schedule, ...] = (),
) -> ElasticSolution:
    """Stage 1: minimise the weighted slack of the kinds in ``allow`` (the others fixed at 0).
    ``starts``: schedules of the relaxed instance; the one with the least penalty that uses
    only allowed slack seeds the solver. A start without slack is optimal as it is (the
    penalty is never negative), and no solve is run."""
    lp = copy.copy(em.mm.lp)
    lp.upper = _restricted(em, allow)
    lp.cost = [0.0] * lp.num_vars
    lp.offset = 0.0
    for j, wt in em.penalty.items():
        lp.cost[j] = wt
    start: np.ndarray | None = None
    for sched in starts:
        cand = start_from_schedule(em, sched)
        if cand is None or lp.violations(cand):
            continue
        if start is None or penalty_of(em, cand) < penalty_of(em, start):
            start = cand
    if start is not None and penalty_of(em, start) <= 1e-9:
        return ElasticSolution(
            "optimal",
            0.0,
            0.0,
            schedule_from_point(em.mm, start),
            start,
            0.0,
            "a start without slack",
        )
    raw = solve_highs(lp, time_limit, 1e-9, threads, start=start)
    if raw.x is None and start is not None:
        raw.x = start
    if raw.x is None:
        return ElasticSolution(raw.status, None, raw.bound, None, None, raw.runtime_s, raw.message)
    return ElasticSolution(
        raw.status,
        penalty_of(em, raw.x),
        raw.bound,
        schedule_from_point(em.mm, raw.x),
        raw.x,
        raw.runtime_s,
        raw.message,
    )


def cheapest_within(
    em: ElasticModel,
    first: ElasticSolution,
    time_limit: float = 60.0,
    gap: float = 1e-4,
    allow: tuple[str, ...] = KINDS,
    threads: int | None = None,
) -> ElasticSolution:
    """Stage 2: the cheapest plan whose weighted slack is at most stage 1's,
    ``sum_j w_j s_j <= penalty + tol``, started from stage 1's point."""
    if first.x is None or first.penalty is None:
        return first
    lp = copy.deepcopy(em.mm.lp)
    lp.upper = _restricted(em, allow)
    ids = sorted(em.penalty)
    if ids:
        tol = 1e-6 * max(1.0, first.penalty) + 1e-6
        lp.add_row(
            "penalty_cap", "total", ids, [em.penalty[j] for j in ids], upper=first.penalty + tol
        )
    raw = solve_highs(lp, time_limit, gap, threads, start=first.x)
    x = raw.x if raw.x is not None else first.x
    return ElasticSolution(
        first.status,
        first.penalty,
        first.penalty_bound,
        schedule_from_point(em.mm, x),
        x,
        first.runtime_s + raw.runtime_s,
        first.message,
    )


def solve_elastic(
    em: ElasticModel,
    time_limit: float = 60.0,
    gap: float = 1e-4,
    allow: tuple[str, ...] = KINDS,
    second_stage: bool = True,
    threads: int | None = None,
    starts: tuple[Schedule, ...] = (),
) -> ElasticSolution:
    """Minimise the weighted slack of the kinds in ``allow`` (the others are fixed at 0),
    then, holding it at its optimum, the relaxed plan's cost. ``time_limit`` is per stage."""
    first = minimise_slack(em, time_limit, allow, threads, starts)
    if not second_stage:
        return first
    return cheapest_within(em, first, time_limit, gap, allow, threads)


def min_makespan(
    inst: Instance, space: ConfigSpace, time_limit: float = 60.0, threads: int | None = None
) -> tuple[int | None, str]:
    """The earliest hour by which every active phase can have finished, subject to every
    constraint of the hourly MILP: min M  s.t.  M >= (t + 1) sum_c x[p,c,t] for all p, t.
    Returns (M or None, solver status); M is None when no plan exists or none was found."""
    mm = build(inst, space)
    lp = mm.lp
    lp.cost = [0.0] * lp.num_vars
    lp.offset = 0.0
    m = int(lp.add_vars("makespan", ["M"], 0.0, float(inst.hours), False, 1.0)[0])
    for name in mm.space.by_phase:
        by_hour: dict[int, list[int]] = defaultdict(list)
        for col in mm.columns.get(name, ()):
            for t, i in zip(col.hours.tolist(), col.xi.tolist(), strict=True):
                by_hour[t].append(i)
        for t, ids in sorted(by_hour.items()):
            lp.add_row(
                "makespan", (name, t), [m, *ids], [1.0, *([-(t + 1.0)] * len(ids))], lower=0.0
            )
    raw = solve_highs(lp, time_limit, 1e-9, threads)
    if raw.x is None or raw.objective is None:
        return None, raw.status
    return math.ceil(float(raw.x[m]) - 1e-6), raw.status
