"""Large-neighbourhood search around the incumbent: re-optimise a few phases with the hourly
MILP while every other phase keeps its configuration and hours (Shaw 1998; Pisinger &
Ropke, "Large neighborhood search", 2010).

A **neighbourhood** frees a set of phases (and, optionally, confines them to a span of hours
around where they run now). Its sub-model is the hourly MILP (:func:`formulations.exact.milp.model.
build`) of the free phases only, over what the fixed phases leave:

- capacity: the instance's per pool and hour minus the fixed phases' GPUs;
- windows: a free phase starts after its fixed predecessors end and ends before its fixed
  successors start (then the precedence-tightened windows are propagated among the free ones);
- transfers to or from a fixed neighbour: a cost on the free phase's configuration choice
  (``w_transfer output_gb x transfer(r -> r')``, added to z);
- porting: a family a fixed phase uses is already paid (its ``used`` costs 0);
- reserved pools: the commitment must still cover the fixed phases' reserved GPUs (the rows
  ``... <= R - fixed(t)`` and ``R >= max_t fixed(t)``);
- carbon cap: less the fixed phases' emissions.

The incumbent's free part is the sub-model's MIP start, so a neighbourhood never returns a
worse plan; the merged schedule is costed by :func:`planner.model.costs.cost_plan` (the cost model,
not the sub-model's objective, decides whether it is better). HiGHS runs in this process with
a node limit (so that a neighbourhood's result does not depend on the machine's speed) and a
time limit (so that it ends).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from formulations.exact.milp.model import MilpModel, build
from formulations.exact.milp.solution import point_from_schedule, schedule_from_point
from formulations.lp.highs_runner import solve_highs
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.costs import cost_plan, transfer_usd_per_gb, weights
from planner.model.plan import Plan
from planner.model.schedule import Assignment, Schedule, residual, with_reservations
from planner.model.windows import Windows
from planner.model.workload import output_gb_of

#: HiGHS node limit per neighbourhood.
NODE_LIMIT = 400


@dataclass(frozen=True)
class Neighbourhood:
    """Phases to re-optimise; ``span`` = (first, last + 1) hour they may use (None: their
    whole windows)."""

    free: tuple[str, ...]
    span: tuple[int, int] | None = None
    kind: str = ""


@dataclass
class Outcome:
    """What one neighbourhood gave: the merged schedule and plan when better, the sub-model's
    size and HiGHS's status."""

    schedule: Schedule | None
    plan: Plan | None
    variables: int
    nonzeros: int
    status: str
    seconds: float


def sub_windows(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    free: Sequence[str],
    span: tuple[int, int] | None,
) -> Windows:
    """Windows of the free phases inside the fixed ones' (module docstring), within ``span``
    but always holding the free phases' incumbent hours."""
    fset = set(free)
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    fewest = space.fewest_hours()
    for name in inst.order:
        if name not in fset:
            continue
        e, l_ = windows.start[name], windows.end[name]
        for q in inst.phase(name).predecessors:
            if q in schedule and q not in fset:
                e = max(e, schedule[q].end)
        for s in inst.successors(name):
            if s in schedule and s not in fset:
                l_ = min(l_, schedule[s].start)
        if span is not None:
            a = schedule[name]
            e = max(e, min(span[0], a.start))
            l_ = min(l_, max(span[1], a.end))
        start[name], end[name] = e, l_
    order = [n for n in inst.order if n in fset]
    for name in order:  # forward: after free predecessors could have finished
        for q in inst.phase(name).predecessors:
            if q in fset:
                start[name] = max(start[name], start[q] + fewest[q])
    for name in reversed(order):  # backward: leave the free successors their fewest hours
        for s in inst.successors(name):
            if s in fset:
                end[name] = min(end[name], end[s] - fewest[s])
    return Windows(start, end)


def _sliced_masks(
    masks: Mapping[tuple[str, int], np.ndarray] | None,
    windows: Windows,
    sub: Windows,
    space: ConfigSpace,
) -> dict[tuple[str, int], np.ndarray]:
    """The global masks (over the full windows) cut to the sub-windows."""
    out: dict[tuple[str, int], np.ndarray] = {}
    if not masks:
        return out
    for name in sub.start:
        e0 = windows.start[name]
        a, b = sub.start[name] - e0, sub.end[name] - e0
        for c in space.by_phase[name]:
            m = masks.get((name, c.index))
            if m is not None:
                out[(name, c.index)] = np.asarray(m[max(0, a) : max(a, b)], dtype=bool)
    return out


