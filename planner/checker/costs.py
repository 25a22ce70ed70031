"""Plan costs recomputed from the instance and the plan (docs/cost-model.md, "Plan costs"),
and their comparison with the figures a plan states.

All costs are USD and unweighted; ``H`` is the set of running hours of a phase, ``n = |H|``,
``start = min H``, ``end = max H + 1``, ``T`` the horizon length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.checker.constraints import Entry
from planner.checker.recompute import PhaseFacts, archive_tier, transfer_usd_per_gb
from planner.checker.violation import Violation
from planner.instance.model import Instance
from planner.instance.schema import Phase
from planner.model.plan import CONFIG_FIELDS, COST_KEYS, PhasePlan, Plan

#: Cost components a plan states, in the order they are shown.
ALL_KEYS: tuple[str, ...] = (*COST_KEYS, "total")


@dataclass(frozen=True)
class PhaseCosts:
    """Recomputed costs of one phase (USD, by component), its energy and emissions, and the
    migration into each of its segments (None: none)."""

    costs: dict[str, float]
    kwh: float
    emissions_t: float
    moves: tuple[Move | None, ...] = ()


def count_runs(hours: Iterable[int]) -> int:
    """Maximal runs of consecutive hours."""
    hs = sorted(set(hours))
    return sum(1 for i, h in enumerate(hs) if i == 0 or h != hs[i - 1] + 1)


def sla_credit_h(f: PhaseFacts) -> float:
    """Hours of rental the SLA credit returns per failure: ``share x min(mult x D, L)``, m
    times the downtime for the provider's share of failures but never more than the L hours
    of rental a failure loses (docs/cost-model.md, "SLA")."""
    return f.sla_share * min(f.sla_multiplier * f.downtime_h, f.loss_h)


@dataclass(frozen=True)
class Move:
    """A migration's cost (USD by component) and hours."""

    rental: float = 0.0
    energy: float = 0.0
    transfer: float = 0.0
    hours: float = 0.0

    @property
    def total(self) -> float:
        """The move's USD, unweighted: rental + energy + transfer."""
        return self.rental + self.energy + self.transfer


def link_gb_per_s(inst: Instance, src: str, dst: str) -> float:
    """``regions.src.link_gb_per_s[dst]`` or ``default_link_gb_per_s``."""
    r = inst.region(src)
    return float(r.link_gb_per_s.get(dst, r.default_link_gb_per_s))


def _held(inst: Instance, f: PhaseFacts, region: str, hours: float) -> Move:
    """GPUs held without progress for ``hours``: rental ``hours x rho`` and the power paid,
    ``hours x kW_paid x mean(price) / 1000`` (0 when the rental includes the power)."""
    mean_price = float(np.mean(inst.price[region]))
    return Move(hours * f.rental_per_h, hours * f.paid_kw * mean_price / 1000.0, 0.0, hours)


def migration(
    inst: Instance, p: Phase, src: PhaseFacts, src_region: str, dst: PhaseFacts, dst_region: str
) -> Move:
    """From configuration src to dst (docs/cost-model.md, "Segments"): the checkpoint written
    to the source's tier (``stored_src`` s of src's GPUs); when the region changes, the target's
    checkpoint ``ck_dst`` moved at ``transfer(src -> dst)`` USD/GB and the link's bandwidth
    (hours of dst's GPUs waiting) and the input data staged from its home region (else from
    the source region); the restart and the sharded read of ``ck_dst`` at the target
    (``restart_hours + ck_dst / min(read x nodes, aggregate)`` of dst's GPUs). Leaving waits
    until the source's checkpoint is in its storage tier (``stored_src``: the write when
    synchronous, snapshot + write when asynchronous or in memory)."""
    parts = [_held(inst, src, src_region, src.stored_s / 3600.0)]
    if src_region != dst_region:
        ck = dst.checkpoint_gb
        home = p.data.home_region or src_region
        usd = ck * transfer_usd_per_gb(inst, src_region, dst_region)
        usd += p.data.size_gb * transfer_usd_per_gb(inst, home, dst_region)
        wait = ck / link_gb_per_s(inst, src_region, dst_region) / 3600.0
        parts.append(_held(inst, dst, dst_region, wait))
        parts.append(Move(transfer=usd))
    parts.append(_held(inst, dst, dst_region, inst.spec.failure.restart_hours + dst.read_h))
    return Move(
        sum(m.rental for m in parts),
        sum(m.energy for m in parts),
        sum(m.transfer for m in parts),
        sum(m.hours for m in parts),
    )


