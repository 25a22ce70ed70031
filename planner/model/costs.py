"""The cost model: every cost a plan pays, written once (docs/cost-model.md, "Plan costs").

It owns the objective weights, the cost of running a configuration in an hour, the cost of a
contiguous run, the cost of one phase's schedule and the costing of a whole plan. Every
formulation, bound, heuristic, the baseline, ``levers``, ``estimate`` and the numeric checks
call these functions; the independent checker (:mod:`planner.checker`) has its own twins,
under the same names, written from the document and not from this module.

A configuration's rates per running hour (computed here, stated on each configuration by
:mod:`planner.model.configs`): rental
``rho = (gpus + spares) x (offer price + licence)``, facility power ``kW``, running storage,
expected failures per running hour ``f = lambda / (1 - lambda L)`` (``Config.failure_rate``;
``lambda`` the job's failure rate per wall hour), loss per failure ``L``, downtime ``D`` and
the SLA share and multiplier. In hour t of region r with price ``p_t`` (USD/MWh) and carbon
intensity ``ci_t`` (gCO2/kWh):

- energy      ``E_t = kW_paid p_t / 1000`` (``kW_paid`` = kW when the offer meters power, 0
  when its rental includes it; the kWh and emissions count every kW)
- failure     ``F_t = f (L (rho + E_t) - share min(m D, L) rho)`` (the SLA credit refunds at
  most the rental the failure lost)
- carbon      ``C_t = kW ci_t / 1e6`` tonnes, priced at ``carbon_usd_per_tonne``

and the weighted cost of the hour (weights default to 1) splits into a part that does not
depend on the electricity price and parts proportional to the price and to the intensity
(:class:`HourlyTerms`). Rental is paid per billing block and minimum rental period
(on-demand, spot) or by the reserved pool for its term (reserved).

Offer prices and spot preemption rates may vary by the hour (:mod:`planner.instance.offers`):
then ``rho_t = (gpus + spares) x (price_t + licence)`` and ``lambda_t = gpus x f + preempt_t``
in hour t, and the configuration's own ``rental_per_h``/``failure_rate`` are their reference
values (constant: the value; else the mean), used where one number is needed (Daly's
interval, resume and migration time, minimum-rental surcharges). A constant series gives
exactly the figures of a number.

A phase may run in segments (``options.max_segments``), each on its own configuration; a
change of configuration is a migration (:func:`migration_cost`).
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from itertools import pairwise
from typing import Literal

import numpy as np

from planner.instance.model import Instance
from planner.instance.offers import is_constant
from planner.instance.schema import GpuType, Phase, Region, StorageTier
from planner.model.configtypes import Config
from planner.model.plan import COST_KEYS, PhasePlan, Plan, SegmentPlan
from planner.model.schedule import Assignment, Schedule, count_runs, reserved_key
from planner.model.workload import checkpoint_gb_of, output_gb_of
from planner.physics import energy, storage

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


# ------------------------------------------------------------------- a configuration's rates
#: What :mod:`planner.model.configs` states on each :class:`~planner.model.configtypes.Config`: its
#: rates per running hour and its one-time costs, computed here so that the cost model owns them.


def rental_usd_per_h(p: Phase, gpus: float, spare_gpus: int, price: float) -> float:
    """``rho = (gpus + spares) x (offer price + licence)`` USD per running hour: every GPU held
    is rented and licensed, the idle spares too."""
    return (gpus + spare_gpus) * (price + p.licence_usd_per_gpu_hour)


def facility_kw_of(p: Phase, g: GpuType, gpus: float, spare_gpus: int, r: Region) -> float:
    """Facility kW of a configuration: working GPUs at the phase's ``power_load``, spares idle,
    every node's host overhead, times the region's PUE (:mod:`planner.physics.energy`)."""
    it_kw = energy.it_power_kw(
        gpus,
        spare_gpus,
        g.board_power_w,
        g.idle_power_w,
        p.power_load,
        g.gpus_per_node,
        g.node_overhead_w,
    )
    return energy.facility_kw(it_kw, r.effective_pue)


def running_storage_usd_per_h(inst: Instance, p: Phase, ck_gb: float, tier: StorageTier) -> float:
    """The phase's state on its working tier while it runs: ``(retention x checkpoint + input
    data) x USD per GB-month / 730``."""
    state_gb = inst.spec.storage.retention * ck_gb + p.data.size_gb
    return storage.storage_usd_per_hour(state_gb, tier.usd_per_gb_month)


def one_time_usd(inst: Instance, p: Phase, region: str, tier: StorageTier) -> float:
    """Paid once by a configuration: the input read ``read_passes`` times out of its tier
    (retrieval), staged from the data's home region (transfer), and every successor's
    retrieval of the output from the region's archive tier."""
    r = inst.region(region)
    usd = p.data.size_gb * p.data.read_passes * tier.retrieval_usd_per_gb
    if p.data.home_region is not None:
        usd += p.data.size_gb * transfer_usd_per_gb(inst, p.data.home_region, region)
    arch = r.storage[archive_tier(r, inst.spec.storage.archive)]
    usd += len(inst.successors(p.name)) * output_gb_of(inst, p) * arch.retrieval_usd_per_gb
    return usd


def archive_usd_per_h(inst: Instance, p: Phase, r: Region) -> float:
    """The phase's output on the region's archive tier, per hour from its end to the horizon."""
    arch = r.storage[archive_tier(r, inst.spec.storage.archive)]
    return storage.storage_usd_per_hour(output_gb_of(inst, p), arch.usd_per_gb_month)


def mean_price(inst: Instance, region: str) -> float:
    """The mean electricity price of a region over the horizon (USD/MWh), once per instance:
    what GPUs held outside the hourly schedule (a resume, a migration) pay their power at."""
    cache = _MEAN_PRICES.setdefault(inst, {})
    if region not in cache:
        cache[region] = float(np.mean(inst.price[region]))
    return cache[region]


_MEAN_PRICES: weakref.WeakKeyDictionary[Instance, dict[str, float]] = weakref.WeakKeyDictionary()


def held_usd(
    inst: Instance, region: str, rental_per_h: float, billed_kw: float, hours: float
) -> tuple[float, float]:
    """(rental, energy) USD of GPUs held ``hours`` without progress: ``hours x rho`` and
    ``hours x kW_paid x mean(price) / 1000`` (a resume, a migration's write, move and read)."""
    return hours * rental_per_h, hours * billed_kw * mean_price(inst, region) / 1000.0


def resume_usd(
    inst: Instance, p: Phase, region: str, rental_per_h: float, billed_kw: float
) -> float:
    """What a resume of a preemptible phase costs: its ``resume_overhead_hours`` held
    (:func:`held_usd`, as a migration's hours are costed), rental plus power."""
    rental, power = held_usd(inst, region, rental_per_h, billed_kw, p.resume_overhead_hours)
    return rental + power


