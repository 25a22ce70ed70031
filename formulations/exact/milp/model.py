"""The hourly time-indexed MILP, built family by family into a :class:`LinearProgram`.

Sets: phases p (not done), their configurations c (from :mod:`planner.model.configs`), hours t of
p's time window [e_p, l_p) (release/deadline tightened through the precedence graph), regions
r, GPU types g, families f.

Decisions (one variable family each, built by the function named after it):

- ``z[p,c]``   binary   phase p runs configuration c
- ``x[p,c,t]`` binary   p runs c during hour t (continuous for non-preemptible p: the sum of
  its starts y below)
- ``u[p,c,t]`` >= 0     a run segment of preemptible p on c starts at t (a resume)
- ``y[p,c,t]`` binary   non-preemptible p starts its one run on c at hour t (x is then
  continuous: ``x[p,c,t] = sum_{t - n_c < tau <= t} y[p,c,tau]``)
- ``S[p,t]``   >= 0     non-preemptible p with predecessors has started by hour t
- ``P[p,t]``   >= 0     fraction of p's work done before hour t
- ``F[p,t]``   binary   p has finished before hour t (continuous, summed from y, for
  non-preemptible p)
- ``s[p,t]``   in [0,1] p has started by hour t (preemptible phases: pause storage)
- ``a[p,r,t]`` >= 0     p's output is archived in region r during hour t
- ``b[p,c,k]`` binary   billing block k of c is paid (billing granularity > 1 h)
- ``m[p,c]``   >= 0     hours of minimum rental still owed
- ``R[r,g,k]`` integer  reserved GPUs committed under term k ("" for an offer without terms);
  ``sign[r,g,k]`` binary when a minimum applies
- ``w[p,q,r,r']`` >= 0  the artifact of p moves from r to r' for successor q
- ``used[f]``  binary   GPU family f is used (one-time porting cost)

All costs are per docs/cost-model.md, multiplied by the objective weights.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping

import numpy as np

from formulations.bounds.separable import open_runs
from formulations.exact.milp import segments
from formulations.exact.milp.columns import Column
from formulations.exact.milp.variables import MilpModel
from formulations.lp.linear import LinearProgram
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import (
    Weights,
    block_prices,
    carbon_row_scale,
    carbon_t,
    entry_usd,
    fixed_cost,
    hourly_cost,
    pause_usd_per_h,
    pool_usd_per_gpu,
    transfer_usd_per_gb,
    usd_per_hour_early,
    weights,
)
from planner.model.windows import Windows, time_windows
from planner.model.workload import output_gb_of

# ----------------------------------------------------------------------------- families


def add_assignment(mm: MilpModel, wts: Weights) -> None:
    """Each phase runs exactly one configuration:  sum_c z[p,c] = 1.

    z carries the configuration's one-time costs: data staging and retrieval (transfer),
    the archive of its output after the deadline, (T - l_p) x archive_c (storage), and the
    minimum-rental surcharge (max(n_c, min_c) - n_c) x rho_c when billed hourly (rental).
    A phase re-planned while running pays its entry cost mu_c (the migration from its running
    configuration) on z, refunded on x[p,c,release] for the running configuration itself
    (going on from the release costs nothing): mu_c (z[p,c] - x[p,c,release])."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            continue
        keys = [(name, c.index) for c in configs]
        l_ = mm.windows.end[name]
        cost = []
        for c in configs:
            k = fixed_cost(inst, c, l_, wts, least_entry=False)  # the full entry below
            if inst.phase(name).preemptible:
                k -= wts.failure * c.resume_usd  # the first segment is not a resume
            if c.entry is not None:
                k += entry_usd(inst, c, wts, -1)
            cost.append(k)
        idx = lp.add_vars("z", keys, 0, 1, True, cost)
        for c, j in zip(configs, idx, strict=True):
            mm.z[(name, c.index)] = int(j)
        lp.add_row("assign", name, idx, np.ones(len(idx)), 1.0, 1.0)


