"""The baseline: the plan a team would make by hand (see :func:`baseline_schedule`)."""

from __future__ import annotations

import time

from formulations.greedy import baseline_schedule
from planner.configs import build_config_space
from planner.costing import make_plan
from planner.instance.model import Instance
from planner.result import Result, SolutionStatus, Termination


def solve_baseline(inst: Instance) -> Result:
    t0 = time.perf_counter()
    space = build_config_space(inst, prune=False)
    if space.infeasible:
        msg = "; ".join(i.reason for i in space.infeasible)
        return Result(
            "baseline",
            Termination.NO_CONFIGURATION,
            SolutionStatus.NONE,
            None,
            None,
            None,
            time.perf_counter() - t0,
            None,
            msg,
        )
    sched = baseline_schedule(inst, space)
    if sched is None:
        return Result(
            "baseline",
            Termination.INFEASIBLE,
            SolutionStatus.NONE,
            None,
            None,
            None,
            time.perf_counter() - t0,
            None,
            "the hand-made baseline (as soon as possible, on-demand, hot storage) "
            "cannot meet every deadline within capacity",
        )
    plan = make_plan(
        inst, space, sched, {}, "baseline", "feasible", "heuristic", None, time.perf_counter() - t0
    )
    return Result(
        "baseline",
        Termination.HEURISTIC,
        SolutionStatus.FEASIBLE,
        plan.objective,
        None,
        None,
        plan.runtime_s,
        plan,
        "greedy baseline",
    )
