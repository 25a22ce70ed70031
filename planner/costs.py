"""The cost model: every cost a plan pays, written once (docs/cost-model.md, "Plan costs").

It owns the objective weights, the cost of running a configuration in an hour, the cost of a
contiguous run, the cost of one phase's schedule and the costing of a whole plan. Every
formulation, bound, heuristic, the baseline, ``levers``, ``estimate`` and the numeric checks
call these functions; the independent checker (:mod:`planner.checker`) has its own twins,
under the same names, written from the document and not from this module.

A configuration's rates per running hour come from :mod:`planner.configs`: rental
``rho = (gpus + spares) x (offer price + licence)``, facility power ``kW``, running storage,
job failure rate ``lambda``, loss per failure ``L``, downtime ``D`` and the SLA share and
multiplier. In hour t of region r with price ``p_t`` (USD/MWh) and carbon intensity ``ci_t``
(gCO2/kWh):

- energy      ``E_t = kW p_t / 1000``
- failure     ``F_t = lambda (L (rho + E_t) - share min(m D, L) rho)`` (the SLA credit
  refunds at most the rental the failure lost)
- carbon      ``C_t = kW ci_t / 1e6`` tonnes, priced at ``carbon_usd_per_tonne``

and the weighted cost of the hour (weights default to 1) splits into a part that does not
depend on the hour and parts proportional to the price and to the intensity
(:class:`HourlyTerms`). Rental is paid per billing block and minimum rental period
(on-demand, spot) or by the reserved pool for the whole horizon (reserved).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal

import numpy as np

from planner.instance.model import Instance
from planner.instance.schema import Phase, Region
from planner.physics import storage
from planner.plan import COST_KEYS, PhasePlan, Plan
from planner.schedule import Pool, Schedule, count_runs
from planner.workload import checkpoint_gb_of, output_gb_of

if TYPE_CHECKING:  # annotations only: planner.configs imports this module
    from planner.configs import Config

#: How rental enters an hour's cost:
#: ``billed``  - the rental of configurations billed per hour (granularity 1); blocks of
#:               coarser billing are paid apart (:func:`block_rental`); reserved
#:               configurations pay their licence only (the pool is paid for the horizon);
#: ``as_used`` - as ``billed``, plus reserved GPUs at the reserved price per GPU-hour used:
#:               summed over a plan this never exceeds what its pools cost (R x price x T >=
#:               the GPUs in use x price in every hour), so bounds stay valid;
#: ``all``     - the full rental per hour whatever the billing (magnitudes, estimates).
RentalMode = Literal["billed", "as_used", "all"]


# ----------------------------------------------------------------------------- weights


@dataclass(frozen=True)
class Weights:
    """The objective's weight per cost component (``objective.weights``, default 1)."""

    rental: float = 1.0
    energy: float = 1.0
    storage: float = 1.0
    failure: float = 1.0
    transfer: float = 1.0
    porting: float = 1.0
    carbon: float = 1.0

    def __getitem__(self, key: str) -> float:
        return float(getattr(self, key))

    def objective(self, costs: Mapping[str, float]) -> float:
        """``sum_k weights[k] x costs[k]`` over the cost components."""
        return float(sum(self[k] * costs[k] for k in COST_KEYS))


assert tuple(f.name for f in fields(Weights)) == COST_KEYS


def weights(inst: Instance) -> Weights:
    """The instance's objective weights."""
    return Weights(**{str(k): float(v) for k, v in inst.spec.objective.weights.items()})


# ----------------------------------------------------------------------------- prices


def transfer_usd_per_gb(inst: Instance, src: str, dst: str) -> float:
    """USD per GB moved from region ``src`` to ``dst``: ``regions.src.transfer_usd_per_gb[dst]``
    or ``default_transfer_usd_per_gb``; 0 within a region."""
    if src == dst:
        return 0.0
    r = inst.region(src)
    return float(r.transfer_usd_per_gb.get(dst, r.default_transfer_usd_per_gb))


def archive_tier(region: Region, policy: str) -> str:
    """The tier outputs are archived on: the region's cheapest per GB-month (``cheapest``) or
    dearest (``hottest``); on a tie the tier listed first."""
    tiers = region.storage
    pick = min if policy == "cheapest" else max
    return pick(tiers, key=lambda t: tiers[t].usd_per_gb_month)


