"""Solve the hourly MILP and return the common :class:`~planner.result.Result`."""

from __future__ import annotations

import time

from formulations.greedy import greedy
from formulations.highs_runner import RawSolution, solve_highs, solve_pyomo
from formulations.milp.model import MilpModel, build
from formulations.milp.solution import point_from_schedule, schedule_from_point
from planner.configs import ConfigSpace, build_config_space
from planner.costing import make_plan
from planner.instance.model import Instance
from planner.result import Result, SolutionStatus, Termination

#: Above this many nonzeros the "auto" backend passes arrays to highspy instead of Pyomo
#: (Pyomo builds at ~20 us per nonzero, measured here).
PYOMO_MAX_NONZEROS = 150_000


def no_configuration(inst: Instance, space: ConfigSpace, solver: str, t0: float) -> Result:
    msg = "; ".join(i.reason for i in space.infeasible)
    return Result(solver, Termination.NO_CONFIGURATION, SolutionStatus.NONE, None, None, None,
                  time.perf_counter() - t0, None, msg + " (run `trainplan explain` for more)")


def result_from_raw(inst: Instance, space: ConfigSpace, mm: MilpModel, raw: RawSolution,
                    solver: str, t0: float, notes: tuple[str, ...] = ()) -> Result:
    runtime = time.perf_counter() - t0
    term = {"optimal": Termination.OPTIMAL, "time_limit": Termination.TIME_LIMIT,
            "infeasible": Termination.INFEASIBLE, "interrupted": Termination.INTERRUPTED,
            "error": Termination.ERROR}.get(raw.status, Termination.UNKNOWN)
    if raw.x is None:
        if term == Termination.TIME_LIMIT:
            msg = "no plan found in time: the solver stopped at its time limit without a " \
                  "feasible plan; raise --time-limit or relax the instance"
        elif term == Termination.INFEASIBLE:
            msg = "infeasible: no plan meets every deadline, precedence and capacity limit; " \
                  "run `trainplan explain` to see which constraints conflict"
        else:
            msg = f"the solver found no plan ({raw.message})"
        return Result(solver, term, SolutionStatus.NONE, None, raw.bound, None, runtime, None,
                      msg, stats=_stats(mm, raw))
    schedule, reserved = schedule_from_point(mm, raw.x)
    status = SolutionStatus.OPTIMAL if term == Termination.OPTIMAL else SolutionStatus.FEASIBLE
    plan = make_plan(inst, space, schedule, reserved, solver, status.value, term.value,
                     raw.bound, runtime, notes)
    mismatch = abs((plan.objective or 0.0) - (raw.objective or 0.0))
    if mismatch > 1e-6 * max(1.0, abs(plan.objective or 0.0)) + 1e-3:
        plan = make_plan(inst, space, schedule, reserved, solver, status.value, term.value,
                         raw.bound, runtime, (*notes, f"solver objective {raw.objective} "
                                              f"differs from the costed plan by {mismatch:.4g}"))
    return Result(solver, term, status, plan.objective, raw.bound, plan.gap, runtime, plan,
                  raw.message, stats=_stats(mm, raw))


def _stats(mm: MilpModel, raw: RawSolution) -> dict[str, float]:
    return {"variables": mm.lp.num_vars, "constraints": mm.lp.num_rows,
            "nonzeros": mm.lp.num_nonzeros, "solve_s": raw.runtime_s,
            "solver_objective": raw.objective if raw.objective is not None else float("nan")}


def solve_milp(
    inst: Instance,
    space: ConfigSpace | None = None,
    time_limit: float = 60.0,
    gap: float = 1e-4,
    threads: int | None = None,
    backend: str = "auto",
    warm_start: bool = True,
    verbose: bool = False,
) -> Result:
    """Build and solve the hourly MILP. ``backend``: "highs" (arrays into highspy), "pyomo"
    (Pyomo's HiGHS interface) or "auto" (Pyomo for models up to PYOMO_MAX_NONZEROS)."""
    t0 = time.perf_counter()
    space = space or build_config_space(inst)
    if space.infeasible:
        return no_configuration(inst, space, "milp", t0)
    mm = build(inst, space)
    build_s = time.perf_counter() - t0
    start = None
    notes: list[str] = []
    if warm_start:
        sched = greedy(inst, space)
        if sched is not None:
            start = point_from_schedule(mm, sched)
            if start is not None and mm.lp.violations(start):
                notes.append("greedy start rejected: " + mm.lp.violations(start)[0])
                start = None
    if backend == "auto":
        backend = "pyomo" if mm.lp.num_nonzeros <= PYOMO_MAX_NONZEROS else "highs"
    remaining = max(0.1, time_limit - (time.perf_counter() - t0))
    if backend == "pyomo":
        raw = solve_pyomo(mm.lp, remaining, gap, threads, verbose)
    else:
        raw = solve_highs(mm.lp, remaining, gap, threads, start, verbose)
    res = result_from_raw(inst, space, mm, raw, f"milp-{backend}", t0, tuple(notes))
    res.stats["build_s"] = build_s
    return res