def sub_model(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    hood: Neighbourhood,
    masks: Mapping[tuple[str, int], np.ndarray] | None = None,
    sub_space: ConfigSpace | None = None,
    sub_win: Windows | None = None,
) -> MilpModel:
    """The hourly MILP of a neighbourhood (module docstring). ``sub_space`` / ``sub_win``
    (the free phases' configurations and windows, ``masks`` then over those windows) are for
    a model rebuilt after fixing."""
    free = [n for n in inst.order if n in set(hood.free)]
    fixed = [n for n in schedule if n not in set(hood.free)]
    if sub_win is None:
        win = sub_windows(inst, space, windows, schedule, free, hood.span)
        sub_space = space.restricted({n: space.by_phase[n] for n in free})
        m = _sliced_masks(masks, windows, win, sub_space)
    else:
        assert sub_space is not None
        win, m = sub_win, {k: np.array(v, dtype=bool) for k, v in (masks or {}).items()}
    # the incumbent's hours stay open whatever the masks say
    for name in free:
        c, hours = schedule[name]
        mk = m.get((name, c.index))
        if mk is not None:
            for t in hours:
                if 0 <= t - win.start[name] < len(mk):
                    mk[t - win.start[name]] = True
    # phases on one configuration each (a neighbourhood never introduces segments; the
    # residual capacity reads one assignment per fixed phase)
    mm = build(
        inst,
        sub_space,
        win,
        m,
        single=set(sub_space.by_phase),
        capacity=residual(inst, schedule, fixed),
    )
    lp = mm.lp
    wts = weights(inst)
    fset = set(free)
    for name in free:
        for c in sub_space.by_phase[name]:
            add = 0.0
            for s in inst.successors(name):
                if s in schedule and s not in fset:
                    gb = output_gb_of(inst, inst.phase(name))
                    add += gb * transfer_usd_per_gb(inst, c.region, schedule[s].config.region)
            for q in inst.phase(name).predecessors:
                if q in schedule and q not in fset:
                    gb = output_gb_of(inst, inst.phase(q))
                    add += gb * transfer_usd_per_gb(inst, schedule[q].config.region, c.region)
            if add:
                lp.cost[mm.z[(name, c.index)]] += wts.transfer * add
    fams = {inst.gpu(schedule[n].config.gpu).family for n in fixed}
    for fam, j in mm.used.items():
        if fam in fams:
            lp.cost[j] = 0.0
    if mm.R:
        fixed_res: dict[tuple[str, str, str], np.ndarray] = {}
        for n in fixed:
            c, hours = schedule[n]
            if c.contract == "reserved":
                u = fixed_res.setdefault((c.region, c.gpu, c.term), np.zeros(inst.hours))
                u[list(hours)] += c.total_gpus
        res_rows = lp.row_families.get("reserved")
        for pool, u in fixed_res.items():
            if pool not in mm.R:
                continue
            lp.lower[mm.R[pool]] = float(math.ceil(u.max() - 1e-9))
            if res_rows is not None:
                for r, key in zip(res_rows.members, res_rows.keys, strict=True):
                    # row keys: (region, gpu, hour), or (region, gpu, term, hour) under a term
                    k: tuple[Any, ...] = tuple(key)  # type: ignore[arg-type]
                    term, hour = (k[2], k[3]) if len(k) == 4 else ("", k[2])
                    if (k[0], k[1], term) == pool:
                        lp.row_upper[r] = -float(u[hour])
    cap = inst.spec.objective.carbon_cap_tonnes
    rows = lp.row_families.get("carbon_cap")
    if cap is not None and rows is not None:
        from planner.model.costs import carbon_row_scale, carbon_t

        emis = 0.0
        for n in fixed:
            c, hours = schedule[n]
            ci = inst.carbon[c.region]
            if ci is not None:
                emis += float(np.sum(carbon_t(c, ci[list(hours)])))
        lp.row_upper[rows.members[0]] = (cap - emis) * carbon_row_scale(cap)
    return mm


#: A neighbourhood model above this many nonzeros is fixed by its own relaxation and rebuilt.
FIX_ABOVE_NONZEROS = 20_000


def _start(mm: MilpModel, sub: Schedule) -> np.ndarray | None:
    """The MIP start of the incumbent's free part (None if the model cannot take it)."""
    start = point_from_schedule(mm, sub)
    if start is None:
        return None
    for j in mm.R.values():
        start[j] = max(start[j], mm.lp.lower[j])
    return None if mm.lp.violations(start) else start


def _fixed(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    hood: Neighbourhood,
    mm: MilpModel,
    upper: float,
) -> MilpModel:
    """The neighbourhood's model without what its own relaxation (the DP bound of
    :mod:`formulations.bounds.lagrange` over the free phases, in the capacity the fixed ones leave)
    proves useless for a sub-plan cheaper than the incumbent's ``upper``: the relaxation
    drops only costs >= 0 of the sub-model, so that is exact."""
    from formulations.bounds.lagrange import Relaxation

    rel = Relaxation(inst, mm.space, mm.windows, mm.masks, mm.capacity)
    ev = rel.evaluate(*rel.zero_prices())
    if not math.isfinite(ev.bound):
        return mm
    cb = rel.config_bounds(ev)
    tol = 1e-7 * max(1.0, abs(upper))
    keep = {}
    for name, configs in mm.space.by_phase.items():
        own = schedule[name].config
        keep[name] = tuple(
            c for k, c in enumerate(configs) if cb[name][k] <= upper + tol or c == own
        )
    sub_space = mm.space.restricted(keep)
    starts = rel.start_masks(ev, upper)
    masks: dict[tuple[str, int], np.ndarray] = {}
    for name, configs in sub_space.by_phase.items():
        W = mm.windows.end[name] - mm.windows.start[name]
        for c in configs:
            m = np.asarray(mm.masks.get((name, c.index), np.ones(W, dtype=bool)), dtype=bool)
            s = starts.get((name, c.index))
            masks[(name, c.index)] = m & s if s is not None else m.copy()
    return sub_model(inst, space, windows, schedule, hood, masks, sub_space, mm.windows)


