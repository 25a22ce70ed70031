"""``planner.solve``: one entry point for every solver, one result type."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from planner.model.options import SolveOptions
from planner.model.progress import ProgressFn
from planner.model.result import Result, Termination

if TYPE_CHECKING:
    from planner.instance.model import Instance
    from planner.model.plan import Plan
    from planner.model.schedule import Schedule

#: The solvers by name: "milp" the hourly MILP, "starttime" the start-time MILP, "cpsat"
#: CP-SAT, "baseline" the lever-free baseline, "auto" picked by formulations.choose.
SOLVERS = ("auto", "milp", "starttime", "cpsat", "baseline")
#: Old solver names still accepted, and the name each is now ("highs" named a model after a
#: solver, and ``--backend highs`` names the solver).
RENAMED = {"highs": "starttime"}


def solver_name(solver: str) -> tuple[str, str | None]:
    """``solver``'s current name and, for an old name, the deprecation note to show.
    Raises ValueError for a name that is neither."""
    if solver in RENAMED:
        new = RENAMED[solver]
        return new, f"--solver {solver} is now --solver {new} (the old name will go)"
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose from {SOLVERS}")
    return solver, None


class SolveArgs(TypedDict, total=False):
    """:func:`solve`'s keywords by name, for callers that pass them through
    (``planner.interfaces.replan.replan(inst, old, hour, **args)``); the solvers themselves take
    them as one :class:`~planner.model.options.SolveOptions` record."""

    solver: str
    time_limit: float
    gap: float
    threads: int | None
    backend: str
    verbose: bool
    on_progress: ProgressFn | None
    start: Plan | Schedule | None


def solve(
    instance: Instance,
    solver: str = "auto",
    time_limit: float = 60.0,
    gap: float = 1e-4,
    threads: int | None = None,
    backend: str = "auto",
    verbose: bool = False,
    on_progress: ProgressFn | None = None,
    start: Plan | Schedule | None = None,
) -> Result:
    """Solve an instance. ``solver``: "milp" (the hourly MILP), "baseline" (the hand-made
    plan), "cpsat" / "starttime" (non-preemptive scheduling, CP-SAT or the start-time MILP;
    "highs", its old name, is still accepted and the result carries a note saying so), or
    "auto" (picked by formulations.choose.choose). Always returns a :class:`Result`: an
    infeasible instance, a solver error or running out of memory become its termination and
    message, never an exception (bad arguments still raise ValueError). Numbers in the
    instance that look like a unit mistake are issued as
    :class:`~planner.model.consistency.NumericWarning` warnings first.

    **A plan is never wrong**: every plan returned has passed the independent checker
    (:func:`planner.checker.verify`, constraints and every cost against the plan's own
    figures). When the solver's best plan fails it, the best of the other plans the solver
    found (``Result.alternatives``) that passes is returned, with a note naming what was
    rejected and why; when none passes, a result without a plan whose termination is
    ``check_failed`` and whose message lists the violations (a bug in trainplan).

    A plan is "optimal" exactly when it is proved within ``gap`` (planner.model.result). The
    solve takes at most ``time_limit`` seconds plus about a second (building, the HiGHS
    child's start-up and a last check of the clock). ``on_progress`` is called with a
    :class:`planner.model.progress.Progress` (elapsed seconds, the best plan's objective, the best
    proved bound, stage) whenever either improves, and about every second while a solver
    works; ``verbose`` shows the solvers' own logs. ``start``: a warm start, an earlier plan
    or schedule (of this instance or of the one it was re-planned from): the hourly MILP
    offers it as a plan, keeping its placements that still fit (formulations.heuristics.warm); the
    non-preemptive solvers as a solution hint (CP-SAT) or MIP start."""
    solver, renamed = solver_name(solver)
    options = SolveOptions(time_limit, gap, threads, backend, verbose, on_progress, start)
    t0 = time.perf_counter()
    from planner.model.consistency import warn_numerics

    warn_numerics(instance)
    res = _solve(instance, solver, options, t0)
    return res if renamed is None else res.with_notes(renamed)


def _solve(instance: Instance, solver: str, options: SolveOptions, t0: float) -> Result:
    """:func:`solve` after the arguments are checked (at ``t0``): the solver's result,
    verified."""
    try:
        if not instance.active_phases:
            return verified(instance, empty_plan(instance, solver, t0), t0)
        # the checks count against the time limit: the solver gets what is left
        limit = options.time_limit
        left = max(0.1 * limit, limit - (time.perf_counter() - t0))
        res = _dispatch(instance, solver, options.but(time_limit=left))
        if res.termination == Termination.INFEASIBLE:
            res = _name_the_carbon_cap(instance, res, solver, options)
        return verified(instance, res, t0)
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


#: Violations quoted per rejected plan in a note or message.
QUOTED_VIOLATIONS = 3


def verified(instance: Instance, res: Result, t0: float) -> Result:
    """``res`` with a plan that passes the independent checker (:func:`planner.checker.verify`).

    The solver's plan is checked first; if it fails, its alternatives (cheapest first) until
    one passes, which is returned with a note naming each rejected plan and its first
    violations. Such a plan is never called optimal: the model that produced the rejected plan
    is wrong somewhere, so its bound proves nothing about the one returned (it is still
    shown). When no plan passes: no plan, termination ``check_failed``, the violations in
    the message."""
    if res.plan is None:
        return res
    from planner.checker import verify

    rejected: list[str] = []
    for source, plan in ((res.solver, res.plan), *res.alternatives):
        v = verify(instance, plan)
        if v.ok:
            break
        quoted = "; ".join(str(x) for x in v.violations[:QUOTED_VIOLATIONS])
        more = len(v.violations) - QUOTED_VIOLATIONS
        rejected.append(
            f"the {source} plan ({plan.objective:,.2f}) failed the independent checker: "
            f"{quoted}{f' (and {more} more)' if more > 0 else ''}"
        )
    else:
        return Result.no_plan(
            res.solver,
            Termination.CHECK_FAILED,
            "internal error: no plan the solver found passes the independent checker, so "
            "none is returned; please report it with the instance: " + " | ".join(rejected),
            runtime_s=time.perf_counter() - t0,
            bound=res.bound,
            notes=res.notes,
            stats={**res.stats, "rejected_plans": float(len(rejected))},
            threads=res.threads,
        )
    if not rejected:
        return res
    return Result.solved(
        res.solver,
        plan,
        Termination.UNKNOWN if res.termination == Termination.OPTIMAL else res.termination,
        bound=res.bound,
        optimal=False,
        runtime_s=time.perf_counter() - t0,
        message=f"the plan from {source}: the solver's own plan failed the independent checker",
        notes=(
            *res.notes,
            *rejected,
            f"returned instead: the best plan that passes, from {source} ({plan.objective:,.2f})",
        ),
        stats={**res.stats, "rejected_plans": float(len(rejected))},
        threads=res.threads,
    )


def empty_plan(instance: Instance, solver: str, t0: float) -> Result:
    """Every phase is ``done``: the plan schedules nothing, costs nothing and is optimal (no
    model is built; HiGHS calls an empty model "Empty", not optimal)."""
    from planner.model.costs import cost_plan
    from planner.model.schedule import Schedule

    plan = cost_plan(instance, Schedule({}, {}))
    return Result.solved(
        solver,
        plan,
        Termination.OPTIMAL,
        bound=plan.objective,
        runtime_s=time.perf_counter() - t0,
        message="nothing to plan: every phase is done",
        notes=("nothing to plan: every phase is done; the plan is empty",),
    )


#: Seconds at most for the solve that tells whether a carbon cap alone makes an instance
#: infeasible (the least emissions without the cap), run when a solve said infeasible.
CARBON_CHECK_S = 30.0


def _name_the_carbon_cap(
    instance: Instance,
    res: Result,
    solver: str,
    options: SolveOptions,
) -> Result:
    """An infeasible result on an instance with a carbon cap: when the instance without the
    cap has a plan, the cap is the reason, and the message says so with the least emissions
    any plan reaches (the plan that minimises CO2: every cost weight 0, carbon priced, as
    ``trainplan pareto --vs carbon`` finds it). Otherwise ``res`` is returned as it is."""
    cap = instance.spec.objective.carbon_cap_tonnes
    if cap is None:
        return res
    limit = min(options.time_limit, CARBON_CHECK_S)
    zero = dict.fromkeys(("rental", "energy", "storage", "failure", "transfer", "porting"), 0.0)
    greenest = instance.replace(
        {
            "objective.carbon_cap_tonnes": None,
            "objective.weights": {**zero, "carbon": 1.0},
            "objective.carbon_usd_per_tonne": 1000.0,
        }
    )
    quiet = options.but(time_limit=limit, gap=1e-6, verbose=False, on_progress=None, start=None)
    green = _dispatch(greenest, solver, quiet)
    if green.plan is None:
        return res  # infeasible (or undecided) without the cap too: the cap is not the reason
    least = green.plan.emissions_t
    if least <= cap * (1 + 1e-9) + 1e-12:
        return res  # a plan within the cap exists: the cap is not what makes it infeasible
    low = None if green.bound is None else max(0.0, green.bound / 1000.0)
    if green.status.value == "optimal" or (low is not None and least - low <= 1e-6 * least):
        what, fix = f"{least:.6g} t", f"raise the cap to at least {least:.6g} t"
    else:
        what = (
            f"between {low:.6g} t and {least:.6g} t (not proved closer within {limit:g} s)"
            if low is not None
            else f"at most {least:.6g} t (the least found within {limit:g} s)"
        )
        fix = f"a cap of {least:.6g} t admits a plan"
    message = (
        f"infeasible: the carbon cap objective.carbon_cap_tonnes = {cap:g} t is below the "
        f"least emissions of any plan that meets every deadline, precedence and capacity "
        f"limit, {what}; {fix}, or see the trade-off with `trainplan pareto --vs carbon`"
    )
    return replace(res, message=message)


def _dispatch(instance: Instance, solver: str, options: SolveOptions) -> Result:
    """The result of ``solver`` ("auto" resolved by :func:`formulations.choose.choose`)."""
    if solver == "baseline":
        from formulations.heuristics.baseline import solve_baseline

        return solve_baseline(instance, options)
    if solver == "auto":
        from formulations.choose import choose

        solver, _why = choose(instance)
    if solver in ("cpsat", "starttime"):
        from formulations.portfolio import solve_nonpreemptive

        return solve_nonpreemptive(instance, solver, options)
    from formulations.pipeline import solve_milp

    return solve_milp(instance, options)
