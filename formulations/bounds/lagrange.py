"""A capacity-aware lower bound: Lagrangian relaxation of the pools, with every phase's
subproblem solved exactly by dynamic programming over its hours and chained through the
precedence graph.

**The relaxation.** Drop the couplings that cost >= 0 (transfers between phases' regions,
porting) and move the per-hour pool constraints into the objective with prices:

- capacity, ``sum_p G_p x_p(t) <= cap_{r,g}(t)``, with a price ``lam_{r,g}(t) >= 0`` per GPU:
  each running hour of a configuration in pool (r, g) pays ``lam(t) G_c`` and the bound
  subtracts ``sum lam(t) cap(t)``;
- counts, ``#{p running a configuration of at least s GPUs in (r, g) at t} <=
  floor(cap_{r,g}(t) / s)`` for each size s of a configuration on the pool, with a price
  ``nu_{r,g,s}(t) >= 0``: each running hour of a configuration c pays ``nu(t)`` of every row
  of its pool with ``s <= G_c``, and the bound subtracts ``sum nu(t) floor(cap(t) / s)``.
  Every plan meets them (its configurations of at least s GPUs use at least s each), and the
  relaxation, which mixes a phase's starts, does not: two 128-GPU jobs in a pool of 192 run
  one and a half at a time. Kept only where ``floor(cap / s) s < cap`` (else capacity
  implies the row) and more phases could run such a configuration. The lab's quarter of
  seed 2 re-planned after losing a region: 150 steps reach 1,307,791 with them and 1,299,676
  without, where the linear programme over whole schedules (column generation) is between
  1,300,831 and 1,300,965 without them: no prices prove more without the rows;
- reserved pools (region, GPU, term), whose cost ``R P`` (P what one committed GPU costs:
  ``pi T`` for a constant whole-horizon price, the term's prices otherwise,
  :func:`planner.model.costs.pool_usd_per_gpu`) with ``R >= u(t)`` (the reserved GPUs in use in
  hour t), with prices ``mu(t) >= 0``, ``sum_t mu(t) <= P``: ``R P >= sum_t mu(t) u(t)``, so
  each reserved GPU-hour pays ``mu(t)`` instead of ``pi`` (``mu = pi`` is the separable
  bound's "as used" rule; concentrating ``mu`` on the hours every plan must use is stronger).
  A term with a largest size ``R_max`` (``max_gpus``) bounds R too, and then any ``mu >= 0``
  is admissible: ``min over 0 <= R <= R_max of R (P - sum_t mu(t))`` is 0 within the budget
  and ``-R_max (sum_t mu(t) - P)`` past it (:meth:`Relaxation.held_charge`). For a re-plan's
  free terms (the old plan's commitments, already paid: P = 0, a fixed size) that is a
  capacity, ``u(t) <= R_max`` priced ``mu(t)``, and the ascent steps it as one; without it
  their GPU-hours would cost nothing without limit (the lab's quarter with commitments that
  pay, re-planned from hour 1,095 after a price change: bound 169,630 for a plan of 893,427).

For fixed prices the rest is a sum over phases, except precedence. A phase's **value
function** ``V_p(r)`` is the least cost of p started at or after hour r plus a share of its
successors: ``alpha_{p,s} V_s(end_p)`` with ``alpha_{p,s} = 1 / (active predecessors of s)``.
Every phase is counted once in total and ``V_s(max_p end_p) >= sum_p alpha_{p,s} V_s(end_p)``
(``V_s`` never decreases), so ``sum_{roots} V_root(e_root) - prices x capacities`` is a lower
bound on every plan: exact on chains and out-trees without capacity, and never below the
separable bound (:mod:`formulations.bounds.separable`) at zero prices.

A phase's own cost for one configuration c and its hours (weighted, as in
:mod:`planner.model.costs`): the hourly costs ``h_c(t)`` (energy, failure, running storage, carbon,
rental billed per hour, licence) plus the prices above; contiguous phases a window sum plus
the billing blocks, minimum rental, archive after the end and one-time costs
(:func:`planner.model.costs.run_costs`, exact); preemptible phases the DP below with every segment
after the first paying the resume cost and every paused hour the parking rate, blocks billed
at their least ``ceil(n/g)`` (a lower bound). Hours whose capacity alone cannot host c, and
hours ``masks`` excludes, are closed.

Preemptible DP (backward over the hours of the window, j = hours still to run; ``archive``
the weighted cost of each hour after the end, :func:`planner.model.costs.after_end_per_h`: the
archive less the value of time, whose constant ``v (T - release)`` is in the one-time costs):
``run(t, j) = h(t) + [j = 1] (archive (T - t - 1) + S(t + 1)) + [j > 1] min(run(t+1, j-1),
pause(t+1, j-1))``, ``pause(t, j) = parking + min(pause(t+1, j), run(t+1, j) + resume)``, and a
start at tau costs ``run(tau, n_c)`` (plus the one-time costs), with S the successors' share.
From :data:`formulations.bounds.compiled.COMPILED_CELLS` cells on, or at any size once the
kernels are loaded, the recursion runs compiled (:mod:`formulations.bounds.compiled`: the same
operations, so the same values to the bit, over the band of states a start reaches and that
can still finish): the lab's quarter's evaluation takes 0.5 s instead of 1.3-1.6 s.

**The prices** come from projected subgradient ascent (Polyak steps towards the incumbent's
cost; Held, Wolfe & Crowder 1974): the subgradient is the relaxed plan's use of each pool and
hour minus its capacity (and, for reserved pools, its reserved use), taken at the minimiser of
every value function. Every iterate is a valid bound; the best is kept. The number of
iterations is fixed by the caller, so the bound of a command is reproducible.

**Configuration fixing.** With bound L at prices (lam, mu), a plan in which phase p runs
configuration c costs at least ``L + min_r (V_{p,c}(r) - V_p(r))`` (forcing p onto c raises
every value function that contains it by at least that much); a configuration for which that
exceeds the incumbent's cost is not part of any cheaper plan.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from formulations.bounds.compiled import COMPILED_CELLS, follow
from formulations.bounds.separable import open_runs
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import (
    after_end_per_h,
    fixed_cost,
    hourly_cost,
    least_block_rental,
    pause_usd_per_h,
    pool_usd_per_gpu,
    run_costs,
    transfer_usd_per_gb,
)
from planner.model.costs import weights as weights_of
from planner.model.schedule import Assignment, Pool, ReservedKey
from planner.model.windows import Windows, precedence_components
from planner.model.workload import output_gb_of

if TYPE_CHECKING:
    from planner.beside import Served

INF = math.inf

#: What :meth:`Relaxation.solve` calls at its iterates: ``(evaluation, lam, mu)`` to
#: ``(upper, target)`` when it found a better incumbent, else None.
OnStep = Callable[["Evaluation", np.ndarray, np.ndarray], "tuple[float, float | None] | None"]


#: The step size halves after this many steps in a row without a better bound (and the
#: prices go back to the best).
HALVE_AFTER = 4

#: The ascent stops after this many steps in a row without a better bound (the step halves
#: every HALVE_AFTER, so the last is 1/32 of the first): a count, not the clock, so the bound stays
#: reproducible (month-70b re-planned from hour 360: 100 steps, 8 s, none better).
STALLED_STEPS = 20

#: The ascent also stops when its last SLOW_STEPS steps closed less than SLOW_SHARE of what
#: was left between the bound and the aim (the incumbent): month-70b re-planned after a lost
#: region gained 0.8% of its gap in steps 30-100 (3.5 s), and the reduced MILP kept 69-70
#: configurations after 1, 10, 12 or 100 steps. Over 10 steps it stopped there after 12
#: (5.6 s to 0.1% against 7.4 s), but large-cap0.5 then ended its 60 s at 0.12% (0.04%) and
#: large-x2-cap0.5 reached 1% at 48 s (32 s): 20 it is.
SLOW_STEPS = 20
SLOW_SHARE = 0.02

#: ... and when its first NO_GAIN_STEPS steps gave no better bound than the zero prices'
#: (month-70b re-planned after a price change: 10 steps, 0.6 s, none better).
NO_GAIN_STEPS = 5

#: From this many DP cells of one evaluation on (:attr:`Relaxation.cells`), when the phases
#: form two or more precedence components and a second core is spare
#: (:func:`planner.beside.may_fork`), a forked child evaluates about half of the cells' worth
#: of whole components while this process evaluates the rest, for every evaluation of the
#: relaxation (:class:`planner.beside.Served`: the child's value functions come back
#: through a pipe, about 20 MB on the lab's quarter; a child that cannot answer is made good
#: here). The same values, bit for bit: each component's recursion is the same. Below this
#: an evaluation takes a few tenths of a second, and shipping the values back would eat
#: the gain.
SERVED_CELLS = 30_000_000


def _slowed(history: list[float], aim: float, share: float = SLOW_SHARE) -> bool:
    """The best bound after each step (``history[0]`` the start) has risen by less than
    ``share`` of ``aim - history[-SLOW_STEPS - 1]`` over the last SLOW_STEPS steps. Counted
    in steps, not seconds: the bound a command proves does not depend on the machine."""
    if len(history) <= SLOW_STEPS:
        return False
    before = history[-SLOW_STEPS - 1]
    left = aim - before
    return left > 0 and history[-1] - before < share * left


#: :func:`deflected` keeps at least this share of the subgradient along itself:
#: ``d.g >= KEEP |g|^2``.
KEEP = 0.5


def deflected(g: np.ndarray, prev: np.ndarray | None, gamma: float) -> np.ndarray:
    """The direction ``d = g + beta prev`` after the last direction ``prev``, with
    ``beta = -gamma g.prev / |prev|^2`` where the subgradient turns back on it
    (``g.prev < 0``: the ascent zigzagging across a ridge) and 0 elsewhere (Camerini,
    Fratta & Maffioli 1975, who found gamma = 1.5 best): part of the last direction is kept,
    so the step runs along the ridge. Their guarantee (d at least as close in angle to the
    optimal prices as g) holds for Polyak steps aimed at the dual optimum; these aim at the
    incumbent, above it, and where g is close to ``-prev`` (one row over-used, then as much
    under) ``g + 1.5 (-g.prev/|prev|^2) prev`` points along ``prev``: the price that must
    fall keeps rising. So ``beta`` is also at most ``KEEP |g|^2 / -g.prev``, which keeps
    ``d.g >= KEEP |g|^2``: a pure reversal ``g = -c prev`` gives ``d = KEEP g``. Over the
    60 hard test instances (the longer ascent's steps, 60 of them) the uncapped rule lost
    2.8 gaps' worth of bound in all (worse on 25, better on 11) and the capped one 0.01
    (18 and 17). On the quarter of seed 7 re-planned, both gain; on the shipped quarter
    the longer ascent's smaller steps lose, so only the first ascent's are deflected
    (:data:`formulations.pipeline.DEFLECT`).
    ``g`` itself where ``prev`` is None or zero, or ``g`` does not turn back."""
    if prev is None:
        return g
    dd = float(np.sum(prev * prev))
    if dd <= 1e-12:
        return g
    dot = float(np.sum(g * prev))
    if dot >= 0:
        return g
    beta = min(-gamma * dot / dd, KEEP * float(np.sum(g * g)) / -dot)
    return g + beta * prev


@dataclass
class _Phase:
    """One phase's data for the DP: configurations in space order, window [e, stop)."""

    name: str
    e: int
    stop: int
    pre: bool
    configs: list[Config]
    #: (C, W) hourly cost at zero capacity prices and "billed" rental (reserved: licence),
    #: +inf where an hour is closed.
    base: np.ndarray
    gpus: np.ndarray
    pool: np.ndarray
    #: index into the reserved pools, -1 for other contracts
    rpool: np.ndarray
    n: np.ndarray
    #: contiguous: per configuration, the costs of a run that do not depend on the prices,
    #: by start (billing blocks, minimum rental, archive after the end, one-time)
    static: list[np.ndarray] = field(default_factory=list)
    #: preemptible: one-time costs + rental blocks' lower bound; archive per hour after end
    const: np.ndarray = field(default_factory=lambda: np.zeros(0))
    archive: np.ndarray = field(default_factory=lambda: np.zeros(0))
    resume: np.ndarray = field(default_factory=lambda: np.zeros(0))
    parking: float = 0.0
    succ: list[tuple[str, float]] = field(default_factory=list)
    #: the count rows (:attr:`Relaxation.counts`, as rows of the prices) of the pools it may
    #: use, and per row the configurations it counts (at least the row's size on its pool)
    crows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ccount: list[np.ndarray] = field(default_factory=list)
    #: the preemptive DP runs compiled (:mod:`formulations.bounds.compiled`, the same values)
    compiled: bool = False

    @property
    def width(self) -> int:
        return self.stop - self.e


@dataclass
class Evaluation:
    """The relaxation at one price vector: the bound, each phase's value function
    ``V[p][t - e_p]`` for t in [e_p, l_p] (inf at l_p), and per configuration the values
    ``A[p][k]`` by start (inf where it cannot start)."""

    bound: float
    V: dict[str, np.ndarray]
    A: dict[str, list[np.ndarray]]


@dataclass
class LagrangeResult:
    """The best bound found, its prices and the relaxed plan's use of their rows, per
    configuration the least bound of a plan using it (``config_bound[p][k]``, space order),
    the iterations run and the bound at the prices the ascent started from (the first
    iterate: zero capacity prices, or those it resumed from)."""

    bound: float
    first_bound: float
    lam: np.ndarray
    mu: np.ndarray
    pools: list[Pool]
    reserved_pools: list[tuple[str, str, str]]
    config_bound: dict[str, np.ndarray]
    iterations: int
    seconds: float
    usage: np.ndarray
    #: the evaluation at the best prices (value functions for masks and plans)
    evaluation: Evaluation | None = None

    def prices(self) -> dict[Pool, np.ndarray]:
        """Capacity price per GPU-hour by pool (zero where capacity never binds)."""
        return {p: self.lam[i] for i, p in enumerate(self.pools)}


class Relaxation:
    """The Lagrangian relaxation of one instance over a configuration space (module
    docstring). ``masks`` (per (phase, configuration index), over the window) closes hours as
    in the MILP; ``capacity`` replaces the instance's pools (a neighbourhood's residual);
    ``reserved_capacity`` (per reserved pool and hour) caps the GPUs its configurations may
    use: hours where it cannot host one are closed, and :meth:`primal` places within it."""

    def __init__(
        self,
        inst: Instance,
        space: ConfigSpace,
        windows: Windows,
        masks: Mapping[tuple[str, int], np.ndarray] | None = None,
        capacity: Mapping[Pool, np.ndarray] | None = None,
        reserved_capacity: Mapping[ReservedKey, np.ndarray] | None = None,
    ) -> None:
        self.inst = inst
        self.space = space
        self.windows = windows
        self.w = weights_of(inst)
        T = self.T = inst.hours
        cap = dict(inst.capacity if capacity is None else capacity)
        self.capacity = cap
        masks = masks or {}
        active = [n for n in inst.order if n in space.by_phase]
        pools: dict[Pool, int] = {}
        rpools: dict[tuple[str, str, str], int] = {}
        #: per reserved pool (region, GPU, term): what one committed GPU costs the plan
        #: (weighted), and the hours of the term inside the horizon
        self.rprice: list[float] = []
        self.rhours: list[tuple[int, int]] = []
        self.phases: dict[str, _Phase] = {}
        npred: dict[str, int] = {
            n: sum(1 for q in inst.phase(n).predecessors if q in space.by_phase) for n in active
        }
        for name in active:
            configs = list(space.by_phase[name])
            e, l_ = windows.start[name], windows.end[name]
            W = max(0, l_ - e)
            C = len(configs)
            base = np.full((C, W), INF)
            gpus = np.zeros(C)
            pool = np.zeros(C, dtype=np.int64)
            rpool = np.full(C, -1, dtype=np.int64)
            n = np.zeros(C, dtype=np.int64)
            for k, c in enumerate(configs):
                key = (c.region, c.gpu)
                pool[k] = pools.setdefault(key, len(pools))
                if c.contract == "reserved":
                    rkey = (c.region, c.gpu, c.term)
                    if rkey not in rpools:
                        rpools[rkey] = len(rpools)
                        tm = inst.term(*rkey)
                        assert tm is not None, rkey
                        self.rprice.append(self.w.rental * pool_usd_per_gpu(inst, *rkey))
                        self.rhours.append((tm.first, tm.end))
                    rpool[k] = rpools[rkey]
                gpus[k] = c.total_gpus
                n[k] = c.hours
                if c.hours > W:
                    continue
                ok = cap[key][e:l_] >= c.total_gpus - 1e-9
                if c.contract == "reserved" and reserved_capacity is not None:
                    rcap = reserved_capacity.get((c.region, c.gpu, c.term))
                    if rcap is not None:
                        ok = ok & (np.asarray(rcap)[e:l_] >= c.total_gpus - 1e-9)
                m = masks.get((name, c.index))
                if m is not None:
                    ok = ok & np.asarray(m, dtype=bool)
                base[k] = np.where(ok, hourly_cost(inst, c, self.w)[e:l_], INF)
            ph = _Phase(
                name, e, l_, inst.phase(name).preemptible, configs, base, gpus, pool, rpool, n
            )
            if ph.pre:
                ph.const = np.array(
                    [
                        fixed_cost(inst, c, T, self.w) + least_block_rental(inst, c, self.w, e, l_)
                        for c in configs
                    ]
                )
                ph.archive = np.array([after_end_per_h(inst, c, self.w) for c in configs])
                ph.resume = np.array([self.w.failure * c.resume_usd for c in configs])
                ph.parking = self.w.storage * pause_usd_per_h(inst, inst.phase(name))
            else:
                zero = np.zeros(T)
                for c in configs:
                    starts = np.arange(e, l_ - c.hours + 1)
                    ph.static.append(
                        run_costs(inst, c, starts, self.w, zero) if len(starts) else np.zeros(0)
                    )
            ph.succ = [(s, 1.0 / npred[s]) for s in inst.successors(name) if s in space.by_phase]
            self.phases[name] = ph
        self.order = active
        self.roots = [n for n in active if npred[n] == 0]
        self.pools = list(pools)
        self.reserved_pools = list(rpools)
        self.cap = np.array([np.asarray(cap[p], dtype=float) for p in self.pools]).reshape(
            len(self.pools), T
        )
        self._rows()
        self.rprice_arr = np.array(self.rprice, dtype=float)
        self._reserved_limits(reserved_capacity)
        #: per reserved pool, the hours of its term in which some configuration on it is open
        #: (inside its phase's window, capacity and masks allowing): the only hours a plan
        #: can use it
        self.rusable = np.zeros((len(self.reserved_pools), T), dtype=bool)
        for ph in self.phases.values():
            for j in np.nonzero(ph.rpool >= 0)[0]:
                self.rusable[ph.rpool[j], ph.e : ph.stop] |= np.isfinite(ph.base[j])
        for i, (first, end) in enumerate(self.rhours):
            self.rusable[i, :first] = False
            self.rusable[i, end:] = False
        #: DP cells of one evaluation (configurations x hours, x run length when
        #: preemptible): what an evaluation costs, known before running one.
        self.cells = sum(self._phase_cells(ph) for ph in self.phases.values())
        if any(ph.pre for ph in self.phases.values()):
            from formulations.bounds import compiled

            if compiled.loaded() or (self.cells >= COMPILED_CELLS and compiled.available()):
                for ph in self.phases.values():
                    ph.compiled = ph.pre
        #: the preemptive phases' DP runs compiled
        self.compiled = any(ph.compiled for ph in self.phases.values())
        #: the child evaluating half of the components (:meth:`_served`) and the two groups
        self._server: Served[tuple[np.ndarray, np.ndarray], Any] | None = None
        self._server_checked = False
        self._groups: tuple[list[str], list[str]] = (self.order, [])

    def _rows(self) -> None:
        """The rows the prices price: the pool-hours where capacity can bind (every phase's
        largest demand together exceeds it), then the count rows (:meth:`_count_rows`)."""
        T = self.T
        # pool-hours where capacity can bind: every phase's largest demand together exceeds it;
        # and per pool and size of its configurations, how many phases could run one at least
        # that large in each hour
        sizes: list[list[float]] = [[] for _ in self.pools]
        for ph in self.phases.values():
            for k in range(len(ph.configs)):
                if float(ph.gpus[k]) not in sizes[ph.pool[k]]:
                    sizes[ph.pool[k]].append(float(ph.gpus[k]))
        demand = np.zeros((len(self.pools), T))
        many = [np.zeros((len(sz), T)) for sz in sizes]
        for ph in self.phases.values():
            peak = np.zeros((len(self.pools), ph.width))
            for k in range(len(ph.configs)):
                open_ = np.isfinite(ph.base[k])
                peak[ph.pool[k]] = np.maximum(peak[ph.pool[k]], np.where(open_, ph.gpus[k], 0.0))
            demand[:, ph.e : ph.stop] += peak
            for i in set(ph.pool.tolist()):
                for j, size in enumerate(sizes[i]):
                    many[i][j, ph.e : ph.stop] += peak[i] >= size - 1e-9
        binding = demand > self.cap + 1e-9
        self._count_rows(sizes, many, binding)
        #: per row of the prices (the pools, then the count rows), the hours where it can bind
        self.binding = np.vstack([binding, self.count_binding])

    def _count_rows(
        self, sizes: list[list[float]], many: list[np.ndarray], binding: np.ndarray
    ) -> None:
        """The count rows (module docstring): per pool i and size s of a configuration on it,
        ``floor(cap_i(t) / s)`` configurations of at least s GPUs at most, kept where that
        is below ``cap_i(t) / s`` (else capacity implies it) and more phases could run one
        there (``many``); and each phase's share of them (``crows``, ``ccount``)."""
        rows: list[tuple[int, float]] = []
        rhs: list[np.ndarray] = []
        binds: list[np.ndarray] = []
        for i, sz in enumerate(sizes):
            for j, size in enumerate(sz):
                most = np.floor(self.cap[i] / size + 1e-9)
                can = binding[i] & (most * size < self.cap[i] - 1e-9) & (many[i][j] > most)
                if can.any():
                    rows.append((i, size))
                    rhs.append(most)
                    binds.append(can)
        #: the count rows: (pool index, size), their right-hand sides and binding hours
        self.counts = rows
        self.count_cap = np.array(rhs).reshape(len(rows), self.T)
        self.count_binding = np.array(binds, dtype=bool).reshape(len(rows), self.T)
        first = len(self.pools)
        for ph in self.phases.values():
            used = set(ph.pool.tolist())
            mine = [j for j, (i, _) in enumerate(rows) if i in used]
            ph.crows = np.array([first + j for j in mine], dtype=np.int64)
            ph.ccount = [
                np.flatnonzero((ph.pool == rows[j][0]) & (ph.gpus >= rows[j][1] - 1e-9))
                for j in mine
            ]

    @functools.cached_property
    def rhs(self) -> np.ndarray:
        """Per row of the prices and hour, its right-hand side: the pools' capacity, then the
        count rows' most configurations."""
        return np.vstack([self.cap, self.count_cap])

    def _reserved_limits(self, reserved_capacity: Mapping[ReservedKey, np.ndarray] | None) -> None:
        """Per reserved pool: its term's largest size (``rmax``), whether it is a free term
        (``rfree``), and the reserved GPUs a plan may still use by hour (``rcap``)."""
        T = self.T
        #: per reserved pool, the most GPUs its term allows (``max_gpus``; inf: no limit)
        rmax = []
        for rkey in self.reserved_pools:
            tm = self.inst.term(*rkey)
            rmax.append(INF if tm is None or tm.max_gpus is None else float(tm.max_gpus))
        self.rmax = np.array(rmax, dtype=float)
        #: the free terms (a re-plan's commitments already paid: no price, a size): their
        #: prices ``mu`` are those of a capacity, ``u(t) <= R_max`` (module docstring)
        self.rfree = (self.rprice_arr <= 0.0) & np.isfinite(self.rmax)
        #: per reserved pool and hour, the reserved GPUs a plan may still use (inf: no limit
        #: but the pool's); :meth:`primal` places within it
        self.rcap = np.full((len(self.reserved_pools), T), INF)
        for i, rkey in enumerate(self.reserved_pools):
            if reserved_capacity is not None and rkey in reserved_capacity:
                self.rcap[i] = np.asarray(reserved_capacity[rkey], dtype=float)

    # ------------------------------------------------------------------ prices

    def zero_prices(self) -> tuple[np.ndarray, np.ndarray]:
        """Capacity prices 0; a reserved pool's price spread evenly over its term's hours
        (for a constant whole-horizon price: the reserved price per GPU-hour, the separable
        bound's rule)."""
        lam = np.zeros((len(self.pools) + len(self.counts), self.T))
        mu = np.zeros((len(self.reserved_pools), self.T))
        for i, usable in enumerate(self.rusable):
            n = int(usable.sum())
            if n:
                mu[i, usable] = self.rprice_arr[i] / n
        return lam, mu

    def _hourly(self, ph: _Phase, lam: np.ndarray, mu: np.ndarray) -> np.ndarray:
        add = lam[ph.pool][:, ph.e : ph.stop]
        if len(mu) and (ph.rpool >= 0).any():
            res = ph.rpool >= 0
            add = add.copy()
            add[res] += mu[ph.rpool[res]][:, ph.e : ph.stop]
        h = ph.base + ph.gpus[:, None] * add
        for row, ks in zip(ph.crows, ph.ccount, strict=True):
            h[ks] += lam[row, ph.e : ph.stop]
        return h

    def carried(self, other: Relaxation, lam: np.ndarray) -> np.ndarray:
        """``other``'s capacity prices ``lam`` on this relaxation's rows: a row of both (a
        pool, or one of its count rows of one size) keeps its price, a row only here gets 0.
        Any prices >= 0 give a bound, so the prices an ascent found over a larger space
        bound a subspace's plans too (:func:`formulations.pipeline.without_reserved_at`)."""
        index: dict[tuple[Pool, float | None], int] = {
            (p, None): i for i, p in enumerate(other.pools)
        }
        first = len(other.pools)
        for j, (i, size) in enumerate(other.counts):
            index[(other.pools[i], size)] = first + j
        keys = [(p, None) for p in self.pools] + [(self.pools[i], s) for i, s in self.counts]
        out = np.zeros((len(keys), self.T))
        for row, key in enumerate(keys):
            at = index.get(key)
            if at is not None:
                out[row] = lam[at]
        return out

    # ------------------------------------------------------------------ evaluation

    def _succ_share(self, ph: _Phase, V: Mapping[str, np.ndarray]) -> np.ndarray:
        """S(end) for end = e_p .. l_p (index end - e_p): sum alpha V_s(end)."""
        ends = np.arange(ph.e, ph.stop + 1)
        total = np.zeros(len(ends))
        for s, alpha in ph.succ:
            total += alpha * value_at(V[s], self.phases[s].e, ends)
        return total

    def _regional_share(
        self, ph: _Phase, region: str, VR: Mapping[str, Mapping[str, np.ndarray]]
    ) -> np.ndarray:
        """S(end) of phase p run in ``region``: per successor s, the least over s's regions
        r' of ``alpha V_s^{r'}(end) + w_transfer x output_gb(p) x transfer(region -> r')``."""
        ends = np.arange(ph.e, ph.stop + 1)
        total = np.zeros(len(ends))
        gb = self.w.transfer * output_gb_of(self.inst, self.inst.phase(ph.name))
        for s, alpha in ph.succ:
            best = np.full(len(ends), INF)
            for r2, V2 in VR[s].items():
                move = gb * transfer_usd_per_gb(self.inst, region, r2) if gb > 0 else 0.0
                best = np.minimum(best, alpha * value_at(V2, self.phases[s].e, ends) + move)
            total += best
        return total

    @functools.cached_property
    def has_transfers(self) -> bool:
        """Some precedence edge moves an output at a positive price between some regions."""
        for name, ph in self.phases.items():
            if not ph.succ or output_gb_of(self.inst, self.inst.phase(name)) <= 0:
                continue
            mine = {c.region for c in ph.configs}
            for s, _ in ph.succ:
                theirs = {c.region for c in self.phases[s].configs}
                if any(transfer_usd_per_gb(self.inst, a, b) > 0 for a in mine for b in theirs):
                    return True
        return False

    def transfer_bound(self, lam: np.ndarray, mu: np.ndarray) -> float:
        """The bound of :meth:`evaluate` with the transfers between phases' regions put back:
        value functions per phase and region, ``V_p^r``, each phase's successors' share
        taking for every successor its best region given p's (:meth:`_regional_share`). Still
        a lower bound: a successor with several predecessors is in one region, which each
        predecessor's share may choose apart (the least of a sum is at least the sum of the
        least). Exact on chains without binding capacity. Each region's value function runs
        the DP over that region's configurations only: one evaluation's work in all (the
        lab's quarter: 1.0-1.6 s, against 19-21 s over all of a phase's configurations for
        every region)."""
        VR: dict[str, dict[str, np.ndarray]] = {}
        for name in reversed(self.order):
            ph = self.phases[name]
            h = self._hourly(ph, lam, mu)
            VR[name] = {}
            for r in sorted({c.region for c in ph.configs}):
                ks = [k for k, c in enumerate(ph.configs) if c.region == r]
                sub = _subset(ph, ks, h[ks])
                VR[name][r] = _value(
                    ph.width, self._starts(sub, h[ks], self._regional_share(ph, r, VR))
                )
        total = sum(min(float(v[0]) for v in VR[r].values()) for r in self.roots)
        return total - float(np.sum(lam * self.rhs)) - self.held_charge(mu)

    def _starts(self, ph: _Phase, h: np.ndarray, S: np.ndarray) -> list[np.ndarray]:
        """Per configuration the value of each start, with successors' share S."""
        return _preemptive(ph, h, S, self.T) if ph.pre else _contiguous(ph, h, S)

    def evaluate(self, lam: np.ndarray, mu: np.ndarray) -> Evaluation:
        """The relaxation at capacity prices ``lam`` (per pool and hour) and reserved-pool
        prices ``mu``: the phases' value functions by backward induction over the precedence
        order, and the bound they give (a lower bound for any prices the module docstring
        admits: ``lam >= 0``, ``mu >= 0`` with ``sum_t mu <= P`` where the term has no
        largest size, less :meth:`held_charge`). On a large instance
        half of the precedence components are evaluated on a second core
        (:data:`SERVED_CELLS`)."""
        served = self._served()
        if served is not None and served.submit((lam, mu)):
            from planner.beside import patience

            t0 = time.perf_counter()
            try:
                V, A = self._values(self._groups[0], lam, mu)
            except BaseException:
                served.close()  # its answer would answer the next call
                raise
            theirs = served.result(
                lambda: self._values(self._groups[1], lam, mu),
                wait=patience(time.perf_counter() - t0),
            )
            V.update(theirs[0])
            A.update(theirs[1])
            # in the order one process fills them
            V = {n: V[n] for n in reversed(self.order)}
            A = {n: A[n] for n in reversed(self.order)}
        else:
            V, A = self._values(self.order, lam, mu)
        total = sum(float(V[r][0]) for r in self.roots)
        total -= float(np.sum(lam * self.rhs)) + self.held_charge(mu)
        return Evaluation(total, V, A)

    def held_charge(self, mu: np.ndarray) -> float:
        """``sum_k R_max,k max(0, sum_t mu_k(t) - P_k)`` over the reserved pools with a
        largest size: what ``min over 0 <= R <= R_max of R (P - sum_t mu(t))`` takes off the
        bound when the prices pass the budget (module docstring); 0 within it."""
        if not len(mu):
            return 0.0
        over = np.maximum(0.0, mu.sum(axis=1) - self.rprice_arr)
        fin = np.isfinite(self.rmax) & (over > 0)
        return float(np.sum(self.rmax[fin] * over[fin]))

    def _values(
        self, names: list[str], lam: np.ndarray, mu: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[str, list[np.ndarray]]]:
        """The value functions ``V`` and values by start ``A`` of the phases ``names`` (whole
        precedence components, in the precedence order) by backward induction."""
        V: dict[str, np.ndarray] = {}
        A: dict[str, list[np.ndarray]] = {}
        for name in reversed(names):
            ph = self.phases[name]
            h = self._hourly(ph, lam, mu)
            A[name] = self._starts(ph, h, self._succ_share(ph, V))
            V[name] = _value(ph.width, A[name])
        return V, A

    def components(self) -> list[list[str]]:
        """The phases in precedence components (connected through predecessors and
        successors), each in the precedence order, in the order of their first phase."""
        return precedence_components(self.inst, self.order)

    def _served(self) -> Served[tuple[np.ndarray, np.ndarray], Any] | None:
        """The child that evaluates the second of two groups of whole components
        (:data:`SERVED_CELLS`), started on the first call; None when evaluations stay
        here."""
        if self._server is not None:
            return self._server if self._server.alive else None
        if self._server_checked:
            return None
        self._server_checked = True
        if self.cells < SERVED_CELLS:
            return None
        from planner.beside import Served, may_fork

        comps = self.components()
        if len(comps) < 2 or not may_fork():
            return None

        sized = [(sum(self._phase_cells(self.phases[n]) for n in c), c) for c in comps]
        # the largest components first, each to the lighter group
        mine: list[str] = []
        theirs: list[str] = []
        load = [0, 0]
        for size, comp in sorted(sized, key=lambda x: x[0], reverse=True):
            side = 0 if load[0] <= load[1] else 1
            (mine if side == 0 else theirs).extend(comp)
            load[side] += size
        ours = set(mine)
        self._groups = (
            [n for n in self.order if n in ours],
            [n for n in self.order if n not in ours],
        )
        group = self._groups[1]
        self._server = Served(lambda prices: self._values(group, *prices))
        return self._server if self._server.alive else None

    @staticmethod
    def _phase_cells(ph: _Phase) -> int:
        """DP cells of one phase in an evaluation (:attr:`cells`)."""
        return len(ph.configs) * ph.width * (int(ph.n.max()) if ph.pre and len(ph.n) else 1)

    # ------------------------------------------------------------------ the relaxed plan

    def usage(
        self, ev: Evaluation, lam: np.ndarray, mu: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per row of the prices and hour, the relaxed plan's use (the minimisers, each phase
        copy with its weight): GPUs per pool, then configurations per count row; and reserved
        GPUs per reserved pool and hour."""
        use = np.zeros((len(self.pools) + len(self.counts), self.T))
        ruse = np.zeros((len(self.reserved_pools), self.T))
        ready: dict[str, dict[int, float]] = {r: {self.phases[r].e: 1.0} for r in self.roots}
        for name in self.order:
            ph = self.phases[name]
            arrivals = ready.get(name, {})
            if not arrivals:
                continue
            h = None
            for r, wgt in sorted(arrivals.items()):
                pick = _argmin_start(ev.A[name], max(r, ph.e) - ph.e)
                if pick is None:
                    continue
                k, pos = pick
                tau = ph.e + pos
                if ph.pre:
                    if h is None:
                        h = self._hourly(ph, lam, mu)
                    S = self._succ_share(ph, ev.V)
                    hours = _trace_preemptive(ph, k, h[k], S, self.T, pos)
                else:
                    hours = np.arange(tau, tau + int(ph.n[k]))
                if not len(hours):
                    continue
                use[ph.pool[k], hours] += wgt * ph.gpus[k]
                for row, ks in zip(ph.crows, ph.ccount, strict=True):
                    if k in ks:
                        use[row, hours] += wgt
                if ph.rpool[k] >= 0:
                    ruse[ph.rpool[k], hours] += wgt * ph.gpus[k]
                end = int(hours[-1]) + 1
                for s, alpha in ph.succ:
                    d = ready.setdefault(s, {})
                    d[end] = d.get(end, 0.0) + wgt * alpha
        return use, ruse

    def primal(
        self, ev: Evaluation, lam: np.ndarray, mu: np.ndarray, top: int = 4
    ) -> dict[str, Assignment] | None:
        """A plan from the relaxation (a Lagrangian heuristic): phases in topological order,
        each ready when all its predecessors have ended, take the placement of least relaxed
        value (own cost at these prices plus the successors' share, the value functions of
        ``ev``) among the ``top`` best configurations, within the capacity the phases before
        it left. Exact DP placements for preemptible phases (recomputed with the full hours
        closed). None when some phase cannot be placed."""
        T = self.T
        used = np.zeros((len(self.pools), T))
        rused = np.zeros((len(self.reserved_pools), T))
        ends: dict[str, int] = {}
        out: dict[str, Assignment] = {}
        for name in self.order:
            ph = self.phases[name]
            preds = [q for q in self.inst.phase(name).predecessors if q in ends]
            ready = max([ph.e, *(ends[q] for q in preds)])
            pos = ready - ph.e
            ranked = []
            for k, a in enumerate(ev.A[name]):
                if pos < len(a):
                    v = float(np.min(a[pos:]))
                    if math.isfinite(v):
                        ranked.append((v, k))
            ranked.sort()
            h_all: np.ndarray | None = None
            S: np.ndarray | None = None
            best: tuple[float, int, np.ndarray] | None = None
            tried = 0
            for _, k in ranked:
                if tried >= top:
                    break
                free = self.cap[ph.pool[k], ph.e : ph.stop] - used[ph.pool[k], ph.e : ph.stop]
                ok = free >= ph.gpus[k] - 1e-9
                r = int(ph.rpool[k])
                if r >= 0:
                    ok &= (
                        self.rcap[r, ph.e : ph.stop] - rused[r, ph.e : ph.stop] >= ph.gpus[k] - 1e-9
                    )
                if ph.pre:
                    if h_all is None:
                        h_all = self._hourly(ph, lam, mu)
                        S = self._succ_share(ph, ev.V)
                    assert S is not None
                    h = np.where(ok, h_all[k], INF)
                    sub = _subset(ph, [k], h[None, :])
                    vals = _preemptive(sub, h[None, :], S, T)[0]
                    if pos >= len(vals):
                        continue
                    i = int(np.argmin(vals[pos:])) + pos
                    if not math.isfinite(vals[i]):
                        continue
                    tried += 1
                    hours = _trace_preemptive(sub, 0, h, S, T, i)
                    if best is None or vals[i] < best[0]:
                        best = (float(vals[i]), k, hours)
                else:
                    a = ev.A[name][k]
                    n = int(ph.n[k])
                    fits = open_runs(ok, n)[pos : len(a)]
                    if not fits.any():
                        continue
                    tried += 1
                    cand = np.where(fits, a[pos:], INF)
                    i = int(np.argmin(cand))
                    if math.isfinite(cand[i]) and (best is None or cand[i] < best[0]):
                        best = (float(cand[i]), k, np.arange(ph.e + pos + i, ph.e + pos + i + n))
            if best is None:
                return None
            _, k, hours = best
            used[ph.pool[k], hours] += ph.gpus[k]
            if ph.rpool[k] >= 0:
                rused[ph.rpool[k], hours] += ph.gpus[k]
            ends[name] = int(hours[-1]) + 1
            out[name] = Assignment(ph.configs[k], tuple(int(t) for t in hours))
        return out

    def start_masks(self, ev: Evaluation, upper: float) -> dict[tuple[str, int], np.ndarray]:
        """For contiguous phases: the hours of its window each configuration may still use in
        a plan cheaper than ``upper``. Forcing p onto c started at tau gives the bound
        ``L + A_c(tau) - V_p(tau)`` (``V_p`` never decreases, so the least difference over
        ready times r <= tau is at tau); an hour is open when an open start covers it."""
        out: dict[tuple[str, int], np.ndarray] = {}
        for name, ph in self.phases.items():
            if ph.pre:
                continue
            V = ev.V[name]
            for k, a in enumerate(ev.A[name]):
                c = ph.configs[k]
                open_ = np.zeros(ph.width, dtype=bool)
                if len(a):
                    fin = np.isfinite(a) & np.isfinite(V[: len(a)])
                    lb = np.full(len(a), INF)
                    lb[fin] = ev.bound + a[fin] - V[: len(a)][fin]
                    ok = fin & (lb <= upper + 1e-7 * max(1.0, abs(upper)))
                    n = int(ph.n[k])
                    cover = np.concatenate([[0], np.cumsum(ok)])
                    t = np.arange(ph.width)
                    lo = np.clip(t - n + 1, 0, len(ok))
                    hi = np.clip(t + 1, 0, len(ok))
                    open_ = (cover[hi] - cover[lo]) > 0
                out[(name, c.index)] = open_
        return out

    def config_bounds(self, ev: Evaluation) -> dict[str, np.ndarray]:
        """Per phase and configuration (space order): the least bound of a plan using it,
        ``L + min_r (V_{p,c}(r) - V_p(r))`` (inf when the configuration cannot start)."""
        out: dict[str, np.ndarray] = {}
        for name, ph in self.phases.items():
            V = ev.V[name]
            vals = np.full(len(ph.configs), INF)
            fin = np.isfinite(V)
            for k, a in enumerate(ev.A[name]):
                if not len(a):
                    continue
                full = np.full(ph.width + 1, INF)
                full[: len(a)] = a
                vc = np.minimum.accumulate(full[::-1])[::-1]
                diff = np.where(fin & np.isfinite(vc), vc - np.where(fin, V, 0.0), INF)
                if fin.any():
                    d = float(np.min(diff))
                    vals[k] = ev.bound + max(0.0, d) if math.isfinite(d) else INF
            out[name] = vals
        return out

    # ------------------------------------------------------------------ ascent

    def solve(
        self,
        upper: float,
        iterations: int = 60,
        deadline: float | None = None,
        target: float | None = None,
        theta: float = 1.0,
        start: Evaluation | None = None,
        step_s: float = 0.0,
        halve_first: bool = False,
        patience: int = HALVE_AFTER,
        give_up: int = NO_GAIN_STEPS,
        slow_share: float = SLOW_SHARE,
        reserved_boost: float = 1.0,
        prices: tuple[np.ndarray, np.ndarray] | None = None,
        deflect: float = 0.0,
        on_step: OnStep | None = None,
        every: int = 1,
    ) -> LagrangeResult:
        """Subgradient ascent from zero capacity prices (or ``prices``, ``(lam, mu)``) for at
        most ``iterations`` steps (or until ``deadline``, a ``time.perf_counter()`` instant, or
        the bound reaching ``target``); ``upper`` is the incumbent's cost (the Polyak step's
        aim). ``start``: the evaluation at those prices when the caller has it; ``step_s``:
        about how long an evaluation takes (no step starts that would end after the
        deadline). ``halve_first``: until a step beats the start, halve the step after every
        miss instead of every HALVE_AFTER (the steps aim at ``upper``, and from far they
        overshoot: the lab quarter, 12% under its incumbent, gained nothing in 5 steps
        halving after 4, and +0.5% in 10 halving after each). ``patience``: misses in a row
        before the step halves; ``give_up``: steps after which an ascent that never beat its
        start stops (NO_GAIN_STEPS; smaller steps take longer to gain); ``slow_share``: the share
        of what is left to the aim that SLOW_STEPS steps must close for the ascent to go on
        (:func:`_slowed`). ``deflect``: when positive, each step follows :func:`deflected`
        (this gamma) instead of the subgradient, restarting from the subgradient whenever the
        prices go back to the best. ``reserved_boost``: the reserved prices' Polyak step
        times this. ``on_step``: called with every ``every``-th iterate's evaluation and
        prices (a Lagrangian heuristic plans there); when it returns ``(upper, target)``, the
        steps aim at that incumbent cost from then on and the ascent stops at that target.
        The reserved use is never negative, so most of a step raises every hour's price
        alike, and the projection onto ``sum_t mu(t) <= P`` takes that part back: what is
        left, the shift towards the hours of peak use, is a small share of the step the
        rule measured. On the lab's quarter, 150 steps of a tenth of the way from the zero
        prices reached 2,777,530 at 1, 2,868,210 at 10 and 2,881,561 at 20, and at 30 no
        step in 20 beat the zero prices; its seed 1 2,800,457, 2,915,172 and 2,910,791. Where
        few hours carry the commitment the rule's own steps do better (test_lagrange.py)."""
        t0 = time.perf_counter()
        lam, mu = self.zero_prices() if prices is None else (prices[0].copy(), prices[1].copy())
        ev = start if start is not None else self.evaluate(lam, mu)

        def out_of_time() -> bool:
            return deadline is not None and time.perf_counter() + step_s > deadline

        first = ev.bound
        best = (ev.bound, lam.copy(), mu.copy(), ev)
        aim = upper if math.isfinite(upper) else abs(first) * 1.05 + 1.0
        stall = 0
        since_best = 0  # steps since the bound last improved
        done = 0
        history = [first]  # the best bound after each step
        use = np.zeros_like(lam)
        d_prev: np.ndarray | None = None
        if not math.isfinite(first) or not (self.binding.any() or len(mu)):
            return self._result(best, first, 0, t0, use)
        if len(mu) and prices is None and not out_of_time():
            # reserved prices in proportion to the relaxed plan's reserved use: the whole
            # commitment charged to the hours it is used (often where every plan must use it)
            _, ruse = self.usage(ev, lam, mu)
            total = ruse.sum(axis=1, keepdims=True)
            cap_mu = self.rprice_arr[:, None]
            mu2 = np.where(total > 0, cap_mu * ruse / np.where(total > 0, total, 1.0), mu)
            ev2 = self.evaluate(lam, mu2)
            if ev2.bound > best[0]:
                mu, ev = mu2, ev2
                best = (ev.bound, lam.copy(), mu.copy(), ev)
        while done < iterations:
            if out_of_time():
                break
            if target is not None and best[0] >= target:
                break
            done += 1
            use, g, gr = self._subgradients(ev, lam, mu)
            norm = float(np.sum(g * g) + np.sum(gr * gr))
            if norm <= 1e-12:
                break  # the relaxed plan fits: its bound is the best these prices give
            if deflect > 0:
                # a row at zero price that the deflected direction would push down stays put
                g = deflected(g, d_prev, deflect)
                g = np.where((lam <= 0) & (g < 0), 0.0, g)
                d_prev = g
            gap_ = theta * max(aim - ev.bound, 1e-6 * max(1.0, abs(aim)))
            lam, mu = self._stepped(lam, mu, g, gr, gap_, reserved_boost)
            ev = self.evaluate(lam, mu)
            if on_step is not None and done % every == 0:
                found = on_step(ev, lam, mu)
                if found is not None and found[0] < aim:
                    aim, target = found
            if ev.bound > best[0] + 1e-9 * max(1.0, abs(best[0])):
                best = (ev.bound, lam.copy(), mu.copy(), ev)
                stall = since_best = 0
            else:
                stall += 1
                since_best += 1
                if since_best >= STALLED_STEPS:
                    break  # the step has been halved five times without a better bound
                if stall >= (1 if halve_first and best[0] <= first else patience):
                    theta *= 0.5
                    stall = 0
                    lam, mu, ev = best[1].copy(), best[2].copy(), best[3]
                    d_prev = None
            history.append(best[0])
            if _slowed(history, aim, slow_share) or (done >= give_up and best[0] <= first):
                break
        return self._result(best, first, done, t0, use)

    def _subgradients(
        self, ev: Evaluation, lam: np.ndarray, mu: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The relaxed plan's use of every row-hour at ``ev``, the capacity and count rows'
        subgradient (use less capacity where the row can bind; 0 where the price is 0 and
        the row is not over-used: it cannot move) and the reserved prices' (reserved use;
        a free term's less its R_max GPUs, and not below 0 where its price is 0)."""
        use, gr = self.usage(ev, lam, mu)
        if self.rfree.any():
            # a free term is a capacity of R_max GPUs priced by mu (R = R_max)
            gr = gr.copy()
            gr[self.rfree] -= self.rmax[self.rfree, None]
            gr[self.rfree] = np.where(
                mu[self.rfree] <= 0, np.maximum(gr[self.rfree], 0.0), gr[self.rfree]
            )
        g = np.where(self.binding, use - self.rhs, 0.0)
        g = np.where((lam <= 0) & (g < 0), 0.0, g)
        return use, g, gr

    def _stepped(
        self,
        lam: np.ndarray,
        mu: np.ndarray,
        g: np.ndarray,
        gr: np.ndarray,
        gap: float,
        reserved_boost: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The prices after one Polyak step of length ``gap`` (theta times what is left to
        the aim) along ``g`` and ``gr``, per block: the reserved prices move at the full rate
        towards the aim (one joint step starves the smaller block; times ``reserved_boost``,
        then projected onto each commitment's budget), the capacity and count prices share
        it, each block scaled by its own norm (the count rows' subgradients are counts, the
        capacities' GPUs: one joint step would leave the counts' prices where they start;
        both at the full rate overshoot, as they price the same runs)."""
        blocks = [
            (b, n)
            for b in (slice(0, len(self.pools)), slice(len(self.pools), None))
            if (n := float(np.sum(g[b] * g[b]))) > 1e-12
        ]
        lam = lam.copy()
        for block, ng in blocks:
            lam[block] = np.maximum(0.0, lam[block] + gap / len(blocks) / ng * g[block])
        nr = float(np.sum(gr * gr))
        if len(mu) and nr > 1e-12:
            moved = mu + reserved_boost * gap / nr * gr
            mu = _project_capped(moved, self.rprice_arr)
            mu[self.rfree] = np.maximum(0.0, moved[self.rfree])
        return lam, mu

    def _result(
        self,
        best: tuple[float, np.ndarray, np.ndarray, Evaluation],
        first: float,
        it: int,
        t0: float,
        use: np.ndarray,
    ) -> LagrangeResult:
        bound, lam, mu, ev = best
        return LagrangeResult(
            bound,
            first,
            lam,
            mu,
            self.pools,
            self.reserved_pools,
            self.config_bounds(ev),
            it,
            time.perf_counter() - t0,
            use,
            ev,
        )


# ----------------------------------------------------------------------------- DP kernels


def _value(width: int, starts: list[np.ndarray]) -> np.ndarray:
    """The value function ``V(t)`` for t = e .. e + width: the least value of a start at or
    after t among ``starts`` (per configuration, by start position)."""
    best = np.full(width + 1, INF)
    for a in starts:
        if len(a):
            best[: len(a)] = np.minimum(best[: len(a)], a)
    return np.minimum.accumulate(best[::-1])[::-1]


def value_at(V: np.ndarray, e: int, ts: np.ndarray) -> np.ndarray:
    """``V(t)`` for hours ``ts``, from ``V[t - e]`` for t in [e, e + len(V)): the value at e
    before the window (a phase cannot start earlier anyway), inf after it."""
    idx = np.asarray(ts) - e
    out = np.full(len(idx), INF)
    inside = idx < len(V)
    out[inside] = V[np.maximum(idx[inside], 0)]
    return out


def _contiguous(ph: _Phase, h: np.ndarray, S: np.ndarray) -> list[np.ndarray]:
    """Per configuration the value of starting at each tau in [e, l - n]: the run's hourly
    costs, its price-independent costs and the successors' share at its end."""
    out: list[np.ndarray] = []
    W = ph.width
    blocked = ~np.isfinite(h)
    cs = np.concatenate([np.zeros((len(h), 1)), np.cumsum(np.where(blocked, 0.0, h), axis=1)], 1)
    cb = np.concatenate([np.zeros((len(h), 1)), np.cumsum(blocked, axis=1)], 1)
    for k in range(len(ph.configs)):
        n = int(ph.n[k])
        if n > W:
            out.append(np.zeros(0))
            continue
        sums = cs[k, n:] - cs[k, : W - n + 1]
        sums = np.where(cb[k, n:] - cb[k, : W - n + 1] > 0, INF, sums)
        out.append(sums + ph.static[k] + S[n : W + 1])
    return out


def _preemptive(ph: _Phase, h: np.ndarray, S: np.ndarray, T: int) -> list[np.ndarray]:
    """Per configuration the value of starting at each tau (the DP of the module docstring,
    all configurations of the phase at once). The states are held run length by
    configuration, so that every step over them is one contiguous block; two pairs of
    buffers swap each hour and every step writes in place (the lab quarter's 392M cells:
    4.8 s with fresh arrays held configuration by run length). The operations and their
    order are those of the recursion, so the values are the same to the bit; with
    ``ph.compiled`` the compiled kernel computes them (:mod:`formulations.bounds.compiled`)."""
    C, W = h.shape
    nmax = int(ph.n.max()) if C else 0
    out: list[np.ndarray] = []
    if not C or W == 0:
        return [np.zeros(0) for _ in range(C)]
    if ph.compiled:
        from formulations.bounds import compiled

        first = compiled.preemptive_starts(ph, h, S, T)
        return [
            first[k, : W - int(ph.n[k]) + 1] + ph.const[k] if ph.n[k] <= W else np.zeros(0)
            for k in range(C)
        ]
    # run[m, k], pause[m, k]: configuration k with m hours still to run (row 0 never used)
    run, pause = np.full((nmax + 1, C), INF), np.full((nmax + 1, C), INF)
    new_run, new_pause = np.full((nmax + 1, C), INF), np.full((nmax + 1, C), INF)
    start = np.full((W, C), INF)
    cols = np.arange(C)
    arch = ph.archive
    res = ph.resume
    hT = np.ascontiguousarray(h.T)  # hour j's costs as one contiguous row
    for j in range(W - 1, -1, -1):
        t = ph.e + j
        hj = hT[j]
        # run(t, 1) = h(t) + archive (T - t - 1) + S(t + 1)
        np.add(hj, arch * (T - t - 1) + S[j + 1], out=new_run[1])
        if nmax > 1:
            # run(t, m) = h(t) + min(run(t + 1, m - 1), pause(t + 1, m - 1))
            body = new_run[2:]
            np.minimum(run[1:nmax], pause[1:nmax], out=body)
            np.add(hj, body, out=body)
        # pause(t, m) = parking + min(pause(t + 1, m), run(t + 1, m) + resume)
        tail = new_pause[1:]
        np.add(run[1:], res, out=tail)
        np.minimum(pause[1:], tail, out=tail)
        np.add(ph.parking, tail, out=tail)
        run, new_run = new_run, run
        pause, new_pause = new_pause, pause
        start[j] = run[ph.n, cols]
    for k in range(C):
        n = int(ph.n[k])
        if n > W:
            out.append(np.zeros(0))
        else:
            out.append(start[: W - n + 1, k] + ph.const[k])
    return out


def _trace_preemptive(
    ph: _Phase, k: int, h: np.ndarray, S: np.ndarray, T: int, pos: int
) -> np.ndarray:
    """The hours of configuration k's cheapest run started at window position ``pos`` (the
    DP of :func:`_preemptive` for one configuration, kept in full and followed forward). The
    rows before ``pos`` are never read and not computed, and each row is written in place
    (the same operations in the same order: the values of :func:`_preemptive` to the bit)."""
    W = len(h)
    n = int(ph.n[k])
    if ph.compiled:
        from formulations.bounds import compiled

        return compiled.preemptive_trace(ph, k, h, S, T, pos)
    run = np.full((W + 1, n + 1), INF)
    pause = np.full((W + 1, n + 1), INF)
    a, r, park = ph.archive[k], ph.resume[k], ph.parking
    for j in range(W - 1, pos - 1, -1):
        t = ph.e + j
        run[j, 1] = h[j] + (a * (T - t - 1) + S[j + 1])
        if n > 1:
            body = run[j, 2:]
            np.minimum(run[j + 1, 1:n], pause[j + 1, 1:n], out=body)
            np.add(h[j], body, out=body)
        tail = pause[j, 1:]
        np.add(run[j + 1, 1:], r, out=tail)
        np.minimum(pause[j + 1, 1:], tail, out=tail)
        np.add(park, tail, out=tail)
    hours = np.zeros(n, dtype=np.int64)
    return hours[: follow(run, pause, r, ph.e, pos, n, hours)]


def _subset(ph: _Phase, ks: list[int], h: np.ndarray) -> _Phase:
    """Phase ``ph`` with configurations ``ks`` only (their hourly costs ``h``, one row each),
    for the DP kernels."""
    return _Phase(
        ph.name,
        ph.e,
        ph.stop,
        ph.pre,
        [ph.configs[k] for k in ks],
        h,
        ph.gpus[ks],
        ph.pool[ks],
        ph.rpool[ks],
        ph.n[ks],
        [ph.static[k] for k in ks] if ph.static else [],
        ph.const[ks] if len(ph.const) else ph.const,
        ph.archive[ks] if len(ph.archive) else ph.archive,
        ph.resume[ks] if len(ph.resume) else ph.resume,
        ph.parking,
        ph.succ,
        compiled=ph.compiled,
    )


def _argmin_start(A: list[np.ndarray], pos: int) -> tuple[int, int] | None:
    """(configuration, window position) of the least start value at or after ``pos``."""
    best: tuple[float, int, int] | None = None
    for k, a in enumerate(A):
        if pos >= len(a):
            continue
        seg = a[pos:]
        i = int(np.argmin(seg))
        v = float(seg[i])
        if math.isfinite(v) and (best is None or v < best[0] - 1e-12):
            best = (v, k, pos + i)
    return None if best is None else (best[1], best[2])


def _project_capped(mu: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Row by row, the Euclidean projection onto ``{m >= 0, sum m <= cap}``; a cap of 0 (a
    free term: the commitments a re-plan keeps) projects onto 0."""
    out = np.maximum(mu, 0.0)
    for i in range(len(out)):
        if out[i].sum() <= caps[i]:
            continue
        if caps[i] <= 0:
            out[i] = 0.0
            continue
        v = np.sort(mu[i])[::-1]
        css = np.cumsum(v)
        rho = np.nonzero(v * np.arange(1, len(v) + 1) > (css - caps[i]))[0][-1]
        theta = (css[rho] - caps[i]) / (rho + 1.0)
        out[i] = np.maximum(mu[i] - theta, 0.0)
    return out
