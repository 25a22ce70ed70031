"""A lower bound for a phase that may run in segments (``options.max_segments`` N > 1), and the
configurations and hours it proves useless (formulations.bounds.separable calls it per such phase).

Relaxation: a plan of the phase is up to N segments in time order, each on one configuration,
consecutive ones different, joined by migrations at their exact cost
(:func:`planner.model.costs.migration_cost`), all in one block of consecutive hours when the phase
is non-preemptible. Each hour t run on c costs at least ``h_c(t)``
(:func:`formulations.bounds.commitment.bound_hourly`: a reserved GPU-hour at its pool's rate, plus
``rho_c`` per hour for block billing) and does ``r_c = 1 / W_c`` of the work; the first segment
pays its one-time costs but the successors' retrieval (and a re-planned phase's least entry), the
last its region's archive after the window and retrieval
(:func:`planner.model.costs.first_segment_usd`, :func:`planner.model.costs.last_segment_usd`).
Dropped (all >= 0 or a relaxation): capacity shared with other phases, precedence beyond the
window, minimum rentals, pauses, resumes, a segment's at least one and at most ``n_c`` hours. The
value of time counts from the earliest end any plan can reach (the window's start plus the fewest
hours a configuration needs for the whole work). The work constraint ``sum r >= 1`` is dualised:
for every ``mu >= 0`` a plan costs at least

    g(mu) = mu + min over segment paths of  sum_t (h_c(t) - mu r_c) + migrations + start + end

(an hour a preemptible phase does not run costs 0), a shortest path over states (hour,
segment, configuration) solved by dynamic programming. g is concave (a minimum of functions
affine in mu); its maximum (golden-section search) is the bound. A forward and a backward
pass give, for every (configuration, hour), the least cost of a path that runs c in t: the
bound of any plan doing so (hour masks) or using c at all (configuration pruning).

Each pass is vectorised over the hours: within a segment, ``F[t] = own[t] + min(entry[t],
F[t-1])`` is ``S[t] + min over s <= t of (entry[s] - S[s-1])`` with S the running sum of the
hours' own costs, a running minimum that restarts after an hour the configuration cannot run
(capacity, a reserved term's end) when the phase may not pause. A migration's cost is
``leave(a) + move(region of a -> b) + enter(b)`` (:func:`planner.model.costs.migration_cost`), so
the least migration into b is taken over source regions, not over every pair: hours x
regions x configurations instead of hours x configurations^2 (one phase of 714
configurations took 20-39 s before, whatever the time limit). Any ``mu`` gives a valid bound:
with a ``deadline`` the search stops with the best one found, and the per-hour bounds fall
back to the phase's bound itself (valid for every hour, pruning nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formulations.bounds.commitment import bound_hourly
from planner.instance.model import Instance
from planner.model.configs import Config
from planner.model.costs import (
    block_prices,
    enter_cost,
    first_segment_usd,
    last_segment_usd,
    leave_cost,
    move_cost,
    time_usd,
    weights,
)
from planner.model.schedule import ReservedKey

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
    leave: np.ndarray  # (C,) weighted cost of leaving c
    enter: np.ndarray  # (C,) weighted cost of entering c
    move: np.ndarray  # (R, C) weighted move from region r into c (0 from c's own region)
    region: np.ndarray  # (C,) region index of c
    start: np.ndarray  # (C,)
    end: np.ndarray  # (C,)
    segments: int
    preemptible: bool
    runs: _Runs  # (H, C), hours in order
    back: _Runs  # the same, hours reversed


def segment_bound(
    inst: Instance,
    configs: Sequence[Config],
    e: int,
    l_: int,
    deadline: float | None = None,
    guess: float | None = None,
    pool_rates: Mapping[ReservedKey, float] | None = None,
) -> SegmentBound:
    """The Lagrangian segment-path bound of the module docstring; ``deadline`` (a
    ``time.perf_counter()`` value) stops the search over mu with the best bound found.
    ``guess``: a mu to try first (the price of the whole work: the phase's least cost on one
    configuration is close to it), so that a search cut short still has a good bound.
    ``pool_rates``: what a reserved GPU-hour is charged, per pool
    (:func:`formulations.bounds.commitment.reserved_rates`; None: its price per GPU-hour)."""
    w = weights(inst)
    H = l_ - e
    rows, rates, starts, ends, keep = [], [], [], [], []
    # the value of time: the phase ends no earlier than e + the fewest hours any configuration
    # needs for the whole work (a mix of segments needs at least as many)
    fewest = min((c.work_hours for c in configs), default=0.0)
    earliest_end = e + max(1, int(np.ceil(fewest - 1e-9)))
    early = time_usd(inst, configs[0].phase, earliest_end) if configs else 0.0
    for c in configs:
        if H < 1:
            break
        h = bound_hourly(inst, c, w, e, l_, pool_rates)
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
        starts.append(first_segment_usd(inst, c, w))
        ends.append(last_segment_usd(inst, c, l_, w) + early)
        keep.append(c)
    if not keep:
        return SegmentBound(np.inf, {})
    regions = sorted({c.region for c in keep})
    region = np.array([regions.index(c.region) for c in keep])
    # a migration a -> b costs leave(a) + move(r_a -> b) + enter(b) (planner.model.costs)
    move = np.array(
        [
            [move_cost(inst, r, b).weighted(w) if r != b.region else 0.0 for b in keep]
            for r in regions
        ]
    )
    p = inst.phase(keep[0].phase)
    red0 = np.vstack(rows)
    # a phase that may pause is idle (cost 0) where it cannot run; one that may not pause
    # cannot pass such an hour
    blocked = ~np.isfinite(red0.T) if not p.preemptible else np.zeros((H, len(keep)), bool)
    d = _Data(
        red0,
        np.asarray(rates),
        np.array([leave_cost(inst, c).weighted(w) for c in keep]),
        np.array([enter_cost(inst, c).weighted(w) for c in keep]),
        move,
        region,
        np.asarray(starts),
        np.asarray(ends),
        p.options.max_segments,
        p.preemptible,
        _Runs.of(blocked),
        _Runs.of(blocked[::-1]),
    )
    finite = np.isfinite(d.red0)
    top = float(np.max(np.abs(np.where(finite, d.red0, 0.0)) / d.rate[:, None])) * 2.0 + 1.0
    top += float(np.max(d.leave) + np.max(move) + np.max(d.enter)) + float(np.max(d.start + d.end))

    def dual(mu: float, first: int = 0) -> float:
        """g(mu) over the paths that end in segment ``first`` or later."""
        fwd = _forward(d, mu)[:, first:, :]
        return mu + float(np.min(fwd + d.end[None, None, :]))

    # the phase's bound is min(its exact bound on one configuration, the bound of its plans
    # in two or more segments) (formulations.bounds.separable): the search is for the latter's mu;
    # the bound of every plan (``best``) and the per-hour bounds are taken at that mu, valid at
    # any (the whole search only when no plan can run in two segments)
    first = None if guess is None or not np.isfinite(guess) else min(max(guess, 0.0), top)
    mu, multi = _maximise(lambda m: dual(m, 1), top, deadline, first)
    if np.isfinite(multi):
        val = dual(mu)
    else:
        mu, val = _maximise(dual, top, deadline, first)
    if not np.isfinite(val):
        return SegmentBound(np.inf, {})
    if deadline is not None and time.perf_counter() >= deadline:
        # every plan through any (configuration, hour) costs at least the bound itself
        return SegmentBound(val, {c.index: np.full(H, val) for c in keep}, multi)
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


def _maximise(
    f: Callable[[float], float],
    top: float,
    deadline: float | None = None,
    first: float | None = None,
) -> tuple[float, float]:
    """(argmax, max) of a concave function on [0, top] by golden-section search: the best
    point evaluated, ``first`` (when given) before the search, f(0) after it; stopping at
    ``deadline`` with the best so far."""
    seen: list[tuple[float, float]] = []

    def value(x: float) -> float:
        seen.append((x, f(x)))
        return seen[-1][1]

    def out_of_time() -> bool:
        return deadline is not None and time.perf_counter() >= deadline

    if first is not None:
        value(first)
    lo, hi = 0.0, top
    phi = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    if not out_of_time():
        fa = value(a)
        fb = value(b) if not out_of_time() else -np.inf
        for _ in range(ITERATIONS):
            if out_of_time():
                break
            if fa < fb:
                lo, a, fa = a, b, fb
                b = lo + phi * (hi - lo)
                fb = value(b)
            else:
                hi, b, fb = b, a, fa
                a = hi - phi * (hi - lo)
                fa = value(a)
        else:
            value(0.0)
    if not seen:
        value(top / 2)
    return max(seen, key=lambda x: x[1])


@dataclass(frozen=True)
class _Runs:
    """Where each configuration cannot run (an infinite own cost) and, for the columns that
    have such hours, how many hours each hour lies after the start of its run of open hours:
    what :func:`_scan` needs, the same for every mu."""

    blocked: np.ndarray  # (H, C) bool
    cols: np.ndarray  # columns with a blocked hour
    since: np.ndarray  # (H, len(cols)) hours since the run began
    longest: int

    @staticmethod
    def of(blocked: np.ndarray) -> _Runs:
        H = blocked.shape[0]
        cols = np.flatnonzero(blocked.any(axis=0))
        b = blocked[:, cols]
        hours = np.arange(H)[:, None]
        starts = np.vstack([np.ones((1, len(cols)), dtype=bool), b[:-1]])
        head = np.maximum.accumulate(np.where(starts, hours, 0), axis=0)
        since = hours - head
        return _Runs(blocked, cols, since, int(since.max()) + 1 if len(cols) else 0)


def _scan(entry: np.ndarray, own: np.ndarray, runs: _Runs) -> np.ndarray:
    """``F[t] = own[t] + min(entry[t], F[t-1])`` (F[-1] = inf) for every column at once:
    ``S[t] + min over s <= t of (entry[s] - S[s-1])`` with S the running sum of ``own``; the
    running minimum restarts after an hour whose own cost is infinite (``runs.blocked``: the
    configuration cannot run there), where F is infinite. (H, C) arrays, hours along axis 0.
    """
    blocked = runs.blocked
    o = np.where(blocked, 0.0, own)
    S = np.cumsum(o, axis=0)
    G = entry.copy()
    G[1:] -= S[:-1]  # entry[s] - S[s-1] (inf stays inf)
    P = np.minimum.accumulate(G, axis=0)
    if len(runs.cols):
        # the blocked columns: a Hillis-Steele scan whose steps double up to the longest run
        # of open hours, each taking the value ``step`` hours back when in the same run
        V = np.where(blocked[:, runs.cols], np.inf, G[:, runs.cols])
        since = runs.since
        step = 1
        while step < runs.longest:
            V[step:] = np.where(since[step:] >= step, np.minimum(V[step:], V[:-step]), V[step:])
            step *= 2
        P[:, runs.cols] = V
    F = S + P
    F[blocked] = np.inf
    return F


def _into(d: _Data, F: np.ndarray) -> np.ndarray:
    """``M[t, b]``: the least cost of ending a segment on some a != b at hour t (``F[t, a]``)
    and migrating into b: ``enter(b) + min over a != b of (F[t, a] + leave(a) + move(r_a ->
    b))``, region by region: b's own region (no move) without b itself, then the others."""
    H, C = F.shape
    vals = F + d.leave[None, :]
    out = np.full((H, C), np.inf)
    rows = np.arange(H)
    for r in range(d.move.shape[0]):
        mine = d.region == r
        cols = np.flatnonzero(mine)
        sub = vals[:, cols]
        k = np.argmin(sub, axis=1)
        best = sub[rows, k]
        # into the other regions' configurations: the region's least, moved
        np.minimum(out, best[:, None] + np.where(mine, np.inf, d.move[r])[None, :], out=out)
        # into its own: the least over every other configuration of the region
        if len(cols) > 1:
            rest = sub.copy()
            rest[rows, k] = np.inf
            second = rest.min(axis=1)
            own = np.where(cols[None, :] == cols[k][:, None], second[:, None], best[:, None])
            out[:, cols] = np.minimum(out[:, cols], own)
    return d.enter[None, :] + out


