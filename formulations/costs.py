"""Costs shared by every formulation: the weighted cost of running a configuration in each
hour, exactly as docs/cost-model.md defines it (rental handled per contract and billing)."""

from __future__ import annotations

import numpy as np

from planner.configs import Config
from planner.instance.model import Instance


def weights(inst: Instance) -> dict[str, float]:
    w: dict[str, float] = {str(k): float(v) for k, v in inst.spec.objective.weights.items()}
    return {
        k: w.get(k, 1.0)
        for k in ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon")
    }


def reserved_price(inst: Instance, c: Config) -> float:
    offer = inst.region(c.region).offers[c.gpu].reserved
    return offer.usd_per_gpu_hour if (c.contract == "reserved" and offer) else 0.0


def hourly_cost(inst: Instance, c: Config, w: dict[str, float]) -> np.ndarray:
    """Weighted cost of running c in each horizon hour, without block-billed rental:
    energy + failure + running storage + carbon, plus rental when it is billed hourly
    (billing granularity 1) and, for reserved configurations, the licence only."""
    price = inst.price[c.region]
    cost = (
        w["energy"] * c.energy_usd(price)
        + w["failure"] * c.failure_usd(price)
        + w["storage"] * c.storage_per_h
        + w["carbon"] * inst.spec.objective.carbon_usd_per_tonne * c.carbon_t(inst.carbon[c.region])
    )
    if c.contract == "reserved":
        cost = cost + w["rental"] * (c.rental_per_h - c.total_gpus * reserved_price(inst, c))
    elif c.billing_hours == 1:
        cost = cost + w["rental"] * c.rental_per_h
    return np.asarray(cost, dtype=float) * np.ones(inst.hours)


def hourly_cost_with_reservation(inst: Instance, c: Config, w: dict[str, float]) -> np.ndarray:
    """:func:`hourly_cost` plus, for a reserved configuration, its GPUs at the reserved price.
    Summed over a plan this never exceeds what the plan pays for its reservations: a pool of
    R GPUs costs R x price x T >= sum over hours of the GPUs in use x price. So it keeps the
    separable bound valid, and prices reserved runs for the heuristics."""
    h = hourly_cost(inst, c, w)
    if c.contract == "reserved":
        h = h + w["rental"] * c.total_gpus * reserved_price(inst, c)
    return h


def reservations_for(
    inst: Instance, schedule: dict[str, tuple[Config, tuple[int, ...]]]
) -> dict[tuple[str, str], int] | None:
    """The least reservation per pool that covers a schedule's reserved-contract GPUs in every
    hour, at least the offer's minimum; None if some pool would exceed the offer's maximum."""
    usage: dict[tuple[str, str], np.ndarray] = {}
    for c, hours in schedule.values():
        if c.contract == "reserved":
            u = usage.setdefault((c.region, c.gpu), np.zeros(inst.hours))
            u[list(hours)] += c.total_gpus
    out: dict[tuple[str, str], int] = {}
    for (r, g), u in usage.items():
        offer = inst.region(r).offers[g].reserved
        n = int(np.ceil(u.max() - 1e-9))
        if offer is not None and n > 0:
            n = max(n, offer.min_gpus)
            if offer.max_gpus is not None and n > offer.max_gpus:
                return None
        out[(r, g)] = n
    return out