def add_runs(mm: MilpModel, wts: Weights) -> None:
    """Work: sum_t x[p,c,t] = n_c z[p,c].

    Non-preemptible p runs once, from a start y: ``sum_tau y[p,c,tau] = z[p,c]`` over the
    starts whose n_c hours are all open, and ``x[p,c,t] = sum_{t - n_c < tau <= t}
    y[p,c,tau]`` (x continuous). Its LP relaxation is the convex hull of the contiguous runs
    of each configuration, as in the start-time model (:mod:`formulations.exact.starttime`); a
    contiguity row on segment starts (``sum_t u <= z``) admits x spread thinly over the whole
    window instead. The difference form ``x[t] - x[t-1] = y[t] - y[t-n_c]`` (four nonzeros a
    row) has the same LP; HiGHS's cut loop ran slower on it (medium-x4 1.34% against 1.22%
    after 60 s), so it is used only where the sums would be large
    (:data:`SUMMED_RUN_MAX_RATIO`). In the summed form x is a defined column
    (:meth:`~formulations.lp.linear.LinearProgram.add_definition`): HiGHS gets the sums in its
    place (capacity, billing and carbon rows on y directly, the hourly costs summed onto
    each start), which halved medium-x4's root LP (12 s to 5 s).

    Preemptible p: u[p,c,t] >= x[p,c,t] - x[p,c,t-1], each segment after the first costs the
    resume overhead (u carries resume_c, z refunds one); a resume that costs less than 0
    also gets u <= x[t], u <= 1 - x[t-1] (:func:`_segment_starts_exact`)."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            continue
        p = inst.phase(name)
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        mm.columns[name] = []
        for c in configs:
            hours = np.arange(e, l_)
            if len(hours) < c.hours:
                hours = hours[:0]
            cost = hourly_cost(inst, c, wts)[hours] if len(hours) else np.zeros(0)
            mask = mm.masks.get((name, c.index))
            upper = np.ones(len(hours)) if mask is None or not len(hours) else mask.astype(float)
            blocked = ~np.isfinite(cost)
            if blocked.any():  # outside a reserved term: never run
                cost, upper = np.where(blocked, 0.0, cost), np.where(blocked, 0.0, upper)
            if (
                c.continues
                and c.entry is not None
                and len(hours)
                and hours[0] == inst.release[name]
            ):
                cost = cost.copy()
                cost[0] -= entry_usd(inst, c, wts, -1)
            xi = lp.add_vars(
                "x", [(name, c.index, int(t)) for t in hours], 0, upper, p.preemptible, cost
            )
            mm.x[(name, c.index)] = (hours, xi)
            zj = mm.z[(name, c.index)]
            mm.columns[name].append(Column((name, c.index), c, hours, xi, zj))
            if not p.preemptible:
                _run_starts(mm, name, c, hours, upper, xi, zj)
                continue
            lp.add_row(
                "work",
                (name, c.index),
                [*xi.tolist(), zj],
                [1.0] * len(xi) + [-float(c.hours)],
                0.0,
                0.0,
            )
            if len(hours) == 0:
                continue
            ucost = wts.failure * c.resume_usd if p.preemptible else 0.0
            ui = lp.add_vars("u", [(name, c.index, int(t)) for t in hours], 0, 1, False, ucost)
            mm.u[(name, c.index)] = ui
            for k in range(len(hours)):
                if k == 0:
                    lp.add_at_least("segment", (name, c.index, int(hours[k])), ui[k], xi[k])
                else:
                    lp.add_row(
                        "segment",
                        (name, c.index, int(hours[k])),
                        [ui[k], xi[k], xi[k - 1]],
                        [1.0, -1.0, 1.0],
                        0.0,
                    )
            if ucost < 0:
                _segment_starts_exact(mm, name, c.index, hours, xi, ui)


#: ``x[t] = sum of the starts covering t`` while that takes at most this many nonzeros per
#: hour of the window on average; beyond it (long runs in long windows) the difference form.
SUMMED_RUN_MAX_RATIO = 64


def _run_starts(
    mm: MilpModel,
    name: str,
    c: Config,
    hours: np.ndarray,
    upper: np.ndarray,
    xi: np.ndarray,
    zj: int,
) -> None:
    """The start variables of a non-preemptible phase's configuration and the rows tying
    them to x and z (:func:`add_runs`)."""
    lp, n = mm.lp, c.hours
    W = len(hours)
    pos = np.flatnonzero(open_runs(np.asarray(upper) > 0, n))
    yi = lp.add_vars("y", [(name, c.index, int(hours[k])) for k in pos], 0, 1, True, 0.0)
    mm.y[(name, c.index)] = (hours[pos], yi)
    lp.add_row("one_start", (name, c.index), [*yi.tolist(), zj], [1.0] * len(yi) + [-1.0], 0, 0)
    at = dict(zip(pos.tolist(), yi.tolist(), strict=True))
    summed = len(pos) * n <= SUMMED_RUN_MAX_RATIO * max(W, 1)
    for k in range(W):
        key = (name, c.index, int(hours[k]))
        if summed:  # x is the sum: the solver's copy substitutes it (linear.substituted)
            ys = [at[s] for s in range(max(0, k - n + 1), k + 1) if s in at]
            lp.add_definition("run_of_start", key, int(xi[k]), ys, [1.0] * len(ys))
            continue
        # x[t] - x[t-1] - y[t] + y[t-n] = 0
        idx, val = [int(xi[k])], [1.0]
        if k > 0:
            idx.append(int(xi[k - 1]))
            val.append(-1.0)
        if k in at:
            idx.append(at[k])
            val.append(-1.0)
        if k - n in at:
            idx.append(at[k - n])
            val.append(1.0)
        lp.add_row("run_of_start", key, idx, val, 0.0, 0.0)


def _segment_starts_exact(
    mm: MilpModel, name: str, index: int, hours: np.ndarray, xi: np.ndarray, ui: np.ndarray
) -> None:
    """A resume that costs less than 0 (negative power prices) would pull u to 1 in every
    hour: cap it from above too, u[t] <= x[t] and u[t] <= 1 - x[t-1], so that u = 1 exactly
    where a segment starts and the model's cost of a plan is its cost."""
    lp = mm.lp
    for k in range(len(hours)):
        key = (name, index, int(hours[k]))
        lp.add_at_most("segment_runs", key, ui[k], xi[k])
        if k > 0:
            lp.add_row("segment_after_pause", key, [ui[k], xi[k - 1]], [1.0, 1.0], upper=1.0)