def _out_of(d: _Data, B: np.ndarray) -> np.ndarray:
    """``N[t, a]``: the least cost of leaving a and going on in the next segment on some
    b != a from hour t (``B[t, b]``): ``leave(a) + min over b != a of (move(r_a -> b) +
    enter(b) + B[t, b])``, source region by source region."""
    H, C = B.shape
    vals = B + d.enter[None, :]
    out = np.full((H, C), np.inf)
    rows = np.arange(H)
    for r in range(d.move.shape[0]):
        cols = np.flatnonzero(d.region == r)
        Z = vals + d.move[r][None, :]  # from region r into every b
        k = np.argmin(Z, axis=1)
        best = Z[rows, k]
        Z[rows, k] = np.inf
        second = Z.min(axis=1)
        out[:, cols] = np.where(cols[None, :] == k[:, None], second[:, None], best[:, None])
    return d.leave[None, :] + out


def _forward(d: _Data, mu: float) -> np.ndarray:
    """F[t, k, c]: the least cost of a path to hour t that is in segment k on c at t
    (running there, or for a preemptible phase possibly idle), its start cost included."""
    red = (d.red0 - mu * d.rate[:, None]).T  # (H, C)
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    F = np.full((H, K, C), np.inf)
    entry = np.broadcast_to(d.start, (H, C)).copy()  # begin here (not started before)
    for k in range(K):
        F[:, k] = _scan(entry, own, d.runs)
        if k + 1 < K:
            # the previous hour was the last of segment k on another configuration
            entry = np.vstack([np.full((1, C), np.inf), _into(d, F[:-1, k])])
    return F


def _backward(d: _Data, mu: float) -> np.ndarray:
    """B[t, k, c]: the least cost from hour t on for a path in segment k on c at t (the
    hour's own cost and the end cost included)."""
    red = (d.red0 - mu * d.rate[:, None]).T
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    B = np.full((H, K, C), np.inf)
    for k in range(K - 1, -1, -1):
        leave_at = np.broadcast_to(d.end, (H, C)).copy()  # end after this hour
        if k + 1 < K:  # or go on in segment k + 1 from the next hour
            leave_at[:-1] = np.minimum(leave_at[:-1], _out_of(d, B[1:, k + 1]))
        B[:, k] = _scan(np.ascontiguousarray(leave_at[::-1]), own[::-1], d.back)[::-1]
    return B
