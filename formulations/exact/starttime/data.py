"""Start-time data shared by the non-preemptive formulations (CP-SAT and the start-time MILP).

A non-preemptive phase p that runs configuration c is fixed by its start hour tau: it runs
hours ``[tau, tau + n_c)``. Everything that depends on one phase alone is therefore a number
per (p, c, tau), precomputed here once, and both formulations choose exactly one
(c, tau) per phase. With ``h_c(t)`` the weighted hourly cost of
:func:`planner.model.costs.hourly_cost` (energy, failure, running storage, carbon, rental when
billed hourly, licence for reserved contracts), the cost of starting c at tau is

    K[p,c,tau] = sum_{t=tau}^{tau+n_c-1} h_c(t)
                 + w_rental rho_c x ( max(g B(tau), m_c)   if g > 1 (block billing)
                                      max(0, m_c - n_c)    if g = 1 (minimum rental)
                                      0                    reserved contract )
                 + w_storage (T - tau - n_c) archive_c          (output archived after the end)
                 + w_transfer one_time_c                        (staging, retrieval)

with ``B(tau) = floor((tau + n_c - 1) / g) - floor(tau / g) + 1`` billing blocks touched,
``rho_c`` the rental per hour and ``m_c`` the minimum rental hours: the cost model's
:func:`planner.model.costs.run_costs`, the sum of the hourly MILP's costs
(:mod:`formulations.exact.milp.model`) over the same run and exactly what
:func:`planner.model.costs.cost_plan` charges (docs/cost-model.md, "Plan costs") for one
contiguous run. The terms that couple phases are kept apart: moving p's output to a successor
in another region (``w_transfer output_gb(p) transfer(r -> r')``, as in ``add_transfer``),
porting once per GPU family, reserved pools (``R x price x T``), the carbon cap and the
capacity of every (region, GPU type) pool per hour.

Start windows are the precedence-tightened windows of :func:`planner.model.windows.time_windows`:
``e_p <= tau <= l_p - n_c``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import (
    Weights,
    pool_usd_per_gpu,
    run_costs,
    run_emissions,
    transfer_usd_per_gb,
    weights,
    within_carbon_cap,
)
from planner.model.plan import Plan
from planner.model.result import Termination
from planner.model.schedule import Assignment, Pool, Schedule
from planner.model.windows import Windows, time_windows
from planner.model.workload import output_gb_of


@dataclass(frozen=True)
class StartTable:
    """The starts of one configuration of one phase and what each costs.

    ``starts[k]`` is an hour tau with ``e_p <= tau <= l_p - n_c``; ``cost[k]`` is
    K[p,c,tau] (weighted USD, see the module docstring); ``emissions[k]`` the tonnes of CO2
    of the run ``sum_t kW_c ci_t / 1e6``."""

    phase: str
    config: Config
    starts: np.ndarray
    cost: np.ndarray
    emissions: np.ndarray

    @property
    def hours(self) -> int:
        """Whole hours the configuration runs: the length of every start's run."""
        return self.config.hours

    @property
    def pool(self) -> Pool:
        """The (region, GPU type) pool whose capacity the configuration uses."""
        return (self.config.region, self.config.gpu)


@dataclass(frozen=True)
class ReservedPool:
    """A reserved offer that some configuration uses: R in {0} U [lo, hi], costing
    ``cost_per_gpu`` = w_rental x price x T per committed GPU."""

    lo: int
    hi: int
    cost_per_gpu: float


@dataclass(frozen=True)
class Transfer:
    """Edge p -> q with p in region r1 and q in r2 costs ``cost`` (weighted USD)."""

    pred: str
    succ: str
    src: str
    dst: str
    cost: float