def _rental(e: PhasePlan, f: PhaseFacts, hours: np.ndarray, p: Phase) -> float:
    """Reserved: ``n x (gpus + spares) x licence``. Otherwise the billed blocks
    ``B = {floor(t / g)}``, each ``g x rho`` at the rate in force when the block begins, plus
    ``max(0, min_rental_hours - |B| g)`` owed hours at the reference rate."""
    if e.contract == "reserved":
        return len(hours) * (e.gpus + e.spare_gpus) * p.licence_usd_per_gpu_hour
    g = f.billing_hours
    blocks = sorted({int(t) // g for t in hours})
    assert f.rental_t is not None
    owed = max(0, f.min_rental_hours - len(blocks) * g)
    return float(sum(g * f.rental_t[k * g] for k in blocks) + owed * f.rental_per_h)


def phase_costs(
    inst: Instance,
    ent: Entry,
    facts: Sequence[PhaseFacts],
    region_of: Mapping[str, str],
    running: PhaseFacts | None = None,
) -> PhaseCosts:
    """One phase's costs, ``facts`` one per segment (one for a phase on one configuration):

    - rental per segment: on-demand/spot the billed blocks ``B = {floor(t / g) : t in H}``,
      ``sum_{k in B} g rho_{kg} + max(0, min_rental_hours - |B| g) x rho`` (``max(|B| g,
      min_rental_hours) x ρ`` at a constant price); reserved ``n x (gpus + spare_gpus) x
      licence`` (the pool itself is paid at plan level);
    - energy: ``Σ_{t∈H} kW_paid x price_t / 1000``, kW_paid = kW when the offer meters power
      and 0 when its rental includes it (kWh and emissions count every kW);
    - failure: ``Σ_{t∈H} λ_t (L (ρ_t + kW price_t / 1000) - share x min(mult x D, L) x ρ_t)``
      (the SLA credit refunds at most the rental lost, :func:`sla_credit_h`), plus
      ``(runs - 1) x resume cost`` per segment for a preemptible phase;
    - storage: ``Σ n_k x storage/h`` + (preemptible) ``(end - start - n) x pause parking/h`` +
      ``(T - end) x archive/h`` of the last segment;
    - transfer: ``data.size_gb x read_passes x tier retrieval`` + ``data.size_gb x
      transfer(home -> region)`` of the first segment + ``#successors x output GB x
      archive-tier retrieval`` of the last + ``Σ over successors q in another region of output
      GB x transfer(last region -> region_q)``;
    - migrations: between consecutive segments, and from the running configuration into the
      first unless it goes on from the release (:func:`migration`), into rental, energy and
      transfer;
    - carbon: ``carbon_usd_per_tonne x Σ_{t∈H} kW x ci_t / 1e6``; porting is plan-wide (0 here).
    """
    p = ent.phase
    parts = ent.parts()
    costs = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emissions = 0.0
    for part, f in zip(parts, facts, strict=True):
        e = part.plan
        H = np.asarray(part.hours, dtype=int)
        price = inst.price[e.region][H]
        assert f.rental_t is not None and f.failure_t is not None
        rho, lam = f.rental_t[H], f.failure_t[H]
        energy_t = f.paid_kw * price / 1000.0  # 0 when the rental includes the power
        costs["rental"] += _rental(e, f, H, p)
        costs["energy"] += float(np.sum(energy_t))
        costs["failure"] += float(
            np.sum(lam * (f.loss_h * (rho + energy_t) - sla_credit_h(f) * rho))
        )
        costs["storage"] += len(H) * f.storage_per_h
        if p.preemptible:
            costs["failure"] += (count_runs(part.hours) - 1) * f.resume_usd
        ci = inst.carbon[e.region]
        emissions += float(np.sum(f.facility_kw * ci[H] / 1e6)) if ci is not None else 0.0
        kwh += f.facility_kw * len(H)
    first, last = parts[0].plan, parts[-1].plan
    f_first, f_last = facts[0], facts[-1]
    hours = sorted(h for part in parts for h in part.hours)
    start, end, n = hours[0], hours[-1] + 1, len(hours)
    costs["storage"] += (inst.hours - end) * f_last.archive_per_h
    if p.preemptible:
        costs["storage"] += (end - start - n) * f_first.pause_per_h
    tier = inst.region(first.region).storage[first.tier]
    transfer = p.data.size_gb * p.data.read_passes * tier.retrieval_usd_per_gb
    if p.data.home_region is not None:
        transfer += p.data.size_gb * transfer_usd_per_gb(inst, p.data.home_region, first.region)
    _, arch = archive_tier(inst.region(last.region), inst.spec.storage.archive)
    successors = inst.successors(p.name)
    transfer += len(successors) * f_last.output_gb * arch.retrieval_usd_per_gb
    for q in successors:
        if q in region_of:
            transfer += f_last.output_gb * transfer_usd_per_gb(inst, last.region, region_of[q])
    costs["transfer"] += transfer
    moves = migrations(inst, ent, facts, running)
    for m in moves:
        if m is not None:
            costs["rental"] += m.rental
            costs["energy"] += m.energy
            costs["transfer"] += m.transfer
    costs["carbon"] = inst.spec.objective.carbon_usd_per_tonne * emissions
    return PhaseCosts(costs, kwh, emissions, tuple(moves))


def goes_on(inst: Instance, ent: Entry) -> bool:
    """The phase's first segment is the configuration it runs on now and starts at its
    release: the run goes on, nothing migrates."""
    run = ent.phase.running
    first = ent.parts()[0]
    if run is None:
        return True
    same = all(getattr(first.plan, k) == getattr(run, k) for k in CONFIG_FIELDS)
    same = same and first.plan.term == run.term
    return same and first.hours[0] == inst.release[ent.name]


def migrations(
    inst: Instance, ent: Entry, facts: Sequence[PhaseFacts], running: PhaseFacts | None
) -> list[Move | None]:
    """The migration into each segment (None: none): from the running configuration into the
    first unless the run goes on, then from each segment into the next."""
    parts = ent.parts()
    out: list[Move | None] = [None]
    run = ent.phase.running
    if run is not None and running is not None and not goes_on(inst, ent):
        out[0] = migration(inst, ent.phase, running, run.region, facts[0], parts[0].plan.region)
    for k in range(1, len(parts)):
        out.append(
            migration(
                inst,
                ent.phase,
                facts[k - 1],
                parts[k - 1].plan.region,
                facts[k],
                parts[k].plan.region,
            )
        )
    return out


def pool_usd_per_gpu(inst: Instance, region: str, gpu: str, term: str) -> float:
    """One committed GPU of a reserved pool under ``term``: the sum of the price over the
    term's hours inside the horizon (the whole horizon without terms), plus, when the term is
    not prorated, its hours outside the horizon at its mean price inside."""
    t = inst.term(region, gpu, term)
    assert t is not None
    inside = inst.offer_price(region, gpu, "reserved", term)[t.first : t.end]
    total = float(np.sum(inside))
    if not t.prorate:
        total += (t.hours - (t.end - t.first)) * float(np.mean(inside))
    return total


def pool_rental(inst: Instance, pools: Mapping[tuple[str, str, str], int]) -> float:
    """``Σ over reserved pools and terms of R x pool_usd_per_gpu``, paid whether used or not."""
    held = [(key, n) for key, n in pools.items() if n > 0 and inst.term(*key) is not None]
    return float(sum(n * pool_usd_per_gpu(inst, *key) for key, n in held))


def porting_usd(inst: Instance, gpus: Iterable[str]) -> float:
    """``families[f].porting_usd`` once per family of a GPU type the plan's phases use."""
    priced = inst.spec.families
    used = {inst.gpu(g).family for g in gpus} & priced.keys()
    return float(sum(priced[f].porting_usd for f in used))


def value_of_hour(inst: Instance, name: str) -> float:
    """USD each hour phase ``name`` finishes earlier is worth: ``phases[].usd_per_hour_early``,
    else ``objective.usd_per_hour_early`` when no phase still to run names it as a
    predecessor, else 0 (docs/cost-model.md, "The value of time")."""
    p = inst.phase(name)
    if p.usd_per_hour_early is not None:
        return float(p.usd_per_hour_early)
    waited_for = any(name in q.predecessors for q in inst.phases if not q.done)
    return 0.0 if waited_for else float(inst.spec.objective.usd_per_hour_early)


def time_value(inst: Instance, ends: Mapping[str, int]) -> float:
    """``sum_p v_p (end_p - release_p)`` over the phases run (``ends``: the hour after each
    phase's last hour): the value of the time the plan takes, in the objective only."""
    return float(sum(value_of_hour(inst, n) * (end - inst.release[n]) for n, end in ends.items()))


def objective_of(inst: Instance, costs: Mapping[str, float]) -> float:
    """The objective ``Σ weights[k] x cost[k]``, weights defaulting to 1."""
    w = {str(k): float(v) for k, v in inst.spec.objective.weights.items()}
    return float(sum(w.get(k, 1.0) * costs[k] for k in COST_KEYS))


def within(stated: float, recomputed: float, rel_tol: float, abs_tol: float) -> bool:
    """``|stated - recomputed| <= abs_tol + rel_tol x |recomputed|``."""
    return math.isfinite(stated) and abs(stated - recomputed) <= abs_tol + rel_tol * abs(recomputed)


def _mismatch(what: str, phase: str | None, stated: float, recomputed: float) -> Violation:
    return Violation(
        "cost",
        phase,
        f"{what}: the plan states {stated:,.6f} but the recomputation gives "
        f"{recomputed:,.6f} (difference {stated - recomputed:+,.6f})",
    )


def compare(
    plan: Plan,
    costs: Mapping[str, float],
    objective: float,
    energy_kwh: float,
    emissions_t: float,
    phase_costs: Mapping[str, PhaseCosts],
    rel_tol: float,
    abs_tol: float,
) -> list[Violation]:
    """One ``cost`` violation per stated figure that differs from its recomputation beyond
    tolerance: plan cost components and total, the value of time when stated (``costs
    ["time"]``, recomputed under ``costs["time"]``), the objective, energy_kwh, emissions_t,
    and every component a phase entry states (``porting`` is plan-wide, so 0 per phase)."""
    out: list[Violation] = []
    if "time" in plan.costs and not within(plan.costs["time"], costs["time"], rel_tol, abs_tol):
        out.append(_mismatch("value of time", None, plan.costs["time"], costs["time"]))
    for k in ALL_KEYS:
        if k not in plan.costs:
            out.append(
                Violation(
                    "cost", None, f"the plan states no {k!r} cost (recomputed {costs[k]:,.6f})"
                )
            )
        elif not within(plan.costs[k], costs[k], rel_tol, abs_tol):
            out.append(_mismatch(f"{k} cost", None, plan.costs[k], costs[k]))
    if plan.objective is None or math.isnan(plan.objective):
        out.append(
            Violation("cost", None, f"the plan states no objective (recomputed {objective:,.6f})")
        )
    elif not within(plan.objective, objective, rel_tol, abs_tol):
        out.append(_mismatch("objective (weighted total)", None, plan.objective, objective))
    if not within(plan.energy_kwh, energy_kwh, rel_tol, abs_tol):
        out.append(_mismatch("energy_kwh", None, plan.energy_kwh, energy_kwh))
    if not within(plan.emissions_t, emissions_t, rel_tol, abs_tol):
        out.append(_mismatch("emissions_t", None, plan.emissions_t, emissions_t))
    seen: set[str] = set()
    for e in plan.phases:
        pc = phase_costs.get(e.name)
        if pc is None or e.name in seen:
            continue
        seen.add(e.name)
        for k in COST_KEYS:
            if k in e.costs and not within(e.costs[k], pc.costs[k], rel_tol, abs_tol):
                out.append(_mismatch(f"{k} cost of the phase", e.name, e.costs[k], pc.costs[k]))
        out.extend(_compare_moves(e, pc, rel_tol, abs_tol))
    return out


def _compare_moves(e: PhasePlan, pc: PhaseCosts, rel_tol: float, abs_tol: float) -> list[Violation]:
    """Every migration the recomputation finds is stated on its segment at its cost, and no
    segment states one that does not happen."""
    out: list[Violation] = []
    stated = [s.migration for s in e.segments] or [{}]
    for k, m in enumerate(pc.moves):
        said = stated[k] if k < len(stated) else {}
        what = "from the running configuration" if k == 0 else f"from segment {k - 1}"
        if m is None:
            # any figure or source stated for a migration that does not happen is wrong
            figures = {
                key: said[key]
                for key in ("total", "rental", "energy", "transfer", "hours")
                if key in said and float(said[key]) != 0.0
            }
            if figures or "from" in said:
                shown = ", ".join(f"{key} {value}" for key, value in figures.items())
                out.append(
                    Violation(
                        "migration",
                        e.name,
                        f"segment {k} states a migration ({shown or 'from ' + repr(said['from'])}"
                        ") but none happens (the run goes on)",
                    )
                )
            continue
        if not said or "total" not in said:
            out.append(
                Violation(
                    "migration",
                    e.name,
                    f"segment {k}: the migration {what} is left out (it costs "
                    f"{m.total:,.6f}: rental {m.rental:,.6f}, energy {m.energy:,.6f}, "
                    f"transfer {m.transfer:,.6f})",
                )
            )
            continue
        source = "running" if k == 0 else str(k - 1)
        if "from" in said and said["from"] != source:
            out.append(
                Violation(
                    "migration",
                    e.name,
                    f"segment {k}: the migration states it comes from {said['from']!r}; it "
                    f"comes {what} ({source!r})",
                )
            )
        for key, value in (
            ("total", m.total),
            ("rental", m.rental),
            ("energy", m.energy),
            ("transfer", m.transfer),
            ("hours", m.hours),
        ):
            if key in said and not within(float(said[key]), value, rel_tol, abs_tol):
                out.append(
                    Violation(
                        "migration",
                        e.name,
                        f"segment {k}: the migration {what} states {key} "
                        f"{float(said[key]):,.6f} but costs {value:,.6f}",
                    )
                )
    return out
