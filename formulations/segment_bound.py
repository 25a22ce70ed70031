"""A lower bound for a phase that may run in segments (``options.max_segments`` N > 1), and the
configurations and hours it proves useless (formulations.bounds calls it per such phase).

Relaxation: a plan of the phase is up to N segments in time order, each on one configuration,
consecutive ones different, joined by migrations at their exact cost
(:func:`planner.costs.migration_cost`), all in one block of consecutive hours when the phase
is non-preemptible. Each hour t run on c costs at least ``h_c(t)``
(:func:`planner.costs.hourly_cost` in ``as_used`` mode, plus ``rho_c`` per hour for block
billing) and does ``r_c = 1 / W_c`` of the work; the first segment pays its one-time costs
but the successors' retrieval (and a re-planned phase's least entry), the last its region's
archive after the window and retrieval. Dropped (all >= 0 or a relaxation): capacity shared
with other phases, precedence beyond the window, minimum rentals, pauses, resumes, a
segment's at least one and at most ``n_c`` hours. The work constraint ``sum r >= 1`` is
dualised: for every ``mu >= 0`` a plan costs at least

    g(mu) = mu + min over segment paths of  sum_t (h_c(t) - mu r_c) + migrations + start + end

(an hour a preemptible phase does not run costs 0), a shortest path over states (hour,
segment, configuration) solved by dynamic programming. g is concave (a minimum of functions
affine in mu); its maximum (golden-section search) is the bound. A forward and a backward
pass give, for every (configuration, hour), the least cost of a path that runs c in t: the
bound of any plan doing so (hour masks) or using c at all (configuration pruning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.configs import Config
from planner.costs import (
    block_prices,
    entry_usd,
    handoff_usd,
    hourly_cost,
    migration_cost,
    weights,
)
from planner.instance.model import Instance

#: Golden-section iterations over mu (precision 0.618^k of the range).
ITERATIONS = 48


@dataclass(frozen=True)
class SegmentBound:
    """The phase's bound, the bound of its plans in two or more segments (``multi``), and per
    configuration index the least cost of a plan that runs it in each hour of the window (inf
    where none can)."""

    best: float
    per_hour: dict[int, np.ndarray]
    multi: float = np.inf


@dataclass(frozen=True)
class _Data:
    red0: np.ndarray  # (C, H) hour costs h_c(t)
    rate: np.ndarray  # (C,) r_c
    mig: np.ndarray  # (C, C) weighted migration a -> b (inf on the diagonal)
    start: np.ndarray  # (C,)
    end: np.ndarray  # (C,)
    segments: int
    preemptible: bool


def segment_bound(inst: Instance, configs: Sequence[Config], e: int, l_: int) -> SegmentBound:
    """The Lagrangian segment-path bound of the module docstring."""
    w = weights(inst)
    T = inst.hours
    H = l_ - e
    rows, rates, starts, ends, keep = [], [], [], [], []
    for c in configs:
        if H < 1:
            break
        cap_ok = inst.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9
        h = np.where(cap_ok, hourly_cost(inst, c, w, "as_used")[e:l_], np.inf)
        if c.contract != "reserved" and c.billing_hours > 1:
            g = c.billing_hours
            prices = block_prices(inst, c)
            rent = (
                np.full(H, c.rental_per_h) if prices is None else prices[np.arange(e, l_) // g] / g
            )
            h = h + w.rental * rent
        if not np.isfinite(h).any():
            continue
        rows.append(h)
        rates.append(1.0 / c.work_hours)
        entry = entry_usd(inst, c, w) if c.entry is not None else 0.0
        starts.append(w.transfer * (c.one_time_usd - handoff_usd(inst, c)) + entry)
        ends.append(w.storage * (T - l_) * c.archive_per_h + w.transfer * handoff_usd(inst, c))
        keep.append(c)
    if not keep:
        return SegmentBound(np.inf, {})
    n = len(keep)
    mig = np.full((n, n), np.inf)
    for i, a in enumerate(keep):
        for j, b in enumerate(keep):
            if i != j:
                mig[i, j] = migration_cost(inst, a, b).weighted(w)
    p = inst.phase(keep[0].phase)
    d = _Data(
        np.vstack(rows),
        np.asarray(rates),
        mig,
        np.asarray(starts),
        np.asarray(ends),
        p.options.max_segments,
        p.preemptible,
    )
    finite = np.isfinite(d.red0)
    top = float(np.max(np.abs(np.where(finite, d.red0, 0.0)) / d.rate[:, None])) * 2.0 + 1.0
    top += float(np.max(np.where(np.isfinite(mig), mig, 0.0))) + float(np.max(d.start + d.end))

    def dual(mu: float, first: int = 0) -> float:
        """g(mu) over the paths that end in segment ``first`` or later."""
        fwd = _forward(d, mu)[:, first:, :]
        return mu + float(np.min(fwd + d.end[None, None, :]))

    mu, val = _maximise(dual, top)
    if not np.isfinite(val):
        return SegmentBound(np.inf, {})
    multi = _maximise(lambda m: dual(m, 1), top)[1] if d.segments > 1 else np.inf
    fwd, bwd = _forward(d, mu), _backward(d, mu)
    red = d.red0 - mu * d.rate[:, None]  # (C, H)
    own = np.minimum(red, 0.0) if d.preemptible else red
    # a path through state (hour, segment, c) counts the hour's own cost in both passes
    with np.errstate(invalid="ignore"):  # inf - inf where no path runs c at t
        through = np.nan_to_num((fwd + bwd - own.T[:, None, :]).min(axis=1), nan=np.inf)
    if d.preemptible:  # forced to run: the hour costs red, not min(red, 0)
        through = through - own.T + red.T
    per_hour = {
        c.index: np.where(np.isfinite(red[i]), mu + through[:, i], np.inf)
        for i, c in enumerate(keep)
    }
    return SegmentBound(val, per_hour, multi)


def _maximise(f: Callable[[float], float], top: float) -> tuple[float, float]:
    """(argmax, max) of a concave function on [0, top] by golden-section search."""
    lo, hi = 0.0, top
    phi = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(ITERATIONS):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = f(b)
        else:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = f(a)
    return max(((0.0, f(0.0)), (a, fa), (b, fb)), key=lambda x: x[1])


def _forward(d: _Data, mu: float) -> np.ndarray:
    """F[t, k, c]: the least cost of a path to hour t that is in segment k on c at t
    (running there, or for a preemptible phase possibly idle), its start cost included."""
    red = (d.red0 - mu * d.rate[:, None]).T  # (H, C)
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    F = np.full((H, K, C), np.inf)
    for t in range(H):
        for k in range(K):
            best = np.full(C, np.inf)
            if k == 0:
                best = d.start.copy()  # begin here (not started before)
            if t > 0:
                best = np.minimum(best, F[t - 1, k])  # go on in the same segment
                if k > 0:  # the previous hour was the last of segment k-1 on another c
                    best = np.minimum(best, (F[t - 1, k - 1][:, None] + d.mig).min(axis=0))
            F[t, k] = best + own[t]
    return F


def _backward(d: _Data, mu: float) -> np.ndarray:
    """B[t, k, c]: the least cost from hour t on for a path in segment k on c at t (the
    hour's own cost and the end cost included)."""
    red = (d.red0 - mu * d.rate[:, None]).T
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    B = np.full((H, K, C), np.inf)
    for t in range(H - 1, -1, -1):
        for k in range(K - 1, -1, -1):
            best = d.end.copy()  # end after this hour
            if t + 1 < H:
                best = np.minimum(best, B[t + 1, k])
                if k + 1 < K:
                    best = np.minimum(best, (d.mig + B[t + 1, k + 1][None, :]).min(axis=1))
            B[t, k] = best + own[t]
    return B
