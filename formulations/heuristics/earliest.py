"""Among plans within the gap, the one that finishes earliest (a second pass after any solver).

A solver stops at the first plan it proves within the gap; with flat prices many plans cost
the same and nothing pulls it early (a three-phase chain that can end at hour 15 ended at
hour 36 for the same cost), and with a gap of 0.01 % a plan may wait 2.6 days to save cents.
This pass moves phases to the earliest hours, on the same configuration, that their
predecessors' (possibly moved) ends allow, that fit in the capacity (and reserved pool) the
other phases leave, keep the plan within the carbon cap and cost at most what is left of
``budget`` more (:func:`budget_within_gap`: the most the objective may rise while the bound
still proves the plan within the requested gap; 0: only moves that cost nothing more): first
every phase at no extra cost, then the budget on the plan's finish (the phase that ends last,
again while it can), then on the other phases in topological order. Where a phase goes:

- a phase that runs one block of hours: the earliest start;
- a phase that may pause: the earliest end for which its n cheapest hours (by the cost
  model's hourly cost) from its ready hour fit.

Each candidate is priced exactly by the cost model (:func:`planner.model.costs.parts_costs`
weighted, plus the value of time: :func:`planner.model.costs.time_usd`); only the moved phase's
costs change (its configuration, region and so transfers and porting stay). Phases in
segments keep their hours. The plan's objective rises by at most ``budget``: the caller keeps
the result only if :func:`planner.model.costs.cost_plan` agrees.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from formulations.bounds.separable import open_runs
from planner.instance.model import Instance
from planner.model.costs import (
    emissions_t,
    hourly_cost,
    parts_costs,
    run_costs,
    run_emissions,
    time_usd,
    weights,
)
from planner.model.schedule import Assignment, Pool, Schedule
from planner.model.windows import Windows

#: Relative tolerance on "costs no more" (sums of the same prices in another order).
TIE = 1e-12


def budget_within_gap(objective: float, bound: float | None, gap: float) -> float:
    """How much a plan of cost ``objective`` may rise and stay proved within ``gap`` by
    ``bound``: the largest z' with ``(z' - bound) / z' <= gap`` is ``bound / (1 - gap)``; 0
    when there is no bound, it is not positive, or the plan is not within the gap already."""
    if bound is None or not np.isfinite(bound) or bound <= 0 or not 0 <= gap < 1:
        return 0.0
    top = bound / (1.0 - gap)
    return max(0.0, (top - objective) * (1.0 - 1e-9))


def earliest(
    inst: Instance,
    schedule: Schedule,
    windows: Windows,
    budget: float = 0.0,
    pauses: bool = True,
) -> Schedule:
    """The schedule with phases moved as early as ``budget`` allows (module docstring), in
    three passes: every phase in topological order at no extra cost; then, while the budget
    lasts, the phase that ends last (the plan's finish first); then every phase in
    topological order with what is left. ``pauses`` False keeps every phase one block of
    hours (the contiguous models' plans: their bound holds for those only)."""
    st = _Moves(inst, schedule, windows, pauses)
    for name in inst.order:
        st.move(name, 0.0)
    left = max(0.0, budget)
    tried: set[str] = set()
    while left > 0:
        movable = [n for n in st.out if n not in tried]
        if not movable:
            break
        last = max(movable, key=lambda n: (st.out[n].end, inst.order.index(n)))
        spent = st.move(last, left)
        if spent is None:
            tried.add(last)  # it cannot end earlier: the next latest may
            continue
        left -= spent
    for name in inst.order:
        spent = st.move(name, left)
        if spent is not None:
            left -= spent
    return Schedule(st.out, schedule.reserved, schedule.segments) if st.moved else schedule


class _Moves:
    """The schedule being compacted: per pool and hour the GPUs held (and per reserved pool
    the reserved GPUs), the plan's emissions, and each phase's assignment."""

    def __init__(
        self, inst: Instance, schedule: Schedule, windows: Windows, pauses: bool = True
    ) -> None:
        T = inst.hours
        self.inst, self.schedule, self.windows, self.pauses = inst, schedule, windows, pauses
        self.used: dict[Pool, np.ndarray] = defaultdict(lambda: np.zeros(T))
        self.reserved_use: dict[tuple[str, str, str], np.ndarray] = defaultdict(lambda: np.zeros(T))
        for _, (c, hours) in schedule.all_parts():
            self.used[(c.region, c.gpu)][list(hours)] += c.total_gpus
            if c.contract == "reserved":
                self.reserved_use[(c.region, c.gpu, c.term)][list(hours)] += c.total_gpus
        self.cap = inst.spec.objective.carbon_cap_tonnes
        self.emitted = sum(emissions_t(inst, a.config, a.hours) for _, a in schedule.all_parts())
        self.region_of = schedule.region_of()
        #: phases on one configuration (those in segments keep their hours)
        self.out: dict[str, Assignment] = dict(schedule.assignments)
        self.moved = False

    def move(self, name: str, limit: float) -> float | None:
        """Move phase ``name`` to its earliest hours that cost at most ``limit`` more, fit
        the capacity and reserved pool the others leave, follow its predecessors' ends and
        keep the carbon cap; the extra cost (None: it stays)."""
        inst, schedule = self.inst, self.schedule
        if name not in self.out:
            return None
        c, hours = self.out[name]
        preds = [q for q in inst.phase(name).predecessors if q in schedule]
        ends = [self.out[q].end if q in self.out else schedule.parts(q)[-1].end for q in preds]
        ready = max([self.windows.start.get(name, 0), *ends])
        if ready + c.hours >= hours[-1] + 1:
            return None  # it ends as early as it can
        pool, rkey = (c.region, c.gpu), (c.region, c.gpu, c.term)
        free = inst.capacity[pool] - self.used[pool]
        free[list(hours)] += c.total_gpus
        fits = free >= c.total_gpus - 1e-9
        if c.contract == "reserved":
            ru = self.reserved_use[rkey].copy()
            ru[list(hours)] -= c.total_gpus
            fits &= ru + c.total_gpus <= schedule.reserved.get(rkey, 0) + 1e-9
        old_emis = emissions_t(inst, c, hours)
        for cand, extra, new_emis in _candidates(
            inst, Assignment(c, hours), ready, fits, self.region_of, self.pauses
        ):
            if not extra <= limit + TIE * max(1.0, limit):
                continue
            total = self.emitted - old_emis + new_emis
            if self.cap is not None and total > self.cap * (1 + 1e-12) + 1e-12:
                continue
            self.emitted = total
            self.used[pool][list(hours)] -= c.total_gpus
            self.used[pool][list(cand)] += c.total_gpus
            if c.contract == "reserved":
                self.reserved_use[rkey][list(hours)] -= c.total_gpus
                self.reserved_use[rkey][list(cand)] += c.total_gpus
            self.out[name] = Assignment(c, cand)
            self.moved = True
            return max(0.0, extra)
        return None


#: Ends tried for a phase that may pause: the earliest ones, then evenly spaced up to its
#: current end (each is priced in full).
PAUSED_ENDS = 48


def _candidates(
    inst: Instance,
    a: Assignment,
    ready: int,
    fits: np.ndarray,
    region_of: dict[str, str],
    pauses: bool = True,
) -> list[tuple[tuple[int, ...], float, float]]:
    """(hours, extra objective, emissions) for the phase on ``a``'s configuration ending
    earlier than ``a`` does, earliest end first: one block from each start before the
    current one (a phase that may not pause: :func:`planner.model.costs.run_costs`, which holds
    every cost of the phase that its hours change); the cheapest n free hours from ``ready``
    for ends before the current one (a phase that may, unless ``pauses`` is False and it runs
    one block now: priced by :func:`planner.model.costs.parts_costs` and the value of time). Runs
    through hours the phase may not use (+inf) are left out."""
    c, hours = a.config, a.hours
    w = weights(inst)
    n, end = c.hours, hours[-1] + 1
    if not inst.phase(c.phase).preemptible or (not pauses and len(hours) == end - hours[0]):
        starts = np.arange(ready, hours[0] + 1)
        ok = open_runs(fits, n)
        starts = starts[(starts < len(ok)) & ok[np.minimum(starts, len(ok) - 1)]]
        if not len(starts) or starts[0] >= hours[0]:
            return []
        costs = run_costs(inst, c, np.append(starts, hours[0]), w)
        emis = run_emissions(inst, c, starts)
        now = costs[-1]
        return [
            (tuple(range(int(s), int(s) + n)), float(k - now), float(e))
            for s, k, e in zip(starts, costs[:-1], emis, strict=True)
            if s < hours[0] and np.isfinite(k)
        ]
    h = hourly_cost(inst, c, w)
    now = _objective(inst, a, region_of)
    stops = list(range(ready + n, end))
    if len(stops) > PAUSED_ENDS:
        head = stops[: PAUSED_ENDS // 2]
        rest = np.linspace(head[-1] + 1, end - 1, PAUSED_ENDS // 2).astype(int).tolist()
        stops = sorted(set(head + rest))
    out: list[tuple[tuple[int, ...], float, float]] = []
    for stop in stops:
        span = np.arange(ready, stop)
        span = span[fits[ready:stop] & np.isfinite(h[ready:stop])]
        if len(span) < n:
            continue
        pick = tuple(int(t) for t in np.sort(span[np.argsort(h[span], kind="stable")[:n]]))
        moved = Assignment(c, pick)
        out.append((pick, _objective(inst, moved, region_of) - now, emissions_t(inst, c, pick)))
    return out


def _objective(inst: Instance, a: Assignment, region_of: dict[str, str]) -> float:
    """The phase's share of the plan's objective on ``a``: its weighted costs and the value of
    its time."""
    pc = parts_costs(inst, (a,), region_of)
    return float(weights(inst).objective(pc.costs)) + time_usd(inst, a.config.phase, a.end)
