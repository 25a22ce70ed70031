"""Reserved terms filled by a packing: the phases that run on a commitment, and when, chosen
together across pipelines.

A commitment of R GPUs under a term costs ``R P`` whether used or not
(:func:`planner.model.costs.pool_usd_per_gpu`); a phase on it saves what it would cost
elsewhere, less its own hours there without the rental (energy, failures, storage: the
rental is sunk). So a commitment pays only when it is busy, and filling it is a packing
problem across pipelines: contiguous runs of whole configurations, each in its phase's
window, under the term's size and the pool's capacity hour by hour (other tenants,
maintenance). One phase at a time never finds it: the look-ahead that buys first
(:mod:`formulations.heuristics.commitments`) and the descent over pipelines
(:mod:`formulations.heuristics.components`) let each phase take the term's hours it likes
best, and the term is left idle between them. On the lab's quarter (terms at 65% of the
on-demand price, so a term pays once busy 1,423.5 of its 2,190 hours) the descent filled a
128-GPU H100 term 42% of its hours, a plan 227,000 dearer than the plan without it; CP-SAT
packs 198,016 of that term's 280,320 GPU-hours (71%), and proves that no packing fills SG's
128-GPU A100 term beyond 116,608 (42%, where 65% pays). From the plan of a 150 s solve
(3,005,389.86, no commitment) :func:`packed_terms` kept two 128-GPU H100 terms (US-MIDA-PJM
and JP-TK) in 53 s: 2,947,718.27, 1.92% less.

**The packing** (CP-SAT, :func:`pack`), per reserved pool k = (region, GPU type, term):

- an optional interval per reserved configuration c of a phase p on k (contiguous phases in
  one segment only), of c's hours, starting in p's window ``[e_p, l_p - n_c]`` where the
  pool's capacity can hold c in every hour of the run; at most one per phase;
- the committed size R a decision among the term's levels (:func:`levels`): the runs on k
  use at most R GPUs in each hour (a cumulative of capacity ``R_max`` with a blocker of
  ``R_max - R`` over the term), and at most ``cap_k(t)`` (a second cumulative whose blockers
  take the hours the pool cannot hold);
- precedence: a phase after its predecessor's run when both are on k; and a phase is on k
  only with each predecessor that has a configuration on k (the fine-tunes follow their
  pre-training onto the term), so that the placement can meet its start;
- maximise ``sum gain(p, c, s) - R P``, the gain of p on c from hour s being what p costs in
  the incumbent less what c costs there (:func:`planner.model.costs.run_costs`, weighted, the
  rental sunk), in whole cents, each run at the gain of its median start.

**The plan** (:func:`place`): every pipeline with a packed phase is placed anew with its
packed phases pinned to their runs (:func:`formulations.heuristics.components.replace_component`
with ``pins``), the others' pins holding their GPUs; then every pipeline that ran on the pool,
in the capacity left; if that fails, every pipeline anew. The result is costed by the cost
model and offered to the incumbent, which keeps it only when it costs less. Pools are tried in
order of their gain bound (:func:`gain_bound`), each on top of the terms kept before, until
MAX_MISSES pools in a row were not kept.

**Alternatives.** The gains are measured against one plan, and placing a packing moves the
other pipelines, which its value does not see: packings a few percent apart in value are
ranked by it no better than chance. So on a pool whose best packing was kept, up to
ALTERNATIVES more are packed from the same plan, each with a no-good cut on the pipelines it
puts on the term (their :func:`anchors`: another set than every packing before), placed and
offered; the incumbent keeps the cheapest plan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formulations.heuristics.commitments import size_range
from formulations.heuristics.components import replace_component
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import pool_usd_per_gpu, run_costs
from planner.model.costs import weights as weights_of
from planner.model.schedule import Assignment, ReservedKey, Schedule, with_reservations
from planner.model.windows import Windows, precedence_components

#: Seconds CP-SAT may take per pool (the lab's quarter: the 128-GPU H100 packings reach their
#: best in under 10 s; the A100 pools, which never pay, are proved so in about a second).
PACK_SECONDS = 10.0

#: The packing's objective in whole cents (CP-SAT takes integers).
CENTS = 100

#: The search over pools ends after this many pools in a row that were not kept.
MAX_MISSES = 3

#: Packings tried beside the best on a pool that was kept, each with other pipelines on the
#: term (:func:`pack`'s ``avoid``). Seed 2's lab quarter, from its look-ahead plan, CP-SAT
#: given 20 s each (the stage gives PACK_SECONDS): the packings of value 109,180, 109,064,
#: 105,798, 105,426 and 104,236 placed plans of 3,097,489, 3,094,212, 3,103,224, 3,089,821
#: and 3,126,474, and 100 s of descent took the first four to 3,092,786, 3,086,046,
#: 3,071,901 and 3,064,104: the packing's gains, measured against one plan, rank packings a
#: few percent apart no better than chance.
ALTERNATIVES = 4


@dataclass(frozen=True)
class Candidate:
    """One reserved configuration of one phase on the pool, with the gain of each start."""

    phase: str
    config: Config
    starts: np.ndarray
    gains: np.ndarray


def levels(inst: Instance, key: ReservedKey, sizes: Sequence[float]) -> list[int]:
    """The sizes R a commitment to ``key`` is tried at: 0, and the multiples of the smallest
    configuration on it (``sizes``) from the term's minimum to the least of its maximum and the
    pool's peak capacity. A size between two multiples serves no more runs than the lower
    one (when every size is a multiple of the smallest) and costs more."""
    low, top = size_range(inst, key)
    step = int(min(sizes)) if sizes else 0
    if step <= 0 or top < low:
        return [0]
    first = max(step, math.ceil(low / step) * step)
    return [0, *range(first, top + 1, step)]


def candidates(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    key: ReservedKey,
    skip: set[str],
) -> list[Candidate]:
    """The reserved configurations on ``key`` of the phases in one contiguous run (not
    preemptible, one segment) and not in ``skip``, each with the starts where the pool can hold
    it throughout and the gain of each (module docstring); phases whose incumbent run is not
    one assignment are left out."""
    w = weights_of(inst)
    cap = np.asarray(inst.capacity.get((key[0], key[1]), np.zeros(inst.hours)), dtype=float)
    t = inst.term(*key)
    first, end = (t.first, t.end) if t is not None else (0, inst.hours)
    out: list[Candidate] = []
    for name, configs in space.by_phase.items():
        ph = inst.phase(name)
        if name in skip or name not in schedule.assignments or name in schedule.segments:
            continue
        if ph.preemptible or ph.options.max_segments > 1:
            continue
        now = schedule[name]
        paid = float(run_costs(inst, now.config, np.array([now.start]), w)[0])
        e, l_ = max(windows.start[name], first), min(windows.end[name], end)
        for c in configs:
            if c.contract != "reserved" or (c.region, c.gpu, c.term) != key or c.hours > l_ - e:
                continue
            n = c.hours
            holds = cap[e:l_] >= c.total_gpus - 1e-9
            run = np.convolve(holds.astype(np.int64), np.ones(n, dtype=np.int64), "valid") == n
            starts = np.flatnonzero(run) + e
            if starts.size == 0:
                continue
            gains = paid - run_costs(inst, c, starts, w)
            ok = np.isfinite(gains)
            if ok.any():
                out.append(Candidate(name, c, starts[ok], gains[ok]))
    # a phase goes on the term only with its predecessors that could (the placement then
    # meets its start): one whose predecessor has a configuration on the pool but no
    # candidate left is left out, in precedence order
    on_pool = {
        name
        for name, configs in space.by_phase.items()
        if any(c.contract == "reserved" and (c.region, c.gpu, c.term) == key for c in configs)
    }
    kept: set[str] = set()
    for name in inst.order:
        if any(cd.phase == name for cd in out) and not any(
            q in on_pool and q not in kept for q in inst.phase(name).predecessors
        ):
            kept.add(name)
    return [cd for cd in out if cd.phase in kept]


def gain_bound(cands: Sequence[Candidate]) -> float:
    """What any packing of ``cands`` gains at most, before the commitment's price: each phase
    at its best configuration and start, alone on the term."""
    best: dict[str, float] = {}
    for cd in cands:
        best[cd.phase] = max(best.get(cd.phase, 0.0), float(cd.gains.max()))
    return sum(v for v in best.values() if v > 0)


def pack(
    inst: Instance,
    cands: Sequence[Candidate],
    key: ReservedKey,
    sizes: Sequence[int],
    seconds: float = PACK_SECONDS,
    avoid: Sequence[frozenset[str]] = (),
) -> tuple[int, dict[str, Assignment], float] | None:
    """The packing of module docstring: (R, phase -> run on the term, the packing's value
    ``sum gain - R P`` in weighted dollars) for the best packing CP-SAT finds within
    ``seconds``, None when it finds none that pays (value <= 0).

    ``avoid``: sets of :func:`anchors` (phases); the packing's own set of anchors on the term
    differs from each (a no-good cut: one of the set off the term, or an anchor outside it
    on)."""
    from ortools.sat.python import cp_model

    if not cands or len(sizes) < 2:
        return None
    T = inst.hours
    price = weights_of(inst).rental * pool_usd_per_gpu(inst, *key)
    cap = np.asarray(inst.capacity[(key[0], key[1])], dtype=float)
    top = max(sizes)
    m = cp_model.CpModel()
    size = m.new_int_var_from_domain(cp_model.Domain.from_values(list(sizes)), "R")
    runs: dict[str, list[tuple[Candidate, cp_model.IntVar, cp_model.IntVar]]] = {}
    intervals = []
    demands = []
    gain_terms = []
    for i, cd in enumerate(cands):
        on = m.new_bool_var(f"on{i}")
        start = m.new_int_var_from_domain(
            cp_model.Domain.from_values([int(s) for s in cd.starts]), f"s{i}"
        )
        n = cd.config.hours
        intervals.append(m.new_optional_fixed_size_interval_var(start, n, on, f"i{i}"))
        demands.append(round(cd.config.total_gpus))
        # the run's gain at its median start (the starts differ in energy prices and the
        # value of time, little beside the rental a run on the term saves)
        gain_terms.append(math.floor(CENTS * float(np.median(cd.gains))) * on)
        m.add(size >= round(cd.config.total_gpus)).only_enforce_if(on)
        runs.setdefault(cd.phase, []).append((cd, on, start))
    for options in runs.values():
        m.add_at_most_one([on for _, on, _ in options])
    # at most R in each hour: a blocker of R_max - R over the horizon
    slack = m.new_int_var(0, top, "slack")
    m.add(slack == top - size)
    blockers = [m.new_interval_var(0, T, T, "rest")]
    m.add_cumulative([*intervals, *blockers], [*demands, slack], top)
    # at most the pool's capacity in each hour
    peak = int(np.max(cap))
    pool_iv, pool_dem = list(intervals), list(demands)
    t = 0
    while t < T:
        u = t
        while u < T and cap[u] == cap[t]:
            u += 1
        if cap[t] < peak:
            pool_iv.append(m.new_interval_var(t, u - t, u, f"cap{t}"))
            pool_dem.append(int(peak - math.floor(cap[t] + 1e-9)))
        t = u
    m.add_cumulative(pool_iv, pool_dem, peak)
    for name, options in runs.items():
        for q in inst.phase(name).predecessors:
            if q not in runs:
                continue
            before = [on for _, on, _ in runs[q]]
            for _, on, start in options:
                m.add_bool_or(before).only_enforce_if(on)
                for cq, onq, startq in runs[q]:
                    m.add(start >= startq + cq.config.hours).only_enforce_if([on, onq])
    chosen = {name: [on for _, on, _ in runs[name]] for name in anchors(inst, cands)}
    for tried in avoid:
        cut: list[cp_model.IntVar | cp_model.NotBooleanVariable] = []
        for name, ons in chosen.items():
            if name in tried:
                off = m.new_bool_var(f"off-{name}")
                m.add(sum(ons) == 0).only_enforce_if(off)
                cut.append(off)
            else:
                cut.extend(ons)
        m.add_bool_or(cut)
    m.maximize(sum(gain_terms) - math.ceil(CENTS * price) * size)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, seconds)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    R = int(solver.value(size))
    pins: dict[str, Assignment] = {}
    value = -R * price
    for name, options in runs.items():
        for cd, on, start in options:
            if solver.value(on):
                s = int(solver.value(start))
                pins[name] = Assignment(cd.config, tuple(range(s, s + cd.config.hours)))
                value += float(np.median(cd.gains))
    if value <= 0 or R <= 0:
        return None
    return R, pins, value


def anchors(inst: Instance, cands: Sequence[Candidate]) -> frozenset[str]:
    """Each pipeline's anchor among ``cands``: its phase whose configurations on the term
    take the most GPU-hours (a pre-training beside its fine-tunes; a tie to the first in
    topological order). Which anchors a packing holds says which pipelines it puts on the
    term: two packings that differ only in fine-tunes hold the same."""
    load: dict[str, float] = {}
    for cd in cands:
        load[cd.phase] = max(load.get(cd.phase, 0.0), cd.config.hours * cd.config.total_gpus)
    out = set()
    for comp in precedence_components(inst, inst.order):
        mine = [n for n in comp if n in load]
        if mine:
            out.add(max(mine, key=lambda n: (load[n], -mine.index(n))))
    return frozenset(out)


def place(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    pins: Mapping[str, Assignment],
    held: Mapping[ReservedKey, int],
) -> Schedule | None:
    """``schedule`` with ``pins`` (phase -> run) kept and the pipelines around them placed
    anew one by one (module docstring): first the pipelines with a pin and those that ran on
    a pinned pool, the rest as they were; failing that, every pipeline anew. None when
    neither places every phase, and for a schedule in segments (the stage never packs one)."""
    if schedule.segments:
        return None
    comps = precedence_components(inst, list(space.by_phase))
    pools = {(a.config.region, a.config.gpu) for a in pins.values()}
    pinned = [i for i, comp in enumerate(comps) if any(n in pins for n in comp)]
    users = [
        i
        for i, comp in enumerate(comps)
        if i not in pinned
        and any((schedule[n].config.region, schedule[n].config.gpu) in pools for n in comp)
    ]
    rest = [i for i in range(len(comps)) if i not in pinned and i not in users]
    for redo in ([*pinned, *users], [*pinned, *users, *rest]):
        out = {n for i in redo for n in comps[i]}
        current: Schedule | None = Schedule(
            {n: a for n, a in schedule.assignments.items() if n not in out}, dict(held)
        )
        for i in redo:
            assert current is not None
            current = replace_component(
                inst, space, windows, current, comps[i], held=held, pins=pins
            )
            if current is None:
                break
            current = Schedule(current.assignments, dict(held))
        if current is not None:
            return with_reservations(inst, current.assignments)
    return None


def packed_terms(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    offer: Callable[[Schedule | None], bool],
    current: Callable[[], Schedule | None],
    deadline: float,
    stats: dict[str, float] | None = None,
) -> None:
    """Terms bought and filled by packings (module docstring), each offered through
    ``offer`` (True when the incumbent kept it); ``current`` gives the incumbent's schedule
    after each offer. Stops at ``deadline`` (a ``time.perf_counter()`` instant)."""
    stats = {} if stats is None else stats
    keys = sorted(
        {
            (c.region, c.gpu, c.term)
            for configs in space.by_phase.values()
            for c in configs
            if c.contract == "reserved" and pool_usd_per_gpu(inst, c.region, c.gpu, c.term) > 0
        }
    )
    price = weights_of(inst).rental
    ranked: list[tuple[float, ReservedKey]] = []
    for key in keys:
        cands = candidates(inst, space, windows, schedule, key, set())
        lv = levels(inst, key, [cd.config.total_gpus for cd in cands])
        if len(lv) < 2:
            continue
        best = gain_bound(cands) - price * pool_usd_per_gpu(inst, *key) * lv[1]
        if best > 0:
            ranked.append((best, key))
    ranked.sort(key=lambda x: (-x[0], x[1]))
    misses = 0
    for _, key in ranked:
        if misses >= MAX_MISSES or time.perf_counter() >= deadline:
            break
        sched = current()
        if sched is None:
            return
        held = {k: n for k, n in sched.reserved.items() if n > 0}
        if key in held:
            continue
        on_held = {n for n in sched.assignments if sched[n].config.contract == "reserved"}
        cands = candidates(inst, space, windows, sched, key, on_held)
        sizes = levels(inst, key, [cd.config.total_gpus for cd in cands])
        marks = anchors(inst, cands)
        keep = {n: sched[n] for n in on_held}
        tried: list[frozenset[str]] = []
        kept = False
        while len(tried) <= (ALTERNATIVES if kept else 0):
            t0 = time.perf_counter()
            if t0 >= deadline:
                break
            found = pack(inst, cands, key, sizes, min(PACK_SECONDS, deadline - t0), tried)
            stats["packings"] = stats.get("packings", 0) + 1
            stats["packing_s"] = stats.get("packing_s", 0.0) + time.perf_counter() - t0
            if found is None:
                break
            R, pins, _ = found
            tried.append(marks & pins.keys())
            placed = place(inst, space, windows, sched, {**keep, **pins}, {**held, key: R})
            better = offer(placed)
            kept = kept or better  # the best packing decides whether alternatives are tried
            if better:
                name = "packings_kept" if len(tried) == 1 else "packing_alternatives_kept"
                stats[name] = stats.get(name, 0) + 1
        misses = 0 if kept else misses + 1
