"""Offers resolved to the horizon: the price per GPU-hour of every (region, GPU type,
contract, term) and spot's preemptions per hour, one value per horizon hour, and the reserved
terms as windows of horizon hours.

A price or rate is a number or any :class:`~planner.instance.schema.Series` electricity
accepts, read on the same clock (the region's time zone for time-of-use bands) with the same
validation, and refused when negative. A reserved offer without ``terms`` has one implicit
term, named ``""``, that covers the horizon exactly (today's "paid every hour of the
horizon"). A term's hours are slots ``[first, end)`` counted from the horizon start: a start
between whole hours rounds up (the first slot that begins inside the term) and its end rounds
down, as a phase's release and deadline do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from planner.instance.errors import FieldError
from planner.instance.schema import InstanceSpec, Region, Reserved, Series
from planner.instance.series import SeriesError, resolve_series

#: Contracts an offer may carry, in the order configurations are enumerated.
CONTRACTS = ("on_demand", "spot", "reserved")

#: (region, GPU type, contract, term): term is "" except for a reserved offer's named terms.
RateKey = tuple[str, str, str, str]


def site_of(region: Region) -> str:
    """The kind of site a region is: its ``site``, else ``cloud`` when it names a ``cloud``,
    else ``colocation``."""
    if region.site is not None:
        return region.site
    return "cloud" if region.cloud else "colocation"


def energy_billing(region: Region, gpu: str, contract: str) -> str:
    """Who pays the power of a (region, GPU type) offer under a contract: the offer's
    ``energy``, else by the site (:func:`site_of`): a cloud's price includes it
    (``included``), a colocation site, a compute-leasing platform and one's own cluster bill
    it on top at the region's electricity price (``metered``). Included power still counts
    in a plan's kWh and emissions, not in its bill (docs/cost-model.md, "Who pays the
    power")."""
    offers = region.offers.get(gpu)
    offer = None if offers is None else getattr(offers, contract, None)
    given = None if offer is None else offer.energy
    if given is not None:
        return str(given)
    return "included" if site_of(region) == "cloud" else "metered"


def power_note(region: Region) -> str:
    """Who pays a region's power, in words, for ``check``, ``init`` and the report: "included
    in the GPU price" or "metered at the region's electricity price, on top of the rental",
    with the site kind, and the offers that differ from the rest when they do."""
    site = site_of(region)
    by: dict[str, list[str]] = {}
    for gpu, offers in region.offers.items():
        for contract in CONTRACTS:
            if getattr(offers, contract) is not None:
                by.setdefault(energy_billing(region, gpu, contract), []).append(
                    f"{gpu} {contract.replace('_', '-')}"
                )
    words = {
        "included": "included in the GPU price",
        "metered": "metered at the region's electricity price, on top of the rental",
    }
    if len(by) <= 1:
        billing = next(iter(by), "included" if site == "cloud" else "metered")
        return f"power {words[billing]} ({site} site)"
    parts = [f"{words[k]} for {', '.join(v)}" for k, v in sorted(by.items())]
    return f"power {'; '.join(parts)} ({site} site)"


def reference(values: np.ndarray) -> float:
    """The one number a configuration's rates use where a single value is needed (Daly's
    interval, resume and migration costs, minimum-rental surcharges): the value itself when
    the series is constant (so a constant price gives exactly the figures of a number), else
    its mean over the horizon."""
    first = float(values[0])
    return first if bool(np.all(values == first)) else float(np.mean(values))


def is_constant(values: np.ndarray) -> bool:
    """Whether an hourly series has one value (then it is treated exactly as a number)."""
    return bool(np.all(values == values[0]))


@dataclass(frozen=True)
class Term:
    """A reserved term in horizon hours. ``start`` may lie before the horizon (negative) and
    ``start + hours`` after it; ``first``/``end`` are the slots of the term inside the
    horizon, ``[first, end)``. ``billed_hours`` is what the plan pays per committed GPU:
    the hours inside the horizon (``prorate``), or the whole term."""

    name: str
    start: int
    hours: int
    first: int
    end: int
    min_gpus: int
    max_gpus: int | None
    prorate: bool

    @property
    def billed_hours(self) -> int:
        """Hours a committed GPU is paid for: those inside the horizon when prorated, else the whole
        term."""
        return self.end - self.first if self.prorate else self.hours

    @property
    def whole_horizon(self) -> bool:
        """The implicit term of an offer without terms."""
        return self.name == ""

    def covers(self, hour: int) -> bool:
        """Whether horizon hour ``hour`` lies inside the term."""
        return self.first <= hour < self.end