def add_progress(mm: MilpModel, wts: Weights) -> None:
    """P[p,t] = P[p,t-1] + sum_c x[p,c,t-1] / n_c with P[p,e_p] = 0, and the finish indicator
    F[p,t] in {0,1} with  F <= P  and  F >= 1 - N_p (1 - P),  N_p = max_c n_c, so that F = 1
    exactly when all work is done before t (P = 1; otherwise P <= 1 - 1/n_c).

    A non-preemptible phase has finished before t when its start is at most t - n_c:
    ``F[p,t] = F[p,t-1] + sum_c y[p,c,t-n_c]`` (continuous, exact for integral y; no P)."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            continue
        needs = (
            inst.successors(name)
            or inst.phase(name).preemptible
            or any(c.archive_per_h > 0 for c in configs)
            or usd_per_hour_early(inst, name) > 0
        )
        if not needs or not configs:
            continue
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        n_max = max(c.hours for c in configs)
        ts = list(range(e + 1, l_))
        if not ts:
            continue
        if not inst.phase(name).preemptible:
            mm.F[name] = _cumulative(mm, "F", name, ts, [(c, c.hours) for c in configs])
            continue
        Pi = lp.add_vars("P", [(name, t) for t in ts], 0, 1, False, 0.0)
        Fi = lp.add_vars("F", [(name, t) for t in ts], 0, 1, True, 0.0)
        mm.P[name] = {t: int(j) for t, j in zip(ts, Pi, strict=True)}
        mm.F[name] = {t: int(j) for t, j in zip(ts, Fi, strict=True)}
        for k, t in enumerate(ts):
            idx: list[int] = [int(Pi[k])]
            val: list[float] = [1.0]
            if k > 0:
                idx.append(int(Pi[k - 1]))
                val.append(-1.0)
            for c in configs:
                hours, xi = mm.x[(name, c.index)]
                pos = t - 1 - e
                if 0 <= pos < len(hours):
                    idx.append(int(xi[pos]))
                    val.append(-1.0 / c.hours)
            lp.add_row("progress", (name, t), idx, val, 0.0, 0.0)
            lp.add_at_most("finished_ub", (name, t), int(Fi[k]), int(Pi[k]))
            lp.add_row(
                "finished_lb",
                (name, t),
                [int(Fi[k]), int(Pi[k])],
                [1.0, -float(n_max)],
                lower=1.0 - n_max,
            )


def _cumulative(
    mm: MilpModel, family: str, name: str, ts: list[int], shifts: list[tuple[Config, int]]
) -> dict[int, int]:
    """Continuous ``V[t] = V[t-1] + sum_(c, d) y[p,c,t-d]`` over hours ``ts`` (V = 0 before
    the first): the starts of p at or before t - d, d = n_c (finished, F) or 0 (started, S).
    ``ts`` begins at p's window start (S) or one after it (F), so no start falls before it."""
    lp = mm.lp
    vi = lp.add_vars(family, [(name, t) for t in ts], 0, 1, False, 0.0)
    by_hour: dict[int, list[int]] = defaultdict(list)
    for c, d in shifts:
        starts, yi = mm.y[(name, c.index)]
        for s, j in zip(starts.tolist(), yi.tolist(), strict=True):
            by_hour[s + d].append(j)
    for k, t in enumerate(ts):
        idx, val = [int(vi[k])], [1.0]
        if k > 0:
            idx.append(int(vi[k - 1]))
            val.append(-1.0)
        ys = by_hour.get(t, [])
        idx.extend(ys)
        val.extend([-1.0] * len(ys))
        lp.add_row(f"{family}_cumulative", (name, t), idx, val, 0.0, 0.0)
    return {t: int(j) for t, j in zip(ts, vi, strict=True)}