def reserved_price(inst: Instance, c: Config) -> float:
    """The reserved offer's (reference) price per GPU-hour of a reserved-contract
    configuration under its term, else 0."""
    if c.contract != "reserved":
        return 0.0
    return inst.rates.price_ref[(c.region, c.gpu, "reserved", c.term)]


def link_gb_per_s(inst: Instance, src: str, dst: str) -> float:
    """Bandwidth of the link from ``src`` to ``dst``: ``regions.src.link_gb_per_s[dst]`` or
    ``default_link_gb_per_s`` (GB/s)."""
    r = inst.region(src)
    return float(r.link_gb_per_s.get(dst, r.default_link_gb_per_s))


def hour_rates(inst: Instance, c: Config) -> tuple[float | np.ndarray, float | np.ndarray]:
    """(rho, f) of c in every horizon hour: its reference rental and expected failures per
    running hour (floats) when the offer's price and preemption rate are constant, else hourly
    arrays ``rho_t = rho + G (price_t - price_ref)`` and ``f_t = lambda_t / (1 - lambda_t L)``
    with the job's failure rate ``lambda_t = lambda + preempt_t - preempt_ref`` (the loss per
    failure L stays the reference rate's: Daly's interval is set once)."""
    rho: float | np.ndarray = c.rental_per_h
    lam: float | np.ndarray = c.failure_rate
    rates = inst.rates
    key = (c.region, c.gpu, c.contract, c.term)
    if key in rates.hourly_price:
        rho = c.rental_per_h + c.total_gpus * (rates.price[key] - rates.price_ref[key])
    pool = (c.region, c.gpu)
    if c.contract == "spot" and pool in rates.hourly_preemptions:
        job = c.job_failure_rate + (rates.preemptions[pool] - rates.preemptions_ref[pool])
        lam = job / (1.0 - job * c.loss_h)
    return rho, lam


def term_hours(inst: Instance, c: Config) -> tuple[int, int] | None:
    """``[first, end)``: the horizon hours c may run in, when not every hour: a reserved
    configuration's named term, and hours before its phase's deadline less the time c keeps
    for the interruptions expected at the phase's ``deadline_confidence``
    (:attr:`Config.reserve_h`, docs/cost-model.md "Deadlines with a confidence"). None when
    c may run in every hour (its phase's window bounds it as any other)."""
    first, end, limited = 0, inst.hours, False
    if c.contract == "reserved" and c.term:
        t = inst.term(c.region, c.gpu, c.term)
        assert t is not None
        first, end, limited = t.first, t.end, True
    if c.reserve_h > 0:
        end, limited = min(end, inst.deadline[c.phase] - c.reserve_h), True
    return (first, max(first, end)) if limited else None


def deadline_confidence(inst: Instance, p: Phase) -> float | None:
    """The probability phase p is to meet its deadline with: its own ``deadline_confidence``,
    else the instance's; None for a phase without a ``deadline`` (the horizon's end is no
    deadline to keep time before) or when none is asked."""
    if p.deadline is None:
        return None
    return (
        p.deadline_confidence
        if p.deadline_confidence is not None
        else (inst.spec.deadline_confidence)
    )


def usd_per_hour_early(inst: Instance, name: str) -> float:
    """What each hour phase ``name`` finishes earlier is worth (the value of time, USD per
    hour): its own ``usd_per_hour_early``, else the instance's ``objective.usd_per_hour_early``
    when no phase still to run waits for it (a deliverable), else 0."""
    p = inst.phase(name)
    if p.usd_per_hour_early is not None:
        return float(p.usd_per_hour_early)
    return 0.0 if inst.successors(name) else float(inst.spec.objective.usd_per_hour_early)


def values_time(inst: Instance) -> bool:
    """Some phase still to run has a value of time: plans state their ``time`` figure."""
    return any(usd_per_hour_early(inst, p.name) > 0 for p in inst.active_phases)


def time_usd(inst: Instance, name: str, end: int) -> float:
    """The value of the time phase ``name`` takes: ``v_p x (end - release_p)``, USD (in the
    objective, not in the bill; docs/cost-model.md, "The value of time")."""
    return usd_per_hour_early(inst, name) * (end - inst.release[name])


def after_end_per_h(inst: Instance, c: Config, w: Weights) -> float:
    """The weighted cost of each hour between c's phase's end and the horizon end: the output
    archived (``w_s x archive/h``) less the value of the hour (``v_p``: an hour earlier is
    worth that much). With :func:`fixed_cost`'s ``v_p (T - release)`` it prices every end
    exactly: ``(T - end)(w_s archive - v_p) + v_p (T - release) = w_s archive (T - end) +
    v_p (end - release)``."""
    return w.storage * c.archive_per_h - usd_per_hour_early(inst, c.phase)


# ----------------------------------------------------------------------------- one hour


def energy_usd(c: Config, price: np.ndarray) -> np.ndarray:
    """``E_t = kW_paid x price_t / 1000`` (USD/MWh to USD/kWh), ``kW_paid`` the facility kW
    when the offer meters power and 0 when its rental includes it (:attr:`Config.billed_kw`;
    docs/cost-model.md, "Who pays the power")."""
    return c.billed_kw * price / 1000.0


def sla_credit_h(c: Config) -> float:
    """Hours of rental the provider's SLA credit returns per failure, averaged over failures:
    ``share x min(m x D, L)``. The credit is m times the downtime's rental for the provider's
    share of failures, capped at the L hours of rental the failure lost: a credit refunds
    rental, so a failure never earns money (share 1.0 and m = 2.0 with D > L / 2 did)."""
    return c.sla_share * min(c.sla_multiplier * c.downtime_h, c.loss_h)


def failure_usd(
    c: Config,
    price: np.ndarray,
    rho: float | np.ndarray | None = None,
    lam: float | np.ndarray | None = None,
) -> np.ndarray:
    """``F_t = f_t (L (rho_t + E_t) - share x min(m D, L) x rho_t)`` with ``f`` the expected
    failures per running hour: the work lost per failure is paid at the hour's full rate; the
    provider's SLA credit returns m times the downtime's rental for its share of failures, at
    most the rental lost (:func:`sla_credit_h`; Young 1974, Daly 2006; docs/cost-model.md).
    ``rho`` and ``lam`` default to c's reference rates (their hourly values:
    :func:`hour_rates`)."""
    rho = c.rental_per_h if rho is None else rho
    lam = c.failure_rate if lam is None else lam
    return np.asarray(lam * (c.loss_h * (rho + energy_usd(c, price)) - sla_credit_h(c) * rho))


def carbon_t(c: Config, intensity: np.ndarray | None) -> np.ndarray | float:
    """``C_t = kW x ci_t / 1e6`` tonnes of CO2 (0 without carbon data)."""
    return 0.0 if intensity is None else c.facility_kw * intensity / 1e6


#: Relative slack of "within the carbon cap" in the planner's own checks (heuristics, MIP
#: starts, the pipeline's plans): tighter than the independent checker's (1e-6), looser than
#: what a solver's feasibility tolerance (1e-7) allows on a cap row scaled by
#: :func:`carbon_row_scale`, so a plan the solver calls feasible is within it.
CAP_SLACK = 5e-7


