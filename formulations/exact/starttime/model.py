"""The start-time-indexed MILP for non-preemptive phases, built into a :class:`LinearProgram`.

Sets: phases p (all non-preemptive, not done), the distinct configurations c of p and the
starts tau of c in p's window, ``e_p <= tau <= l_p - n_c``
(:mod:`formulations.exact.starttime.data`); pools (r, g); hours t.

Decisions (one family each, built by the function named after it, in this order):

- ``y[p,c,tau]``  binary   p runs c over hours [tau, tau + n_c); costs K[p,c,tau]
- ``z[p,c]``      [0,1]    p runs c: z = sum_tau y (only when transfers or porting need it)
- ``S[p,t]``      [0,1]    p has started by hour t:  sum over tau <= t of y
- ``D[p,t]``      [0,1]    p has finished by hour t: sum over tau + n_c <= t of y
- ``R[r,g]``      integer  reserved GPUs committed; ``sign[r,g]`` binary when a minimum applies
- ``w[p,q,r,r']`` >= 0     p's output moves from r to r' for successor q
- ``used[f]``     binary   GPU family f is used (porting once)

The costs are those of the hourly MILP (:mod:`formulations.exact.milp.model`) summed over each run,
so both models have the same optimum on non-preemptive instances. Precedence uses the
disaggregated time-indexed form (Pritsker, Watters & Wolfe 1969; Christofides, Alvarez-Valdes
& Tamarit 1987): ``S[q,t] <= D[p,t]`` for every edge p -> q and hour t, through cumulative
variables so that each y appears in O(1) precedence rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from formulations.exact.starttime.data import Pool, StartData
from formulations.lp.linear import LinearProgram
from planner.model.costs import carbon_row_scale


@dataclass
class StartModel:
    data: StartData
    lp: LinearProgram
    #: y[(p, k)] = column indices of the starts of table k of phase p (aligned with starts)
    y: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    z: dict[tuple[str, int], int] = field(default_factory=dict)
    S: dict[str, dict[int, int]] = field(default_factory=dict)
    D: dict[str, dict[int, int]] = field(default_factory=dict)
    R: dict[Pool, int] = field(default_factory=dict)
    sign: dict[Pool, int] = field(default_factory=dict)
    w: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)


def add_starts(sm: StartModel) -> None:
    """Each phase starts exactly one configuration once: sum_{c,tau} y[p,c,tau] = 1, and
    y[p,c,tau] costs K[p,c,tau]."""
    lp = sm.lp
    for name, tables in sm.data.tables.items():
        idx: list[int] = []
        for k, t in enumerate(tables):
            cols = lp.add_vars(
                "y", [(name, t.config.index, int(s)) for s in t.starts], 0, 1, True, t.cost.tolist()
            )
            sm.y[(name, k)] = cols
            idx.extend(cols.tolist())
        lp.add_row("assign", name, idx, [1.0] * len(idx), 1.0, 1.0)


def add_chosen(sm: StartModel) -> None:
    """z[p,c] = sum_tau y[p,c,tau], for the rows that only care which configuration runs."""
    d, lp = sm.data, sm.lp
    needs = {tr.pred for tr in d.transfers} | {tr.succ for tr in d.transfers}
    if d.porting:
        needs |= set(d.tables)
    for name in sorted(needs):
        for k, t in enumerate(d.tables[name]):
            j = int(lp.add_vars("z", [(name, t.config.index)], 0, 1, False, 0.0)[0])
            sm.z[(name, k)] = j
            ys = sm.y[(name, k)].tolist()
            lp.add_row(
                "chosen", (name, t.config.index), [j, *ys], [1.0, *([-1.0] * len(ys))], 0.0, 0.0
            )


def add_precedence(sm: StartModel) -> None:
    """For every edge p -> q: q may start at t only if p has finished by t,
    S[q,t] <= D[p,t] for t from e_q to q's last start (from l_p on, D = 1), with
    S[q,t] = S[q,t-1] + sum_c y[q,c,t] and D[p,t] = D[p,t-1] + sum_c y[p,c,t - n_c]."""
    d, lp = sm.data, sm.lp
    win = d.windows
    for p, q in d.edges:
        last_q = max(int(t.starts[-1]) for t in d.tables[q])
        ts = range(win.start[q], min(last_q + 1, win.end[p]))
        if not ts:
            continue
        sq = _cumulative(sm, q, ts[-1], started=True)
        dp = _cumulative(sm, p, ts[-1], started=False)
        for t in ts:
            if t not in sq:
                continue  # q cannot have started by t
            if t not in dp:  # p cannot have finished by t: neither may q have started
                lp.add_row("precedence", (p, q, t), [sq[t]], [1.0], upper=0.0)
                continue
            lp.add_at_most("precedence", (p, q, t), sq[t], dp[t])


def _cumulative(sm: StartModel, name: str, upto: int, started: bool) -> dict[int, int]:
    """The columns S[name,t] (started) or D[name,t] (finished) for every hour up to ``upto``
    where they are not identically 0, created with their defining rows on first use."""
    d, lp = sm.data, sm.lp
    store = sm.S if started else sm.D
    col = store.setdefault(name, {})
    e = d.windows.start[name]
    first = e if started else e + min(tb.hours for tb in d.tables[name])
    fam = "S" if started else "D"
    for t in range(first, upto + 1):
        if t in col:
            continue
        j = int(lp.add_vars(fam, [(name, t)], 0, 1, False, 0.0)[0])
        idx, val = [j], [1.0]
        if t - 1 in col:
            idx.append(col[t - 1])
            val.append(-1.0)
        col[t] = j
        for k, tb in enumerate(d.tables[name]):
            tau = t if started else t - tb.hours
            pos = tau - int(tb.starts[0])
            if 0 <= pos < len(tb.starts):
                idx.append(int(sm.y[(name, k)][pos]))
                val.append(-1.0)
        lp.add_row("started" if started else "finished", (name, t), idx, val, 0.0, 0.0)
    return col


def add_capacity(sm: StartModel) -> None:
    """Per pool (r, g) and hour t: sum over starts covering t, tau in (t - n_c, t], of
    (gpus_c + spares_c) y[p,c,tau] <= capacity[r,g,t]; rows that cannot bind (the largest
    demand of every phase together fits) are left out. Reserved configurations also obey
    sum ... <= R[r,g], with R in {0} U [min_gpus, max_gpus]."""
    d, lp = sm.data, sm.lp
    T = d.inst.hours
    for pool, members in sorted(d.pools.items()):
        cap = d.inst.capacity[pool]
        peak = np.zeros(T)
        by_phase: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(T))
        for name, k in members:
            t = d.tables[name][k]
            hi = int(t.starts[-1]) + t.hours
            lo = int(t.starts[0])
            m = by_phase[name]
            m[lo:hi] = np.maximum(m[lo:hi], t.config.total_gpus)
        for m in by_phase.values():
            peak += m
        binding = peak > cap + 1e-9
        rows = _cover_rows(sm, members, binding, reserved_only=False)
        for t_ in sorted(rows):
            ids, vals = rows[t_]
            lp.add_row("capacity", (*pool, t_), ids, vals, upper=float(cap[t_]))
    for pool, rp in sorted(d.reserved.items()):
        j = int(lp.add_vars("R", [pool], 0, rp.hi, True, rp.cost_per_gpu)[0])
        sm.R[pool] = j
        if rp.lo > 0:
            sj = int(lp.add_vars("sign", [pool], 0, 1, True, 0.0)[0])
            sm.sign[pool] = sj
            lp.add_row("reserved_min", pool, [j, sj], [1.0, -float(rp.lo)], lower=0.0)
            lp.add_row("reserved_max", pool, [j, sj], [1.0, -float(rp.hi)], upper=0.0)
        rows = _cover_rows(sm, d.pools[pool], np.ones(T, dtype=bool), reserved_only=True)
        for t_ in sorted(rows):
            ids, vals = rows[t_]
            lp.add_row("reserved", (*pool, t_), [*ids, j], [*vals, -1.0], upper=0.0)


def _cover_rows(
    sm: StartModel, members: list[tuple[str, int]], hours: np.ndarray, reserved_only: bool
) -> dict[int, tuple[list[int], list[float]]]:
    """Per hour t (where ``hours[t]``), the columns of the starts covering t and their
    demands: start tau covers tau .. tau + n_c - 1."""
    d = sm.data
    ts: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    vs: list[np.ndarray] = []
    for name, k in members:
        t = d.tables[name][k]
        if reserved_only and t.config.contract != "reserved":
            continue
        cover = (t.starts[:, None] + np.arange(t.hours)[None, :]).ravel()
        cols = np.repeat(sm.y[(name, k)], t.hours)
        keep = hours[cover]
        ts.append(cover[keep])
        cs.append(cols[keep])
        vs.append(np.full(int(keep.sum()), t.config.total_gpus))
    rows: dict[int, tuple[list[int], list[float]]] = {}
    if not ts:
        return rows
    t_all, c_all, v_all = np.concatenate(ts), np.concatenate(cs), np.concatenate(vs)
    order = np.argsort(t_all, kind="stable")
    t_all, c_all, v_all = t_all[order], c_all[order], v_all[order]
    cuts = np.flatnonzero(np.diff(t_all)) + 1
    for tt, cc, vv in zip(
        np.split(t_all, cuts), np.split(c_all, cuts), np.split(v_all, cuts), strict=True
    ):
        if len(tt):
            rows[int(tt[0])] = (cc.tolist(), vv.tolist())
    return rows


def add_transfer(sm: StartModel) -> None:
    """w[p,q,r,r'] >= sum_{c in r} z[p,c] + sum_{c' in r'} z[q,c'] - 1, costing
    w_transfer x output_gb(p) x transfer(r -> r') (as the hourly MILP's add_transfer)."""
    d, lp = sm.data, sm.lp
    for tr in d.transfers:
        j = int(lp.add_vars("w", [(tr.pred, tr.succ, tr.src, tr.dst)], 0, 1, False, tr.cost)[0])
        sm.w[(tr.pred, tr.succ, tr.src, tr.dst)] = j
        zp = [
            sm.z[(tr.pred, k)] for k, t in enumerate(d.tables[tr.pred]) if t.config.region == tr.src
        ]
        zq = [
            sm.z[(tr.succ, k)] for k, t in enumerate(d.tables[tr.succ]) if t.config.region == tr.dst
        ]
        lp.add_row(
            "transfer",
            (tr.pred, tr.succ, tr.src, tr.dst),
            [j, *zp, *zq],
            [1.0, *([-1.0] * (len(zp) + len(zq)))],
            lower=-1.0,
        )


def add_porting(sm: StartModel) -> None:
    """used[f] >= sum_{c of family f} z[p,c] for every phase p; porting_usd(f) once."""
    d, lp = sm.data, sm.lp
    for fam, cost in sorted(d.porting.items()):
        j = int(lp.add_vars("used", [fam], 0, 1, True, cost)[0])
        sm.used[fam] = j
        for name, tables in d.tables.items():
            zs = [sm.z[(name, k)] for k, t in enumerate(tables) if d.family(t.config) == fam]
            if zs:
                lp.add_row("porting", (fam, name), [j, *zs], [1.0, *([-1.0] * len(zs))], lower=0.0)


def add_carbon_cap(sm: StartModel) -> None:
    """sum_{p,c,tau} emissions[p,c,tau] y[p,c,tau] <= cap (tonnes CO2), both sides scaled by
    :func:`planner.model.costs.carbon_row_scale`."""
    d, lp = sm.data, sm.lp
    cap = d.inst.spec.objective.carbon_cap_tonnes
    if cap is None:
        return
    idx: list[int] = []
    val: list[float] = []
    for (name, k), cols in sm.y.items():
        e = d.tables[name][k].emissions
        nz = e != 0
        idx.extend(cols[nz].tolist())
        val.extend(e[nz].tolist())
    scale = carbon_row_scale(cap)  # the solver's tolerance as a share of the cap
    lp.add_row("carbon_cap", "total", idx, [v * scale for v in val], upper=float(cap) * scale)


#: The families in build order; each is one function above.
FAMILIES = (
    add_starts,
    add_chosen,
    add_precedence,
    add_capacity,
    add_transfer,
    add_porting,
    add_carbon_cap,
)


def build(data: StartData) -> StartModel:
    """Build the start-time MILP over the precomputed start data."""
    sm = StartModel(data, LinearProgram())
    for family in FAMILIES:
        family(sm)
    return sm


def point_of(
    sm: StartModel, choice: dict[str, tuple[int, int]], reserved: dict[Pool, int]
) -> np.ndarray:
    """The full MILP point of a choice ``{phase: (table, start)}`` (a MIP start)."""
    d = sm.data
    v = np.zeros(sm.lp.num_vars)
    for name, (k, tau) in choice.items():
        t = d.tables[name][k]
        v[sm.y[(name, k)][tau - int(t.starts[0])]] = 1.0
        if (name, k) in sm.z:
            v[sm.z[(name, k)]] = 1.0
        end = tau + t.hours
        for h, j in sm.S.get(name, {}).items():
            v[j] = 1.0 if h >= tau else 0.0
        for h, j in sm.D.get(name, {}).items():
            v[j] = 1.0 if h >= end else 0.0
    for pool, j in sm.R.items():
        v[j] = reserved.get(pool, 0)
        if pool in sm.sign:
            v[sm.sign[pool]] = 1.0 if reserved.get(pool, 0) > 0 else 0.0
    region = {name: d.tables[name][k].config.region for name, (k, _) in choice.items()}
    for (p, q, r1, r2), j in sm.w.items():
        v[j] = 1.0 if region.get(p) == r1 and region.get(q) == r2 else 0.0
    fams = {d.family(d.tables[name][k].config) for name, (k, _) in choice.items()}
    for fam, j in sm.used.items():
        v[j] = 1.0 if fam in fams else 0.0
    return v


def choice_of_point(
    sm: StartModel, x: np.ndarray
) -> tuple[dict[str, tuple[int, int]], dict[Pool, int]]:
    """Read ``{phase: (table, start)}`` and the reserved commitments from a solution."""
    choice: dict[str, tuple[int, int]] = {}
    for name, tables in sm.data.tables.items():
        best = (-1.0, 0, 0)
        for k, t in enumerate(tables):
            vals = x[sm.y[(name, k)]]
            pos = int(np.argmax(vals))
            if vals[pos] > best[0]:
                best = (float(vals[pos]), k, int(t.starts[pos]))
        choice[name] = (best[1], best[2])
    reserved = {pool: round(float(x[j])) for pool, j in sm.R.items()}
    return choice, reserved