def pause_usd_per_h(inst: Instance, p: Phase) -> float:
    """While a preemptible phase is paused its retained checkpoints and data are parked on the
    cheapest tier among its allowed regions: (k x ckpt + data) x price / 730 per hour, with the
    largest checkpoint among the precisions it may use."""
    regions = p.regions or tuple(inst.spec.regions)
    price = min(t.usd_per_gb_month for r in regions for t in inst.region(r).storage.values())
    ck = max(checkpoint_gb_of(inst, p, pr) for pr in p.options.precision)
    gb = inst.spec.storage.retention * ck + p.data.size_gb
    return storage.storage_usd_per_hour(gb, price)


def reserved_price(inst: Instance, c: Config) -> float:
    """The reserved offer's price per GPU-hour of a reserved-contract configuration, else 0."""
    if c.contract != "reserved":
        return 0.0
    offer = inst.region(c.region).offers[c.gpu].reserved
    return offer.usd_per_gpu_hour if offer else 0.0


# ----------------------------------------------------------------------------- one hour


def energy_usd(c: Config, price: np.ndarray) -> np.ndarray:
    """``E_t = kW x price_t / 1000`` (USD/MWh to USD/kWh)."""
    return c.facility_kw * price / 1000.0


def sla_credit_h(c: Config) -> float:
    """Hours of rental the provider's SLA credit returns per failure, averaged over failures:
    ``share x min(m x D, L)``. The credit is m times the downtime's rental for the provider's
    share of failures, capped at the L hours of rental the failure lost: a credit refunds
    rental, so a failure never earns money (share 1.0 and m = 2.0 with D > L / 2 did)."""
    return c.sla_share * min(c.sla_multiplier * c.downtime_h, c.loss_h)


def failure_usd(c: Config, price: np.ndarray) -> np.ndarray:
    """``F_t = lambda (L (rho + E_t) - share x min(m D, L) x rho)``: the work lost per failure
    is paid at the hour's full rate; the provider's SLA credit returns m times the downtime's
    rental for its share of failures, at most the rental lost (:func:`sla_credit_h`; Young
    1974, Daly 2006; docs/cost-model.md)."""
    return c.failure_rate * (
        c.loss_h * (c.rental_per_h + energy_usd(c, price)) - sla_credit_h(c) * c.rental_per_h
    )


def carbon_t(c: Config, intensity: np.ndarray | None) -> np.ndarray | float:
    """``C_t = kW x ci_t / 1e6`` tonnes of CO2 (0 without carbon data)."""
    return 0.0 if intensity is None else c.facility_kw * intensity / 1e6


def emissions_t(inst: Instance, c: Config, hours: Iterable[int]) -> float:
    """Tonnes of CO2 of running c in ``hours``: ``sum_t C_t`` (0 without carbon data)."""
    ci = inst.carbon[c.region]
    return 0.0 if ci is None else float(np.sum(carbon_t(c, ci[list(hours)])))


@dataclass(frozen=True)
class HourlyTerms:
    """The weighted cost of one running hour t of a configuration is
    ``fixed + per_mwh x price_t + per_gco2 x ci_t``:

    - ``fixed = rental(mode) + w_s storage + w_f lambda (L - share min(m D, L)) rho``
    - ``per_mwh = kW (w_e + w_f lambda L) / 1000``
    - ``per_gco2 = w_c carbon_usd_per_tonne kW / 1e6``."""

    fixed: float
    per_mwh: float
    per_gco2: float


def rental_per_hour(inst: Instance, c: Config, w: Weights, mode: RentalMode) -> float:
    """The weighted rental one running hour carries under ``mode`` (see :data:`RentalMode`)."""
    if mode == "all":
        return w.rental * c.rental_per_h
    if c.contract == "reserved":
        used = (
            c.rental_per_h
            if mode == "as_used"
            else c.rental_per_h - c.total_gpus * (reserved_price(inst, c))
        )
        return w.rental * used
    return w.rental * c.rental_per_h if c.billing_hours == 1 else 0.0


