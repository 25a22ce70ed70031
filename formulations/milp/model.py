"""The hourly time-indexed MILP, built family by family into a :class:`LinearProgram`.

Sets: phases p (not done), their configurations c (from :mod:`planner.configs`), hours t of
p's time window [e_p, l_p) (release/deadline tightened through the precedence graph), regions
r, GPU types g, families f.

Decisions (one variable family each, built by the function named after it):

- ``z[p,c]``   binary   phase p runs configuration c
- ``x[p,c,t]`` binary   p runs c during hour t
- ``u[p,c,t]`` >= 0     a run segment of p on c starts at t (a resume for preemptible phases)
- ``P[p,t]``   >= 0     fraction of p's work done before hour t
- ``F[p,t]``   binary   p has finished before hour t
- ``s[p,t]``   in [0,1] p has started by hour t (preemptible phases: pause storage)
- ``a[p,r,t]`` >= 0     p's output is archived in region r during hour t
- ``b[p,c,k]`` binary   billing block k of c is paid (billing granularity > 1 h)
- ``m[p,c]``   >= 0     hours of minimum rental still owed
- ``R[r,g]``   integer  reserved GPUs committed; ``sign[r,g]`` binary when a minimum applies
- ``w[p,q,r,r']`` >= 0  the artifact of p moves from r to r' for successor q
- ``used[f]``  binary   GPU family f is used (one-time porting cost)

All costs are per docs/cost-model.md, multiplied by the objective weights.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from formulations.linear import LinearProgram
from planner.configs import Config, ConfigSpace
from planner.costs import Weights, hourly_cost, pause_usd_per_h, transfer_usd_per_gb, weights
from planner.instance.model import Instance
from planner.windows import Windows, time_windows
from planner.workload import output_gb_of


@dataclass
class MilpModel:
    inst: Instance
    space: ConfigSpace
    lp: LinearProgram
    windows: Windows
    #: Hours each configuration may use, from bound-based pruning: only those get a column
    #: (an hour the bound fixed to 0 is not built at all).
    masks: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    #: GPUs available per pool and hour (default: the instance's; a neighbourhood of the
    #: large-neighbourhood search passes what the phases it keeps fixed leave free).
    capacity: Mapping[tuple[str, str], np.ndarray] = field(default_factory=dict)
    #: Per phase, the x column of configuration k (in space order) at window hour j, -1 where
    #: none was built.
    grid: dict[str, np.ndarray] = field(default_factory=dict)
    z: dict[tuple[str, int], int] = field(default_factory=dict)
    x: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    u: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    P: dict[str, dict[int, int]] = field(default_factory=dict)
    F: dict[str, dict[int, int]] = field(default_factory=dict)
    s: dict[str, dict[int, int]] = field(default_factory=dict)
    a: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    b: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    m: dict[tuple[str, int], int] = field(default_factory=dict)
    R: dict[tuple[str, str], int] = field(default_factory=dict)
    sign: dict[tuple[str, str], int] = field(default_factory=dict)
    w: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)


# ----------------------------------------------------------------------------- families


def add_assignment(mm: MilpModel, wts: Weights) -> None:
    """Each phase runs exactly one configuration:  sum_c z[p,c] = 1.

    z carries the configuration's one-time costs: data staging and retrieval (transfer),
    the archive of its output after the deadline, (T - l_p) x archive_c (storage), and the
    minimum-rental surcharge (max(n_c, min_c) - n_c) x rho_c when billed hourly (rental)."""
    inst, lp = mm.inst, mm.lp
    T = inst.hours
    for name, configs in mm.space.by_phase.items():
        keys = [(name, c.index) for c in configs]
        l_ = mm.windows.end[name]
        cost = []
        for c in configs:
            k = wts.transfer * c.one_time_usd + wts.storage * (T - l_) * c.archive_per_h
            if c.contract != "reserved" and c.billing_hours == 1:
                k += wts.rental * max(0, c.min_rental_hours - c.hours) * c.rental_per_h
            if inst.phase(name).preemptible:
                k -= wts.failure * c.resume_usd  # the first segment is not a resume
            cost.append(k)
        idx = lp.add_vars("z", keys, 0, 1, True, cost)
        for c, j in zip(configs, idx, strict=True):
            mm.z[(name, c.index)] = int(j)
        lp.add_row("assign", name, idx, np.ones(len(idx)), 1.0, 1.0)


def add_runs(mm: MilpModel, wts: Weights) -> None:
    """Work and segments: sum_t x[p,c,t] = n_c z[p,c];  x[p,c,t] <= z[p,c] (implied, kept
    for the LP bound only through the sum); u[p,c,t] >= x[p,c,t] - x[p,c,t-1];
    non-preemptible p: sum_t u[p,c,t] <= z[p,c] (one contiguous run); preemptible p: each
    segment after the first costs the resume overhead (u carries resume_c, z refunds one).

    x[p,c,t] exists only for the hours of p's window that c may use (``mm.masks``; all of
    them without masks); a missing x is 0 (then u[p,c,t] >= x[p,c,t] at the hour after it).
    A configuration with fewer usable hours than n_c gets no x: its work row forces z = 0."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        p = inst.phase(name)
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        width = max(0, l_ - e)
        grid = np.full((len(configs), width), -1, dtype=np.int64)
        for k, c in enumerate(configs):
            hours = np.arange(e, l_)
            mask = mm.masks.get((name, c.index))
            if mask is not None and len(hours):
                hours = hours[np.asarray(mask, dtype=bool)]
            if len(hours) < c.hours:
                hours = hours[:0]
            cost = hourly_cost(inst, c, wts)[hours] if len(hours) else np.zeros(0)
            xi = lp.add_vars("x", [(name, c.index, int(t)) for t in hours], 0, 1, True, cost)
            mm.x[(name, c.index)] = (hours, xi)
            grid[k, hours - e] = xi
            zj = mm.z[(name, c.index)]
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
            prev = np.concatenate([[False], np.diff(hours) == 1])
            rows_i: list[np.ndarray] = []
            rows_v: list[np.ndarray] = []
            for j in range(len(hours)):
                if prev[j]:
                    rows_i.append(np.array([ui[j], xi[j], xi[j - 1]]))
                    rows_v.append(_SEG3)
                else:
                    rows_i.append(np.array([ui[j], xi[j]]))
                    rows_v.append(_SEG2)
            lp.add_rows(
                "segment", [(name, c.index, int(t)) for t in hours], rows_i, rows_v, lower=0.0
            )
            if not p.preemptible:
                lp.add_row(
                    "contiguous",
                    (name, c.index),
                    [*ui.tolist(), zj],
                    [1.0] * len(ui) + [-1.0],
                    upper=0.0,
                )
        mm.grid[name] = grid


