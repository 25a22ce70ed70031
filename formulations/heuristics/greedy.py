"""Greedy list scheduling: the lever-free baseline's schedule (formulations.heuristics.baseline) and
a warm start for the solvers.

Phases are placed one by one in topological order, each as one contiguous run that respects
release, deadline, predecessors and the capacity left by phases placed before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np

from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import earliest_least, run_costs, weights
from planner.model.schedule import Assignment, Pool, Schedule, reservations_for
from planner.model.windows import time_windows

#: GPUs in use by the phases placed so far, per pool and hour (zero where none ran).
Usage = defaultdict[Pool, np.ndarray]


def list_schedule(
    inst: Instance,
    space: ConfigSpace,
    release: Mapping[str, int],
    place: Callable[[str, int, Usage], Assignment | None],
) -> dict[str, Assignment] | None:
    """List scheduling: the phases of ``space`` in topological order, each placed by
    ``place(name, ready, used)`` no earlier than ``ready`` (its ``release`` and the ends of
    its predecessors placed before it), its GPUs then added to ``used``. None as soon as
    ``place`` finds no placement for some phase."""
    used: Usage = defaultdict(lambda: np.zeros(inst.hours))
    ends: dict[str, int] = {}
    out: dict[str, Assignment] = {}
    for name in inst.order:
        if name not in space.by_phase:
            continue
        preds = inst.phase(name).predecessors
        ready = max([release[name]] + [ends[q] for q in preds if q in ends])
        a = place(name, ready, used)
        if a is None:
            return None
        used[(a.config.region, a.config.gpu)][list(a.hours)] += a.config.total_gpus
        ends[name] = a.end
        out[name] = a
    return out


def greedy(
    inst: Instance,
    space: ConfigSpace,
    allow: Callable[[Config], bool] = lambda c: c.contract != "reserved",
    first_start_only: bool = False,
) -> Schedule | None:
    """Place each phase, in topological order, on the configuration and contiguous start of
    least cost, inside its precedence-tightened window. With ``first_start_only`` each
    configuration is tried only at its earliest feasible start (no time shifting). The
    reservations are the least that cover the reserved runs. None if some phase cannot be
    placed or a reserved offer's maximum is exceeded."""
    wts = weights(inst)
    win = time_windows(inst, space.fewest_hours())

    def place(name: str, ready: int, used: Usage) -> Assignment | None:
        best: tuple[float, int, Config] | None = None
        # hours a pool cannot hold so many more GPUs, counted: the same for every
        # configuration of a pool and size (most differ in layout and tier only)
        counted: dict[tuple[str, str, float], np.ndarray] = {}
        # ... and the starts whose run fits, by pool, size and run length
        fitting: dict[tuple[str, str, float, int], np.ndarray] = {}
        for c in space.by_phase[name]:
            if not allow(c):
                continue
            key = (c.region, c.gpu, c.total_gpus)
            runs = (*key, c.hours)
            starts = fitting.get(runs)
            if starts is None:
                blocked = counted.get(key)
                if blocked is None:
                    pool = (c.region, c.gpu)
                    free = inst.capacity[pool] - used[pool] >= c.total_gpus - 1e-9
                    blocked = counted[key] = np.concatenate([[0], np.cumsum(~free)])
                # end by the latest time that still leaves successors their fastest run
                starts = np.arange(ready, max(ready, win.end[name] - c.hours + 1))
                starts = fitting[runs] = starts[blocked[starts + c.hours] == blocked[starts]]
            if not len(starts):
                continue
            if first_start_only:
                # the earliest start that fits, unless its run is blocked (a reserved term)
                at = run_costs(inst, c, starts[:1], wts)
                if np.isfinite(at[0]):
                    if best is None or (float(at[0]), int(starts[0])) < (best[0], best[1]):
                        best = (float(at[0]), int(starts[0]), c)
                    continue
            costs = run_costs(inst, c, starts, wts)
            ok = np.isfinite(costs)  # a run through a blocked hour (outside a reserved term)
            starts, costs = starts[ok], costs[ok]
            if not len(starts):
                continue
            if first_start_only:
                starts, costs = starts[:1], costs[:1]
            k = earliest_least(costs)
            cost, start = float(costs[k]), int(starts[k])
            if best is None or (cost, start) < (best[0], best[1]):
                best = (cost, start, c)
        if best is None:
            return None
        _, start, c = best
        return Assignment(c, tuple(range(start, start + c.hours)))

    out = list_schedule(inst, space, win.start, place)
    if out is None:
        return None
    reserved = reservations_for(inst, out)
    return None if reserved is None else Schedule(out, reserved)


def hottest_tier(inst: Instance, region: str, allowed: tuple[str, ...] | None = None) -> str:
    """The dearest storage tier of a region (among ``allowed`` ones, when given)."""
    tiers = inst.region(region).storage
    names = [t for t in tiers if allowed is None or t in allowed] or list(tiers)
    return max(names, key=lambda t: tiers[t].usd_per_gb_month)
