"""Costs shared by every formulation: the weighted cost of running a configuration in each
hour, exactly as docs/cost-model.md defines it (rental handled per contract and billing)."""

from __future__ import annotations

import numpy as np

from planner.configs import Config
from planner.instance.model import Instance


def weights(inst: Instance) -> dict[str, float]:
    w: dict[str, float] = {str(k): float(v) for k, v in inst.spec.objective.weights.items()}
    return {k: w.get(k, 1.0)
            for k in ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon")}


def reserved_price(inst: Instance, c: Config) -> float:
    offer = inst.region(c.region).offers[c.gpu].reserved
    return offer.usd_per_gpu_hour if (c.contract == "reserved" and offer) else 0.0


def hourly_cost(inst: Instance, c: Config, w: dict[str, float]) -> np.ndarray:
    """Weighted cost of running c in each horizon hour, without block-billed rental:
    energy + failure + running storage + carbon, plus rental when it is billed hourly
    (billing granularity 1) and, for reserved configurations, the licence only."""
    price = inst.price[c.region]
    e = c.facility_kw * price / 1000.0
    fail = c.failure_rate * (c.loss_h * (c.rental_per_h + e)
                             - c.sla_share * c.sla_multiplier * c.downtime_h * c.rental_per_h)
    ci = inst.carbon[c.region]
    carbon = 0.0 if ci is None else c.facility_kw * ci / 1e6
    cost = (w["energy"] * e + w["failure"] * fail + w["storage"] * c.storage_per_h
            + w["carbon"] * inst.spec.objective.carbon_usd_per_tonne * carbon)
    if c.contract == "reserved":
        cost = cost + w["rental"] * (c.rental_per_h - c.total_gpus * reserved_price(inst, c))
    elif c.billing_hours == 1:
        cost = cost + w["rental"] * c.rental_per_h
    return np.asarray(cost, dtype=float) * np.ones(inst.hours)