def finished(mm: MilpModel, name: str, t: int) -> tuple[int | None, float]:
    """F[p,t] as (variable, constant): before the window 0, after it 1."""
    e, l_ = mm.windows.start[name], mm.windows.end[name]
    if t <= e:
        return None, 0.0
    if t >= l_:
        return None, 1.0
    return mm.F[name][t], 0.0


def add_precedence(mm: MilpModel, wts: Weights) -> None:
    """A phase runs only after each predecessor has finished:
    sum_c x[q,c,t] <= F[p,t]  for every edge p -> q and hour t of q's window; for a
    non-preemptible q the stronger S[q,t] <= F[p,t] with S[q,t] = sum_{c, tau <= t} y[q,c,tau]
    (started by t; Pritsker, Watters & Wolfe 1969, as in :mod:`formulations.exact.starttime`)."""
    inst, lp = mm.inst, mm.lp
    for q, configs in mm.space.by_phase.items():
        preds = [p for p in inst.phase(q).predecessors if p in mm.space.by_phase]
        e, l_ = mm.windows.start[q], mm.windows.end[q]
        started = None
        if preds and q not in mm.segmented and not inst.phase(q).preemptible and l_ > e:
            started = _cumulative(mm, "S", q, list(range(e, l_)), [(c, 0) for c in configs])
            mm.S[q] = started
        for p in preds:  # a done predecessor's artifact already exists
            for t in range(e, l_):
                var, const = finished(mm, p, t)
                if var is None and const >= 1.0:
                    continue
                idx = [started[t]] if started is not None else hour_columns(mm, q, t)
                if not idx:
                    continue
                vals = [1.0] * len(idx)
                if var is not None:
                    idx.append(var)
                    vals.append(-1.0)
                lp.add_row("precedence", (p, q, t), idx, vals, upper=const)


def loose_columns(mm: MilpModel) -> np.ndarray:
    """The integer columns of the phases that may pause, not in segments: their hours x and
    finish indicators F. Solved as continuous they give a relaxation (its bound holds; the
    runs that may not pause, every z and every precedence into such a run stay exact, since
    ``S[q,t] <= F[p,t]`` with S in {0, 1} forces F = 1 and so P = 1)."""
    out: list[int] = []
    for name in mm.space.by_phase:
        if name in mm.segmented or not mm.inst.phase(name).preemptible:
            continue
        for c in mm.space.by_phase[name]:
            out.extend(mm.x[(name, c.index)][1].tolist())
        out.extend(mm.F.get(name, {}).values())
    integer = np.asarray(mm.lp.integer, dtype=bool)
    cols = np.asarray(out, dtype=np.int64)
    return cols[integer[cols]] if len(cols) else cols


def all_columns(mm: MilpModel) -> list[Column]:
    """Every phase's x columns, phases in build order."""
    return [col for cols in mm.columns.values() for col in cols]