@dataclass
class StartData:
    """Everything both non-preemptive formulations read. ``tables[p]`` lists the distinct
    configurations of p that have at least one start in p's window (configurations identical
    in pool, family, hours, GPUs and every start cost are kept once: ``alias`` maps each
    dropped configuration index to the kept table's position)."""

    inst: Instance
    space: ConfigSpace
    windows: Windows
    weights: Weights
    tables: dict[str, list[StartTable]]
    alias: dict[str, dict[int, int]]
    duplicates: int
    edges: list[tuple[str, str]]
    transfers: list[Transfer]
    porting: dict[str, float]
    reserved: dict[Pool, ReservedPool]
    pools: dict[Pool, list[tuple[str, int]]] = field(default_factory=dict)
    build_s: float = 0.0

    @property
    def phases(self) -> list[str]:
        """The phases with start tables, in table order."""
        return list(self.tables)

    @property
    def num_starts(self) -> int:
        """Start variables over every phase and configuration: the model's size."""
        return sum(len(t.starts) for ts in self.tables.values() for t in ts)

    def family(self, c: Config) -> str:
        """The GPU family of configuration ``c`` (porting cost is paid once per family)."""
        return self.inst.gpu(c.gpu).family

    def table_of(self, name: str, c: Config) -> int | None:
        """Position in ``tables[name]`` of configuration c (or of its kept twin)."""
        return self.alias[name].get(c.index)


def _twin_key(
    data_family: str, c: Config, cost: np.ndarray, emis: np.ndarray
) -> tuple[object, ...]:
    return (
        c.region,
        c.gpu,
        c.contract,
        data_family,
        c.hours,
        c.total_gpus,
        np.round(cost, 9).tobytes(),
        np.round(emis, 12).tobytes(),
    )


def build_data(inst: Instance, space: ConfigSpace) -> StartData:
    """Precompute the start tables, coupling terms and pools of ``inst`` over ``space``."""
    t0 = time.perf_counter()
    win = time_windows(inst, space.fewest_hours())
    wts = weights(inst)
    tables: dict[str, list[StartTable]] = {}
    alias: dict[str, dict[int, int]] = {}
    dup = 0
    for name, configs in space.by_phase.items():
        e, l_ = win.start[name], win.end[name]
        tables[name] = []
        alias[name] = {}
        seen: dict[tuple[object, ...], int] = {}
        for c in configs:
            if l_ - c.hours < e:
                continue
            starts = np.arange(e, l_ - c.hours + 1, dtype=np.int64)
            cost = run_costs(inst, c, starts, wts)
            # a run past the hours c may use (its deadline less the reserve a deadline
            # confidence keeps) costs +inf: those starts are not in the table (they are the
            # last ones, so the table's starts stay one range)
            ok = np.isfinite(cost)
            if not ok.all():
                starts, cost = starts[ok], cost[ok]
                if not len(starts):
                    continue
            emis = run_emissions(inst, c, starts)
            key = _twin_key(inst.gpu(c.gpu).family, c, cost, emis)
            if key in seen:
                alias[name][c.index] = seen[key]
                dup += 1
                continue
            seen[key] = len(tables[name])
            alias[name][c.index] = len(tables[name])
            tables[name].append(StartTable(name, c, starts, cost, emis))
    active = set(tables)
    edges = [
        (p, q) for q in inst.order if q in active for p in inst.phase(q).predecessors if p in active
    ]
    transfers: list[Transfer] = []
    for p, q in edges:
        gb = output_gb_of(inst, inst.phase(p))
        if gb <= 0:
            continue
        rp = sorted({t.config.region for t in tables[p]})
        rq = sorted({t.config.region for t in tables[q]})
        for r1 in rp:
            for r2 in rq:
                price = transfer_usd_per_gb(inst, r1, r2)
                if price > 0:
                    transfers.append(Transfer(p, q, r1, r2, wts.transfer * gb * price))
    used_fams = {inst.gpu(t.config.gpu).family for ts in tables.values() for t in ts}
    porting = {
        f: wts.porting * s.porting_usd
        for f, s in inst.spec.families.items()
        if s.porting_usd > 0 and f in used_fams
    }
    reserved: dict[Pool, ReservedPool] = {}
    pools: dict[Pool, list[tuple[str, int]]] = defaultdict(list)
    for name, ts in tables.items():
        for k, t in enumerate(ts):
            pools[t.pool].append((name, k))
            if t.config.contract == "reserved" and t.pool not in reserved:
                offer = inst.region(t.config.region).offers[t.config.gpu].reserved
                assert offer is not None
                hi = (
                    offer.max_gpus
                    if offer.max_gpus is not None
                    else int(inst.capacity[t.pool].max())
                )
                reserved[t.pool] = ReservedPool(
                    offer.min_gpus, hi, wts.rental * pool_usd_per_gpu(inst, *t.pool)
                )
    return StartData(
        inst,
        space,
        win,
        wts,
        tables,
        alias,
        dup,
        edges,
        transfers,
        porting,
        reserved,
        dict(pools),
        time.perf_counter() - t0,
    )


