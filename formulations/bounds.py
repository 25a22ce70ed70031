"""A cheap valid lower bound, and the configurations it proves useless.

Relaxation: drop capacity, precedence beyond the tightened time windows, transfers between
phases, porting, pause parking and resumes — all costs that are >= 0 — and replace a
reservation's commitment R x price x T by the reserved GPU-hours actually used x price (never
more). What remains separates
by phase: each phase independently picks the configuration and hours of least cost inside its
window, contiguous for a non-preemptible phase (a sliding-window minimum), the n cheapest
hours otherwise. The sum over phases is a lower bound on every plan.

Bound-based pruning: with an incumbent of cost U and bound L, a configuration c of phase p
whose own least cost exceeds the phase's best by more than U - L cannot appear in any plan
cheaper than U; the same holds for single hours of c (an hour whose use forces the cost over).

A phase in segments (``options.max_segments`` > 1) may mix configurations: its bound is a
fractional knapsack over (configuration, hour) pairs (:func:`segment_bound`), and a
configuration's own bound forces one hour of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.configs import Config, ConfigSpace
from planner.costs import (
    NO_ENTRY,
    block_prices,
    entry_usd,
    fixed_cost,
    handoff_usd,
    hourly_cost,
    least_block_rental,
    weights,
)
from planner.instance.model import Instance


def window_sums(h: np.ndarray, n: int) -> np.ndarray:
    """Sum of every run of ``n`` consecutive entries of ``h``; +inf for a run containing an
    infinite (blocked) entry. (A plain cumulative sum would turn every run after the first
    blocked hour into NaN.)"""
    blocked = ~np.isfinite(h)
    cs = np.concatenate([[0.0], np.cumsum(np.where(blocked, 0.0, h))])
    cb = np.concatenate([[0], np.cumsum(blocked)])
    sums = cs[n:] - cs[:-n]
    return np.where(cb[n:] - cb[:-n] > 0, np.inf, sums)


@dataclass(frozen=True)
class PhaseBound:
    best: float
    per_config: dict[int, float]


def phase_bounds(
    inst: Instance,
    space: ConfigSpace,
    windows_start: Mapping[str, int],
    windows_end: Mapping[str, int],
) -> dict[str, PhaseBound]:
    w = weights(inst)
    out: dict[str, PhaseBound] = {}
    for name, configs in space.by_phase.items():
        e, l_ = windows_start[name], windows_end[name]
        if inst.phase(name).options.max_segments > 1 and len(configs) > 1:
            out[name] = segment_bound(inst, configs, e, l_)
            continue
        pre = inst.phase(name).preemptible
        per: dict[int, float] = {}
        for c in configs:
            if l_ - e < c.hours:
                continue
            # hours whose capacity alone cannot host c are never used by any plan
            cap_ok = inst.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9
            h = np.where(cap_ok, hourly_cost(inst, c, w, "as_used")[e:l_], np.inf)
            if (pre and cap_ok.sum() < c.hours) or not cap_ok.any():
                continue
            # rental billed per block: at least ceil(n / g) blocks of g hours
            rent = least_block_rental(inst, c, w, e, l_)
            if pre:
                run = float(np.sort(h)[: c.hours].sum())
            else:
                sums = window_sums(h, c.hours)
                sums = sums[np.isfinite(sums)]
                if not len(sums):
                    continue
                run = float(sums.min())
            # archive: a run ending before l_ pays archive until l_ too; least when ending at l_
            per[c.index] = run + rent + fixed_cost(inst, c, l_, w)
        out[name] = PhaseBound(min(per.values()) if per else float("inf"), per)
    return out


def segment_bound(inst: Instance, configs: tuple[Config, ...], e: int, l_: int) -> PhaseBound:
    """The bound of a phase that may run in segments. Every segment's hour t on c costs at
    least ``h_c(t)`` (:func:`planner.costs.hourly_cost`, ``as_used``, plus ``rho_c`` per hour
    for block billing) and does ``r_c = 1 / W_c`` of the work; migrations, minimum rentals,
    pauses and resumes cost >= 0 and are dropped, and so is the rule of one configuration per
    hour. What remains is the fractional knapsack

        K(q) = min sum h_c(t) y_ct  s.t.  sum r_c y_ct >= q,  0 <= y <= 1,

    (every pair of negative cost, then the others by cost per unit of work), plus the least
    first-segment one-time cost (transfers but the successors' retrieval, and a re-planned
    phase's least entry) and the least last-region cost (archive after the window and
    retrieval). Phase bound: K(1) + those; configuration c: its cheapest hour + K(1 - r_c) +
    those (a plan using c runs c at least one hour)."""
    w = weights(inst)
    T = inst.hours
    costs: list[np.ndarray] = []
    rates: list[np.ndarray] = []
    cheapest: dict[int, float] = {}
    first = last = np.inf
    for c in configs:
        if l_ - e < 1:
            continue
        cap_ok = inst.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9
        h = np.where(cap_ok, hourly_cost(inst, c, w, "as_used")[e:l_], np.inf)
        prices = block_prices(inst, c) if c.contract != "reserved" else None
        if c.contract != "reserved" and c.billing_hours > 1:
            g = c.billing_hours
            per_hour = (
                np.full(l_ - e, c.rental_per_h)
                if prices is None
                else prices[np.arange(e, l_) // g] / g
            )
            h = h + w.rental * per_hour
        ok = np.isfinite(h)
        if not ok.any():
            continue
        costs.append(h[ok])
        rates.append(np.full(int(ok.sum()), 1.0 / c.work_hours))
        cheapest[c.index] = float(np.min(h[ok]))
        entry = entry_usd(inst, c, w) if c.entry != NO_ENTRY else 0.0
        first = min(first, w.transfer * (c.one_time_usd - handoff_usd(inst, c)) + entry)
        last = min(last, w.storage * (T - l_) * c.archive_per_h + w.transfer * handoff_usd(inst, c))
    if not costs:
        return PhaseBound(np.inf, {})
    h_all, r_all = np.concatenate(costs), np.concatenate(rates)
    neg = h_all < 0
    base, base_work = float(h_all[neg].sum()), float(r_all[neg].sum())
    pos_h, pos_r = h_all[~neg], r_all[~neg]
    order = np.argsort(pos_h / pos_r, kind="stable")
    cum_r = np.concatenate([[0.0], np.cumsum(pos_r[order])])
    cum_h = np.concatenate([[0.0], np.cumsum(pos_h[order])])

    def knapsack(q: float) -> float:
        need = q - base_work
        if need <= 0:
            return base
        if need > cum_r[-1] + 1e-12:
            return np.inf
        k = int(np.searchsorted(cum_r, need, side="left"))
        k = max(1, min(k, len(cum_r) - 1))
        part = (need - cum_r[k - 1]) / (cum_r[k] - cum_r[k - 1])
        return base + float(cum_h[k - 1] + part * (cum_h[k] - cum_h[k - 1]))

    fixed = first + last
    per = {
        c.index: cheapest[c.index] + knapsack(1.0 - 1.0 / c.work_hours) + fixed
        for c in configs
        if c.index in cheapest
    }
    best = knapsack(1.0) + fixed
    return PhaseBound(min(best, min(per.values(), default=np.inf)), per)


def lower_bound(bounds: dict[str, PhaseBound]) -> float:
    return float(sum(b.best for b in bounds.values()))


def prune_by_bound(space: ConfigSpace, bounds: dict[str, PhaseBound], upper: float) -> ConfigSpace:
    """Drop configurations that cannot be part of a plan cheaper than ``upper``."""
    slack = upper - lower_bound(bounds)
    by_phase: dict[str, tuple[Config, ...]] = {}
    for name, configs in space.by_phase.items():
        b = bounds[name]
        kept = tuple(
            c
            for c in configs
            if c.index in b.per_config and b.per_config[c.index] - b.best <= slack + 1e-6
        )
        by_phase[name] = kept
    return space.restricted(by_phase)


def hour_masks(
    inst: Instance,
    space: ConfigSpace,
    bounds: dict[str, PhaseBound],
    windows_start: Mapping[str, int],
    windows_end: Mapping[str, int],
    upper: float,
) -> dict[tuple[str, int], np.ndarray]:
    """Per configuration, the hours of its window it may still use in a plan cheaper than
    ``upper``: using hour t must not push the phase's own least cost above best + slack.

    Preemptible: the least cost with t is base - (n-th cheapest hour) + cost_t when t is not
    among the n cheapest. Non-preemptible: t must lie in some contiguous run whose cost is
    within the slack."""
    w = weights(inst)
    slack = upper - lower_bound(bounds)
    masks: dict[tuple[str, int], np.ndarray] = {}
    for name, configs in space.by_phase.items():
        e, l_ = windows_start[name], windows_end[name]
        b = bounds[name]
        pre = inst.phase(name).preemptible
        segmented = inst.phase(name).options.max_segments > 1 and len(configs) > 1
        for c in configs:
            if c.index not in b.per_config:
                masks[(name, c.index)] = np.zeros(l_ - e, dtype=bool)
                continue
            if segmented:  # any hour may hold a segment; only capacity rules one out
                cap = inst.capacity[(c.region, c.gpu)][e:l_]
                masks[(name, c.index)] = cap >= c.total_gpus - 1e-9
                continue
            base = b.per_config[c.index]
            cap_ok = inst.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9
            h = np.where(cap_ok, hourly_cost(inst, c, w, "as_used")[e:l_], np.inf)
            n = c.hours
            if pre:
                kth = float(np.sort(h)[n - 1])
                least = base + np.maximum(0.0, h - kth)
                masks[(name, c.index)] = cap_ok & (least - b.best <= slack + 1e-6)
            else:
                sums = window_sums(h, n)
                good = (sums - float(np.min(sums)) + base - b.best) <= slack + 1e-6
                cg = np.concatenate([[0], np.cumsum(good)])
                t = np.arange(l_ - e)
                lo = np.maximum(0, t - n + 1)
                hi = np.minimum(len(good), t + 1)
                masks[(name, c.index)] = (cg[hi] - cg[lo]) > 0
    return masks