def hour_columns(mm: MilpModel, name: str, t: int) -> list[int]:
    """The x columns of phase ``name`` in hour t (every configuration, every segment)."""
    pos = t - mm.windows.start[name]
    return [int(col.xi[pos]) for col in mm.columns.get(name, ()) if 0 <= pos < len(col.hours)]


def region_choice(mm: MilpModel, name: str, region: str, last: bool) -> list[int]:
    """The variables whose sum is 1 when phase ``name`` starts (``last`` False) or ends
    (``last`` True) in ``region``: its z in that region, or for a phase in segments the first
    segment's z there or the last segment's region indicator."""
    if name not in mm.segmented:
        return [mm.z[(name, c.index)] for c in mm.space.by_phase[name] if c.region == region]
    if last:
        j = mm.last.get((name, region))
        return [] if j is None else [j]
    where = {c.index: c.region for c in mm.space.by_phase[name]}
    return [j for (p, k, ci), j in mm.zs.items() if p == name and k == 0 and where[ci] == region]


def choice_groups(mm: MilpModel, name: str) -> list[list[tuple[Config, int]]]:
    """Groups of (configuration, z) of which at most one is chosen: the phase's z, or one
    group per segment."""
    if name not in mm.segmented:
        return [[(c, mm.z[(name, c.index)]) for c in mm.space.by_phase[name]]]
    by_config = {c.index: c for c in mm.space.by_phase[name]}
    groups: dict[int, list[tuple[Config, int]]] = defaultdict(list)
    for (p, k, ci), j in mm.zs.items():
        if p == name:
            groups[k].append((by_config[ci], j))
    return [groups[k] for k in sorted(groups)]