def binding_hours(inst: Instance, space: ConfigSpace, win: Windows) -> dict[Pool, np.ndarray]:
    """Per pool, the hours whose capacity row the start-time model keeps: those where the
    largest demand of every phase that may run there together exceeds the capacity (the
    rule of :func:`formulations.exact.starttime.model.add_capacity`)."""
    T = inst.hours
    peak: dict[Pool, np.ndarray] = {}
    for name, configs in space.by_phase.items():
        e, l_ = win.start[name], win.end[name]
        mine: dict[Pool, np.ndarray] = {}
        for c in configs:
            if l_ - c.hours < e:
                continue
            m = mine.setdefault((c.region, c.gpu), np.zeros(T))
            m[e:l_] = np.maximum(m[e:l_], c.total_gpus)
        for pool, m in mine.items():
            peak[pool] = peak.get(pool, np.zeros(T)) + m
    return {pool: p > inst.capacity[pool] + 1e-9 for pool, p in peak.items()}


def estimate_nonzeros(inst: Instance, space: ConfigSpace) -> tuple[int, int]:
    """(start variables, capacity nonzeros) of the start-time MILP without building it: the
    starts in each phase's window, and for each start the capacity rows it enters, counting
    only the rows the model keeps (:func:`binding_hours`; reserved configurations also enter
    their pool's reserved row in every hour they run)."""
    win = time_windows(inst, space.fewest_hours())
    binding = binding_hours(inst, space, win)
    nvar = nnz = 0
    for name, configs in space.by_phase.items():
        e, l_ = win.start[name], win.end[name]
        for c in configs:
            k = max(0, l_ - e - c.hours + 1)
            if not k:
                continue
            nvar += k
            b = binding.get((c.region, c.gpu))
            if b is not None and b[e:l_].any():
                cb = np.concatenate([[0], np.cumsum(b[e:l_])])
                starts = np.arange(k)
                nnz += int(np.sum(cb[starts + c.hours] - cb[starts]))
            if c.contract == "reserved":
                nnz += k * c.hours
    return nvar, nnz


def objective_of(
    data: StartData, choice: Mapping[str, tuple[int, int]], reserved: Mapping[Pool, int]
) -> float:
    """The model objective of a choice ``{phase: (table position, start)}``: start costs,
    transfers between the chosen regions, porting of the used families and reserved pools."""
    total = 0.0
    region: dict[str, str] = {}
    fams: set[str] = set()
    for name, (k, tau) in choice.items():
        t = data.tables[name][k]
        total += float(t.cost[int(tau) - int(t.starts[0])])
        region[name] = t.config.region
        fams.add(data.family(t.config))
    for tr in data.transfers:
        if region.get(tr.pred) == tr.src and region.get(tr.succ) == tr.dst:
            total += tr.cost
    total += sum(v for f, v in data.porting.items() if f in fams)
    total += sum(rp.cost_per_gpu * reserved.get(pool, 0) for pool, rp in data.reserved.items())
    return total


def choice_of(
    data: StartData, schedule: Mapping[str, tuple[Config, tuple[int, ...]]]
) -> dict[str, tuple[int, int]] | None:
    """A schedule as ``{phase: (table position, start)}``; None if some phase is missing,
    runs non-contiguous hours, or starts outside its modelled window."""
    out: dict[str, tuple[int, int]] = {}
    for name, ts in data.tables.items():
        if name not in schedule:
            return None
        c, hours = schedule[name]
        k = data.table_of(name, c)
        if k is None or not hours:
            return None
        tau = min(hours)
        if max(hours) - tau + 1 != len(hours) or len(hours) != ts[k].hours:
            return None
        if not ts[k].starts[0] <= tau <= ts[k].starts[-1]:
            return None
        out[name] = (k, tau)
    return out


def least_reserved(data: StartData, choice: Mapping[str, tuple[int, int]]) -> dict[Pool, int]:
    """Per reserved pool the least commitment that covers the peak reserved use of a choice
    (0, or at least the offer's minimum)."""
    out: dict[Pool, int] = {}
    for pool, rp in data.reserved.items():
        use = np.zeros(data.inst.hours)
        for name, (k, tau) in choice.items():
            t = data.tables[name][k]
            if t.config.contract == "reserved" and t.pool == pool:
                use[tau : tau + t.hours] += t.config.total_gpus
        peak = int(np.ceil(float(use.max()) - 1e-9))
        out[pool] = 0 if peak <= 0 else max(peak, rp.lo)
    return out


