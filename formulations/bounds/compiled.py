"""The preemptive DP of :mod:`formulations.bounds.lagrange` compiled with numba: the same
recursion, the same floating-point operations in the same order, so the same values to the
bit as the numpy kernels (``tests/solvers/test_lagrange.py`` compares them), computed cell by
cell instead of one numpy call per hour over every state.

Why: on the lab's quarter the numpy kernel spends its 1.4-1.8 s per evaluation on 57,538
hours' worth of small calls (389M states, 40 configurations a phase), and the ascent that
proves the quarter's bound is a few hundred evaluations. Compiled, each configuration runs
only the band of states a start can reach and that can still finish: at window position j,
``max(1, n - j) <= m <= min(n, W - j)`` (a start at tau <= j has run at most j - tau hours;
more than W - j hours left cannot run), 160M states on the quarter. States past the upper
edge are inf in the full recursion; those below the lower edge are never read by a start's
value. One pass over the states, updated in place from the longest run length down (each
state reads its own row and the one below it from the hour after).

numba is imported on first use only (:func:`available`), so the commands that never
evaluate a large relaxation do not pay its import (about 0.4 s) or its compilation (cached
beside this module after the first run). Without numba the numpy kernels run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class _Phase(Protocol):
    """What the kernels read of a phase (:class:`formulations.bounds.lagrange._Phase`):
    its window's first hour, per configuration the run length, the archive per hour after
    the end and the resume cost, and the parking per paused hour."""

    e: int
    n: np.ndarray
    archive: np.ndarray
    resume: np.ndarray
    parking: float


#: From this many DP cells of one evaluation on (``Relaxation.cells``), a relaxation with
#: preemptible phases runs their DP compiled; below it an evaluation takes a few hundredths
#: of a second and numba's import (about 0.4 s) would cost more than it saves.
COMPILED_CELLS = 20_000_000


@functools.cache
def _kernels() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The compiled (values, trace) kernels, or None without numba."""
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install falls back
        return None
    try:
        return _compile(numba.njit(cache=True, nogil=True))
    except RuntimeError:  # pragma: no cover - no folder to cache in (a read-only install)
        return _compile(numba.njit(cache=False, nogil=True))


def _compile(jit: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The (values, trace) kernels compiled by ``jit`` (numba's ``njit`` with its options)."""
    walk = jit(follow)

    @jit
    def values(
        h: np.ndarray,
        n: np.ndarray,
        archive: np.ndarray,
        resume: np.ndarray,
        parking: float,
        S: np.ndarray,
        e: int,
        T: int,
        start: np.ndarray,
    ) -> None:  # pragma: no cover - compiled; exercised through the numpy comparison
        C, W = h.shape
        inf = math.inf
        for k in range(C):
            nk = n[k]
            if nk > W:
                continue
            run = np.full(nk + 1, inf)
            pause = np.full(nk + 1, inf)
            a = archive[k]
            r = resume[k]
            for j in range(W - 1, -1, -1):
                lo = max(1, nk - j)
                hi = min(nk, W - j)
                hj = h[k, j]
                for m in range(hi, lo - 1, -1):
                    if m == 1:
                        nr = hj + (a * (T - (e + j) - 1) + S[j + 1])
                    else:
                        nr = hj + min(run[m - 1], pause[m - 1])
                    pause[m] = parking + min(pause[m], run[m] + r)
                    run[m] = nr
                if hi == nk:
                    start[k, j] = run[nk]

    @jit
    def trace(
        h: np.ndarray,
        n: int,
        a: float,
        r: float,
        parking: float,
        S: np.ndarray,
        e: int,
        T: int,
        pos: int,
        hours: np.ndarray,
    ) -> int:  # pragma: no cover - compiled; exercised through the numpy comparison
        W = len(h)
        inf = math.inf
        run = np.full((W + 1, n + 1), inf)
        pause = np.full((W + 1, n + 1), inf)
        for j in range(W - 1, pos - 1, -1):
            run[j, 1] = h[j] + (a * (T - (e + j) - 1) + S[j + 1])
            for m in range(2, n + 1):
                run[j, m] = h[j] + min(run[j + 1, m - 1], pause[j + 1, m - 1])
            for m in range(1, n + 1):
                pause[j, m] = parking + min(pause[j + 1, m], run[j + 1, m] + r)
        return walk(run, pause, r, e, pos, n, hours)

    return values, trace


def available() -> bool:
    """Whether the compiled kernels can run (numba imports)."""
    return _kernels() is not None


def loaded() -> bool:
    """Whether the compiled kernels are loaded already (a large relaxation before paid
    numba's import): then a small relaxation's DP runs compiled too, at no import cost (the
    lab's quarter: its descent over pipelines places one pipeline's ten phases at a time, and
    the numpy kernel's calls, hour by hour, took 62 s of its first 90)."""
    return _kernels.cache_info().currsize > 0 and _kernels() is not None


def follow(
    run: np.ndarray, pause: np.ndarray, r: float, e: int, pos: int, n: int, hours: np.ndarray
) -> int:
    """Follow the recursion's tables (``run[j, m]``, ``pause[j, m]`` by window position and
    hours left) forward from a start at ``pos``: run on while running the next hour is no
    dearer than pausing it, resume when running it (plus ``r``, the resume cost) is no
    dearer than staying paused. Writes the running hours (``e`` + position) into ``hours``
    and returns how many. Plain Python for the numpy kernels, compiled for numba's."""
    W = run.shape[0] - 1
    count = 0
    j = pos
    left = n
    running = True
    while left > 0 and j < W:
        if running:
            hours[count] = e + j
            count += 1
            left -= 1
            if left == 0:
                break
            running = run[j + 1, left] <= pause[j + 1, left]
        else:
            running = run[j + 1, left] + r <= pause[j + 1, left]
        j += 1
    return count


def preemptive_starts(ph: _Phase, h: np.ndarray, S: np.ndarray, T: int) -> np.ndarray:
    """Per configuration of ``ph`` (row of ``h``, its hourly costs) ``run(j, n_k)`` by window
    position j, inf where no run of n_k hours starts (the recursion of
    :mod:`formulations.bounds.lagrange`, before the one-time costs)."""
    kernels = _kernels()
    assert kernels is not None
    start = np.full(h.shape, math.inf)
    kernels[0](
        np.ascontiguousarray(h, dtype=np.float64),
        np.ascontiguousarray(ph.n, dtype=np.int64),
        np.ascontiguousarray(ph.archive, dtype=np.float64),
        np.ascontiguousarray(ph.resume, dtype=np.float64),
        float(ph.parking),
        np.ascontiguousarray(S, dtype=np.float64),
        int(ph.e),
        int(T),
        start,
    )
    return start


def preemptive_trace(
    ph: _Phase, k: int, h: np.ndarray, S: np.ndarray, T: int, pos: int
) -> np.ndarray:
    """The hours of configuration k's cheapest run started at window position ``pos`` (as
    :func:`formulations.bounds.lagrange._trace_preemptive`)."""
    kernels = _kernels()
    assert kernels is not None
    n = int(ph.n[k])
    hours = np.zeros(n, dtype=np.int64)
    count = kernels[1](
        np.ascontiguousarray(h, dtype=np.float64),
        n,
        float(ph.archive[k]),
        float(ph.resume[k]),
        float(ph.parking),
        np.ascontiguousarray(S, dtype=np.float64),
        int(ph.e),
        int(T),
        int(pos),
        hours,
    )
    return hours[:count]