def within_carbon_cap(inst: Instance, emissions: float) -> bool:
    """``emissions <= cap (1 + CAP_SLACK) + 1e-15`` tonnes (True without a cap)."""
    cap = inst.spec.objective.carbon_cap_tonnes
    return cap is None or emissions <= cap * (1.0 + CAP_SLACK) + 1e-15


def carbon_row_scale(cap: float) -> float:
    """The factor a carbon cap row (tonnes) is multiplied by before a solver sees it: 1 / cap,
    so that the solver's absolute feasibility tolerance (HiGHS: 1e-7) is a share of the cap
    (a cap of 0.0005 t would otherwise allow 0.0001 t over, 20%); grams (1e6) for a cap of 0."""
    return 1.0 / cap if cap > 0 else 1e6


def emissions_t(inst: Instance, c: Config, hours: Iterable[int]) -> float:
    """Tonnes of CO2 of running c in ``hours``: ``sum_t C_t`` (0 without carbon data)."""
    ci = inst.carbon[c.region]
    return 0.0 if ci is None else float(np.sum(carbon_t(c, ci[list(hours)])))


@dataclass(frozen=True)
class HourlyTerms:
    """The weighted cost of one running hour t of a configuration is
    ``fixed + per_mwh x price_t + per_gco2 x ci_t``:

    - ``fixed = rental(mode) + w_s storage + w_f f (L - share min(m D, L)) rho``
    - ``per_mwh = kW_paid (w_e + w_f f L) / 1000`` (0 when the rental includes the power)
    - ``per_gco2 = w_c carbon_usd_per_tonne kW / 1e6``.

    ``fixed`` (and ``per_mwh``, through a spot preemption rate) are arrays over the horizon
    when the offer's price or preemption rate varies by the hour, else numbers."""

    fixed: float | np.ndarray
    per_mwh: float | np.ndarray
    per_gco2: float


def rental_per_hour(
    inst: Instance,
    c: Config,
    w: Weights,
    mode: RentalMode,
    rho: float | np.ndarray | None = None,
) -> float | np.ndarray:
    """The weighted rental one running hour carries under ``mode`` (see :data:`RentalMode`);
    ``rho``: the hourly rental (:func:`hour_rates`; default c's reference)."""
    rho = c.rental_per_h if rho is None else rho
    if mode == "all":
        return w.rental * rho
    if c.contract == "reserved":
        used = (
            rho if mode == "as_used" else c.rental_per_h - c.total_gpus * (reserved_price(inst, c))
        )
        return w.rental * used
    return w.rental * rho if c.billing_hours == 1 else 0.0


def hourly_terms(inst: Instance, c: Config, w: Weights, mode: RentalMode = "billed") -> HourlyTerms:
    """The split of :class:`HourlyTerms`."""
    rho, lam = hour_rates(inst, c)
    fail_fixed = lam * (c.loss_h - sla_credit_h(c))
    return HourlyTerms(
        fixed=rental_per_hour(inst, c, w, mode, rho)
        + w.storage * c.storage_per_h
        + w.failure * fail_fixed * rho,
        per_mwh=c.billed_kw * (w.energy + w.failure * lam * c.loss_h) / 1000.0,
        per_gco2=w.carbon * inst.spec.objective.carbon_usd_per_tonne * c.facility_kw / 1e6,
    )


def hourly_cost(inst: Instance, c: Config, w: Weights, mode: RentalMode = "billed") -> np.ndarray:
    """Weighted cost of running c in each horizon hour: energy + failure + running storage +
    carbon, and rental as ``mode`` says (:data:`RentalMode`). Hours outside a reserved
    configuration's term cost +inf (it cannot run there)."""
    t = hourly_terms(inst, c, w, mode)
    cost = t.fixed + t.per_mwh * inst.price[c.region]
    ci = inst.carbon[c.region]
    if ci is not None and t.per_gco2:
        cost = cost + t.per_gco2 * ci
    out = np.asarray(cost, dtype=float) * np.ones(inst.hours)
    window = term_hours(inst, c)
    if window is not None:
        out[: window[0]] = np.inf
        out[window[1] :] = np.inf
    return out


# ----------------------------------------------------------------------------- runs


def entry_usd(inst: Instance, c: Config, w: Weights, start: int | None = None) -> float:
    """The weighted migration from the configuration a re-planned phase is running on
    (``phases.<p>.running``) into c, if its first segment runs c from ``start``: nothing when c
    is that configuration and starts at the phase's release (the run goes on), else c's entry
    cost (:func:`migration_cost` from the running configuration; for the running
    configuration itself a write and a restart). ``start`` None: the least over starts."""
    if c.entry is None or (c.continues and (start is None or start == inst.release[c.phase])):
        return 0.0
    rental, energy, transfer = c.entry
    return float(w.rental * rental + w.energy * energy + w.transfer * transfer)


def end_usd(inst: Instance, c: Config, end: int | np.ndarray, w: Weights) -> float | np.ndarray:
    """The part of :func:`fixed_cost` that depends on when c's phase ends: the archive from
    ``end`` to the horizon end and the value of the time until ``end``, ``w_s archive (T -
    end) + v_p (end - release)`` (linear in ``end``: its least over an interval of ends is at
    one of the interval's ends)."""
    rel = inst.release[c.phase]
    return (inst.hours - end) * after_end_per_h(inst, c, w) + usd_per_hour_early(inst, c.phase) * (
        inst.hours - rel
    )


def fixed_cost(inst: Instance, c: Config, end: int, w: Weights, least_entry: bool = True) -> float:
    """The weighted costs of c that do not depend on its hours, for a run that ends at
    ``end``: one-time transfer (data staging, reads, successors' retrievals), the output
    archived from ``end`` to the horizon end, the value of the time until ``end``
    (:func:`time_usd`; the two through :func:`after_end_per_h`), and, when billed per hour,
    the minimum-rental surcharge ``max(0, min_rental_hours - n) x rho``; for a re-planned
    phase the least entry cost over its starts (:func:`entry_usd`) when ``least_entry`` (a
    bound's view; a model that charges the entry itself passes False)."""
    k = w.transfer * c.one_time_usd + float(end_usd(inst, c, end, w))
    if c.contract != "reserved" and c.billing_hours == 1:
        k += w.rental * max(0, c.min_rental_hours - c.hours) * c.rental_per_h
    if least_entry and c.entry is not None:
        k += entry_usd(inst, c, w)
    return float(k)


