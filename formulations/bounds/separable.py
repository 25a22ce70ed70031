"""A cheap valid lower bound, and the configurations it proves useless.

Relaxation: drop capacity, precedence beyond the tightened time windows, transfers between
phases, porting, pause parking and resumes — all costs that are >= 0, but for a resume with
negative power prices, whose least total is kept (:func:`pause_floor`) — and replace a
reservation's commitment R x P by the reserved GPU-hours actually used x P / |U| (never more,
:mod:`formulations.bounds.commitment`: U the hours in which a plan can use the pool). What
remains separates
by phase: each phase independently picks the configuration and hours of least cost inside its
window, contiguous for a non-preemptible phase (a sliding-window minimum), the n cheapest
hours otherwise. The sum over phases is a lower bound on every plan.

Bound-based pruning: with an incumbent of cost U and bound L, a configuration c of phase p
whose own least cost exceeds the phase's best by more than U - L cannot appear in any plan
cheaper than U; the same holds for single hours of c (an hour whose use forces the cost over).

A phase in segments (``options.max_segments`` > 1) may mix configurations: its bound is the
Lagrangian segment-path bound of :mod:`formulations.bounds.segment_path`, which also bounds every
plan that runs a configuration in a given hour (configuration pruning and hour masks).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from formulations.bounds.commitment import bound_hourly, reserved_rates
from formulations.bounds.segment_path import SegmentBound, segment_bound
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import (
    Weights,
    end_usd,
    fixed_cost,
    least_block_rental,
    pause_usd_per_h,
    weights,
)
from planner.model.schedule import ReservedKey


def open_runs(ok: np.ndarray, n: int) -> np.ndarray:
    """For every start i = 0 .. len(ok) - n, whether the ``n`` entries from i are all true
    (a run of n hours fits there); empty when n > len(ok)."""
    if n > len(ok):
        return np.zeros(0, dtype=bool)
    closed = np.concatenate([[0], np.cumsum(~np.asarray(ok, dtype=bool))])
    return closed[n:] - closed[: len(closed) - n] == 0


def window_sums(h: np.ndarray, n: int) -> np.ndarray:
    """Sum of every run of ``n`` consecutive entries of ``h``; +inf for a run containing an
    infinite (blocked) entry. (A plain cumulative sum would turn every run after the first
    blocked hour into NaN.)"""
    finite = np.isfinite(h)
    cs = np.concatenate([[0.0], np.cumsum(np.where(finite, h, 0.0))])
    return np.where(open_runs(finite, n), cs[n:] - cs[:-n], np.inf)


def run_sums(inst: Instance, c: Config, h: np.ndarray, e: int, w: Weights) -> np.ndarray:
    """Per start tau = e .. e + len(h) - n of a contiguous run of c: the window sum of its
    hourly costs ``h`` (hours e ..) plus what its end costs (:func:`planner.model.costs.end_usd`:
    the archive after it and the value of the time until it), +inf through a closed hour."""
    sums = window_sums(h, c.hours)
    if not len(sums):
        return sums
    ends = e + np.arange(len(sums)) + c.hours
    return sums + np.asarray(end_usd(inst, c, ends, w)) - float(end_usd(inst, c, e + len(h), w))


def pause_floor(inst: Instance, c: Config, width: int) -> float:
    """The least that resumes and pause parking can add to a run of preemptible c in a window
    of ``width`` hours. Both are dropped from the bound when a resume costs >= 0; a resume can
    cost less than 0 (``resume_overhead_hours x (rho + kW x mean price / 1000)`` with negative
    power prices), and then every extra segment lowers the cost. k segments pay k - 1 resumes
    and park at least k - 1 paused hours, and the n hours fit at most
    ``k_max = min(n, width - n + 1)`` segments into the window, so the two together cost at
    least ``(k_max - 1) x min(0, w_f resume + w_s pause/h)`` (0 when a resume costs >= 0)."""
    w = weights(inst)
    if w.failure * c.resume_usd >= 0:
        return 0.0  # the common case: parking costs >= 0 too
    per_segment = w.failure * c.resume_usd + w.storage * pause_usd_per_h(inst, inst.phase(c.phase))
    if per_segment >= 0:
        return 0.0
    k_max = min(c.hours, width - c.hours + 1)
    return max(0, k_max - 1) * per_segment


@dataclass(frozen=True)
class PhaseBound:
    best: float
    per_config: dict[int, float]
    #: For a phase in segments: per configuration, the least cost of a plan that runs it in
    #: each hour of the window (inf where it cannot), for hour masks; and the bound of its
    #: plans in two or more segments.
    per_hour: dict[int, np.ndarray] = field(default_factory=dict)
    multi: float = np.inf
    #: what the bound charged a reserved GPU-hour, per pool (the same for every phase:
    #: :func:`formulations.bounds.commitment.reserved_rates`); hour masks charge the same
    rates: Mapping[ReservedKey, float] = field(default_factory=dict)


def phase_bounds(
    inst: Instance,
    space: ConfigSpace,
    windows_start: Mapping[str, int],
    windows_end: Mapping[str, int],
    deadline: float | None = None,
) -> dict[str, PhaseBound]:
    """Every phase's bound (the module docstring). ``deadline`` (a ``time.perf_counter()``
    value) is shared among the segment-path bounds of the phases in segments: each stops
    with the best bound found by its share (:func:`formulations.bounds.segment_path.segment_bound`);
    the rest takes time in proportion to the phases' configurations x hours, well under a
    second on the benchmarks."""
    w = weights(inst)
    rates = reserved_rates(inst, space, windows_start, windows_end)
    out: dict[str, PhaseBound] = {}
    segmented = [
        n
        for n, cs in space.by_phase.items()
        if inst.phase(n).options.max_segments > 1 and len(cs) > 1
    ]
    for name, configs in space.by_phase.items():
        e, l_ = windows_start[name], windows_end[name]
        pre = inst.phase(name).preemptible
        per: dict[int, float] = {}
        for c in configs:
            if l_ - e < c.hours:
                continue
            # hours whose capacity alone cannot host c are never used by any plan
            h = bound_hourly(inst, c, w, e, l_, rates)
            cap_ok = np.isfinite(h)
            if (pre and cap_ok.sum() < c.hours) or not cap_ok.any():
                continue
            # rental billed per block: at least ceil(n / g) blocks of g hours
            rent = least_block_rental(inst, c, w, e, l_)
            if pre:
                run = float(np.sort(h)[: c.hours].sum()) + pause_floor(inst, c, l_ - e)
                # the end's cost (archive after it, value of the time until it) is linear in
                # the end: its least over the ends [e + n, l_] is at one of the two
                at_end = float(end_usd(inst, c, l_, w))
                run += min(float(end_usd(inst, c, e + c.hours, w)), at_end) - at_end
            else:
                sums = run_sums(inst, c, h, e, w)
                sums = sums[np.isfinite(sums)]
                if not len(sums):
                    continue
                run = float(sums.min())
            # fixed_cost at l_ prices an end at l_; run_sums / the least end correct it
            per[c.index] = run + rent + fixed_cost(inst, c, l_, w)
        out[name] = PhaseBound(min(per.values()) if per else float("inf"), per, rates=rates)
        if name in segmented:
            share = None
            if deadline is not None:
                now = time.perf_counter()
                share = now + max(0.0, deadline - now) / (len(segmented) - segmented.index(name))
            sb = segment_bound(inst, configs, e, l_, share, guess=out[name].best, pool_rates=rates)
            out[name] = _with_segments(out[name], sb)
    return out


def _with_segments(one: PhaseBound, sb: SegmentBound) -> PhaseBound:
    """A phase that may run in segments: its plans on one configuration keep their exact bound
    (``one``); those in two or more segments are bounded by the segment-path bound."""
    per = {
        i: min(one.per_config.get(i, np.inf), float(np.min(lb))) for i, lb in sb.per_hour.items()
    }
    for i, v in one.per_config.items():
        per.setdefault(i, v)
    return PhaseBound(min(one.best, sb.multi), per, sb.per_hour, sb.multi, one.rates)


def single_segment(
    bounds: dict[str, PhaseBound], upper: float, gap: float
) -> tuple[set[str], float]:
    """Phases that may run in segments but need not within ``gap`` of an incumbent ``upper``:
    every plan in which phase p runs two or more segments costs at least
    ``L - best_p + multi_p``; when that is within the gap of ``upper``, p is modelled on one
    configuration. Returns those phases and the least cost of a plan left out (inf if none),
    which caps the bound the restricted model proves."""
    total = lower_bound(bounds)
    limit = upper - gap * abs(upper)
    out: set[str] = set()
    floor = np.inf
    for name, b in bounds.items():
        if not np.isfinite(b.multi) and not b.per_hour:
            continue
        left_out = total - b.best + b.multi
        if left_out >= limit - 1e-9:
            out.add(name)
            floor = min(floor, left_out)
    return out, float(floor)


def lower_bound(bounds: dict[str, PhaseBound]) -> float:
    """The separable lower bound: the sum of every phase's cheapest possible cost alone (its pools
    to itself); infinite when some phase cannot run at all."""
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
            if segmented:  # c may run in hour t of a segment only if the bound through it fits
                lb = b.per_hour.get(c.index)
                masks[(name, c.index)] = (
                    np.zeros(l_ - e, dtype=bool)
                    if lb is None
                    else np.asarray(lb - b.best <= slack + 1e-6)
                )
                continue
            base = b.per_config[c.index]
            h = bound_hourly(inst, c, w, e, l_, b.rates)
            cap_ok = np.isfinite(h)
            n = c.hours
            if pre:
                kth = float(np.sort(h)[n - 1])
                least = base + np.maximum(0.0, h - kth)
                masks[(name, c.index)] = cap_ok & (least - b.best <= slack + 1e-6)
            else:
                sums = run_sums(inst, c, h, e, w)
                good = (sums - float(np.min(sums)) + base - b.best) <= slack + 1e-6
                cg = np.concatenate([[0], np.cumsum(good)])
                t = np.arange(l_ - e)
                lo = np.maximum(0, t - n + 1)
                hi = np.minimum(len(good), t + 1)
                masks[(name, c.index)] = (cg[hi] - cg[lo]) > 0
    return masks