def reoptimise(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    incumbent: float,
    hood: Neighbourhood,
    time_limit: float,
    masks: Mapping[tuple[str, int], np.ndarray] | None = None,
    threads: int | None = 1,
    node_limit: int = NODE_LIMIT,
    max_nonzeros: int = 150_000,
) -> Outcome:
    """Solve one neighbourhood from the incumbent; the merged schedule and its plan come back
    only when the plan costs less than ``incumbent``."""
    t0 = time.perf_counter()
    mm = sub_model(inst, space, windows, schedule, hood, masks)
    sub = Schedule({n: schedule[n] for n in hood.free}, schedule.reserved)
    start = _start(mm, sub)
    if mm.lp.num_nonzeros > FIX_ABOVE_NONZEROS and start is not None:
        mm = _fixed(inst, space, windows, schedule, hood, mm, mm.lp.objective_of(start))
        start = _start(mm, sub)
    nv, nz = mm.lp.num_vars, mm.lp.num_nonzeros
    if nz > max_nonzeros:
        return Outcome(None, None, nv, nz, "too large", time.perf_counter() - t0)
    left = time_limit - (time.perf_counter() - t0)
    if left <= 0.05:
        return Outcome(None, None, nv, nz, "no time", time.perf_counter() - t0)
    raw = solve_highs(
        mm.lp,
        left,
        1e-6,
        threads,
        start,
        isolate=False,
        options={"mip_max_nodes": int(node_limit), "presolve": "off"},
    )
    if raw.x is None:
        return Outcome(None, None, nv, nz, raw.status, time.perf_counter() - t0)
    got = schedule_from_point(mm, raw.x)
    merged: dict[str, Assignment] = dict(schedule.assignments)
    merged.update(got.assignments)
    full = with_reservations(inst, merged)
    if full is None:
        return Outcome(None, None, nv, nz, raw.status, time.perf_counter() - t0)
    plan = cost_plan(inst, full)
    if plan.objective < incumbent - 1e-7 * max(1.0, abs(incumbent)):
        return Outcome(full, plan, nv, nz, raw.status, time.perf_counter() - t0)
    return Outcome(None, None, nv, nz, raw.status, time.perf_counter() - t0)


# ----------------------------------------------------------------------------- the search


@dataclass
class SearchStats:
    tried: int = 0
    improved: int = 0
    skipped: int = 0
    seconds: float = 0.0


def _overlap(a: Assignment, b: Assignment, margin: int) -> bool:
    return a.start < b.end + margin and b.start < a.end + margin


def neighbourhoods(
    inst: Instance, schedule: Schedule, rng: np.random.Generator, size: int
) -> Neighbourhood:
    """One neighbourhood of about ``size`` phases, by one of three rules (drawn at random):

    - ``pool``: a phase and the phases in the same (region, GPU) pool whose runs overlap its
      own (with a day's margin), nearest first: they compete for the same GPUs;
    - ``chain``: a phase with its predecessors and successors (moving one needs room from
      the others);
    - ``time``: the phases running in a random span of the horizon, confined to that span
      (plus a day): re-plan a window of time.
    """
    names = list(schedule)
    kind = ("pool", "chain", "time")[int(rng.integers(3))]
    seed = names[int(rng.integers(len(names)))]
    a = schedule[seed]
    if kind == "pool":
        pool = (a.config.region, a.config.gpu)
        same = [
            n
            for n in names
            if n != seed
            and (schedule[n].config.region, schedule[n].config.gpu) == pool
            and _overlap(schedule[n], a, 24)
        ]
        others = [n for n in names if n != seed and n not in same and _overlap(schedule[n], a, 0)]
        rng.shuffle(same)
        rng.shuffle(others)
        free = [seed, *same, *others][:size]
        return Neighbourhood(tuple(free), None, kind)
    if kind == "chain":
        near = [*inst.phase(seed).predecessors, *inst.successors(seed)]
        near = [n for n in near if n in schedule]
        rng.shuffle(near)
        free = [seed, *near]
        more = [n for n in names if n not in free and _overlap(schedule[n], a, 0)]
        rng.shuffle(more)
        return Neighbourhood(tuple([*free, *more][:size]), None, kind)
    T = inst.hours
    width = max(24, int(T * rng.uniform(0.05, 0.2)))
    lo = int(rng.integers(0, max(1, T - width)))
    hi = lo + width
    inside = [n for n in names if schedule[n].start < hi and schedule[n].end > lo]
    rng.shuffle(inside)
    free = inside[:size] or [seed]
    return Neighbourhood(tuple(free), (max(0, lo - 24), min(T, hi + 24)), kind)
