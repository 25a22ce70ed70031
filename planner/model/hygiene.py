"""Numerical hygiene: warnings about numbers that are valid but implausible.

The reader refuses what is impossible (negative memory, NaN); this module flags what is
possible but almost certainly a mistake, usually a wrong unit, and numbers that make the
optimisation model badly scaled. :func:`check_numerics` returns one warning per finding,
each starting with the field path responsible (the reader's path style:
``regions.east.electricity``, ``phases[1] (finetune).work``), so a person can find it.

Thresholds and what they catch (each a factor of ten or more beyond any real value, so a
correct instance never trips them):

- electricity above :data:`MAX_PRICE_USD_PER_MWH` (10,000 USD/MWh) in any hour: wholesale
  price caps are below it (ERCOT's system-wide offer cap is 5,000 USD/MWh since 2022); a
  price per GWh, or in cents, lands here;
- electricity whose every hour is below 1 USD/MWh in magnitude (and not all zero): a price
  per kWh (0.05 USD/kWh = 50 USD/MWh) given in the per-MWh field;
- carbon intensity whose every hour is below 1 gCO2/kWh (and not all zero): kg/kWh given in
  the g/kWh field (grids run at about 20-900 gCO2/kWh);
- GPU memory above :data:`MAX_GPU_MEMORY_GB` (10,000 GB): bytes or MB given in the GB
  field (the largest accelerators have a few hundred GB: AMD MI300X 192 GB);
- peak throughput above :data:`MAX_PEAK_TFLOPS` (100,000 TFLOPS per GPU): FLOP/s given in
  the TFLOPS field (an H100 SXM has 989 dense bf16 TFLOPS);
- board power above :data:`MAX_BOARD_POWER_W` (10,000 W per GPU): milliwatts, or a node's
  power given per GPU (an H100 SXM is 700 W);
- rental above :data:`MAX_RENTAL_USD_PER_GPU_HOUR` (1,000 USD per GPU-hour): cents, or a
  node's monthly price (on-demand H100s list at about 2-12 USD per GPU-hour);
- failure rates above :data:`MAX_FAILURES_PER_GPU_HOUR` (1 per GPU-hour), and spot
  preemptions above 1 per hour: a count per 1,000 GPU-hours or a percentage (Llama 3 saw
  419 interruptions in 54 days on 16,384 GPUs: 1.97e-5 per GPU-hour);
- capacities above :data:`MAX_CAPACITY_GPUS` (10^7 GPUs in one region);
- work so small that the slowest allowed configuration needs under :data:`MIN_WORK_HOURS`
  (one minute): every configuration rounds up to one billed hour and the plan cannot tell
  them apart (tokens in billions, 2.0 for 2e9?);
- work so large that even a lower bound on its duration exceeds :data:`MAX_HORIZON_MULTIPLE`
  (100) times the horizon (tokens given for FLOPs?);
- the objective's coefficient range: the largest over the smallest nonzero hourly cost of
  any configuration in any hour above :data:`MAX_COST_RANGE` (1e9). HiGHS works to a
  feasibility tolerance of 1e-7 and a MIP gap relative to the objective, so a range beyond
  about 1e9 lets the cheap terms vanish in rounding.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from planner.instance.model import Instance
from planner.instance.schema import Phase
from planner.model.configs import Config, config_space
from planner.model.costs import hourly_cost, term_hours, weights
from planner.model.workload import mfu_of, peak_tflops, work_flops
from planner.physics import compute

MAX_PRICE_USD_PER_MWH = 10_000.0
MIN_PRICE_MAGNITUDE_USD_PER_MWH = 1.0
MIN_CARBON_G_PER_KWH = 1.0
MAX_GPU_MEMORY_GB = 10_000.0
MAX_PEAK_TFLOPS = 100_000.0
MAX_BOARD_POWER_W = 10_000.0
MAX_RENTAL_USD_PER_GPU_HOUR = 1_000.0
MAX_FAILURES_PER_GPU_HOUR = 1.0
MAX_PREEMPTIONS_PER_HOUR = 1.0
MAX_CAPACITY_GPUS = 1e7
MIN_WORK_HOURS = 1.0 / 60.0
MAX_HORIZON_MULTIPLE = 100.0
MAX_COST_RANGE = 1e9


def check_numerics(inst: Instance) -> list[str]:
    """Warnings for implausible magnitudes and a badly scaled objective, each naming its
    field (see the module docstring for every rule and its threshold). An instance without
    findings gives an empty list. Never raises for a valid instance. Computed once per
    instance object (an Instance is frozen): ``trainplan solve`` prints them and the solve
    then warns with the same list (45 ms of week-7b's start each)."""
    found = _NUMERICS.get(inst)
    if found is None:
        found = _NUMERICS[inst] = tuple(_numerics(inst))
    return list(found)


#: Each instance's numeric findings (:func:`check_numerics`).
_NUMERICS: weakref.WeakKeyDictionary[Instance, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _numerics(inst: Instance) -> list[str]:
    """:func:`check_numerics` without the cache."""
    out: list[str] = []
    out.extend(_electricity(inst))
    out.extend(_gpus(inst))
    out.extend(_offers_and_capacity(inst))
    out.extend(_work(inst))
    out.extend(_cost_range(inst))
    return out


def _g(x: float) -> str:
    """A number for a message: 4 significant digits, thousands separated below 1e9."""
    if x != 0 and (abs(x) >= 1e9 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:,.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def _phase_path(inst: Instance, name: str) -> str:
    index = _PHASE_INDEX.get(inst)
    if index is None:
        index = _PHASE_INDEX[inst] = {p.name: i for i, p in enumerate(inst.phases)}
    i = index.get(name)
    return f"phases ({name})" if i is None else f"phases[{i}] ({name})"


#: Each instance's phase positions by name (a check names many phases: 1,000 of them made
#: a linear search per name take a second).
_PHASE_INDEX: weakref.WeakKeyDictionary[Instance, dict[str, int]] = weakref.WeakKeyDictionary()


# ----------------------------------------------------------------------------- series


def _electricity(inst: Instance) -> list[str]:
    """Prices per region, the adder excluded (it has its own field), then carbon."""
    out: list[str] = []
    for rname, region in inst.spec.regions.items():
        adder = region.price_adder_usd_per_mwh
        series = np.asarray(inst.price[rname], dtype=float) - adder
        where = f"regions.{rname}.electricity"
        peak = float(np.max(np.abs(series)))
        if peak > MAX_PRICE_USD_PER_MWH:
            t = int(np.argmax(np.abs(series)))
            out.append(
                f"{where}: {_g(float(series[t]))} USD/MWh at hour {t} is beyond "
                f"{_g(MAX_PRICE_USD_PER_MWH)} USD/MWh (wholesale caps are lower: ERCOT "
                "5,000); was the price given per GWh, or in cents?"
            )
        elif 0 < peak < MIN_PRICE_MAGNITUDE_USD_PER_MWH:
            out.append(
                f"{where}: every hour is below 1 USD/MWh (at most {_g(peak)}); this looks "
                "like USD/kWh: multiply by 1,000 (0.05 USD/kWh = 50 USD/MWh)"
            )
        if abs(adder) > MAX_PRICE_USD_PER_MWH:
            out.append(
                f"regions.{rname}.price_adder_usd_per_mwh: {_g(adder)} USD/MWh is beyond "
                f"{_g(MAX_PRICE_USD_PER_MWH)} USD/MWh; was it given per GWh, or in cents?"
            )
        ci = inst.carbon[rname]
        if ci is not None:
            top = float(np.max(np.abs(ci)))
            if 0 < top < MIN_CARBON_G_PER_KWH:
                out.append(
                    f"regions.{rname}.carbon_intensity: every hour is below 1 gCO2/kWh "
                    f"(at most {_g(top)}); this looks like kgCO2/kWh: multiply by 1,000"
                )
    return out


# ----------------------------------------------------------------------------- hardware


def _gpus(inst: Instance) -> list[str]:
    out: list[str] = []
    for gname, g in inst.spec.gpu_types.items():
        where = f"gpu_types.{gname}"
        if g.memory_gb > MAX_GPU_MEMORY_GB:
            out.append(
                f"{where}.memory_gb: {_g(g.memory_gb)} GB per GPU is beyond "
                f"{_g(MAX_GPU_MEMORY_GB)} GB (the largest GPUs have a few hundred); was it "
                "given in bytes or MB?"
            )
        for prec, v in g.peak_tflops.items():
            if v is not None and v > MAX_PEAK_TFLOPS:
                out.append(
                    f"{where}.peak_tflops.{prec}: {_g(v)} TFLOPS per GPU is beyond "
                    f"{_g(MAX_PEAK_TFLOPS)}; was it given in FLOP/s instead of TFLOPS?"
                )
        if g.board_power_w > MAX_BOARD_POWER_W:
            out.append(
                f"{where}.board_power_w: {_g(g.board_power_w)} W per GPU is beyond "
                f"{_g(MAX_BOARD_POWER_W)} W; was it given in mW, or per node?"
            )
        rate = inst.failures_per_gpu_hour[gname]
        if rate > MAX_FAILURES_PER_GPU_HOUR:
            if g.failures_per_gpu_hour is not None:
                field = f"{where}.failures_per_gpu_hour"
            elif g.failures_per_1000_node_days is not None:
                field = f"{where}.failures_per_1000_node_days"
            else:
                field = "failure.failures_per_gpu_hour"
            out.append(
                f"{field}: {_g(rate)} failures per GPU-hour (for {gname}) is beyond "
                f"{_g(MAX_FAILURES_PER_GPU_HOUR)}; Llama 3 saw 1.97e-5; was a count per "
                "1,000 GPU-hours or a percentage given?"
            )
    return out


def _offers_and_capacity(inst: Instance) -> list[str]:
    out: list[str] = []
    for rname, region in inst.spec.regions.items():
        for gname, offers in region.offers.items():
            for contract in ("on_demand", "spot", "reserved"):
                o = getattr(offers, contract)
                if o is None:
                    continue
                where = f"regions.{rname}.offers.{gname}.{contract}"
                price = float(np.max(inst.offer_price(rname, gname, contract)))
                if price > MAX_RENTAL_USD_PER_GPU_HOUR:
                    out.append(
                        f"{where}.usd_per_gpu_hour: {_g(price)} USD per "
                        f"GPU-hour is beyond {_g(MAX_RENTAL_USD_PER_GPU_HOUR)}; was it "
                        "given in cents, or per node or month?"
                    )
                rate = float(np.max(inst.preemptions(rname, gname)))
                if contract == "spot" and rate > MAX_PREEMPTIONS_PER_HOUR:
                    out.append(
                        f"{where}.preemptions_per_hour: {_g(rate)} per "
                        "hour is beyond 1; was a percentage given?"
                    )
        for gname in region.capacity:
            top = float(np.max(inst.capacity[(rname, gname)]))
            if top > MAX_CAPACITY_GPUS:
                out.append(
                    f"regions.{rname}.capacity.{gname}: {_g(float(top))} GPUs is beyond "
                    f"{_g(MAX_CAPACITY_GPUS)} in one region; a typo or a unit?"
                )
    return out


# ----------------------------------------------------------------------------- work


@dataclass(frozen=True)
class _Speed:
    flops_per_s: float
    label: str


def _work(inst: Instance) -> list[str]:
    """Duration bounds per active phase, from its FLOPs F and sustained throughputs
    S = GPUs x peak x MFU x recompute factor x scaling (planner.physics.compute):

    - lower bound on hours: F / S_max / 3600, with S_max over allowed GPU types and
      precisions at the most GPUs allowed (options and the largest capacity of an allowed
      region), no recomputation and perfect scaling (real layouts only lose throughput);
    - the slowest configuration: F / S_min / 3600, with S_min at the fewest GPUs (or the
      smallest slice), the slowest allowed precision and full recomputation when allowed.

    Warn when the lower bound exceeds MAX_HORIZON_MULTIPLE x horizon, or when the slowest
    configuration needs under MIN_WORK_HOURS. I/O time is left out (it only adds hours)."""
    out: list[str] = []
    for p in inst.active_phases:
        flops = work_flops(inst, p)
        if not (flops > 0 and math.isfinite(flops)):
            continue
        fast, slow = _speeds(inst, p)
        if fast is None or slow is None:
            continue
        where = f"{_phase_path(inst, p.name)}.work"
        lower_h = flops / fast.flops_per_s / 3600.0
        slow_h = flops / slow.flops_per_s / 3600.0
        if lower_h > MAX_HORIZON_MULTIPLE * inst.hours:
            out.append(
                f"{where}: {_g(flops)} FLOPs take at least {_g(lower_h)} h even on "
                f"{fast.label} with perfect scaling, over {MAX_HORIZON_MULTIPLE:g} times "
                f"the {inst.hours} h horizon; is the work in the right unit (tokens, "
                "FLOPs, GPU-hours)?"
            )
        elif slow_h < MIN_WORK_HOURS:
            out.append(
                f"{where}: {_g(flops)} FLOPs take {_g(slow_h * 3600.0)} s even on the "
                f"slowest configuration ({slow.label}); every configuration is billed "
                "one whole hour; is the work in the right unit (tokens in billions?)"
            )
    return out


def _speeds(inst: Instance, p: Phase) -> tuple[_Speed | None, _Speed | None]:
    """(fastest, slowest) sustained throughput of a phase, see :func:`_work`."""
    o = p.options
    gnames = p.gpu_types or tuple(inst.spec.gpu_types)
    rnames = p.regions or tuple(inst.spec.regions)
    rc_slow = (
        "full" if "full" in o.recompute else ("selective" if "selective" in o.recompute else "none")
    )
    fast: _Speed | None = None
    slow: _Speed | None = None
    for gname in gnames:
        g = inst.gpu(gname)
        caps = [
            float(np.max(inst.capacity[(r, gname)])) for r in rnames if (r, gname) in inst.capacity
        ]
        if not caps or max(caps) <= 0:
            continue
        if o.gpu_counts is not None:
            counts = [float(c) for c in o.gpu_counts]
        else:
            counts = [float(o.min_gpus), float(o.max_gpus)]
        counts += [float(f) for f in o.fractions]
        if not counts:
            continue
        most = min(max(counts), max(caps))
        fewest = min(counts)
        mfu = mfu_of(p, gname)
        for prec in o.precision:
            peak = peak_tflops(g, prec)
            if peak is None:
                continue
            s_fast = compute.effective_flops_per_s(most, peak, mfu, "none", 1.0)
            s_slow = compute.effective_flops_per_s(fewest, peak, mfu, rc_slow, 1.0)
            if fast is None or s_fast > fast.flops_per_s:
                fast = _Speed(s_fast, f"{most:g} {gname} at {prec}")
            if slow is None or s_slow < slow.flops_per_s:
                slow = _Speed(s_slow, f"{fewest:g} {gname} at {prec}")
    if fast is not None and not fast.flops_per_s > 0:
        fast = None
    if slow is not None and not slow.flops_per_s > 0:
        slow = None
    return fast, slow


# ----------------------------------------------------------------------------- scaling


def _cost_range(inst: Instance) -> list[str]:
    """The objective's hourly cost coefficients: for every configuration c of every phase and
    every hour t of its window, |cost_c(t)| (:func:`planner.model.costs.hourly_cost` with the full
    rental: rental, energy, storage, failure and carbon, objective weights applied). Warn when
    max / min over the nonzero ones exceeds MAX_COST_RANGE, naming the configurations at both
    ends. A cost that overflows to infinity or NaN is a finding of its own (the first one is
    named), and so is a configuration space that cannot be computed at all."""
    try:
        with np.errstate(all="ignore"):
            space = config_space(inst)
    except (ArithmeticError, ValueError) as e:
        return [
            f"objective: the configurations' costs cannot be computed ({type(e).__name__}: "
            f"{e}); look for numbers many orders of magnitude off"
        ]
    hi: tuple[float, Config] | None = None
    lo: tuple[float, Config] | None = None
    w = weights(inst)

    def what(c: Config) -> str:
        return f"{_phase_path(inst, c.phase)} on {c.gpus:g} {c.gpu} {c.contract} in {c.region}"

    for name, configs in space.by_phase.items():
        a, b = inst.release[name], inst.deadline[name]
        for c in configs:
            first, end = a, b
            window = term_hours(inst, c)  # a reserved term's hours: +inf outside by design
            if window is not None:
                first, end = max(a, window[0]), min(b, window[1])
            with np.errstate(all="ignore"):
                costs = np.abs(hourly_cost(inst, c, w, "all")[first:end])
            if not np.all(np.isfinite(costs)):
                return [
                    f"objective: the hourly cost of {what(c)} is not a finite number "
                    "(overflow); look for numbers many orders of magnitude off"
                ]
            nz = costs[costs > 0]
            if nz.size == 0:
                continue
            top, bottom = float(nz.max()), float(nz.min())
            if hi is None or top > hi[0]:
                hi = (top, c)
            if lo is None or bottom < lo[0]:
                lo = (bottom, c)
    if hi is None or lo is None:
        return []
    ratio = hi[0] / lo[0]
    if ratio > MAX_COST_RANGE:
        return [
            f"objective: hourly costs span {_g(ratio)}x, beyond {_g(MAX_COST_RANGE)}x: from "
            f"{_g(lo[0])} USD/h ({what(lo[1])}) to {_g(hi[0])} USD/h ({what(hi[1])}); the solver's "
            "tolerances cannot resolve the small ones; check the units of the prices that "
            "stand out"
        ]
    return []
