"""Plan costs recomputed from the instance and the plan (docs/cost-model.md, "Plan costs"),
and their comparison with the figures a plan states.

All costs are USD and unweighted; ``H`` is the set of running hours of a phase, ``n = |H|``,
``start = min H``, ``end = max H + 1``, ``T`` the horizon length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from planner.checker.constraints import Entry
from planner.checker.recompute import PhaseFacts, archive_tier, transfer_usd_per_gb
from planner.checker.violation import Violation
from planner.instance.model import Instance
from planner.plan import COST_KEYS, Plan

#: Cost components a plan states, in the order they are shown.
ALL_KEYS: tuple[str, ...] = (*COST_KEYS, "total")


@dataclass(frozen=True)
class PhaseCosts:
    """Recomputed costs of one phase (USD, by component), its energy and emissions."""

    costs: dict[str, float]
    kwh: float
    emissions_t: float


def count_runs(hours: Iterable[int]) -> int:
    """Maximal runs of consecutive hours."""
    hs = sorted(set(hours))
    return sum(1 for i, h in enumerate(hs) if i == 0 or h != hs[i - 1] + 1)


def sla_credit_h(f: PhaseFacts) -> float:
    """Hours of rental the SLA credit returns per failure: ``share x min(mult x D, L)``, m
    times the downtime for the provider's share of failures but never more than the L hours
    of rental a failure loses (docs/cost-model.md, "SLA")."""
    return f.sla_share * min(f.sla_multiplier * f.downtime_h, f.loss_h)


def phase_costs(
    inst: Instance, ent: Entry, f: PhaseFacts, region_of: Mapping[str, str]
) -> PhaseCosts:
    """One phase's costs:

    - rental: on-demand/spot ``max(|B| g, min_rental_hours) x ρ`` with billed blocks
      ``B = {floor(t / g) : t in H}``; reserved ``n x (gpus + spare_gpus) x licence`` (the pool
      itself is paid at plan level);
    - energy: ``Σ_{t∈H} kW x price_t / 1000``;
    - failure: ``Σ_{t∈H} λ (L (ρ + kW price_t / 1000) - share x min(mult x D, L) x ρ)``
      (the SLA credit refunds at most the rental lost, :func:`sla_credit_h`), plus
      ``(segments - 1) x resume cost`` for a preemptible phase;
    - storage: ``n x storage/h`` + (preemptible) ``(end - start - n) x pause parking/h`` +
      ``(T - end) x archive/h``;
    - transfer: ``data.size_gb x read_passes x tier retrieval`` + ``data.size_gb x
      transfer(home -> region)`` + ``#successors x output GB x archive-tier retrieval`` +
      ``Σ over successors q in another region of output GB x transfer(region -> region_q)``;
    - carbon: ``carbon_usd_per_tonne x Σ_{t∈H} kW x ci_t / 1e6``; porting is plan-wide (0 here).
    """
    p, e = ent.phase, ent.plan
    H = np.asarray(ent.hours, dtype=int)
    n = len(ent.hours)
    start, end = int(H.min()), int(H.max()) + 1
    price = inst.price[e.region][H]
    energy_t = f.facility_kw * price / 1000.0
    if e.contract == "reserved":
        rental = n * (e.gpus + e.spare_gpus) * p.licence_usd_per_gpu_hour
    else:
        g = f.billing_hours
        blocks = {int(t) // g for t in H}
        rental = max(len(blocks) * g, f.min_rental_hours) * f.rental_per_h
    failure = float(
        np.sum(
            f.failure_rate
            * (f.loss_h * (f.rental_per_h + energy_t) - sla_credit_h(f) * f.rental_per_h)
        )
    )
    storage = n * f.storage_per_h + (inst.hours - end) * f.archive_per_h
    if p.preemptible:
        failure += (count_runs(ent.hours) - 1) * f.resume_usd
        storage += (end - start - n) * f.pause_per_h
    region = inst.region(e.region)
    tier = region.storage[e.tier]
    _, arch = archive_tier(region, inst.spec.storage.archive)
    transfer = p.data.size_gb * p.data.read_passes * tier.retrieval_usd_per_gb
    if p.data.home_region is not None:
        transfer += p.data.size_gb * transfer_usd_per_gb(inst, p.data.home_region, e.region)
    successors = inst.successors(p.name)
    transfer += len(successors) * f.output_gb * arch.retrieval_usd_per_gb
    for q in successors:
        if q in region_of:
            transfer += f.output_gb * transfer_usd_per_gb(inst, e.region, region_of[q])
    ci = inst.carbon[e.region]
    emissions = float(np.sum(f.facility_kw * ci[H] / 1e6)) if ci is not None else 0.0
    costs = {
        "rental": float(rental),
        "energy": float(np.sum(energy_t)),
        "storage": float(storage),
        "failure": failure,
        "transfer": float(transfer),
        "porting": 0.0,
        "carbon": inst.spec.objective.carbon_usd_per_tonne * emissions,
    }
    return PhaseCosts(costs, f.facility_kw * n, emissions)


def pool_rental(inst: Instance, pools: Mapping[tuple[str, str], int]) -> float:
    """``Σ over reserved pools of R x reserved price x T``, paid whether used or not."""
    total = 0.0
    for (r, g), n in pools.items():
        offers = inst.region(r).offers.get(g)
        if offers is not None and offers.reserved is not None and n > 0:
            total += n * offers.reserved.usd_per_gpu_hour * inst.hours
    return total


def porting_usd(inst: Instance, gpus: Iterable[str]) -> float:
    """``families[f].porting_usd`` once per family of a GPU type the plan's phases use."""
    families = {inst.gpu(g).family for g in gpus}
    return float(
        sum(inst.spec.families[f].porting_usd for f in families if f in inst.spec.families)
    )


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
    tolerance: plan cost components and total, the objective, energy_kwh, emissions_t, and
    every component a phase entry states (``porting`` is plan-wide, so 0 per phase)."""
    out: list[Violation] = []
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
    return out
