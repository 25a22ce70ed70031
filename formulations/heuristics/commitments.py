"""Reservation-first plans: which reserved pools to buy before the phases are placed.

A reserved commitment is paid for every hour of its term, used or not: ``R P`` for R GPUs
at P each (:func:`planner.model.costs.pool_usd_per_gpu`). A plan without reservations is a
trap for every search that moves one phase at a time: moving one phase onto a pool nobody
uses buys the pool's minimum for the whole term, which no single phase repays, although many
phases packed onto it would (on the lab's quarter, 734,000 on-demand H100-hours and not one
reserved). The look-ahead that prices reserved runs per GPU-hour used (``allow_reserved``)
spreads them over every pool and buys each at its peak.

Here the commitment comes first. With pools bought (``committed``), the look-ahead's forward
pass (:meth:`formulations.heuristics.lookahead.LookAhead.assignments`) sees a bought pool's
hours at their cost without the commitment (energy, failures, storage: the rental is sunk)
within the GPUs left in the pool, so the phases fill it in their topological order and the
rest go on demand or spot as before. The schedule is then costed by the cost model at its real
costs, the commitment at the least level that covers its use
(:func:`planner.model.schedule.reservations_for`); a later stage (re-contracting at fixed
hours) chooses the levels and contracts exactly.

**Which pools.** A pool's *promise* is what its phases could save on it: per phase, its
cheapest configuration without reservations less its cheapest on the pool at the reserved
price per GPU-hour, both at their mean hourly cost over the phase's window, summed over the
phases where that is positive. Pools are tried in order of promise, each at its largest
level and at half of it (not below the term's minimum), and kept when the plan with them is
cheaper than without (a greedy search: each pool is tried on top of those kept), until
MAX_MISSES pools in a row were not kept. Every forward pass reuses the backward pass's guide,
so a try costs one forward pass.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from formulations.heuristics.lookahead import LookAhead
from planner.instance.model import Instance
from planner.model.costs import cost_plan
from planner.model.plan import Plan
from planner.model.schedule import ReservedKey, Schedule

#: Pools tried at most, in order of promise ...
MAX_POOLS = 8

#: ... and the search ends after this many pools in a row that were not kept (the lab's
#: quarter, where no commitment pays: 6 forward passes instead of 16, which took 22 s).
MAX_MISSES = 3


def promise(la: LookAhead) -> dict[ReservedKey, float]:
    """Per reserved pool (region, GPU type, term) of the space: what its phases could save on
    it (module docstring), in weighted USD; pools with no saving are left out."""
    space = la.space
    out: dict[ReservedKey, float] = {}
    for name, configs in space.by_phase.items():
        e, l_ = la.win.start[name], la.win.end[name]
        if l_ <= e:
            continue
        own = math.inf
        best: dict[ReservedKey, float] = {}
        for c in configs:
            h = la.hourly[(name, c.index)][e:l_]
            fin = h[np.isfinite(h)]
            if len(fin) < c.hours:
                continue
            run = float(fin.mean()) * c.hours
            if c.contract == "reserved":
                key = (c.region, c.gpu, c.term)
                best[key] = min(best.get(key, math.inf), run)
            else:
                own = min(own, run)
        if not math.isfinite(own):
            continue
        for key, run in best.items():
            if run < own:
                out[key] = out.get(key, 0.0) + own - run
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def size_range(inst: Instance, key: ReservedKey) -> tuple[int, int]:
    """(least, largest) commitment to one pool: the term's minimum (at least 1), and the
    least of its maximum and the pool's peak capacity."""
    r, g, term = key
    t = inst.term(r, g, term)
    top = int(np.max(inst.capacity[(r, g)]))
    low = 1
    if t is not None:
        top = min(top, t.max_gpus) if t.max_gpus is not None else top
        low = max(low, t.min_gpus)
    return low, top


def levels(inst: Instance, key: ReservedKey) -> list[int]:
    """The commitments tried for one pool: its largest (the term's maximum, else the pool's
    peak capacity) and half of it, not below the term's minimum."""
    low, top = size_range(inst, key)
    if top < low:
        return []
    return sorted({top, max(low, top // 2)}, reverse=True)


def reservation_first(
    la: LookAhead,
    upper: float,
    offer: Callable[[Schedule, Plan], object] | None = None,
    deadline: float | None = None,
) -> tuple[Schedule, Plan] | None:
    """The cheapest plan found by buying reserved pools first (module docstring), if it
    beats ``upper`` (the incumbent's cost); each better plan is handed to ``offer`` as it is
    found. Stops before a forward pass that would end after ``deadline``
    (a ``time.perf_counter()`` instant)."""
    inst = la.inst
    ranked = list(promise(la))[:MAX_POOLS]
    kept: dict[ReservedKey, int] = {}
    best: tuple[Schedule, Plan] | None = None
    cost = upper
    took = 0.0
    misses = 0
    for key in ranked:
        if misses >= MAX_MISSES:
            break
        choice: tuple[int, Schedule, Plan] | None = None
        for n in levels(inst, key):
            if deadline is not None and time.perf_counter() + took > deadline:
                return best
            t0 = time.perf_counter()
            sched = la.schedule({**kept, key: n})
            if sched is None:
                continue
            plan = cost_plan(inst, sched)
            took = max(took, time.perf_counter() - t0)
            if plan.objective >= cost - 1e-9 * max(1.0, abs(cost)):
                continue
            if choice is None or plan.objective < choice[2].objective:
                choice = (n, sched, plan)
        if choice is None:
            misses += 1
            continue
        misses = 0
        n, sched, plan = choice
        kept[key] = n
        cost = plan.objective
        best = (sched, plan)
        if offer is not None:
            offer(sched, plan)
    return best