def pool_columns(
    mm: MilpModel, reserved_only: bool = False
) -> dict[tuple[str, str, int], tuple[list[int], list[float]]]:
    """Per (region, GPU type, hour): the x columns of every configuration in that pool and
    hour, and their GPUs (working + spare); only reserved-contract ones if ``reserved_only``."""
    pools: dict[tuple[str, str, int], tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for col in all_columns(mm):
        c = col.config
        if reserved_only and c.contract != "reserved":
            continue
        for t, j in zip(col.hours.tolist(), col.xi.tolist(), strict=True):
            ids, vals = pools[(c.region, c.gpu, t)]
            ids.append(j)
            vals.append(c.total_gpus)
    return pools


def reserved_columns(
    mm: MilpModel,
) -> dict[tuple[str, str, str], dict[int, tuple[list[int], list[float]]]]:
    """Per reserved (region, GPU type, term) and hour: the x columns of the reserved-contract
    configurations under that term, and their GPUs (hours a term does not cover are fixed to
    0 and left out)."""
    out: dict[tuple[str, str, str], dict[int, tuple[list[int], list[float]]]] = defaultdict(dict)
    upper = mm.lp.upper
    for col in all_columns(mm):
        c = col.config
        if c.contract != "reserved":
            continue
        by_hour = out[(c.region, c.gpu, c.term)]
        for t, j in zip(col.hours.tolist(), col.xi.tolist(), strict=True):
            if c.term and upper[j] <= 0:
                continue
            ids, vals = by_hour.setdefault(t, ([], []))
            ids.append(j)
            vals.append(c.total_gpus)
    return out


def add_capacity(mm: MilpModel, wts: Weights) -> None:
    """sum over phases and configurations in pool (r,g) of (gpus_c + spares_c) x[p,c,t]
    <= capacity[r,g,t]; and for reserved configurations under term k <= R[r,g,k] in the
    term's hours (R costs w_rental x pool_usd_per_gpu(r,g,k): price x T for the
    whole-horizon reservation)."""
    inst, lp = mm.inst, mm.lp
    pools = pool_columns(mm)
    reserved = reserved_columns(mm)
    for (r, g, t), (ids, vals) in sorted(pools.items()):
        cap = float(mm.capacity[(r, g)][t])
        if sum(vals) <= cap:
            continue  # never binding
        lp.add_row("capacity", (r, g, t), ids, vals, upper=cap)
    for r, g, term in sorted({key for key in reserved}):
        tm = inst.term(r, g, term)
        assert tm is not None
        hi = tm.max_gpus if tm.max_gpus is not None else float(inst.capacity[(r, g)].max())
        cost = wts.rental * pool_usd_per_gpu(inst, r, g, term)
        key = (r, g, term)
        var = (r, g) if not term else key
        j = int(lp.add_vars("R", [var], 0, hi, True, cost)[0])
        mm.R[key] = j
        if tm.min_gpus > 0:
            sj = int(lp.add_vars("sign", [var], 0, 1, True, 0.0)[0])
            mm.sign[key] = sj
            lp.add_row("reserved_min", var, [j, sj], [1.0, -float(tm.min_gpus)], lower=0.0)
            lp.add_row("reserved_max", var, [j, sj], [1.0, -float(hi)], upper=0.0)
    for (r, g, term), by_hour in sorted(reserved.items()):
        for hour, (ids, vals) in sorted(by_hour.items()):
            lp.add_row(
                "reserved",
                (r, g, hour) if not term else (r, g, term, hour),
                [*ids, mm.R[(r, g, term)]],
                [*vals, -1.0],
                upper=0.0,
            )
    add_reserved_cover(mm)


def add_reserved_cover(mm: MilpModel) -> None:
    """Valid inequalities for the LP bound: a phase that runs a reserved configuration at
    all needs the commitment for its GPUs, ``sum_{c reserved in (r,g,k)} G_c z[p,c] <=
    R[r,g,k]`` (implied by the hourly rows for integer x; the LP, which spreads x thinly over
    the window, does not see it: month-70b's reduced MILP closed 0.1% in 5.9 s with these rows
    and 29.3 s without, shared machine). Phases in segments are left out (their z differ)."""
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            continue
        by_pool: dict[tuple[str, str, str], list[Config]] = defaultdict(list)
        for c in configs:
            key = (c.region, c.gpu, c.term)
            if c.contract == "reserved" and key in mm.R and len(mm.x[(name, c.index)][0]):
                by_pool[key].append(c)
        for pool, cs in sorted(by_pool.items()):
            mm.lp.add_row(
                "reserved_cover",
                (*pool, name),
                [*(mm.z[(name, c.index)] for c in cs), mm.R[pool]],
                [*(c.total_gpus for c in cs), -1.0],
                upper=0.0,
            )


def add_billing(mm: MilpModel, wts: Weights) -> None:
    """Billing granularity g > 1: b[p,c,k] >= x[p,c,t] for t in block k = floor(t / g), rental
    g x rho_c per paid block (g x rho_c,kg when the price varies by the hour: the rate in
    force when the block begins); minimum rental: m[p,c] >= min_c z[p,c] - g sum_k b[p,c,k],
    paying rho_c per owed hour."""
    for col in all_columns(mm):
        bill_column(mm, wts, col)


def bill_column(mm: MilpModel, wts: Weights, col: Column) -> None:
    """The billing-block and minimum-rental variables and rows of one column (see
    :func:`add_billing`); nothing for hourly billing and reserved contracts."""
    inst, lp = mm.inst, mm.lp
    c, hours, xi, key = col.config, col.hours, col.xi, col.key
    if c.contract == "reserved" or c.billing_hours == 1:
        return
    g = c.billing_hours
    blocks = sorted({int(t) // g for t in hours})
    prices = block_prices(inst, c)
    bi = lp.add_vars(
        "b",
        [(*key, k) for k in blocks],
        0,
        1,
        True,
        wts.rental * g * c.rental_per_h
        if prices is None
        else [wts.rental * float(prices[k]) for k in blocks],
    )
    mm.b[key] = {k: int(j) for k, j in zip(blocks, bi, strict=True)}  # type: ignore[index]
    for t, j in zip(hours.tolist(), xi.tolist(), strict=True):
        lp.add_at_least("billing", (*key, t), mm.b[key][t // g], j)  # type: ignore[index]
    if c.min_rental_hours > 0:
        mj = int(
            lp.add_vars(
                "m",
                [key],
                0,
                float(c.min_rental_hours),
                False,
                wts.rental * c.rental_per_h,
            )[0]
        )
        mm.m[key] = mj  # type: ignore[index]
        lp.add_row(
            "min_rental",
            key,
            [mj, col.z, *bi.tolist()],
            [1.0, -float(c.min_rental_hours), *([float(g)] * len(bi))],
            lower=0.0,
        )


def add_storage(mm: MilpModel, wts: Weights) -> None:
    """Pauses of a preemptible phase: s[p,t] >= s[p,t-1], s[p,t] >= sum_c x[p,c,t]; a paused
    hour costs the parking rate pi_p: pi_p (s[p,t] - F[p,t] - sum_c x[p,c,t]).
    Archive after the phase ends, within its window: a[p,r,t] >= F[p,t] + sum_{c in r} z[p,c]
    - 1, at the region's archive rate (after the window the z cost covers it).
    The value of time v_p: z carries v_p (l_p - release_p) (:func:`planner.model.costs.fixed_cost`
    at the window's end) and every F[p,t], t in (e_p, l_p), earns v_p back: with end = e_p
    + 1 + sum_t (1 - F[p,t]), v_p (end - release_p) exactly."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        p = inst.phase(name)
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        rate = (pause_usd_per_h(inst, p) if p.preemptible else 0.0) * wts.storage
        if p.preemptible and rate > 0:
            ts = list(range(e, l_))
            si = lp.add_vars("s", [(name, t) for t in ts], 0, 1, False, rate)
            mm.s[name] = {t: int(j) for t, j in zip(ts, si, strict=True)}
            for k, t in enumerate(ts):
                idx = [int(si[k])]
                val = [1.0]
                if k > 0:
                    lp.add_at_least("started_monotone", (name, t), int(si[k]), int(si[k - 1]))
                for j in hour_columns(mm, name, t):
                    idx.append(j)
                    val.append(-1.0)
                    lp.cost[j] -= rate
                lp.add_row("started", (name, t), idx, val, lower=0.0)
                var, const = finished(mm, name, t)
                if var is not None:
                    lp.cost[var] -= rate
                else:
                    lp.offset -= rate * const
        by_region: dict[str, list[Config]] = defaultdict(list)
        for c in configs:
            by_region[c.region].append(c)
        if name not in mm.F:
            continue
        value = usd_per_hour_early(inst, name)
        if value > 0:  # each hour finished before l_ is worth v (z carries v (l_ - release))
            for j in mm.F[name].values():
                lp.cost[j] -= value
        for r, cs in by_region.items():
            rate_r = max(c.archive_per_h for c in cs) * wts.storage
            if rate_r <= 0:
                continue
            ts = sorted(mm.F[name])
            ai = lp.add_vars("a", [(name, r, t) for t in ts], 0, 1, False, rate_r)
            mm.a[(name, r)] = {t: int(j) for t, j in zip(ts, ai, strict=True)}
            zs = region_choice(mm, name, r, last=True)
            for t, j in zip(ts, ai.tolist(), strict=True):
                lp.add_row(
                    "archive",
                    (name, r, t),
                    [j, mm.F[name][t], *zs],
                    [1.0, -1.0, *([-1.0] * len(zs))],
                    lower=-1.0,
                )


def add_transfer(mm: MilpModel, wts: Weights) -> None:
    """Moving p's output to a successor q in another region:
    w[p,q,r,r'] >= sum_{c in r} z[p,c] + sum_{c' in r'} z[q,c'] - 1, costing
    output_gb(p) x transfer(r -> r')."""
    inst, lp = mm.inst, mm.lp
    for q in mm.space.by_phase:
        for p in inst.phase(q).predecessors:
            if p not in mm.space.by_phase:
                continue
            gb = output_gb_of(inst, inst.phase(p))
            if gb <= 0:
                continue
            rp = sorted({c.region for c in mm.space.by_phase[p]})
            rq = sorted({c.region for c in mm.space.by_phase[q]})
            for r1 in rp:
                for r2 in rq:
                    price = transfer_usd_per_gb(inst, r1, r2)
                    if price <= 0:
                        continue
                    j = int(
                        lp.add_vars("w", [(p, q, r1, r2)], 0, 1, False, wts.transfer * gb * price)[
                            0
                        ]
                    )
                    mm.w[(p, q, r1, r2)] = j
                    zp = region_choice(mm, p, r1, last=True)
                    zq = region_choice(mm, q, r2, last=False)
                    lp.add_row(
                        "transfer",
                        (p, q, r1, r2),
                        [j, *zp, *zq],
                        [1.0, *([-1.0] * (len(zp) + len(zq)))],
                        lower=-1.0,
                    )


def add_porting(mm: MilpModel, wts: Weights) -> None:
    """used[f] >= sum_{c of family f} z[p,c] for every phase p; porting_usd(f) once."""
    inst, lp = mm.inst, mm.lp
    for fam, spec in inst.spec.families.items():
        if spec.porting_usd <= 0:
            continue
        j = int(lp.add_vars("used", [fam], 0, 1, True, wts.porting * spec.porting_usd)[0])
        mm.used[fam] = j
        for name in mm.space.by_phase:
            for k, group in enumerate(choice_groups(mm, name)):
                zs = [z for c, z in group if inst.gpu(c.gpu).family == fam]
                if zs:
                    key = (fam, name) if name not in mm.segmented else (fam, name, k)
                    lp.add_row("porting", key, [j, *zs], [1.0, *([-1.0] * len(zs))], lower=0.0)


def carbon_columns(mm: MilpModel) -> tuple[list[int], list[float]]:
    """The x columns of every configuration in a region with carbon data and their tonnes of
    CO2 per running hour, ``kW_c x ci_{r(c),t} / 1e6``."""
    idx: list[int] = []
    val: list[float] = []
    for col in all_columns(mm):
        c, hours, xi = col.config, col.hours, col.xi
        ci = mm.inst.carbon[c.region]
        if ci is None:
            continue
        idx.extend(xi.tolist())
        val.extend(np.asarray(carbon_t(c, ci[hours])).tolist())
    return idx, val


def add_carbon_cap(mm: MilpModel, wts: Weights) -> None:
    """sum_{p,c,t} kW_c x ci_{r(c),t} / 1e6 x[p,c,t] <= cap (tonnes CO2), both sides scaled
    by :func:`planner.model.costs.carbon_row_scale`."""
    cap = mm.inst.spec.objective.carbon_cap_tonnes
    if cap is None:
        return
    idx, val = carbon_columns(mm)
    k = carbon_row_scale(cap)  # the solver's tolerance as a share of the cap
    mm.lp.add_row("carbon_cap", "total", idx, [v * k for v in val], upper=cap * k)


#: The families in build order; each is one function above.
FAMILIES = (
    add_assignment,
    add_runs,
    add_progress,
    add_precedence,
    add_capacity,
    add_billing,
    add_storage,
    add_transfer,
    add_porting,
    add_carbon_cap,
)


#: The families of phases in segments, each after the family it stands in for.
SEGMENT_FAMILIES = {
    add_assignment: segments.add_segment_choice,
    add_runs: segments.add_segment_runs,
    add_progress: segments.add_segment_finish,
    add_transfer: segments.add_migrations,
}


def families(mm: MilpModel) -> list[Callable[[MilpModel, Weights], None]]:
    """The build order: :data:`FAMILIES`, and when some phase runs in segments the segment
    families of :mod:`formulations.exact.milp.segments` after the ones they stand in for."""
    out: list[Callable[[MilpModel, Weights], None]] = []
    for family in FAMILIES:
        out.append(family)
        if mm.segmented and family in SEGMENT_FAMILIES:
            out.append(SEGMENT_FAMILIES[family])
    return out


def build(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows | None = None,
    masks: dict[tuple[str, int], np.ndarray] | None = None,
    single: Collection[str] = (),
    capacity: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> MilpModel:
    """Build the hourly MILP of ``inst`` over the configuration space ``space``; ``masks``
    fixes hours a configuration provably cannot use to 0 (see formulations.bounds.separable). Phases
    with ``options.max_segments`` > 1 (and more than one configuration) are modelled in
    segments (:mod:`formulations.exact.milp.segments`), but those in ``single`` (proved not to gain
    from segments, :func:`formulations.bounds.separable.single_segment`); every other phase as
    before. ``capacity`` replaces the instance's GPUs per pool and hour (default: the instance's; a
    neighbourhood passes what the phases it keeps fixed leave free)."""
    mm = MilpModel(
        inst,
        space,
        LinearProgram(),
        windows or time_windows(inst, space.fewest_hours()),
        dict(masks or {}),
        dict(inst.capacity if capacity is None else capacity),
    )
    mm.segmented = {n: k for n, k in segments.segmented_phases(mm).items() if n not in set(single)}
    wts = weights(inst)
    for family in families(mm):
        family(mm, wts)
    return mm