def hourly_terms(inst: Instance, c: Config, w: Weights, mode: RentalMode = "billed") -> HourlyTerms:
    """The split of :class:`HourlyTerms`."""
    fail_fixed = c.failure_rate * (c.loss_h - sla_credit_h(c))
    return HourlyTerms(
        fixed=rental_per_hour(inst, c, w, mode)
        + w.storage * c.storage_per_h
        + w.failure * fail_fixed * c.rental_per_h,
        per_mwh=c.facility_kw * (w.energy + w.failure * c.failure_rate * c.loss_h) / 1000.0,
        per_gco2=w.carbon * inst.spec.objective.carbon_usd_per_tonne * c.facility_kw / 1e6,
    )


def hourly_cost(inst: Instance, c: Config, w: Weights, mode: RentalMode = "billed") -> np.ndarray:
    """Weighted cost of running c in each horizon hour: energy + failure + running storage +
    carbon, and rental as ``mode`` says (:data:`RentalMode`)."""
    t = hourly_terms(inst, c, w, mode)
    cost = t.fixed + t.per_mwh * inst.price[c.region]
    ci = inst.carbon[c.region]
    if ci is not None and t.per_gco2:
        cost = cost + t.per_gco2 * ci
    return np.asarray(cost, dtype=float) * np.ones(inst.hours)


# ----------------------------------------------------------------------------- runs


def fixed_cost(inst: Instance, c: Config, end: int, w: Weights) -> float:
    """The weighted costs of c that do not depend on its hours, for a run that ends at
    ``end``: one-time transfer (data staging, reads, successors' retrievals), the output
    archived from ``end`` to the horizon end, and, when billed per hour, the minimum-rental
    surcharge ``max(0, min_rental_hours - n) x rho``."""
    k = w.transfer * c.one_time_usd + w.storage * (inst.hours - end) * c.archive_per_h
    if c.contract != "reserved" and c.billing_hours == 1:
        k += w.rental * max(0, c.min_rental_hours - c.hours) * c.rental_per_h
    return float(k)


