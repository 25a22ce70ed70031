"""Solve the hourly MILP and return the common :class:`~planner.result.Result`."""

from __future__ import annotations

import math
import time

from formulations.bounds import (
    hour_masks,
    lower_bound,
    phase_bounds,
    prune_by_bound,
    single_segment,
)
from formulations.greedy import greedy
from formulations.heuristic import lookahead_schedule
from formulations.highs_runner import RawSolution, solve_highs, solve_pyomo
from formulations.milp.model import MilpModel, build
from formulations.milp.solution import point_from_schedule, schedule_from_point
from planner.configs import ConfigSpace, config_space
from planner.costs import cost_plan
from planner.instance.model import Instance
from planner.plan import Plan
from planner.result import Result, Termination
from planner.schedule import Schedule
from planner.windows import Windows, time_windows

#: Above this many nonzeros the "auto" backend passes arrays to highspy instead of Pyomo
#: (Pyomo builds at ~20 us per nonzero, measured here).
PYOMO_MAX_NONZEROS = 150_000


def _no_plan_message(raw: RawSolution) -> str:
    if raw.termination == Termination.TIME_LIMIT:
        return (
            "no plan found in time: the solver stopped at its time limit without a "
            "feasible plan; raise --time-limit or relax the instance"
        )
    if raw.termination == Termination.INFEASIBLE:
        return (
            "infeasible: no plan meets every deadline, precedence and capacity limit; "
            "run `trainplan explain` to see which constraints conflict"
        )
    return f"the solver found no plan ({raw.message})"


def result_from_raw(
    inst: Instance,
    mm: MilpModel,
    raw: RawSolution,
    solver: str,
    t0: float,
    notes: tuple[str, ...] = (),
    stats: dict[str, float] | None = None,
) -> Result:
    """The Result of a MILP run: the costed plan of its point (with a note when the solver's
    objective and the costed plan disagree), or why there is none."""
    runtime = time.perf_counter() - t0
    stats = {**_stats(mm, raw), **(stats or {})}
    if raw.x is None:
        return Result.no_plan(
            solver,
            raw.termination,
            _no_plan_message(raw),
            runtime_s=runtime,
            bound=raw.bound,
            notes=notes,
            stats=stats,
            threads=raw.threads,
        )
    plan = cost_plan(inst, schedule_from_point(mm, raw.x))
    mismatch = abs(plan.objective - (raw.objective or 0.0))
    if mismatch > 1e-6 * max(1.0, abs(plan.objective)) + 1e-3:
        notes = (
            *notes,
            f"solver objective {raw.objective} differs from the costed plan by {mismatch:.4g}",
        )
    return Result.solved(
        solver,
        plan,
        raw.termination,
        bound=raw.bound,
        runtime_s=runtime,
        message=raw.message,
        notes=notes,
        stats=stats,
        threads=raw.threads,
    )


def _stats(mm: MilpModel, raw: RawSolution) -> dict[str, float]:
    return {
        "variables": mm.lp.num_vars,
        "constraints": mm.lp.num_rows,
        "nonzeros": mm.lp.num_nonzeros,
        "solve_s": raw.runtime_s,
        "solver_objective": raw.objective if raw.objective is not None else float("nan"),
    }


def _best_heuristic(
    inst: Instance, space: ConfigSpace, windows: Windows, notes: list[str]
) -> tuple[Schedule, Plan] | None:
    """The cheapest of the look-ahead schedules (without reserved capacity, and with it at
    its reserved price per GPU-hour) and the greedy one, that meets the carbon cap."""
    cap = inst.spec.objective.carbon_cap_tonnes
    best: tuple[Schedule, Plan] | None = None
    candidates = [lookahead_schedule(inst, space, windows)]
    if any(c.contract == "reserved" for cs in space.by_phase.values() for c in cs):
        candidates.append(lookahead_schedule(inst, space, windows, allow_reserved=True))
    if candidates[0] is None:
        candidates.append(greedy(inst, space))
    broke_cap = False
    for sched in candidates:
        if sched is None:
            continue
        plan = cost_plan(inst, sched)
        if cap is not None and plan.emissions_t > cap + 1e-9:
            broke_cap = True  # the heuristics do not know the cap
            continue
        if best is None or plan.objective < best[1].objective:
            best = (sched, plan)
    if best is None and broke_cap:
        notes.append("the look-ahead plan breaks the carbon cap; solving without it")
    return best


