"""Greedy list scheduling: the lever-free baseline's schedule (formulations.baseline) and a
warm start for the solvers.

Phases are placed one by one in topological order, each as one contiguous run that respects
release, deadline, predecessors and the capacity left by phases placed before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from planner.configs import Config, ConfigSpace
from planner.costs import earliest_least, run_costs, weights
from planner.instance.model import Instance
from planner.schedule import Assignment, Schedule, reservations_for
from planner.windows import time_windows


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
    used: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(inst.hours))
    ends: dict[str, int] = {}
    out: dict[str, Assignment] = {}
    for name in inst.order:
        if name not in space.by_phase:
            continue
        p = inst.phase(name)
        ready = max([win.start[name]] + [ends[q] for q in p.predecessors if q in ends])
        best: tuple[float, int, Config] | None = None
        for c in space.by_phase[name]:
            if not allow(c):
                continue
            free = inst.capacity[(c.region, c.gpu)] - used[(c.region, c.gpu)] >= c.total_gpus - 1e-9
            # end by the latest time that still leaves successors their fastest run
            starts = np.arange(ready, win.end[name] - c.hours + 1)
            if not len(starts):
                continue
            blocked = np.concatenate([[0], np.cumsum(~free)])
            starts = starts[blocked[starts + c.hours] == blocked[starts]]
            if not len(starts):
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
        used[(c.region, c.gpu)][start : start + c.hours] += c.total_gpus
        ends[name] = start + c.hours
        out[name] = Assignment(c, tuple(range(start, start + c.hours)))
    reserved = reservations_for(inst, out)
    return None if reserved is None else Schedule(out, reserved)


def hottest_tier(inst: Instance, region: str, allowed: tuple[str, ...] | None = None) -> str:
    """The dearest storage tier of a region (among ``allowed`` ones, when given)."""
    tiers = inst.region(region).storage
    names = [t for t in tiers if allowed is None or t in allowed] or list(tiers)
    return max(names, key=lambda t: tiers[t].usd_per_gb_month)
