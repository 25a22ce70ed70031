"""``planner.solve``: one entry point for every solver, one result type."""

from __future__ import annotations

from planner.instance.model import Instance
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
) -> Result:
    """Solve an instance. ``solver``: "milp" (the hourly MILP), "baseline" (the hand-made
    plan), "cpsat" / "highs" (non-preemptive scheduling, CP-SAT or a start-time MILP), or
    "auto". Always returns a :class:`Result`; never raises for an infeasible instance."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose from {SOLVERS}")
    if solver == "baseline":
        from formulations.baseline import solve_baseline

        return solve_baseline(instance)
    if solver in ("cpsat", "highs"):
        from formulations.dispatch import solve_nonpreemptive

        return solve_nonpreemptive(instance, solver, time_limit, gap, threads, verbose)
    if solver == "auto":
        try:
            from formulations.dispatch import choose
        except ImportError:
            choose = None
        if choose is not None:
            picked, _why = choose(instance)
            if picked != "milp":
                return solve(instance, picked, time_limit, gap, threads, backend, verbose)
    from formulations.milp import solve_milp

    return solve_milp(instance, time_limit=time_limit, gap=gap, threads=threads,
                      backend=backend, verbose=verbose)
