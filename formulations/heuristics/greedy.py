"""Greedy list scheduling: the lever-free baseline's schedule (formulations.heuristics.baseline) and
a warm start for the solvers.

Phases are placed one by one in topological order, each as one contiguous run that respects
release, deadline, predecessors and the capacity left by phases placed before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import cast

import numpy as np

from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import RunTable, Weights, earliest_least, run_costs, run_table, weights
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
    if first_start_only:
        return _earliest(inst, space, allow, wts, win.start, win.end)

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
            costs = run_costs(inst, c, starts, wts)
            ok = np.isfinite(costs)  # a run through a blocked hour (outside a reserved term)
            starts, costs = starts[ok], costs[ok]
            if not len(starts):
                continue
            k = earliest_least(costs)
            cost, start = float(costs[k]), int(starts[k])
            if best is None or (cost, start) < (best[0], best[1]):
                best = (cost, start, c)
        if best is None:
            return None
        _, start, c = best
        return Assignment(c, tuple(range(start, start + c.hours)))

    return _reserved(inst, list_schedule(inst, space, win.start, place))


def _earliest(
    inst: Instance,
    space: ConfigSpace,
    allow: Callable[[Config], bool],
    wts: Weights,
    start: Mapping[str, int],
    end: Mapping[str, int],
) -> Schedule | None:
    """:func:`greedy` with ``first_start_only``, the configurations of a phase costed at
    once: each configuration at the first start after ``ready`` where its pool holds its GPUs
    for its whole run (the same start for every configuration of a pool, size and run
    length), by the phase's :class:`RunTable` (the same costs to the bit as
    :func:`run_costs`). A configuration that cannot run there (a reserved term, a deadline's
    reserve) takes its first start where it can, as :func:`greedy` does. The first
    configuration of least ``(cost, start)`` in the space's order wins, as in :func:`greedy`."""

    def place(name: str, ready: int, used: Usage) -> Assignment | None:
        table, group, keys = _phase_table(inst, space, name, wts)
        ok = np.fromiter((allow(c) for c in table.configs), bool, len(table.configs))
        counted: dict[tuple[str, str, float], np.ndarray] = {}
        first = np.full(len(keys), -1, dtype=np.int64)
        # the groups present, ascending (np.unique would import numpy.ma: 20 ms a start)
        for k in np.flatnonzero(np.bincount(group[ok], minlength=len(keys))):
            region, gpu, total, hours = keys[k]
            blocked = counted.get((region, gpu, total))
            if blocked is None:
                pool = (region, gpu)
                free = inst.capacity[pool] - used[pool] >= total - 1e-9
                blocked = counted[(region, gpu, total)] = np.concatenate([[0], np.cumsum(~free)])
            starts = np.arange(ready, max(ready, end[name] - hours + 1))
            fit = starts[blocked[starts + hours] == blocked[starts]]
            if len(fit):
                first[k] = fit[0]
        at = first[group]
        which = np.flatnonzero(ok & (at >= 0))
        if not len(which):
            return None
        s = at[which]
        cost = table.costs(which, s)
        for j in np.flatnonzero(~np.isfinite(cost)):
            # its first start is outside its hours: the first start inside them, if any
            c = table.configs[int(which[j])]
            region, gpu, total, hours = keys[group[which[j]]]
            blocked = counted[(region, gpu, total)]
            starts = np.arange(ready, max(ready, end[name] - hours + 1))
            starts = starts[blocked[starts + hours] == blocked[starts]]
            costs = run_costs(inst, c, starts, wts)
            finite = np.flatnonzero(np.isfinite(costs))
            if len(finite):
                cost[j], s[j] = costs[finite[0]], starts[finite[0]]
        live = np.flatnonzero(np.isfinite(cost))
        if not len(live):
            return None
        best = live[np.lexsort((which[live], s[live], cost[live]))[0]]
        c, at0 = table.configs[int(which[best])], int(s[best])
        return Assignment(c, tuple(range(at0, at0 + c.hours)))

    return _reserved(inst, list_schedule(inst, space, start, place))


def _reserved(inst: Instance, out: dict[str, Assignment] | None) -> Schedule | None:
    """The list schedule ``out`` with the least reservations that cover its reserved runs;
    None without one, or when a reserved offer's maximum is exceeded."""
    if out is None:
        return None
    reserved = reservations_for(inst, out)
    return None if reserved is None else Schedule(out, reserved)


#: A phase's run table, each configuration's group (its pool, size and run length) and the
#: groups' (region, GPU type, GPUs, hours).
_Table = tuple[RunTable, np.ndarray, list[tuple[str, str, float, int]]]


def _phase_table(inst: Instance, space: ConfigSpace, name: str, wts: Weights) -> _Table:
    """The :class:`RunTable` of a phase's configurations in ``space`` and their groups, built
    once per space, instance and weights (the baselines run two greedy plans on each
    space); of a phase narrowed from another space, that space's, narrowed (or that space's
    itself when the phase kept all of its configurations)."""
    key = ("run_table", name, id(inst), wts)
    hit = cast("_Table | None", space.memo.get(key))
    if hit is not None and hit[0].inst() is inst:
        return hit
    configs = space.by_phase[name]
    source = space.narrowed_from
    if source is not None and source.by_phase.get(name) is configs:
        return _phase_table(inst, source, name, wts)
    if source is not None and name in space.positions:
        table, group, keys = _phase_table(inst, source, name, wts)
        at = np.asarray(space.positions[name], dtype=np.int64)
        out = (table.subset(at, configs), group[at], keys)
        space.memo[key] = out
        return out
    ids: dict[tuple[str, str, float, int], int] = {}
    group = np.fromiter(
        (ids.setdefault((c.region, c.gpu, c.total_gpus, c.hours), len(ids)) for c in configs),
        np.int64,
        len(configs),
    )
    out = (run_table(inst, configs, wts), group, list(ids))
    space.memo[key] = out
    return out


def hottest_tier(inst: Instance, region: str, allowed: tuple[str, ...] | None = None) -> str:
    """The dearest storage tier of a region (among ``allowed`` ones, when given)."""
    tiers = inst.region(region).storage
    names = [t for t in tiers if allowed is None or t in allowed] or list(tiers)
    return max(names, key=lambda t: tiers[t].usd_per_gb_month)