_SEG3 = np.array([1.0, -1.0, 1.0])
_SEG2 = np.array([1.0, -1.0])


def columns_at(mm: MilpModel, name: str, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The x columns of phase ``name`` at hour t, and the positions (in space order) of their
    configurations; empty outside the window."""
    grid = mm.grid[name]
    j = t - mm.windows.start[name]
    if j < 0 or j >= grid.shape[1]:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    col = grid[:, j]
    pos = np.flatnonzero(col >= 0)
    return col[pos], pos


def add_progress(mm: MilpModel, wts: Weights) -> None:
    """P[p,t] = P[p,t-1] + sum_c x[p,c,t-1] / n_c with P[p,e_p] = 0, and the finish indicator
    F[p,t] in {0,1} with  F <= P  and  F >= 1 - N_p (1 - P),  N_p = max_c n_c, so that F = 1
    exactly when all work is done before t (P = 1; otherwise P <= 1 - 1/n_c)."""
    inst, lp = mm.inst, mm.lp
    for name, configs in mm.space.by_phase.items():
        needs = (
            inst.successors(name)
            or inst.phase(name).preemptible
            or any(c.archive_per_h > 0 for c in configs)
        )
        if not needs or not configs:
            continue
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        n_max = max(c.hours for c in configs)
        ts = list(range(e + 1, l_))
        if not ts:
            continue
        Pi = lp.add_vars("P", [(name, t) for t in ts], 0, 1, False, 0.0)
        Fi = lp.add_vars("F", [(name, t) for t in ts], 0, 1, True, 0.0)
        mm.P[name] = {t: int(j) for t, j in zip(ts, Pi, strict=True)}
        mm.F[name] = {t: int(j) for t, j in zip(ts, Fi, strict=True)}
        inv_n = np.array([-1.0 / c.hours for c in configs])
        rows_i: list[np.ndarray] = []
        rows_v: list[np.ndarray] = []
        for k, t in enumerate(ts):
            cols, pos = columns_at(mm, name, t - 1)
            if k > 0:
                rows_i.append(np.concatenate([[Pi[k], Pi[k - 1]], cols]))
                rows_v.append(np.concatenate([[1.0, -1.0], inv_n[pos]]))
            else:
                rows_i.append(np.concatenate([[Pi[k]], cols]))
                rows_v.append(np.concatenate([[1.0], inv_n[pos]]))
        keys = [(name, t) for t in ts]
        lp.add_rows("progress", keys, rows_i, rows_v, 0.0, 0.0)
        pairs = [np.array([Fi[k], Pi[k]]) for k in range(len(ts))]
        lp.add_rows("finished_ub", keys, pairs, [np.array([1.0, -1.0])] * len(ts), upper=0.0)
        lp.add_rows(
            "finished_lb",
            keys,
            pairs,
            [np.array([1.0, -float(n_max)])] * len(ts),
            lower=1.0 - n_max,
        )


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
    sum_c x[q,c,t] <= F[p,t]  for every edge p -> q and hour t of q's window."""
    inst, lp = mm.inst, mm.lp
    for q in mm.space.by_phase:
        for p in inst.phase(q).predecessors:
            if p not in mm.space.by_phase:
                continue  # a done phase: its artifact already exists
            keys: list[tuple[str, str, int]] = []
            rows_i: list[np.ndarray] = []
            rows_v: list[np.ndarray] = []
            uppers: list[float] = []
            for t in range(mm.windows.start[q], mm.windows.end[q]):
                var, const = finished(mm, p, t)
                if var is None and const >= 1.0:
                    continue
                cols, _ = columns_at(mm, q, t)
                if not len(cols):
                    continue
                if var is not None:
                    rows_i.append(np.concatenate([cols, [var]]))
                    rows_v.append(np.concatenate([np.ones(len(cols)), [-1.0]]))
                else:
                    rows_i.append(cols)
                    rows_v.append(np.ones(len(cols)))
                keys.append((p, q, t))
                uppers.append(const)
            lp.add_rows("precedence", keys, rows_i, rows_v, upper=np.asarray(uppers))


def pool_columns(
    mm: MilpModel, reserved_only: bool = False
) -> dict[tuple[str, str, int], tuple[list[int], list[float]]]:
    """Per (region, GPU type, hour): the x columns of every configuration in that pool and
    hour, and their GPUs (working + spare); only reserved-contract ones if ``reserved_only``."""
    pools: dict[tuple[str, str, int], tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for name, configs in mm.space.by_phase.items():
        for c in configs:
            if reserved_only and c.contract != "reserved":
                continue
            hours, xi = mm.x[(name, c.index)]
            for t, j in zip(hours.tolist(), xi.tolist(), strict=True):
                ids, vals = pools[(c.region, c.gpu, t)]
                ids.append(j)
                vals.append(c.total_gpus)
    return pools


def add_capacity(mm: MilpModel, wts: Weights) -> None:
    """sum over phases and configurations in pool (r,g) of (gpus_c + spares_c) x[p,c,t]
    <= capacity[r,g,t]; and for reserved configurations <= R[r,g]; per phase and reserved
    pool the cover ``sum_c G_c z[p,c] <= R[r,g]`` (valid, tightens the LP)."""
    inst, lp = mm.inst, mm.lp
    pools = pool_columns(mm)
    reserved = pool_columns(mm, reserved_only=True)
    for (r, g, t), (ids, vals) in sorted(pools.items()):
        cap = float(mm.capacity[(r, g)][t])
        if sum(vals) <= cap:
            continue  # never binding
        lp.add_row("capacity", (r, g, t), ids, vals, upper=cap)
    pools_with_reserved = sorted({(r, g) for (r, g, _) in reserved})
    for r, g in pools_with_reserved:
        offer = inst.region(r).offers[g].reserved
        assert offer is not None
        hi = offer.max_gpus if offer.max_gpus is not None else float(inst.capacity[(r, g)].max())
        cost = wts.rental * offer.usd_per_gpu_hour * inst.hours
        j = int(lp.add_vars("R", [(r, g)], 0, hi, True, cost)[0])
        mm.R[(r, g)] = j
        if offer.min_gpus > 0:
            sj = int(lp.add_vars("sign", [(r, g)], 0, 1, True, 0.0)[0])
            mm.sign[(r, g)] = sj
            lp.add_row("reserved_min", (r, g), [j, sj], [1.0, -float(offer.min_gpus)], lower=0.0)
            lp.add_row("reserved_max", (r, g), [j, sj], [1.0, -float(hi)], upper=0.0)
    for (r, g, t), (ids, vals) in sorted(reserved.items()):
        lp.add_row("reserved", (r, g, t), [*ids, mm.R[(r, g)]], [*vals, -1.0], upper=0.0)
    # valid inequalities for the LP bound: a phase that runs a reserved configuration at all
    # needs the commitment for its GPUs, sum_{c reserved in (r,g)} G_c z[p,c] <= R[r,g]
    # (implied by the hourly rows for integer x; the LP, which spreads x thinly over the
    # window, does not see it: on month-70b's reduced MILP HiGHS closed 0.1% in 5.9 s with
    # these rows and 29.3 s without, same shared machine)
    for name, configs in mm.space.by_phase.items():
        by_pool: dict[tuple[str, str], list[Config]] = defaultdict(list)
        for c in configs:
            if (
                c.contract == "reserved"
                and (c.region, c.gpu) in mm.R
                and len(mm.x[(name, c.index)][0])
            ):
                by_pool[(c.region, c.gpu)].append(c)
        for pool, cs in sorted(by_pool.items()):
            lp.add_row(
                "reserved_cover",
                (*pool, name),
                [*(mm.z[(name, c.index)] for c in cs), mm.R[pool]],
                [*(c.total_gpus for c in cs), -1.0],
                upper=0.0,
            )


def add_billing(mm: MilpModel, wts: Weights) -> None:
    """Billing granularity g > 1: b[p,c,k] >= x[p,c,t] for t in block k = floor(t / g), rental
    g x rho_c per paid block; minimum rental: m[p,c] >= min_c z[p,c] - g sum_k b[p,c,k],
    paying rho_c per owed hour."""
    lp = mm.lp
    for name, configs in mm.space.by_phase.items():
        for c in configs:
            if c.contract == "reserved" or c.billing_hours == 1:
                continue
            g = c.billing_hours
            hours, xi = mm.x[(name, c.index)]
            blocks = sorted({int(t) // g for t in hours})
            bi = lp.add_vars(
                "b",
                [(name, c.index, k) for k in blocks],
                0,
                1,
                True,
                wts.rental * g * c.rental_per_h,
            )
            mm.b[(name, c.index)] = {k: int(j) for k, j in zip(blocks, bi, strict=True)}
            for t, j in zip(hours.tolist(), xi.tolist(), strict=True):
                lp.add_row(
                    "billing",
                    (name, c.index, t),
                    [mm.b[(name, c.index)][t // g], j],
                    [1.0, -1.0],
                    lower=0.0,
                )
            if c.min_rental_hours > 0:
                mj = int(
                    lp.add_vars(
                        "m",
                        [(name, c.index)],
                        0,
                        float(c.min_rental_hours),
                        False,
                        wts.rental * c.rental_per_h,
                    )[0]
                )
                mm.m[(name, c.index)] = mj
                lp.add_row(
                    "min_rental",
                    (name, c.index),
                    [mj, mm.z[(name, c.index)], *bi.tolist()],
                    [1.0, -float(c.min_rental_hours), *([float(g)] * len(bi))],
                    lower=0.0,
                )


def add_storage(mm: MilpModel, wts: Weights) -> None:
    """Pauses of a preemptible phase: s[p,t] >= s[p,t-1], s[p,t] >= sum_c x[p,c,t]; a paused
    hour costs the parking rate pi_p: pi_p (s[p,t] - F[p,t] - sum_c x[p,c,t]).
    Archive after the phase ends, within its window: a[p,r,t] >= F[p,t] + sum_{c in r} z[p,c]
    - 1, at the region's archive rate (after the window the z cost covers it)."""
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
                if k > 0:
                    lp.add_row(
                        "started_monotone",
                        (name, t),
                        [int(si[k]), int(si[k - 1])],
                        [1.0, -1.0],
                        lower=0.0,
                    )
                cols, _ = columns_at(mm, name, t)
                for j in cols.tolist():
                    lp.cost[j] -= rate
                lp.add_row(
                    "started",
                    (name, t),
                    [int(si[k]), *cols.tolist()],
                    [1.0, *([-1.0] * len(cols))],
                    lower=0.0,
                )
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
        for r, cs in by_region.items():
            rate_r = max(c.archive_per_h for c in cs) * wts.storage
            if rate_r <= 0:
                continue
            ts = sorted(mm.F[name])
            ai = lp.add_vars("a", [(name, r, t) for t in ts], 0, 1, False, rate_r)
            mm.a[(name, r)] = {t: int(j) for t, j in zip(ts, ai, strict=True)}
            zs = [mm.z[(name, c.index)] for c in cs]
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
                    zp = [mm.z[(p, c.index)] for c in mm.space.by_phase[p] if c.region == r1]
                    zq = [mm.z[(q, c.index)] for c in mm.space.by_phase[q] if c.region == r2]
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
        for name, configs in mm.space.by_phase.items():
            zs = [mm.z[(name, c.index)] for c in configs if inst.gpu(c.gpu).family == fam]
            if zs:
                lp.add_row("porting", (fam, name), [j, *zs], [1.0, *([-1.0] * len(zs))], lower=0.0)


def carbon_columns(mm: MilpModel) -> tuple[list[int], list[float]]:
    """The x columns of every configuration in a region with carbon data and their tonnes of
    CO2 per running hour, ``kW_c x ci_{r(c),t} / 1e6``."""
    idx: list[int] = []
    val: list[float] = []
    for name, configs in mm.space.by_phase.items():
        for c in configs:
            ci = mm.inst.carbon[c.region]
            if ci is None:
                continue
            hours, xi = mm.x[(name, c.index)]
            idx.extend(xi.tolist())
            val.extend((c.facility_kw * ci[hours] / 1e6).tolist())
    return idx, val


def add_carbon_cap(mm: MilpModel, wts: Weights) -> None:
    """sum_{p,c,t} kW_c x ci_{r(c),t} / 1e6 x[p,c,t] <= cap (tonnes CO2)."""
    cap = mm.inst.spec.objective.carbon_cap_tonnes
    if cap is None:
        return
    idx, val = carbon_columns(mm)
    mm.lp.add_row("carbon_cap", "total", idx, val, upper=cap)


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


def build(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows | None = None,
    masks: dict[tuple[str, int], np.ndarray] | None = None,
    capacity: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> MilpModel:
    """Build the hourly MILP of ``inst`` over the configuration space ``space``; ``masks``
    leaves out the hours a configuration provably cannot use (see formulations.bounds);
    ``capacity`` replaces the instance's GPUs per pool and hour (default: the instance's)."""
    mm = MilpModel(
        inst,
        space,
        LinearProgram(),
        windows or time_windows(inst, space.fewest_hours()),
        dict(masks or {}),
        dict(inst.capacity if capacity is None else capacity),
    )
    wts = weights(inst)
    for family in FAMILIES:
        family(mm, wts)
    return mm