def billed_hours(c: Config, hours: Iterable[int]) -> int:
    """Hours of rental billed for running ``hours``: ``max(|B| g, min_rental_hours)`` with the
    billing blocks touched ``B = {floor(t / g)}``, ``g = billing_granularity_hours``."""
    g = c.billing_hours
    blocks = {int(t) // g for t in hours}
    return max(len(blocks) * g, c.min_rental_hours)


def block_rental(c: Config, w: Weights, hours: Iterable[int]) -> float:
    """Weighted rental of a configuration billed in blocks of more than an hour, for running
    ``hours`` (0 for hourly billing and reserved contracts, whose rental is in the hours)."""
    if c.contract == "reserved" or c.billing_hours == 1:
        return 0.0
    return w.rental * billed_hours(c, hours) * c.rental_per_h


def run_costs(
    inst: Instance, c: Config, starts: np.ndarray, w: Weights, hourly: np.ndarray | None = None
) -> np.ndarray:
    """K[c, tau] for every start tau in ``starts``: the weighted cost of running c in the
    contiguous hours ``[tau, tau + n_c)``,

        sum_t h_c(t) + w_r rho x max(g B(tau), m)   (g > 1, B = billing blocks touched)
                     + fixed_cost(tau + n_c)        (transfer, archive, hourly minimum rental)

    with ``h_c`` the hour costs (``hourly``, default :func:`hourly_cost` in ``billed`` mode).
    An infinite hour (blocked, e.g. no capacity) makes every run through it infinite."""
    n, T = c.hours, inst.hours
    h = hourly_cost(inst, c, w) if hourly is None else hourly
    starts = np.asarray(starts, dtype=np.int64)
    blocked = ~np.isfinite(h)
    cum = np.concatenate([[0.0], np.cumsum(np.where(blocked, 0.0, h))])
    cb = np.concatenate([[0], np.cumsum(blocked)])
    cost = cum[starts + n] - cum[starts]
    cost = np.where(cb[starts + n] - cb[starts] > 0, np.inf, cost)
    if c.contract != "reserved":
        g = c.billing_hours
        if g > 1:
            blocks = (starts + n - 1) // g - starts // g + 1
            billed = np.maximum(blocks * g, c.min_rental_hours)
            cost = cost + w.rental * billed * c.rental_per_h
        else:
            cost = cost + w.rental * max(0, c.min_rental_hours - n) * c.rental_per_h
    cost = cost + w.storage * (T - starts - n) * c.archive_per_h
    cost = cost + w.transfer * c.one_time_usd
    return np.asarray(cost, dtype=float)


def run_emissions(inst: Instance, c: Config, starts: np.ndarray) -> np.ndarray:
    """Tonnes of CO2 of the contiguous runs ``[tau, tau + n_c)`` for every tau in ``starts``."""
    starts = np.asarray(starts, dtype=np.int64)
    ci = inst.carbon[c.region]
    if ci is None:
        return np.zeros(len(starts))
    cum = np.concatenate([[0.0], np.cumsum(c.facility_kw * ci / 1e6)])
    return np.asarray(cum[starts + c.hours] - cum[starts], dtype=float)


# ----------------------------------------------------------------------------- a phase


@dataclass(frozen=True)
class PhaseCosts:
    """One phase's costs (USD, unweighted, by component), its energy and emissions."""

    costs: dict[str, float]
    kwh: float
    emissions_t: float


def phase_costs(
    inst: Instance, c: Config, hours: tuple[int, ...], region_of: Mapping[str, str]
) -> PhaseCosts:
    """Costs of one phase running configuration c in ``hours`` (docs/cost-model.md, "Plan
    costs"): rental per billing block (reserved: the licence only; the pool is paid at plan
    level), energy and failure per hour, running storage, pauses and the archive, transfers
    (one-time and to successors in other regions, ``region_of``), carbon."""
    p = inst.phase(c.phase)
    H = np.asarray(sorted(hours), dtype=int)
    price = inst.price[c.region][H]
    if c.contract == "reserved":
        rental = len(hours) * (c.rental_per_h - c.total_gpus * reserved_price(inst, c))
    else:
        rental = billed_hours(c, H.tolist()) * c.rental_per_h
    fail = float(np.sum(failure_usd(c, price)))
    start, end = int(H.min()), int(H.max()) + 1
    stor = len(hours) * c.storage_per_h + (inst.hours - end) * c.archive_per_h
    if p.preemptible:
        fail += (count_runs(H.tolist()) - 1) * c.resume_usd
        stor += (end - start - len(hours)) * pause_usd_per_h(inst, p)
    out_gb = output_gb_of(inst, p)
    transfer = c.one_time_usd + sum(
        out_gb * transfer_usd_per_gb(inst, c.region, region_of[q])
        for q in inst.successors(p.name)
        if q in region_of
    )
    emissions = emissions_t(inst, c, H.tolist())
    costs = {
        "rental": float(rental),
        "energy": float(np.sum(energy_usd(c, price))),
        "storage": float(stor),
        "failure": fail,
        "transfer": float(transfer),
        "porting": 0.0,
        "carbon": inst.spec.objective.carbon_usd_per_tonne * emissions,
    }
    return PhaseCosts(costs, c.facility_kw * len(hours), emissions)


def pool_rental(inst: Instance, reserved: Mapping[Pool, int]) -> float:
    """``sum over reserved pools of R x reserved price x T``, paid whether used or not."""
    total = 0.0
    for (r, g), n in reserved.items():
        offer = inst.region(r).offers[g].reserved
        if n > 0 and offer is not None:
            total += n * offer.usd_per_gpu_hour * inst.hours
    return total


def porting_usd(inst: Instance, gpus: Iterable[str]) -> float:
    """``families[f].porting_usd`` once per family of the GPU types a plan uses."""
    families = {inst.gpu(g).family for g in gpus}
    return float(
        sum(inst.spec.families[f].porting_usd for f in families if f in inst.spec.families)
    )


# ----------------------------------------------------------------------------- a plan


def _info(inst: Instance, c: Config, n: int) -> dict[str, object]:
    """Derived figures of a plan entry, for people (the checker does not trust them)."""
    p = inst.phase(c.phase)
    lay = c.layout
    return {
        "config": c.label,
        "dp": lay.dp,
        "memory_gb": round(c.memory.total_gb, 3),
        "model_states_gb": round(c.memory.model_states_gb, 3),
        "activations_gb": round(c.memory.activations_gb, 3),
        "memory_capacity_gb": round(c.memory.capacity_gb, 3),
        "work_hours": round(c.work_hours, 4),
        "facility_kw": round(c.facility_kw, 4),
        "checkpoint_gb": round(checkpoint_gb_of(inst, p, lay.precision), 3),
        "checkpoint_interval_s": (
            None if math.isinf(c.checkpoint_interval_s) else round(c.checkpoint_interval_s, 1)
        ),
        "expected_failures": round(c.failure_rate * n, 4),
        "failure_rate_per_h": c.failure_rate,
        "tflops_per_gpu": round(c.flops_per_s / max(c.gpus, 1e-9) / 1e12, 2),
        "kind": p.kind,
        "preemptible": p.preemptible,
    }


def cost_plan(inst: Instance, schedule: Schedule) -> Plan:
    """Cost a schedule: one :class:`~planner.plan.PhasePlan` per phase (in topological order)
    with its costs, the reserved pools, porting once per family, totals and the weighted
    objective. A pure function of the instance and the schedule."""
    region_of = schedule.region_of()
    totals = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emis = 0.0
    phases: list[PhasePlan] = []
    for name in inst.order:
        if name not in schedule:
            continue
        c, hours = schedule[name]
        pc = phase_costs(inst, c, hours, region_of)
        kwh += pc.kwh
        emis += pc.emissions_t
        for k in COST_KEYS:
            totals[k] += pc.costs[k]
        phases.append(
            PhasePlan(
                name=name,
                **c.plan_fields(),  # type: ignore[arg-type]
                hours=tuple(sorted(hours)),
                costs={k: round(v, 6) for k, v in pc.costs.items()},
                info=_info(inst, c, len(hours)),
            )
        )
    totals["rental"] += pool_rental(inst, schedule.reserved)
    totals["porting"] = porting_usd(inst, {a.config.gpu for a in schedule.values()})
    totals["total"] = sum(totals[k] for k in COST_KEYS)
    return Plan(
        instance=inst.name,
        horizon_start=inst.start,
        objective=weights(inst).objective(totals),
        costs={k: round(v, 6) for k, v in totals.items()},
        phases=tuple(phases),
        reserved=tuple((r, g, int(n)) for (r, g), n in sorted(schedule.reserved.items())),
        energy_kwh=kwh,
        emissions_t=emis,
    )


# ----------------------------------------------------------------------------- estimates


def mean_price_costs(inst: Instance, c: Config, hours: float | None = None) -> dict[str, float]:
    """What one phase would cost run on configuration ``c`` for ``hours`` consecutive hours
    (default ``c.hours``, whole billed hours) at the region's mean price and mean carbon
    intensity, unweighted USD:

    - rental: ``hours`` whole: ``max(ceil(n/g) g, min_rental_hours) x rho`` (one run from a
      billing boundary); ``hours`` given (wall-clock, not rounded): ``hours x rho``; reserved:
      ``hours x rho`` (committing a pool for the horizon is a plan-level choice);
    - energy ``n E``; failure ``n F`` at the mean price; storage ``n x storage/h`` (the
      archive after the run depends on when it ends: left out); transfer: the one-time cost;
      carbon ``carbon_usd_per_tonne x n kW mean(ci) / 1e6``."""
    n = float(c.hours) if hours is None else float(hours)
    price = np.asarray(float(np.mean(inst.price[c.region])))
    if c.contract == "reserved" or hours is not None:
        rental = n * c.rental_per_h
    else:
        g = c.billing_hours
        rental = max(math.ceil(n / g) * g, c.min_rental_hours) * c.rental_per_h
    ci = inst.carbon[c.region]
    carbon = 0.0 if ci is None else float(n * carbon_t(c, np.asarray(float(np.mean(ci)))))
    out = {
        "rental": float(rental),
        "energy": n * float(energy_usd(c, price)),
        "failure": n * float(failure_usd(c, price)),
        "storage": n * c.storage_per_h,
        "transfer": float(c.one_time_usd),
        "carbon": inst.spec.objective.carbon_usd_per_tonne * carbon,
    }
    out["total"] = sum(out.values())
    return out


def earliest_least(costs: np.ndarray, rel_tol: float = 1e-12) -> int:
    """The index of the first entry within ``rel_tol`` of the least: among runs that cost the
    same (up to the rounding of their sums), the earliest."""
    least = float(np.min(costs))
    return int(np.flatnonzero(costs <= least + rel_tol * max(1.0, abs(least)))[0])