@dataclass(frozen=True)
class Rates:
    """Per-hour prices and preemption rates of every offer, and the reserved terms. Plain
    dictionaries (so the instance pickles); every array is read-only."""

    price: dict[RateKey, np.ndarray]
    preemptions: dict[tuple[str, str], np.ndarray]
    terms: dict[tuple[str, str], tuple[Term, ...]]
    #: The keys of the prices and preemption rates that vary by the hour.
    hourly_price: frozenset[RateKey] = frozenset()
    hourly_preemptions: frozenset[tuple[str, str]] = frozenset()
    #: Their reference values (:func:`reference`), computed once.
    price_ref: dict[RateKey, float] = field(default_factory=dict)
    preemptions_ref: dict[tuple[str, str], float] = field(default_factory=dict)

    def term(self, region: str, gpu: str, name: str) -> Term | None:
        """The reserved term ``name`` of the (region, GPU type) offer, None when it has none."""
        for t in self.terms.get((region, gpu), ()):
            if t.name == name:
                return t
        return None


def _hour_of(spec: InstanceSpec, when: int | datetime) -> float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            return math.nan
        return (when - spec.horizon.start).total_seconds() / 3600.0
    return float(when)


def _rate(
    value: float | Series,
    spec: InstanceSpec,
    tz: str,
    base_dir: Path,
    where: str,
    errors: list[FieldError],
) -> np.ndarray | None:
    T = spec.horizon.hours
    if isinstance(value, Series):
        try:
            arr = resolve_series(value, spec.horizon.start, T, tz, base_dir).copy()
        except SeriesError as e:
            errors.append(FieldError(where, str(e)))
            return None
        if np.any(arr < 0):
            t = int(np.flatnonzero(arr < 0)[0])
            errors.append(FieldError(where, f"expected values >= 0, got {arr[t]:g} at hour {t}"))
            return None
    else:
        arr = np.full(T, float(value))
    arr.setflags(write=False)
    return arr


def _terms(
    spec: InstanceSpec, res: Reserved, where: str, errors: list[FieldError]
) -> tuple[Term, ...]:
    T = spec.horizon.hours
    if not res.terms:
        return (Term("", 0, T, 0, T, res.min_gpus, res.max_gpus, True),)
    out: list[Term] = []
    for i, (name, t) in enumerate(zip(res.term_names(), res.terms, strict=True)):
        at = f"{where}.terms[{i}]"
        h = _hour_of(spec, t.start)
        if math.isnan(h):
            errors.append(FieldError(f"{at}.start", "expected an ISO time with a UTC offset"))
            continue
        first, end = math.ceil(h - 1e-9), math.floor(h + t.hours + 1e-9)
        lo, hi = max(0, first), min(T, end)
        if hi <= lo:
            errors.append(
                FieldError(
                    at,
                    f"the term (hours {first} to {end} of the horizon) has no hour inside "
                    f"the horizon [0, {T})",
                )
            )
            continue
        out.append(
            Term(
                name,
                first,
                t.hours,
                lo,
                hi,
                res.min_gpus if t.min_gpus is None else t.min_gpus,
                res.max_gpus if t.max_gpus is None else t.max_gpus,
                t.prorate,
            )
        )
    return tuple(out)


def resolve_offers(spec: InstanceSpec, base_dir: Path) -> tuple[Rates, list[FieldError]]:
    """Every offer's hourly price and spot's hourly preemption rate, and the reserved terms;
    the errors found (series that cannot be read or go negative, terms outside the horizon)."""
    errors: list[FieldError] = []
    price: dict[RateKey, np.ndarray] = {}
    preempt: dict[tuple[str, str], np.ndarray] = {}
    terms: dict[tuple[str, str], tuple[Term, ...]] = {}
    for rname, r in spec.regions.items():
        for gname, offers in r.offers.items():
            base = f"regions.{rname}.offers.{gname}"
            for contract in CONTRACTS:
                o = getattr(offers, contract)
                if o is None:
                    continue
                where = f"{base}.{contract}"
                arr = _rate(
                    o.usd_per_gpu_hour,
                    spec,
                    r.timezone,
                    base_dir,
                    f"{where}.usd_per_gpu_hour",
                    errors,
                )
                if arr is not None:
                    price[(rname, gname, contract, "")] = arr
                if contract == "spot":
                    pre = _rate(
                        o.preemptions_per_hour,
                        spec,
                        r.timezone,
                        base_dir,
                        f"{where}.preemptions_per_hour",
                        errors,
                    )
                    if pre is not None:
                        preempt[(rname, gname)] = pre
                if contract == "reserved":
                    ts = _terms(spec, o, where, errors)
                    terms[(rname, gname)] = ts
                    for name, t in zip(o.term_names(), o.terms, strict=True):
                        if t.usd_per_gpu_hour is None:
                            tarr = arr
                        else:
                            tarr = _rate(
                                t.usd_per_gpu_hour,
                                spec,
                                r.timezone,
                                base_dir,
                                f"{where}.terms[{o.term_names().index(name)}].usd_per_gpu_hour",
                                errors,
                            )
                        if tarr is not None:
                            price[(rname, gname, contract, name)] = tarr
    varies = frozenset(k for k, v in price.items() if not is_constant(v))
    varies_pre = frozenset(k for k, v in preempt.items() if not is_constant(v))
    refs = {k: reference(v) for k, v in price.items()}
    refs_pre = {k: reference(v) for k, v in preempt.items()}
    return Rates(price, preempt, terms, varies, varies_pre, refs, refs_pre), errors
