"""Contiguous (non-preemptive) scheduling as a CP-SAT model.

Same data and costs as the start-time MILP (:mod:`formulations.exact.starttime.data`): phase p picks
one distinct configuration c and one start tau in ``[e_p, l_p - n_c]`` at cost K[p,c,tau].

Variables and constraints, one builder per family, in this order:

1. ``add_starts``: start S_p, one presence literal x[p,c] per configuration with
   ``ExactlyOne_c x[p,c]``, end ``E_p = S_p + sum_c n_c x[p,c] <= l_p``. The start cost is
   either (``literal`` mode) one Boolean y[p,c,tau] per start with ``ExactlyOne`` over all
   (c, tau), ``x[p,c] = sum_tau y``, ``S_p = sum tau y`` and cost ``sum K y``; or (``element``
   mode) a configuration index C_p (``x[p,c] <=> C_p = c``), a flat index
   ``I_p = W_p C_p + S_p - e_p`` whose domain holds only valid (c, tau) pairs, and
   ``cost_p = table_p[I_p]`` (AddElement). ``auto`` takes literals while the instance has at
   most :data:`LITERAL_MAX_STARTS` starts (measured: benchmarks/cpsat_vs_milp.py).
2. ``add_intervals``: an optional interval [S_p, S_p + n_c) per (p, c), present iff x[p,c].
3. ``add_precedence``: ``S_q >= E_p`` for every edge p -> q.
4. ``add_capacity``: per pool (r, g) a cumulative with capacity ``cap_max`` over the pool's
   hours in use, where fixed dummy intervals consume ``cap_max - cap_t`` in the hours with
   less capacity (Baptiste, Le Pape & Nuijten 2001, §1: variable capacity as fixed
   reservations); per reserved pool a second cumulative over the reserved-contract
   intervals with capacity R[r,g] in {0} U [min_gpus, max_gpus], paid R x price x T.
   Demands are GPUs (working + spare) times a demand scale that makes fractional slices
   integral.
5. ``add_redundant``: per binding pool, the energetic bound
   ``sum_{p,c} n_c d_c x[p,c] <= sum_t cap_t`` over the hours the pool can be used
   (implied by the cumulative; it gives the LP relaxation the capacity).
6. ``add_symmetry``: phases that are interchangeable (identical start tables, pools,
   predecessors, successors and output) are ordered by start.
7. ``add_transfer``: region literals per phase; ``pair >= [p in r] and [q in r']`` costing
   ``w_transfer output_gb(p) transfer(r -> r')``.
8. ``add_porting``: ``x[p,c] => used[f]``; porting once per used family.
9. ``add_carbon_cap``: sum of run emissions <= cap, conservatively in integers (emissions
   rounded up, cap down).

CP-SAT needs integer costs. Every weighted USD amount is multiplied by ``scale`` (a power of
ten, at most 10^4, lowered until the largest possible objective times the scale stays below
2^40) and rounded to the nearest integer. A solution has at most one rounded start cost per
phase, one transfer per edge, one porting cost per family and R copies of each reserved
price, so ``|rounded - exact| <= (phases + edges + families + sum hi_R) x 0.5 / scale``;
:attr:`CpsatModel.rounding_bound` holds the exact worst case of the same sum.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from formulations.exact.starttime.data import Pool, StartData

#: ``auto`` cost mode: one Boolean per start while the instance has at most this many starts.
#: Measured (benchmarks/cpsat_vs_milp.py, 2 workers): element mode found no solution in
#: 60 s on L (62k starts) or 120 s on XL (291k starts), where literal mode found plans in
#: 5-16 s; literal mode was also faster on S and M. So literals throughout, element beyond
#: a size where one Boolean per start would not fit in memory.
LITERAL_MAX_STARTS = 5_000_000

#: Largest scale (integer units per USD) tried, and the bound on scaled objective magnitude.
MAX_SCALE = 1e4
MAX_SCALED = 2.0**40

#: Demand scales tried, smallest first, to make fractional GPU counts integral.
DEMAND_SCALES = (1, 2, 4, 5, 8, 10, 16, 20, 25, 40, 50, 100, 1000)


@dataclass
class CpsatModel:
    data: StartData
    model: cp_model.CpModel
    mode: str
    scale: float
    demand_scale: int
    start: dict[str, cp_model.IntVar] = field(default_factory=dict)
    end: dict[str, cp_model.LinearExpr] = field(default_factory=dict)
    present: dict[tuple[str, int], cp_model.IntVar] = field(default_factory=dict)
    y: dict[tuple[str, int], list[cp_model.IntVar]] = field(default_factory=dict)
    cfg: dict[str, cp_model.IntVar] = field(default_factory=dict)
    index: dict[str, cp_model.IntVar] = field(default_factory=dict)
    cost: dict[str, cp_model.IntVar] = field(default_factory=dict)
    interval: dict[tuple[str, int], cp_model.IntervalVar] = field(default_factory=dict)
    R: dict[Pool, cp_model.IntVar] = field(default_factory=dict)
    region: dict[tuple[str, str], cp_model.IntVar] = field(default_factory=dict)
    pair: dict[int, cp_model.IntVar] = field(default_factory=dict)
    used: dict[str, cp_model.IntVar] = field(default_factory=dict)
    objective: list[tuple[cp_model.IntVar, int]] = field(default_factory=list)
    #: exact worst-case |rounded objective / scale - exact objective| over all solutions
    rounding_bound: float = 0.0
    #: number of rounded terms a solution can have (R counts hi_R times)
    rounding_terms: int = 0
    notes: list[str] = field(default_factory=list)
    #: groups of interchangeable phases, ordered by start in the model
    groups: list[list[str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def scaled(self, usd: np.ndarray | float) -> np.ndarray:
        """USD amounts in CP-SAT's integer units: ``round(usd x scale)`` (the rounding error the
        module docstring bounds)."""
        return np.rint(np.asarray(usd, dtype=float) * self.scale).astype(np.int64)


def choose_scale(data: StartData) -> float:
    """The largest power of ten <= MAX_SCALE with (largest possible |objective|) x scale below
    MAX_SCALED."""
    top = sum(
        float(np.max(np.abs(np.concatenate([t.cost for t in ts])))) if ts else 0.0
        for ts in data.tables.values()
    )
    top += sum(abs(tr.cost) for tr in data.transfers) + sum(data.porting.values())
    top += sum(rp.hi * rp.cost_per_gpu for rp in data.reserved.values())
    scale = MAX_SCALE
    while scale > 1e-6 and top * scale > MAX_SCALED:
        scale /= 10.0
    return scale


def demand_scale(data: StartData) -> tuple[int, bool]:
    """(K, exact): the smallest K in DEMAND_SCALES making every GPU demand integral; if none
    does, (1000, False) and demands are rounded up."""
    dem = {t.config.total_gpus for ts in data.tables.values() for t in ts}
    for k in DEMAND_SCALES:
        if all(abs(d * k - round(d * k)) < 1e-9 for d in dem):
            return k, True
    return DEMAND_SCALES[-1], False


def _dem(cm: CpsatModel, gpus: float) -> int:
    return math.ceil(gpus * cm.demand_scale - 1e-9)


# ----------------------------------------------------------------------------- families


def add_starts(cm: CpsatModel) -> None:
    """Choose one (configuration, start) per phase; cost terms per the cost mode."""
    d, m = cm.data, cm.model
    for name, tables in d.tables.items():
        e = d.windows.start[name]
        last = max(int(t.starts[-1]) for t in tables)
        s = m.new_int_var(e, last, f"S[{name}]")
        cm.start[name] = s
        xs = [m.new_bool_var(f"x[{name},{t.config.index}]") for t in tables]
        for k, x in enumerate(xs):
            cm.present[(name, k)] = x
        m.add_exactly_one(xs)
        cm.end[name] = s + sum(t.hours * x for t, x in zip(tables, xs, strict=True))
        m.add(cm.end[name] <= d.windows.end[name])
        if cm.mode == "literal":
            _literal_starts(cm, name, s, xs)
        else:
            _element_starts(cm, name, s, xs)
        cm.rounding_terms += 1
        err = max(float(np.max(np.abs(cm.scaled(t.cost) / cm.scale - t.cost))) for t in tables)
        cm.rounding_bound += err


def _literal_starts(
    cm: CpsatModel, name: str, s: cp_model.IntVar, xs: list[cp_model.IntVar]
) -> None:
    m = cm.model
    every: list[cp_model.IntVar] = []
    terms_s: list[tuple[cp_model.IntVar, int]] = []
    for k, (t, x) in enumerate(zip(cm.data.tables[name], xs, strict=True)):
        ys = [m.new_bool_var(f"y[{name},{t.config.index},{tau}]") for tau in t.starts.tolist()]
        cm.y[(name, k)] = ys
        every.extend(ys)
        m.add(sum(ys) == x)
        terms_s.extend(zip(ys, t.starts.tolist(), strict=True))
        cm.objective.extend(zip(ys, cm.scaled(t.cost).tolist(), strict=True))
    m.add_exactly_one(every)
    m.add(s == sum(tau * yv for yv, tau in terms_s))
    cm.counts["start_literals"] += len(every)


def _element_starts(
    cm: CpsatModel, name: str, s: cp_model.IntVar, xs: list[cp_model.IntVar]
) -> None:
    d, m = cm.data, cm.model
    tables = d.tables[name]
    e = d.windows.start[name]
    width = max(int(t.starts[-1]) for t in tables) - e + 1
    c = m.new_int_var(0, len(tables) - 1, f"C[{name}]")
    cm.cfg[name] = c
    for k, x in enumerate(xs):
        m.add(c == k).only_enforce_if(x)
        m.add(c != k).only_enforce_if(~x)
    flat = np.zeros(len(tables) * width, dtype=np.int64)
    valid: list[int] = []
    for k, t in enumerate(tables):
        pos = k * width + (t.starts - e)
        flat[pos] = cm.scaled(t.cost)
        valid.extend(pos.tolist())
    idx = m.new_int_var_from_domain(cp_model.Domain.from_values(valid), f"I[{name}]")
    m.add(idx == width * c + s - e)
    vals = flat[np.asarray(valid)]
    cost = m.new_int_var(int(vals.min()), int(vals.max()), f"cost[{name}]")
    m.add_element(idx, flat.tolist(), cost)
    cm.index[name], cm.cost[name] = idx, cost
    cm.objective.append((cost, 1))
    cm.counts["element_entries"] += len(valid)


def add_intervals(cm: CpsatModel) -> None:
    """An optional interval [S_p, S_p + n_c) per (p, c), present iff x[p,c]."""
    for name, tables in cm.data.tables.items():
        for k, t in enumerate(tables):
            cm.interval[(name, k)] = cm.model.new_optional_fixed_size_interval_var(
                cm.start[name], t.hours, cm.present[(name, k)], f"run[{name},{t.config.index}]"
            )


def add_precedence(cm: CpsatModel) -> None:
    """S_q >= E_p for every edge p -> q."""
    for p, q in cm.data.edges:
        cm.model.add(cm.start[q] >= cm.end[p])


def _pool_span(cm: CpsatModel, pool: Pool) -> tuple[int, int, np.ndarray]:
    """(first hour, end hour, peak demand per hour if every phase took its largest
    configuration in this pool)."""
    d = cm.data
    T = d.inst.hours
    by_phase: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(T))
    lo, hi = T, 0
    for name, k in d.pools[pool]:
        t = d.tables[name][k]
        a, b = int(t.starts[0]), int(t.starts[-1]) + t.hours
        lo, hi = min(lo, a), max(hi, b)
        by_phase[name][a:b] = np.maximum(by_phase[name][a:b], t.config.total_gpus)
    peak = np.sum(list(by_phase.values()), axis=0) if by_phase else np.zeros(T)
    return lo, hi, peak


def add_capacity(cm: CpsatModel) -> None:
    """Per pool a cumulative with time-varying capacity (fixed dummy intervals for the hours
    below the maximum); per reserved pool a cumulative bounded by R[r,g]."""
    d, m = cm.data, cm.model
    for pool in sorted(d.pools):
        cap = d.inst.capacity[pool]
        lo, hi, peak = _pool_span(cm, pool)
        if not np.any(peak[lo:hi] > cap[lo:hi] + 1e-9):
            continue  # never binding
        cm.counts["cumulatives"] += 1
        cap_max = int(cap[lo:hi].max())
        ivs = [cm.interval[mk] for mk in d.pools[pool]]
        dem = [_dem(cm, d.tables[n][k].config.total_gpus) for n, k in d.pools[pool]]
        t = lo
        while t < hi:
            short = cap_max - int(cap[t])
            u = t + 1
            while u < hi and int(cap[u]) == int(cap[t]):
                u += 1
            if short > 0:
                ivs.append(m.new_fixed_size_interval_var(t, u - t, f"down[{pool},{t}]"))
                dem.append(short * cm.demand_scale)
                cm.counts["dummy_intervals"] += 1
            t = u
        m.add_cumulative(ivs, dem, cap_max * cm.demand_scale)
    for pool, rp in sorted(d.reserved.items()):
        dom = (
            cp_model.Domain.from_intervals([[0, 0], [max(rp.lo, 1), rp.hi]])
            if rp.hi >= max(rp.lo, 1)
            else cp_model.Domain(0, 0)
        )
        r = m.new_int_var_from_domain(dom, f"R[{pool[0]},{pool[1]}]")
        cm.R[pool] = r
        coef = int(cm.scaled(rp.cost_per_gpu))
        cm.objective.append((r, coef))
        cm.rounding_terms += rp.hi
        cm.rounding_bound += rp.hi * abs(coef / cm.scale - rp.cost_per_gpu)
        mem = [(n, k) for n, k in d.pools[pool] if d.tables[n][k].config.contract == "reserved"]
        m.add_cumulative(
            [cm.interval[mk] for mk in mem],
            [_dem(cm, d.tables[n][k].config.total_gpus) for n, k in mem],
            cm.demand_scale * r,
        )


def add_redundant(cm: CpsatModel) -> None:
    """sum_{p,c in pool} n_c d_c x[p,c] <= sum_{t in span} cap_t per binding pool."""
    d = cm.data
    for pool in sorted(d.pools):
        cap = d.inst.capacity[pool]
        lo, hi, peak = _pool_span(cm, pool)
        if not np.any(peak[lo:hi] > cap[lo:hi] + 1e-9):
            continue
        terms = [
            (cm.present[(n, k)], d.tables[n][k].hours * _dem(cm, d.tables[n][k].config.total_gpus))
            for n, k in d.pools[pool]
        ]
        cm.model.add(sum(c * x for x, c in terms) <= int(cap[lo:hi].sum()) * cm.demand_scale)
        cm.counts["energy_rows"] += 1


def _phase_key(cm: CpsatModel, name: str) -> tuple[object, ...]:
    d = cm.data
    from planner.model.workload import output_gb_of

    p = d.inst.phase(name)
    active = set(d.tables)
    tabs = tuple(
        (
            t.config.region,
            t.config.gpu,
            t.config.contract,
            d.family(t.config),
            t.hours,
            t.config.total_gpus,
            t.starts.tobytes(),
            cm.scaled(t.cost).tobytes(),
            np.round(t.emissions, 12).tobytes(),
        )
        for t in d.tables[name]
    )
    preds = tuple(sorted(q for q in p.predecessors if q in active))
    succs = tuple(sorted(q for q in d.inst.successors(name) if q in active))
    return (tabs, preds, succs, output_gb_of(d.inst, p), d.windows.start[name], d.windows.end[name])


def add_symmetry(cm: CpsatModel) -> None:
    """Interchangeable phases p1 < p2 (in topological order): S_p1 <= S_p2. Swapping the
    whole assignment of two interchangeable phases keeps every cost and constraint, so some
    optimum satisfies the order."""
    groups: dict[tuple[object, ...], list[str]] = defaultdict(list)
    for name in cm.data.tables:
        groups[_phase_key(cm, name)].append(name)
    for names in groups.values():
        if len(names) > 1:
            cm.groups.append(names)
        for a, b in itertools.pairwise(names):
            cm.model.add(cm.start[a] <= cm.start[b])
            cm.counts["symmetry_rows"] += 1


def add_transfer(cm: CpsatModel) -> None:
    """[p in r] = sum_{c in r} x[p,c]; pair[p,q,r,r'] >= [p in r] + [q in r'] - 1."""
    d, m = cm.data, cm.model

    def in_region(name: str, r: str) -> cp_model.IntVar:
        key = (name, r)
        if key not in cm.region:
            lit = m.new_bool_var(f"in[{name},{r}]")
            m.add(
                lit
                == sum(
                    cm.present[(name, k)]
                    for k, t in enumerate(d.tables[name])
                    if t.config.region == r
                )
            )
            cm.region[key] = lit
        return cm.region[key]

    worst: dict[tuple[str, str], float] = defaultdict(float)
    for i, tr in enumerate(d.transfers):
        a, b = in_region(tr.pred, tr.src), in_region(tr.succ, tr.dst)
        w = m.new_bool_var(f"w[{tr.pred},{tr.succ},{tr.src},{tr.dst}]")
        m.add_bool_or([~a, ~b, w])
        cm.pair[i] = w
        coef = int(cm.scaled(tr.cost))
        cm.objective.append((w, coef))
        edge = (tr.pred, tr.succ)
        worst[edge] = max(worst[edge], abs(coef / cm.scale - tr.cost))
    # at most one region pair is paid per edge
    cm.rounding_terms += len(worst)
    cm.rounding_bound += sum(worst.values())


def add_porting(cm: CpsatModel) -> None:
    """x[p,c] => used[f] for c of family f; porting_usd(f) once."""
    d, m = cm.data, cm.model
    for fam, cost in sorted(d.porting.items()):
        u = m.new_bool_var(f"used[{fam}]")
        cm.used[fam] = u
        for name, tables in d.tables.items():
            for k, t in enumerate(tables):
                if d.family(t.config) == fam:
                    m.add_implication(cm.present[(name, k)], u)
        coef = int(cm.scaled(cost))
        cm.objective.append((u, coef))
        cm.rounding_terms += 1
        cm.rounding_bound += abs(coef / cm.scale - cost)


def add_carbon_cap(cm: CpsatModel) -> None:
    """sum of run emissions <= cap, in units of 1/Ke tonne (Ke <= 1e9): emissions rounded up,
    the cap down, each up to a tolerance of 1e-6 units against floating-point noise, so a
    plan CP-SAT returns exceeds the cap by at most phases x 1e-6 / Ke t, and a plan within
    phases / Ke t of the cap may be excluded."""
    d, m = cm.data, cm.model
    cap = d.inst.spec.objective.carbon_cap_tonnes
    if cap is None:
        return
    top = max(cap, sum(float(max(t.emissions.max() for t in ts)) for ts in d.tables.values() if ts))
    ke = 10.0 ** math.floor(math.log10(1e12 / max(top, 1e-12)))
    ke = min(ke, 1e9)
    terms: list[tuple[cp_model.IntVar, int]] = []
    for name, tables in d.tables.items():
        if cm.mode == "literal":
            for k, t in enumerate(tables):
                coefs = np.ceil(t.emissions * ke - 1e-6).astype(np.int64).tolist()
                terms.extend((yv, c) for yv, c in zip(cm.y[(name, k)], coefs, strict=True) if c)
        else:
            e = d.windows.start[name]
            width = max(int(t.starts[-1]) for t in tables) - e + 1
            flat = np.zeros(len(tables) * width, dtype=np.int64)
            for k, t in enumerate(tables):
                flat[k * width + (t.starts - e)] = np.ceil(t.emissions * ke - 1e-6)
            ev = m.new_int_var(0, int(flat.max()), f"emis[{name}]")
            m.add_element(cm.index[name], flat.tolist(), ev)
            terms.append((ev, 1))
    m.add(sum(c * v for v, c in terms) <= math.floor(cap * ke + 1e-6))
    cm.notes.append(
        f"carbon cap applied in units of {1 / ke:g} t (emissions rounded up, cap "
        f"down): conservative by at most {len(d.tables) / ke:g} t"
    )


#: The families in build order; each is one function above.
FAMILIES = (
    add_starts,
    add_intervals,
    add_precedence,
    add_capacity,
    add_redundant,
    add_symmetry,
    add_transfer,
    add_porting,
    add_carbon_cap,
)


def build(
    data: StartData,
    mode: str = "auto",
    scale: float | None = None,
    redundant: bool = True,
    symmetry: bool = True,
) -> CpsatModel:
    """Build the CP-SAT model. ``mode``: "literal", "element" or "auto"; ``scale``: integer
    units per USD (None: :func:`choose_scale`)."""
    if mode == "auto":
        mode = "literal" if data.num_starts <= LITERAL_MAX_STARTS else "element"
    if mode not in ("literal", "element"):
        raise ValueError(f"unknown cost mode {mode!r}; expected literal, element or auto")
    k, exact = demand_scale(data)
    cm = CpsatModel(data, cp_model.CpModel(), mode, scale or choose_scale(data), k)
    if not exact:
        cm.notes.append(
            f"fractional GPU demands rounded up to 1/{k} GPU in the capacity "
            "constraints (conservative)"
        )
    for family in FAMILIES:
        if family is add_redundant and not redundant:
            continue
        if family is add_symmetry and not symmetry:
            continue
        family(cm)
    cm.model.minimize(sum(c * v for v, c in cm.objective))
    return cm
