"""``planner.solve``: one entry point for every solver, one result type."""

from __future__ import annotations

import time

from planner.instance.model import Instance
from planner.progress import ProgressFn
from planner.result import Result

SOLVERS = ("auto", "milp", "highs", "cpsat", "baseline")


def solve(
    instance: Instance,
    solver: str = "auto",
    time_limit: float = 60.0,
    gap: float = 1e-4,
    threads: int | None = None,
    backend: str = "auto",
    verbose: bool = False,
    on_progress: ProgressFn | None = None,
) -> Result:
    """Solve an instance. ``solver``: "milp" (the hourly MILP), "baseline" (the hand-made
    plan), "cpsat" / "highs" (non-preemptive scheduling, CP-SAT or a start-time MILP), or
    "auto" (picked by formulations.dispatch.choose). Always returns a :class:`Result`: an
    infeasible instance, a solver error or running out of memory become its termination and
    message, never an exception (bad arguments still raise ValueError). Numbers in the
    instance that look like a unit mistake are issued as
    :class:`~planner.consistency.NumericWarning` warnings first.

    A plan is "optimal" exactly when it is proved within ``gap`` (planner.result). The
    solve takes at most ``time_limit`` seconds plus about a second (building, the HiGHS
    child's start-up and a last check of the clock). ``on_progress`` is called with a
    :class:`planner.progress.Progress` (elapsed seconds, the best plan's objective, the best
    proved bound, stage) whenever either improves, and about every second while a solver
    works; ``verbose`` shows the solvers' own logs."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose from {SOLVERS}")
    if not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit}")
    if not 0 <= gap <= 1:
        raise ValueError(f"gap must be in [0, 1], got {gap}")
    t0 = time.perf_counter()
    try:
        from planner.consistency import warn_numerics

        warn_numerics(instance)
        # the checks count against the time limit: the solver gets what is left
        left = max(0.1 * time_limit, time_limit - (time.perf_counter() - t0))
        return _dispatch(instance, solver, left, gap, threads, backend, verbose, on_progress)
    except MemoryError:
        return Result.failed(
            solver,
            "the solver ran out of memory; try a coarser instance, fewer "
            "configurations (options.gpu_counts) or a shorter horizon",
            runtime_s=time.perf_counter() - t0,
        )
    except Exception as e:  # a solver bug or crash: a result, never a traceback
        import os

        if os.environ.get("TRAINPLAN_DEBUG"):
            raise
        return Result.failed(
            solver,
            f"the solver failed: {type(e).__name__}: {e}; try another "
            "--solver or --backend; if it persists, please report it",
            runtime_s=time.perf_counter() - t0,
        )


def _dispatch(
    instance: Instance,
    solver: str,
    time_limit: float,
    gap: float,
    threads: int | None,
    backend: str,
    verbose: bool,
    on_progress: ProgressFn | None = None,
) -> Result:
    if solver == "baseline":
        from formulations.baseline import solve_baseline

        return solve_baseline(instance)
    if solver in ("cpsat", "highs"):
        from formulations.dispatch import solve_nonpreemptive

        return solve_nonpreemptive(
            instance, solver, time_limit, gap, threads, verbose, on_progress=on_progress
        )
    if solver == "auto":
        from formulations.dispatch import choose

        picked, _why = choose(instance)
        if picked != "milp":
            return _dispatch(
                instance, picked, time_limit, gap, threads, backend, verbose, on_progress
            )
    from formulations.milp import solve_milp

    return solve_milp(
        instance,
        time_limit=time_limit,
        gap=gap,
        threads=threads,
        backend=backend,
        verbose=verbose,
        on_progress=on_progress,
    )
