"""Among plans of equal cost, the one that finishes earliest (a second pass after any solver).

A solver stops at the first optimal plan it proves; with flat prices many plans cost the same
and nothing pulls it early (a three-phase chain that can end at hour 15 ended at hour 36 for
the same cost). This pass takes the contiguous phases in topological order and moves each
to the earliest start, on the same configuration, whose run costs no more
(:func:`planner.costs.run_costs`: hours, billing blocks, minimum rental, archive after the
end), that its predecessors' (possibly moved) ends allow and that fits in the capacity (and
reserved pool) the other phases leave. Preemptible phases keep their hours; regions and
configurations do not change, so transfers and porting do not either. The plan's cost never
rises: the caller keeps the result only if :func:`planner.costs.cost_plan` agrees. Under a
carbon cap a run moves only to hours where it emits no more
(:func:`planner.costs.run_emissions`), so the plan's emissions never rise either and a plan
within the cap stays within it.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from formulations.bounds import open_runs
from planner.costs import run_costs, run_emissions, weights
from planner.instance.model import Instance
from planner.schedule import Assignment, Pool, Schedule
from planner.windows import Windows

#: Relative tolerance on "costs no more" (sums of the same prices in another order).
TIE = 1e-12


def earliest(inst: Instance, schedule: Schedule, windows: Windows) -> Schedule:
    """The schedule with each contiguous phase moved as early as an equal or lower cost
    allows (module docstring)."""
    w = weights(inst)
    T = inst.hours
    capped = inst.spec.objective.carbon_cap_tonnes is not None
    used: dict[Pool, np.ndarray] = defaultdict(lambda: np.zeros(T))
    reserved_use: dict[tuple[str, str, str], np.ndarray] = defaultdict(lambda: np.zeros(T))
    for _, (c, hours) in schedule.all_parts():
        used[(c.region, c.gpu)][list(hours)] += c.total_gpus
        if c.contract == "reserved":
            reserved_use[(c.region, c.gpu, c.term)][list(hours)] += c.total_gpus
    out: dict[str, Assignment] = dict(schedule.assignments)
    moved = False
    for name in inst.order:
        if name not in out or name in schedule.segments or inst.phase(name).preemptible:
            continue
        c, hours = out[name]
        pool = (c.region, c.gpu)
        rkey = (c.region, c.gpu, c.term)
        start, n = hours[0], len(hours)
        ready = max(
            [
                windows.start.get(name, 0),
                *(schedule.parts(q)[-1].end for q in inst.phase(name).predecessors if q in out),
            ]
        )
        if ready >= start:
            continue
        starts = np.arange(ready, start + 1)
        cost = run_costs(inst, c, starts, w)
        now = cost[-1]
        ok = cost <= now + TIE * max(1.0, abs(now))
        if capped:
            emis = run_emissions(inst, c, starts)
            ok &= emis <= emis[-1] + TIE * max(1.0, abs(emis[-1]))
        # capacity without this phase's own run
        free = inst.capacity[pool] - used[pool]
        free[list(hours)] += c.total_gpus
        fits = free >= c.total_gpus - 1e-9
        if c.contract == "reserved":
            r = schedule.reserved.get(rkey, 0)
            ru = reserved_use[rkey].copy()
            ru[list(hours)] -= c.total_gpus
            fits &= ru + c.total_gpus <= r + 1e-9
        whole = open_runs(fits, n)[starts]
        cand = np.flatnonzero(ok & whole)
        if not len(cand) or starts[cand[0]] >= start:
            continue
        s0 = int(starts[cand[0]])
        new = tuple(range(s0, s0 + n))
        used[pool][list(hours)] -= c.total_gpus
        used[pool][list(new)] += c.total_gpus
        if c.contract == "reserved":
            reserved_use[rkey][list(hours)] -= c.total_gpus
            reserved_use[rkey][list(new)] += c.total_gpus
        out[name] = Assignment(c, new)
        moved = True
    return Schedule(out, schedule.reserved, schedule.segments) if moved else schedule