def billed_hours(c: Config, hours: Iterable[int]) -> int:
    """Hours of rental billed for running ``hours``: ``max(|B| g, min_rental_hours)`` with the
    billing blocks touched ``B = {floor(t / g)}``, ``g = billing_granularity_hours``."""
    g = c.billing_hours
    blocks = {int(t) // g for t in hours}
    return max(len(blocks) * g, c.min_rental_hours)


def block_prices(inst: Instance, c: Config) -> np.ndarray | None:
    """USD of each billing block ``k`` (hours ``[k g, (k + 1) g)``) of c when its offer's price
    varies by the hour: ``g x rho_{k g}``, a block billed at the rate in force when it begins;
    None for a constant price (every block costs ``g x rho``)."""
    rho, _ = hour_rates(inst, c)
    if not isinstance(rho, np.ndarray):
        return None
    g = c.billing_hours
    return np.asarray(g * rho[::g], dtype=float)


def rental_usd(inst: Instance, c: Config, hours: Iterable[int]) -> float:
    """Unweighted rental of running c in ``hours``: on-demand and spot ``max(|B| g, m) x rho``
    (constant price) or ``sum_{k in B} g rho_{k g} + max(0, m - |B| g) x rho_ref`` (hourly
    price: each block at the rate in force when it begins, owed minimum hours at the
    reference rate); reserved ``n x (gpus + spare_gpus) x licence`` (the pool is paid apart,
    :func:`pool_rental`)."""
    hs = [int(t) for t in hours]
    if c.contract == "reserved":
        return len(hs) * (c.rental_per_h - c.total_gpus * reserved_price(inst, c))
    prices = block_prices(inst, c)
    if prices is None:
        return billed_hours(c, hs) * c.rental_per_h
    g = c.billing_hours
    blocks = sorted({t // g for t in hs})
    owed = max(0, c.min_rental_hours - len(blocks) * g)
    return float(np.sum(prices[blocks]) + owed * c.rental_per_h)


def block_rental(inst: Instance, c: Config, w: Weights, hours: Iterable[int]) -> float:
    """Weighted rental of a configuration billed in blocks of more than an hour, for running
    ``hours`` (0 for hourly billing and reserved contracts, whose rental is in the hours)."""
    if c.contract == "reserved" or c.billing_hours == 1:
        return 0.0
    return w.rental * rental_usd(inst, c, hours)


def least_block_rental(inst: Instance, c: Config, w: Weights, e: int, l_: int) -> float:
    """A lower bound on the weighted block rental of any run of c inside ``[e, l_)`` (0 for
    hourly billing and reserved contracts). A run touches ``B >= ceil(n / g)`` blocks and owes
    ``max(0, m - B g)`` minimum hours (:func:`rental_usd`); with a constant price that is
    ``max(B g, m) rho``, least at the fewest blocks. With a price by the hour each block costs
    at least the cheapest block ``b`` there and the owed hours are at the reference rate
    ``rho``, so the bound is ``min_B (B b + max(0, m - B g) rho)`` over ``B`` from
    ``ceil(n / g)`` to ``max(ceil(n / g), ceil(m / g))``: a cheap block can cost less than the
    owed hours it saves (a run of 2 h across two cheap 2 h blocks owes none of a 3 h minimum)."""
    if c.contract == "reserved" or c.billing_hours == 1:
        return 0.0
    g = c.billing_hours
    blocks = -(-c.hours // g)
    m = c.min_rental_hours
    prices = block_prices(inst, c)
    if prices is None:
        return w.rental * max(blocks * g, m) * c.rental_per_h
    cheapest = float(np.min(prices[e // g : (l_ - 1) // g + 1]))
    most = max(blocks, -(-m // g))
    rho = c.rental_per_h
    least = min(b * cheapest + max(0, m - b * g) * rho for b in range(blocks, most + 1))
    return w.rental * least


_PREFIX: weakref.WeakKeyDictionary[Instance, dict[tuple[str, str], np.ndarray]] = (
    weakref.WeakKeyDictionary()
)


def _prefix(inst: Instance, kind: str, region: str) -> np.ndarray:
    """``[0, x_0, x_0 + x_1, ...]`` of a region's hourly electricity price (``kind`` "price")
    or carbon intensity ("carbon"), once per instance."""
    cache = _PREFIX.setdefault(inst, {})
    out = cache.get((kind, region))
    if out is None:
        x = inst.price[region] if kind == "price" else inst.carbon[region]
        out = np.concatenate([[0.0], np.cumsum(np.asarray(x, dtype=float))])
        cache[(kind, region)] = out
    return out


def _window_sums(inst: Instance, c: Config, w: Weights, starts: np.ndarray) -> np.ndarray | None:
    """``sum_{t in [tau, tau + n_c)} h_c(t)`` for every start tau, with h_c
    :func:`hourly_cost` (``billed``) split as :class:`HourlyTerms`: ``fixed n + per_mwh
    (P(tau + n) - P(tau)) + per_gco2 (C(tau + n) - C(tau))`` from the region's prefix sums,
    without building c's hourly vector (the greedy baselines try thousands of configurations
    at one start each); +inf for a run outside c's hours (:func:`term_hours`). None when a term
    varies by the hour (an offer's hourly price or preemption rate): the caller sums the
    vector."""
    t = hourly_terms(inst, c, w)
    if not (np.ndim(t.fixed) == 0 and np.ndim(t.per_mwh) == 0):
        return None
    n = c.hours
    price = _prefix(inst, "price", c.region)
    cost = float(t.fixed) * n + float(t.per_mwh) * (price[starts + n] - price[starts])
    if t.per_gco2 and inst.carbon[c.region] is not None:
        ci = _prefix(inst, "carbon", c.region)
        cost = cost + t.per_gco2 * (ci[starts + n] - ci[starts])
    window = term_hours(inst, c)
    if window is not None:
        cost = np.where((starts >= window[0]) & (starts + n <= window[1]), cost, np.inf)
    return np.asarray(cost, dtype=float)


def run_costs(
    inst: Instance, c: Config, starts: np.ndarray, w: Weights, hourly: np.ndarray | None = None
) -> np.ndarray:
    """K[c, tau] for every start tau in ``starts``: the weighted cost of running c in the
    contiguous hours ``[tau, tau + n_c)``,

        sum_t h_c(t) + w_r rental of the blocks touched  (g > 1: max(g B(tau), m) rho, or
                                                          each block's price when hourly)
                     + fixed_cost(tau + n_c)        (transfer, archive, value of time, hourly
                                                     minimum rental)
                     + entry(tau)                   (re-planned phases, :func:`entry_usd`)

    with ``h_c`` the hour costs (``hourly``, default :func:`hourly_cost` in ``billed`` mode).
    An infinite hour (blocked, e.g. no capacity) makes every run through it infinite."""
    n = c.hours
    starts = np.asarray(starts, dtype=np.int64)
    cost = None if hourly is not None else _window_sums(inst, c, w, starts)
    if cost is None:
        h = hourly_cost(inst, c, w) if hourly is None else hourly
        blocked = ~np.isfinite(h)
        cum = np.concatenate([[0.0], np.cumsum(np.where(blocked, 0.0, h))])
        cb = np.concatenate([[0], np.cumsum(blocked)])
        cost = cum[starts + n] - cum[starts]
        cost = np.where(cb[starts + n] - cb[starts] > 0, np.inf, cost)
    if c.contract != "reserved":
        g = c.billing_hours
        if g > 1:
            first, last = starts // g, (starts + n - 1) // g
            blocks = last - first + 1
            prices = block_prices(inst, c)
            if prices is None:
                billed = np.maximum(blocks * g, c.min_rental_hours)
                cost = cost + w.rental * billed * c.rental_per_h
            else:
                cp = np.concatenate([[0.0], np.cumsum(prices)])
                owed = np.maximum(0, c.min_rental_hours - blocks * g)
                cost = cost + w.rental * (cp[last + 1] - cp[first] + owed * c.rental_per_h)
        else:
            cost = cost + w.rental * max(0, c.min_rental_hours - n) * c.rental_per_h
    cost = cost + end_usd(inst, c, starts + n, w)
    cost = cost + w.transfer * c.one_time_usd
    if c.entry is not None:
        full = entry_usd(inst, c, w, -1)  # no start is hour -1: the full entry cost
        waived = c.continues & (starts == inst.release[c.phase])
        cost = cost + np.where(waived, 0.0, full)
    return np.asarray(cost, dtype=float)


@dataclass(frozen=True, eq=False)
class RunTable:
    """:func:`run_costs` of many configurations, each at one start of its own, with numpy
    over the configurations: what the greedy baselines ask of thousands of configurations
    per phase. The terms of each configuration (:func:`hourly_terms`, :func:`term_hours`,
    :func:`after_end_per_h`, :func:`entry_usd`) are taken once, by the functions
    :func:`run_costs` calls, and :meth:`costs` does :func:`run_costs`'s arithmetic on arrays
    in the same order, so every figure is the same to the bit. A configuration whose offer's
    price or preemption rate varies by the hour (``special``) is costed by :func:`run_costs`
    itself."""

    inst: weakref.ReferenceType[Instance]
    weights: Weights
    configs: tuple[Config, ...]
    hours: np.ndarray
    #: the row of the configuration's region in :attr:`price` and :attr:`carbon`
    row: np.ndarray
    fixed: np.ndarray
    per_mwh: np.ndarray
    #: ``per_gco2`` where the region has an intensity series and the term is not 0, else 0
    per_gco2: np.ndarray
    with_carbon: np.ndarray
    #: ``[first, end)`` of :func:`term_hours` (``[0, T)`` when c may run in every hour)
    first: np.ndarray
    end: np.ndarray
    reserved: np.ndarray
    billing: np.ndarray
    min_rental: np.ndarray
    rho: np.ndarray
    after_end: np.ndarray
    #: ``v_p (T - release_p)``: :func:`end_usd`'s part that does not depend on the end
    time_usd: np.ndarray
    one_time: np.ndarray
    with_entry: np.ndarray
    entry: np.ndarray
    continues: np.ndarray
    release: np.ndarray
    special: np.ndarray
    #: the regions' price prefix sums (:func:`_prefix`), one row per region, and their
    #: intensity's (zeros for a region without a series)
    price: np.ndarray
    carbon: np.ndarray

    def subset(self, at: np.ndarray, configs: tuple[Config, ...]) -> RunTable:
        """The table of the configurations at positions ``at``, which are ``configs`` (the
        same ones but for their ``index``: a space narrowed from this table's)."""
        cols = {k: getattr(self, k)[at] for k in _TABLE_COLUMNS}
        return dataclasses.replace(self, configs=configs, **cols)

    def costs(self, which: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """``run_costs(inst, configs[i], [s], w)[0]`` for every ``i, s`` of ``which`` (indices
        into :attr:`configs`) and ``starts``."""
        i = np.asarray(which, dtype=np.int64)
        s = np.asarray(starts, dtype=np.int64)
        n, row = self.hours[i], self.row[i]
        cost = self.fixed[i] * n + self.per_mwh[i] * (self.price[row, s + n] - self.price[row, s])
        carbon = self.per_gco2[i] * (self.carbon[row, s + n] - self.carbon[row, s])
        cost = np.where(self.with_carbon[i], cost + carbon, cost)
        cost = np.where((s >= self.first[i]) & (s + n <= self.end[i]), cost, np.inf)
        g, m, rho = self.billing[i], self.min_rental[i], self.rho[i]
        blocks = (s + n - 1) // g - s // g + 1
        w = self.weights
        coarse = cost + w.rental * np.maximum(blocks * g, m) * rho
        hourly = cost + w.rental * np.maximum(0, m - n) * rho
        cost = np.where(self.reserved[i], cost, np.where(g > 1, coarse, hourly))
        cost = cost + ((self.price.shape[1] - 1 - (s + n)) * self.after_end[i] + self.time_usd[i])
        cost = cost + w.transfer * self.one_time[i]
        waived = self.continues[i] & (s == self.release[i])
        cost = np.where(self.with_entry[i], cost + np.where(waived, 0.0, self.entry[i]), cost)
        for k in np.flatnonzero(self.special[i]):
            inst = self.inst()
            assert inst is not None, "the instance of a run table is gone"
            cost[k] = run_costs(inst, self.configs[int(i[k])], s[k : k + 1], w)[0]
        return np.asarray(cost, dtype=float)


def run_table(inst: Instance, configs: tuple[Config, ...], w: Weights) -> RunTable:
    """The :class:`RunTable` of ``configs`` (of ``inst``) under the weights ``w``."""
    regions = list(inst.spec.regions)
    region_row = {r: k for k, r in enumerate(regions)}
    zeros = np.zeros(inst.hours + 1)
    price = np.stack([_prefix(inst, "price", r) for r in regions])
    carbon = np.stack(
        [_prefix(inst, "carbon", r) if inst.carbon[r] is not None else zeros for r in regions]
    )
    rows: list[tuple[object, ...]] = []
    early: dict[str, float] = {}
    for c in configs:
        rho, lam = hour_rates(inst, c)
        special = isinstance(rho, np.ndarray) or isinstance(lam, np.ndarray)
        t = hourly_terms(inst, c, w)
        window = term_hours(inst, c)
        v = early.get(c.phase)
        if v is None:
            v = early[c.phase] = usd_per_hour_early(inst, c.phase)
        rel = inst.release[c.phase]
        carbon_on = bool(t.per_gco2) and inst.carbon[c.region] is not None
        rows.append(
            (
                c.hours,
                region_row[c.region],
                0.0 if special else float(t.fixed),
                0.0 if special else float(t.per_mwh),
                t.per_gco2 if carbon_on else 0.0,
                carbon_on,
                0 if window is None else window[0],
                inst.hours if window is None else window[1],
                c.contract == "reserved",
                c.billing_hours,
                c.min_rental_hours,
                c.rental_per_h,
                after_end_per_h(inst, c, w),
                v * (inst.hours - rel),
                c.one_time_usd,
                c.entry is not None,
                entry_usd(inst, c, w, -1) if c.entry is not None else 0.0,
                c.continues,
                rel,
                special,
            )
        )
    columns = zip(*rows, strict=True) if rows else ((),) * len(_TABLE_COLUMNS)
    arrays: dict[str, np.ndarray] = {
        k: np.asarray(col, dtype=_TABLE_COLUMNS[k])
        for k, col in zip(_TABLE_COLUMNS, columns, strict=True)
    }
    return RunTable(weakref.ref(inst), w, tuple(configs), price=price, carbon=carbon, **arrays)


#: The per-configuration columns of a :class:`RunTable` and their types, in the order
#: :func:`run_table` takes them.
_TABLE_COLUMNS: dict[str, type] = {
    "hours": np.int64,
    "row": np.int64,
    "fixed": float,
    "per_mwh": float,
    "per_gco2": float,
    "with_carbon": bool,
    "first": np.int64,
    "end": np.int64,
    "reserved": bool,
    "billing": np.int64,
    "min_rental": np.int64,
    "rho": float,
    "after_end": float,
    "time_usd": float,
    "one_time": float,
    "with_entry": bool,
    "entry": float,
    "continues": bool,
    "release": np.int64,
    "special": bool,
}


def run_emissions(inst: Instance, c: Config, starts: np.ndarray) -> np.ndarray:
    """Tonnes of CO2 of the contiguous runs ``[tau, tau + n_c)`` for every tau in ``starts``."""
    starts = np.asarray(starts, dtype=np.int64)
    ci = inst.carbon[c.region]
    if ci is None:
        return np.zeros(len(starts))
    cum = np.concatenate([[0.0], np.cumsum(c.facility_kw * ci / 1e6)])
    return np.asarray(cum[starts + c.hours] - cum[starts], dtype=float)


# ----------------------------------------------------------------------------- migrations


@dataclass(frozen=True)
class Migration:
    """What a change of configuration costs (USD, unweighted, by the component it falls in)
    and how long it takes (hours)."""

    rental: float = 0.0
    energy: float = 0.0
    transfer: float = 0.0
    hours: float = 0.0

    def __add__(self, other: Migration) -> Migration:
        return Migration(
            self.rental + other.rental,
            self.energy + other.energy,
            self.transfer + other.transfer,
            self.hours + other.hours,
        )

    @property
    def total(self) -> float:
        """The migration's USD, unweighted: rental + energy + transfer."""
        return self.rental + self.energy + self.transfer

    def weighted(self, w: Weights) -> float:
        """The migration's cost under the objective weights ``w``, each component by its own
        weight."""
        return w.rental * self.rental + w.energy * self.energy + w.transfer * self.transfer

    def parts(self) -> tuple[float, float, float]:
        """(rental, energy, transfer) USD, the order ``Config.entry`` stores them in."""
        return (self.rental, self.energy, self.transfer)


def _held(inst: Instance, c: Config, hours: float) -> Migration:
    """c's GPUs held ``hours`` without progress: rental ``hours x rho`` and the power it pays
    for, ``hours x kW_paid x mean(price) / 1000`` (as a resume is costed)."""
    rental, power = held_usd(inst, c.region, c.rental_per_h, c.billed_kw, hours)
    return Migration(rental, power, 0.0, hours)


def leave_cost(inst: Instance, a: Config) -> Migration:
    """Leaving configuration a: a checkpoint written to a's storage tier, ``stored_a / 3600``
    hours of a's GPUs (the next configuration reads it from there, so a's nodes are held until
    the sharded write has landed: the write itself when synchronous, snapshot + write when
    asynchronous or in memory, whose peer copies go with the nodes;
    :attr:`planner.physics.storage.CheckpointCost.stored_s`)."""
    return _held(inst, a, a.checkpoint_stored_s / 3600.0)


def enter_cost(inst: Instance, b: Config) -> Migration:
    """Starting on configuration b from a checkpoint: the restart and the sharded read of b's
    checkpoint from b's tier, ``restart_hours + ck_b / min(read_b x nodes_b, aggregate_b) /
    3600`` hours of b's GPUs."""
    ck = checkpoint_gb_of(inst, inst.phase(b.phase), b.layout.precision)
    tier = inst.region(b.region).storage[b.tier]
    nodes = math.ceil(b.gpus / inst.gpu(b.gpu).gpus_per_node) if b.gpus >= 1 else 1
    bw = storage.sharded_bandwidth_gb_per_s(nodes, tier.read_gb_per_s, tier.aggregate_gb_per_s)
    return _held(inst, b, inst.spec.failure.restart_hours + ck / bw / 3600.0)


def move_cost(inst: Instance, src: str, b: Config) -> Migration:
    """Moving to configuration b from region ``src`` (nothing within a region): the checkpoint
    ``ck_b x transfer(src -> r_b)`` and ``ck_b / link(src -> r_b) / 3600`` hours of b's GPUs
    waiting for it, and the input data staged to the new region, ``data.size_gb x
    transfer(home -> r_b)`` (from ``src`` when the data has no home region)."""
    dst = b.region
    if src == dst:
        return Migration()
    p = inst.phase(b.phase)
    ck = checkpoint_gb_of(inst, p, b.layout.precision)
    home = p.data.home_region or src
    usd = ck * transfer_usd_per_gb(inst, src, dst) + p.data.size_gb * transfer_usd_per_gb(
        inst, home, dst
    )
    held = _held(inst, b, ck / link_gb_per_s(inst, src, dst) / 3600.0)
    return held + Migration(transfer=usd)


def migration_cost(inst: Instance, a: Config, b: Config) -> Migration:
    """A migration from a to b: ``leave(a) + move(r_a -> b) + enter(b)``
    (docs/cost-model.md, "Segments")."""
    return leave_cost(inst, a) + move_cost(inst, a.region, b) + enter_cost(inst, b)


def handoff_usd(inst: Instance, c: Config) -> float:
    """The part of c's one-time cost that follows the region the phase ends in: every
    successor retrieves the output from c's region's archive tier."""
    r = inst.region(c.region)
    tier = r.storage[archive_tier(r, inst.spec.storage.archive)]
    p = inst.phase(c.phase)
    return len(inst.successors(p.name)) * output_gb_of(inst, p) * tier.retrieval_usd_per_gb


def first_segment_usd(inst: Instance, c: Config, w: Weights, start: int | None = None) -> float:
    """The weighted costs a phase in segments pays once for a first segment on c: c's one-time
    transfers less the successors' retrievals (:func:`handoff_usd`, the last segment's,
    :func:`last_segment_usd`) and, for a re-planned phase, the entry from its running
    configuration (:func:`entry_usd` from ``start``; None: the least over starts)
    (docs/cost-model.md, "Segments")."""
    return w.transfer * (c.one_time_usd - handoff_usd(inst, c)) + entry_usd(inst, c, w, start)


def last_segment_usd(inst: Instance, c: Config, end: int, w: Weights) -> float:
    """The weighted costs a phase in segments pays once for a last segment on c that ends at
    ``end``: the output archived in c's region to the horizon end and the successors'
    retrievals from it (:func:`handoff_usd`) (docs/cost-model.md, "Segments")."""
    return w.storage * (inst.hours - end) * c.archive_per_h + w.transfer * handoff_usd(inst, c)


# ----------------------------------------------------------------------------- a phase


@dataclass(frozen=True)
class PartCosts:
    """One segment's running costs (USD by component), the share of the phase's work it does
    and the migration into it (None: none)."""

    costs: dict[str, float]
    work: float
    migration: Migration | None


@dataclass(frozen=True)
class PhaseCosts:
    """One phase's costs (USD, unweighted, by component), its energy and emissions, and (for
    a phase in segments or one leaving its running configuration) per segment."""

    costs: dict[str, float]
    kwh: float
    emissions_t: float
    parts: tuple[PartCosts, ...] = ()


def phase_costs(
    inst: Instance, c: Config, hours: tuple[int, ...], region_of: Mapping[str, str]
) -> PhaseCosts:
    """Costs of one phase running configuration c in ``hours`` (docs/cost-model.md, "Plan
    costs"): rental per billing block (reserved: the licence only; the pool is paid at plan
    level), energy and failure per hour, running storage, pauses and the archive, transfers
    (one-time and to successors in other regions, ``region_of``), carbon."""
    return parts_costs(inst, (Assignment(c, tuple(hours)),), region_of)


def _running_part(inst: Instance, a: Assignment, w: Weights) -> dict[str, float]:
    """The running costs of one segment: rental, energy, failure (and resumes), storage while
    running, carbon; emissions and kWh under ``_t``/``_kwh``."""
    c = a.config
    p = inst.phase(c.phase)
    H = np.asarray(sorted(a.hours), dtype=int)
    price = inst.price[c.region][H]
    rho, lam = hour_rates(inst, c)
    rho_h = rho[H] if isinstance(rho, np.ndarray) else rho
    lam_h = lam[H] if isinstance(lam, np.ndarray) else lam
    fail = float(np.sum(failure_usd(c, price, rho_h, lam_h)))
    if p.preemptible:
        fail += (count_runs(H.tolist()) - 1) * c.resume_usd
    emissions = emissions_t(inst, c, H.tolist())
    return {
        "rental": float(rental_usd(inst, c, H.tolist())),
        "energy": float(np.sum(energy_usd(c, price))),
        "storage": float(len(H) * c.storage_per_h),
        "failure": fail,
        "transfer": 0.0,
        "porting": 0.0,
        "carbon": inst.spec.objective.carbon_usd_per_tonne * emissions,
        "_t": emissions,
        "_kwh": c.facility_kw * len(H),
    }


def entry_migration(inst: Instance, first: Assignment) -> Migration | None:
    """The migration from a re-planned phase's running configuration into its first segment,
    None when there is none (no running configuration, or the run goes on). A migration that
    costs nothing (a checkpoint of 0 GB, no restart time) is still a migration: the plan
    states it, at 0."""
    c = first.config
    if c.entry is None:
        return None
    if c.continues and first.start == inst.release[c.phase]:
        return None
    rental, energy, transfer = c.entry
    return Migration(rental, energy, transfer, c.entry_hours)


def parts_costs(
    inst: Instance, parts: tuple[Assignment, ...], region_of: Mapping[str, str]
) -> PhaseCosts:
    """Costs of one phase run in ``parts`` (its segments in time order; one for a phase on
    one configuration), docs/cost-model.md "Plan costs" and "Segments": each segment's
    running costs; pauses between the phase's first and last hour (preemptible phases); the
    output archived from the last segment's region; the first segment's one-time transfers
    with the successors' retrievals from the last segment's archive; the output moved from
    the last region to successors elsewhere; and each migration (into every segment after the
    first, and from the running configuration into the first when it does not go on)."""
    w = weights(inst)
    first, last = parts[0].config, parts[-1].config
    p = inst.phase(first.phase)
    running = [_running_part(inst, a, w) for a in parts]
    costs = {k: float(sum(r[k] for r in running)) for k in COST_KEYS}
    hours = sorted(h for a in parts for h in a.hours)
    start, end, n = hours[0], hours[-1] + 1, len(hours)
    costs["storage"] += (inst.hours - end) * last.archive_per_h
    if p.preemptible:
        costs["storage"] += (end - start - n) * pause_usd_per_h(inst, p)
    if len(parts) == 1:
        transfer = first.one_time_usd
    else:
        transfer = first.one_time_usd - handoff_usd(inst, first) + handoff_usd(inst, last)
    out_gb = output_gb_of(inst, p)
    transfer += sum(
        out_gb * transfer_usd_per_gb(inst, last.region, region_of[q])
        for q in inst.successors(p.name)
        if q in region_of
    )
    costs["transfer"] += transfer
    moves: list[Migration | None] = [entry_migration(inst, parts[0])]
    moves += [migration_cost(inst, a.config, b.config) for a, b in pairwise(parts)]
    for m in moves:
        if m is not None:
            costs["rental"] += m.rental
            costs["energy"] += m.energy
            costs["transfer"] += m.transfer
    per_part: tuple[PartCosts, ...] = ()
    if len(parts) > 1 or moves[0] is not None:
        per_part = tuple(
            PartCosts(
                {k: r[k] for k in COST_KEYS},
                len(a.hours) / a.config.work_hours,
                m,
            )
            for a, r, m in zip(parts, running, moves, strict=True)
        )
    return PhaseCosts(
        costs,
        float(sum(r["_kwh"] for r in running)),
        float(sum(r["_t"] for r in running)),
        per_part,
    )


def pool_usd_per_gpu(inst: Instance, region: str, gpu: str, term: str = "") -> float:
    """What one GPU committed to a reserved pool under ``term`` costs the plan: ``price x T``
    for the whole-horizon reservation (constant price), else the sum of the term's hourly
    price over its hours inside the horizon, plus (``prorate: false``) the term's hours
    outside the horizon at its mean price inside."""
    t = inst.term(region, gpu, term)
    assert t is not None, (region, gpu, term)
    price = inst.offer_price(region, gpu, "reserved", term)
    inside = price[t.first : t.end]
    if is_constant(price):
        return float(price[0]) * t.billed_hours
    total = float(np.sum(inside))
    if not t.prorate:
        total += (t.hours - (t.end - t.first)) * float(np.mean(inside))
    return total


def pool_rental(inst: Instance, reserved: Mapping[tuple[str, ...], int]) -> float:
    """``sum over reserved pools and terms of R x pool_usd_per_gpu``, paid whether used or
    not."""
    total = 0.0
    for key, n in reserved.items():
        r, g, term = reserved_key(key)
        if n > 0 and inst.term(r, g, term) is not None:
            total += n * pool_usd_per_gpu(inst, r, g, term)
    return total


def porting_usd(inst: Instance, gpus: Iterable[str]) -> float:
    """``families[f].porting_usd`` once per family of the GPU types a plan uses."""
    families = {inst.gpu(g).family for g in gpus}
    return float(
        sum(inst.spec.families[f].porting_usd for f in families if f in inst.spec.families)
    )


# ----------------------------------------------------------------------------- a plan


def _finite(x: float, digits: int = 6) -> float | None:
    return None if math.isinf(x) else round(x, digits)


def _info(inst: Instance, c: Config, n: int, failure_usd: float) -> dict[str, object]:
    """Derived figures of a plan entry, for people; the checker recomputes them and reports
    those that differ (docs/cost-model.md, "What a plan entry states").

    Failures over the entry's n running hours: ``expected_failures = f n`` with f the expected
    failures per running hour, ``lost_hours = f n L`` (work redone and downtime, wall hours
    beyond the n), in GPU-hours (working and spare GPUs held), facility kWh and dollars (the
    phase's failure cost); ``effective_training_time = (1 - overhead)(1 - lambda L)``."""
    p = inst.phase(c.phase)
    lay = c.layout
    th = c.throughput
    mem = c.memory
    lost_h = c.failure_rate * n * c.loss_h
    overhead = c.checkpoint_overhead
    offers = inst.region(c.region).offers.get(c.gpu)
    zone = getattr(getattr(offers, c.contract, None), "zone", None)
    return {
        **({"zone": zone} if zone else {}),
        "config": c.label,
        "dp": lay.dp,
        "memory_gb": round(mem.total_gb, 3),
        "model_states_gb": round(mem.model_states_gb, 3),
        "activations_gb": round(mem.activations_gb, 3),
        "gather_gb": round(mem.gather_gb, 3),
        "cpu_offload_gb": round(mem.cpu_gb, 3),
        "memory_capacity_gb": round(mem.capacity_gb, 3),
        "memory_convention": inst.spec.memory.convention,
        "flops_convention": p.work.flops_convention,
        "tflops_per_gpu": round(c.flops_per_s / max(c.gpus, 1e-9) / 1e12, 2),
        "scaling": {
            "kind": th.scaling.kind,
            "reference_gpus": th.scaling.reference_gpus,
            "efficiency": round(th.eff_scale, 6),
            "detail": th.scaling.detail,
        },
        "layout_efficiency": round(th.eff_layout, 6),
        "recompute_factor": round(th.recompute, 6),
        "compute_hours": round(c.compute_hours, 6),
        "work_hours": round(c.work_hours, 6),
        "facility_kw": round(c.facility_kw, 4),
        "energy": c.energy,
        "checkpoint": c.checkpoint,
        "checkpoint_gb": round(checkpoint_gb_of(inst, p, lay.precision), 3),
        "checkpoint_stall_s": round(c.checkpoint_write_s, 6),
        "checkpoint_persist_s": round(c.checkpoint_persist_s, 6),
        "checkpoint_reload_s": round(c.checkpoint_reload_s, 6),
        "checkpoint_interval_s": _finite(c.checkpoint_interval_s, 1),
        "checkpoint_hours": round(c.compute_hours * overhead / (1.0 - overhead), 6),
        "failure_rate_per_h": c.job_failure_rate,
        "downtime_h": round(c.downtime_h, 6),
        "loss_per_failure_h": round(c.loss_h, 6),
        "expected_failures": round(c.failure_rate * n, 6),
        "lost_hours": round(lost_h, 6),
        "lost_gpu_hours": round(lost_h * c.total_gpus, 4),
        "lost_kwh": round(lost_h * c.facility_kw, 4),
        "lost_usd": round(failure_usd, 6),
        "effective_training_time": round(c.effective_training_time, 6),
        "deadline_reserve_h": c.reserve_h,
        "kind": p.kind,
        "preemptible": p.preemptible,
    }


def _migration_dict(m: Migration, source: str) -> dict[str, object]:
    return {
        "from": source,
        "rental": round(m.rental, 6),
        "energy": round(m.energy, 6),
        "transfer": round(m.transfer, 6),
        "total": round(m.total, 6),
        "hours": round(m.hours, 6),
    }


def _segments(
    inst: Instance, parts: tuple[Assignment, ...], pc: PhaseCosts
) -> tuple[SegmentPlan, ...]:
    """The plan's segments of a phase (empty when it runs one configuration and migrates
    from nothing)."""
    out: list[SegmentPlan] = []
    for k, (a, part) in enumerate(zip(parts, pc.parts, strict=True)):
        fields_ = a.config.plan_fields()
        m = part.migration
        migration = {} if m is None else _migration_dict(m, "running" if k == 0 else str(k - 1))
        out.append(
            SegmentPlan(
                **fields_,  # type: ignore[arg-type]
                hours=tuple(sorted(a.hours)),
                work=round(part.work, 9),
                costs={key: round(v, 6) for key, v in part.costs.items()},
                migration=migration,
                info=_info(inst, a.config, len(a.hours), part.costs["failure"]),
            )
        )
    return tuple(out)


def cost_plan(inst: Instance, schedule: Schedule) -> Plan:
    """Cost a schedule: one :class:`~planner.model.plan.PhasePlan` per phase (in topological order)
    with its costs (and its segments, for a phase that changes configuration or leaves the
    one it was running on), the reserved pools, porting once per family, totals and the
    objective: the weighted bill plus the value of time (``costs["time"]``, stated when the
    instance values time: ``sum_p v_p (end_p - release_p)``, :func:`time_usd`). A pure
    function of the instance and the schedule."""
    region_of = schedule.region_of()
    totals = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emis = time = 0.0
    phases: list[PhasePlan] = []
    for name in inst.order:
        if name not in schedule:
            continue
        parts = schedule.parts(name)
        time += time_usd(inst, name, max(a.end for a in parts))
        pc = parts_costs(inst, parts, region_of)
        kwh += pc.kwh
        emis += pc.emissions_t
        for k in COST_KEYS:
            totals[k] += pc.costs[k]
        c = parts[0].config
        hours = schedule.hours_of(name)
        info = _info(inst, c, len(hours), pc.costs["failure"])
        if len(parts) > 1:  # the first segment's figures, but failures over every segment
            info["expected_failures"] = round(
                sum(a.config.failure_rate * len(a.hours) for a in parts), 4
            )
            info["segments"] = len(parts)
        phases.append(
            PhasePlan(
                name=name,
                **c.plan_fields(),  # type: ignore[arg-type]
                hours=hours,
                costs={k: round(v, 6) for k, v in pc.costs.items()},
                info=info,
                segments=_segments(inst, parts, pc) if pc.parts else (),
            )
        )
    totals["rental"] += pool_rental(inst, schedule.reserved)
    totals["porting"] = porting_usd(inst, {a.config.gpu for _, a in schedule.all_parts()})
    totals["total"] = sum(totals[k] for k in COST_KEYS)
    if values_time(inst):
        totals["time"] = time  # the value of time: in the objective, not in the bill
    pools = sorted(schedule.reserved.items())
    return Plan(
        instance=inst.name,
        horizon_start=inst.start,
        objective=weights(inst).objective(totals) + time,
        costs={k: round(v, 6) for k, v in totals.items()},
        phases=tuple(phases),
        reserved=tuple((r, g, int(n)) for (r, g, t), n in pools if not t),
        energy_kwh=kwh,
        emissions_t=emis,
        reserved_terms=tuple((r, g, t, int(n)) for (r, g, t), n in pools if t),
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