def violations_of(
    data: StartData, choice: Mapping[str, tuple[int, int]], reserved: Mapping[Pool, int]
) -> list[str]:
    """What a choice breaks among the constraints the start tables do not already encode:
    precedence, capacity per pool and hour, reserved pools and the carbon cap."""
    out: list[str] = []
    inst = data.inst
    end = {n: tau + data.tables[n][k].hours for n, (k, tau) in choice.items()}
    for p, q in data.edges:
        if choice[q][1] < end[p]:
            out.append(f"{q} starts at hour {choice[q][1]} before {p} ends at {end[p]}")
    use: dict[Pool, np.ndarray] = defaultdict(lambda: np.zeros(inst.hours))
    res_use: dict[Pool, np.ndarray] = defaultdict(lambda: np.zeros(inst.hours))
    emis = 0.0
    for name, (k, tau) in choice.items():
        t = data.tables[name][k]
        use[t.pool][tau : tau + t.hours] += t.config.total_gpus
        if t.config.contract == "reserved":
            res_use[t.pool][tau : tau + t.hours] += t.config.total_gpus
        emis += float(t.emissions[tau - int(t.starts[0])])
    for pool, u in use.items():
        over = np.where(u > inst.capacity[pool] + 1e-9)[0]
        if len(over):
            out.append(
                f"{pool[0]}/{pool[1]}: {u[over[0]]:g} GPUs in hour {over[0]} > "
                f"capacity {inst.capacity[pool][over[0]]:g}"
            )
    for pool, u in res_use.items():
        if u.max() > reserved.get(pool, 0) + 1e-9:
            out.append(f"{pool[0]}/{pool[1]}: {u.max():g} reserved GPUs > {reserved.get(pool, 0)}")
    if not within_carbon_cap(inst, emis):
        out.append(f"emissions {emis:.6g} t > cap {inst.spec.objective.carbon_cap_tonnes:g} t")
    return out


def schedule_of(
    data: StartData, choice: Mapping[str, tuple[int, int]], reserved: Mapping[Pool, int]
) -> Schedule:
    """The schedule of a choice ``{phase: (table position, start)}``."""
    out: dict[str, Assignment] = {}
    for name, (k, tau) in choice.items():
        c = data.tables[name][k].config
        out[name] = Assignment(c, tuple(range(tau, tau + c.hours)))
    return Schedule(out, reserved)


#: A warm start the non-preemptive solvers take: a schedule (or ``{phase: (config, hours)}``)
#: or a plan.
WarmStart = Mapping[str, tuple[Config, tuple[int, ...]]] | Plan


def as_schedule(data: StartData, start: WarmStart) -> Schedule | None:
    """A warm start as a schedule over this data's configurations: a schedule (or mapping of
    assignments) is taken as is; a :class:`Plan` (e.g. from the hourly MILP) is matched to
    configurations by label. The reservations are the plan's, or none."""
    if isinstance(start, Schedule):
        return start
    if not isinstance(start, Plan):
        return Schedule({n: Assignment(c, tuple(h)) for n, (c, h) in start.items()})
    out: dict[str, Assignment] = {}
    for ph in start.phases:
        if ph.name not in data.space.by_phase:
            continue
        label = ph.info.get("config")
        match = [c for c in data.space.by_phase[ph.name] if c.label == label]
        if not match:
            return None
        out[ph.name] = Assignment(match[0], tuple(ph.hours))
    return Schedule(out, {(r, g): n for r, g, n in start.reserved})


def no_plan_message(term: Termination) -> str:
    """What the start-time model says when it returns no plan, by termination: time limit,
    infeasible, or the solver's own failure."""
    if term == Termination.TIME_LIMIT:
        return (
            "no plan found in time: the solver stopped at its time limit without a "
            "feasible plan; raise --time-limit or relax the instance"
        )
    if term == Termination.INFEASIBLE:
        return (
            "infeasible: no contiguous schedule meets every deadline, precedence and "
            "capacity limit; run `trainplan explain` to see which constraints conflict"
        )
    return "the solver found no plan"
