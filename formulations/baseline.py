"""The baseline: the plan a team would make by hand (see :func:`baseline_schedule`)."""

from __future__ import annotations

import time

from formulations.greedy import baseline_schedule
from planner.configs import build_config_space
from planner.costs import cost_plan
from planner.instance.model import Instance
from planner.result import Result, Termination

SOLVER = "baseline"


def solve_baseline(inst: Instance) -> Result:
    t0 = time.perf_counter()
    space = build_config_space(inst, prune=False)
    if space.infeasible:
        return Result.no_plan(
            SOLVER,
            Termination.NO_CONFIGURATION,
            "; ".join(i.reason for i in space.infeasible),
            runtime_s=time.perf_counter() - t0,
        )
    sched = baseline_schedule(inst, space)
    if sched is None:
        return Result.no_plan(
            SOLVER,
            Termination.INFEASIBLE,
            "the hand-made baseline (as soon as possible, on-demand, hot storage) "
            "cannot meet every deadline within capacity",
            runtime_s=time.perf_counter() - t0,
        )
    return Result.solved(
        SOLVER,
        cost_plan(inst, sched),
        Termination.HEURISTIC,
        runtime_s=time.perf_counter() - t0,
        message="greedy baseline",
    )