def solve_milp(
    inst: Instance,
    space: ConfigSpace | None = None,
    time_limit: float = 60.0,
    gap: float = 1e-4,
    threads: int | None = None,
    backend: str = "auto",
    warm_start: bool = True,
    verbose: bool = False,
    prune: bool = True,
) -> Result:
    """Solve the hourly MILP to a relative ``gap`` within ``time_limit`` seconds.

    1. a valid lower bound L (phases separated, formulations.bounds) and an incumbent U from
       the look-ahead heuristic (formulations.heuristic); if (U - L) / U <= gap, U is proved;
    2. otherwise configurations and hours that cannot appear in a plan cheaper than U are
       fixed out (exact: no plan better than U is lost) and the MILP is solved from U;
    3. the bound reported is max(L, min(U, MILP bound)), valid for the full hourly problem.

    ``backend``: "highs" (arrays into highspy), "pyomo" (Pyomo's HiGHS interface) or "auto"
    (Pyomo up to PYOMO_MAX_NONZEROS nonzeros). ``prune=False`` solves the plain model."""
    t0 = time.perf_counter()
    space = space or config_space(inst)
    if space.infeasible:
        return Result.no_configuration(
            "milp", [i.reason for i in space.infeasible], runtime_s=time.perf_counter() - t0
        )
    windows = time_windows(inst, space.fewest_hours())
    notes: list[str] = []
    bounds = phase_bounds(inst, space, windows.start, windows.end)
    lower = lower_bound(bounds)
    found = _best_heuristic(inst, space, windows, notes) if warm_start else None
    upper = found[1].objective if found is not None else math.inf
    if (
        found is not None
        and math.isfinite(lower)
        and prune
        and (upper - lower) <= gap * abs(upper) + 1e-9
    ):
        notes.append(
            f"the look-ahead plan is within {gap:.2%} of the separable lower bound "
            f"{lower:,.2f}: proved without branching"
        )
        return Result.solved(
            "milp-bound",
            found[1],
            Termination.GAP_REACHED,
            bound=lower,
            runtime_s=time.perf_counter() - t0,
            message="gap closed by the bound",
            notes=tuple(notes),
            stats={
                "lower_bound": lower,
                "heuristic": upper,
                "build_s": 0.0,
                "variables": 0,
                "constraints": 0,
                "nonzeros": 0,
            },
        )
    masks = None
    model_space = space
    incumbent = found[0] if found is not None else None
    if prune and incumbent is not None and math.isfinite(lower):
        pruned = prune_by_bound(space, bounds, upper)
        # keep the incumbent's configurations whatever the pruning says (ties, rounding)
        model_space = space.restricted(
            {
                name: tuple(
                    c
                    for c in space.by_phase[name]
                    if c in pruned.by_phase[name] or c == incumbent[name].config
                )
                for name in space.by_phase
            }
        )
        masks = hour_masks(inst, model_space, bounds, windows.start, windows.end, upper)
        for name, (c, hours) in incumbent.items():
            m = masks.get((name, c.index))
            if m is not None:
                for t in hours:
                    m[t - windows.start[name]] = True
        kept = sum(len(v) for v in model_space.by_phase.values())
        notes.append(
            f"bound pruning kept {kept} of {space.size} configurations "
            f"(incumbent {upper:,.2f}, bound {lower:,.2f})"
        )
    single: set[str] = set()
    left_out = math.inf  # the least cost of a plan in segments the model leaves out
    if prune and incumbent is not None and math.isfinite(lower):
        single, left_out = single_segment(bounds, upper, gap)
        if single & {p.name for p in inst.active_phases if p.options.max_segments > 1}:
            notes.append(
                f"{len(single)} phase(s) may run in segments but cannot gain from them within "
                f"the gap: modelled on one configuration ({', '.join(sorted(single))})"
            )
    mm = build(inst, model_space, windows, masks, single)
    build_s = time.perf_counter() - t0
    start = None
    if incumbent is not None:
        start = point_from_schedule(mm, incumbent)
        if start is not None and mm.lp.violations(start):
            notes.append("heuristic start rejected: " + mm.lp.violations(start)[0])
            start = None
    if backend == "auto":
        backend = "pyomo" if mm.lp.num_nonzeros <= PYOMO_MAX_NONZEROS else "highs"
    remaining = max(0.1, time_limit - (time.perf_counter() - t0))
    if backend == "pyomo":
        raw = solve_pyomo(mm.lp, remaining, gap, threads, verbose)
    else:
        raw = solve_highs(mm.lp, remaining, gap, threads, start, verbose)
    # combine: the MILP's bound holds for plans cheaper than the incumbent
    if raw.bound is not None and math.isfinite(lower):
        raw.bound = max(lower, min(upper, raw.bound, left_out))
    elif math.isfinite(lower):
        raw.bound = lower
    if incumbent is not None and (raw.x is None or (raw.objective or math.inf) > upper + 1e-6):
        start_pt = point_from_schedule(mm, incumbent)
        if start_pt is not None:
            raw.x = start_pt
            raw.objective = upper
            notes.append("the solver did not improve on the look-ahead plan")
    return result_from_raw(
        inst,
        mm,
        raw,
        f"milp-{backend}",
        t0,
        tuple(notes),
        {"build_s": build_s, "lower_bound": lower, "heuristic": upper},
    )
