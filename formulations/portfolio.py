"""The non-preemptive solvers' entry point: the start-time MILP or CP-SAT, alone or as a
portfolio.

:func:`solve_nonpreemptive` solves an instance whose phases each run as one contiguous run
with ``"starttime"`` (the start-time MILP on HiGHS, :mod:`formulations.exact.starttime`) or
``"cpsat"`` (:mod:`formulations.exact.cpsat`); which one "auto" takes is
:func:`formulations.choose.choose`'s. Phases the contiguous models cannot represent are
restricted and said so: a preemptible phase runs without pauses, a phase that may change
configuration at checkpoints runs on one configuration, reserved terms are left out; the
plan is then valid but only feasible (no bound), and no plan is no proof of infeasibility.

With ``portfolio=True`` the two help each other: for "starttime", CP-SAT runs first for
:data:`PORTFOLIO_SHARE` of the time (at most :data:`PORTFOLIO_FIRST_MAX_S`) and its schedule
becomes HiGHS's MIP start; for "cpsat", the start-time MILP runs first (when its capacity
rows have at most four times ``HIGHS_MAX_NONZEROS``) and its plan becomes CP-SAT's solution
hint. A first run that proves optimality ends the solve; otherwise the better plan is kept
with the better of the two proved bounds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from formulations.choose import HIGHS_MAX_NONZEROS, has_terms, pausable
from formulations.exact.starttime.data import estimate_nonzeros
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace, config_space
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.model.result import Result, SolutionStatus, Termination, within_gap
from planner.model.schedule import Schedule

#: Share of the time limit the first solver of a portfolio gets, and its cap in seconds.
PORTFOLIO_SHARE = 0.3
PORTFOLIO_FIRST_MAX_S = 20.0


def solve_nonpreemptive(
    inst: Instance,
    solver: str,
    options: SolveOptions = SolveOptions(),
    *,
    portfolio: bool = False,
    space: ConfigSpace | None = None,
) -> Result:
    """Solve with "cpsat" (CP-SAT) or "starttime" (the start-time MILP), within
    ``options.time_limit``. ``options.start`` (the warm start) is a schedule or plan (e.g.
    the hourly MILP's): CP-SAT takes it as a solution hint, HiGHS as a MIP start.
    ``portfolio``: run the other model first (the module docstring); ``planner.solve`` runs
    one model.

    Preemptible phases, if any, are scheduled as one contiguous run each: the plan is valid
    but may cost more than one that pauses, so it is reported as feasible, without a bound
    (use the hourly MILP, ``--solver milp``, for those instances)."""
    from formulations.exact.starttime import build_data, solve_starttime

    if solver not in ("cpsat", "starttime"):
        raise ValueError(
            f"unknown non-preemptive solver {solver!r}; expected 'cpsat' or 'starttime'"
        )
    t0 = time.perf_counter()
    time_limit, start = options.time_limit, options.start
    space = space or config_space(inst)
    pre = pausable(inst, space)
    capped = inst.spec.objective.carbon_cap_tonnes is not None
    notes: tuple[str, ...] = ()
    if pre:
        notes = (
            f"preemptible phases {', '.join(pre)} scheduled without pauses: a plan that "
            "pauses may cost less (use --solver milp)",
        )
    seg = [p.name for p in inst.active_phases if p.options.max_segments > 1]
    if seg:
        notes = (
            *notes,
            f"{', '.join(seg)} planned on one configuration each: a plan that changes "
            "configuration at checkpoints may cost less (use --solver milp)",
        )
    if has_terms(space):
        space = space.restricted(
            {n: tuple(c for c in cs if not c.term) for n, cs in space.by_phase.items()}
        )
        notes = (
            *notes,
            "reserved terms left out (the hourly MILP models them; use --solver milp)",
        )
        seg = [*seg, "reserved terms"]
    pre = [*pre, *seg]
    data = None if space.infeasible else build_data(inst, space)

    def left() -> float:
        return max(0.05, time_limit - (time.perf_counter() - t0))

    def run(which: str, limit: float, start: Plan | Schedule | None) -> Result:
        """CP-SAT ("cpsat") or the start-time MILP ("starttime") for ``limit`` seconds, from
        ``start`` (CP-SAT's solution hint, the MILP's MIP start)."""
        if which == "cpsat":  # ortools (and pandas) load only when CP-SAT runs
            from formulations.exact.cpsat import solve_cpsat

            solve: Callable[..., Result] = solve_cpsat
        else:
            solve = solve_starttime
        return solve(
            inst, options.but(time_limit=limit, start=start), space=space, data=data, notes=notes
        )

    first: Result | None = None
    if portfolio and data is not None and all(data.tables.values()):
        share = min(PORTFOLIO_SHARE * time_limit, PORTFOLIO_FIRST_MAX_S)
        if solver == "starttime":
            first = run("cpsat", share, start)
        elif estimate_nonzeros(inst, space)[1] <= 4 * HIGHS_MAX_NONZEROS:
            first = run("starttime", share, start)
        if first is not None and first.status == SolutionStatus.OPTIMAL:
            res = _relabel(
                first, f"portfolio: {first.solver} closed the gap in {first.runtime_s:.1f} s"
            )
            return _restricted(res, pre, capped)
        if first is not None and first.plan is not None:
            start = first.plan
    res = run(solver, left(), start)
    if first is not None:
        res = _merge(res, first, time.perf_counter() - t0, options.gap)
    return _restricted(res, pre, capped)


def _relabel(res: Result, note: str) -> Result:
    return res.with_notes(note)


def _merge(res: Result, first: Result, runtime: float, gap: float) -> Result:
    """The better plan of a portfolio run, with the better of the two bounds."""
    bounds = [b for b in (res.bound, first.bound) if b is not None]
    bound = max(bounds) if bounds else None
    best, other = (res, first)
    if res.plan is None or (
        first.objective is not None
        and res.objective is not None
        and first.objective < res.objective - 1e-9
    ):
        best, other = first, res
    note = (
        f"portfolio: {first.solver} ({first.runtime_s:.1f} s) then {res.solver}; plan "
        f"from {best.solver}; bound: the better of both"
    )
    stats = {**{f"{other.solver}.{k}": v for k, v in other.stats.items()}, **best.stats}
    others = (*other.alternatives, *(((other.solver, other.plan),) if other.plan else ()))
    best = best.with_alternatives(*others)
    if best.plan is None:
        return dataclasses.replace(
            best, bound=bound, runtime_s=runtime, stats=stats, message=f"{best.message}; {note}"
        )
    term, status = best.termination, best.status
    if within_gap(best.objective, bound, gap):
        term, status = Termination.OPTIMAL, SolutionStatus.OPTIMAL
    return dataclasses.replace(
        best,
        bound=bound,
        runtime_s=runtime,
        stats=stats,
        termination=term,
        status=status,
        notes=(*best.notes, note),
    )


def _restricted(res: Result, preemptible: list[str], capped: bool = False) -> Result:
    """Without pauses the optimum is only of a restriction: no bound, not optimal. And no
    contiguous schedule is no proof of infeasibility: a plan that pauses may exist, which
    only the hourly MILP can find (termination ``unknown``: the solver found no plan)."""
    if not preemptible:
        return res
    if res.plan is None:
        if res.termination != Termination.INFEASIBLE:
            return res
        names = ", ".join(preemptible[:3]) + (" ..." if len(preemptible) > 3 else "")
        return dataclasses.replace(
            res,
            termination=Termination.UNKNOWN,
            bound=None,
            message=(
                f"the contiguous model ({res.solver}) cannot plan this instance: no schedule "
                "without pauses meets every deadline, precedence and capacity limit"
                f"{' and the carbon cap' if capped else ''}, and {names} may pause, which "
                "only the hourly MILP plans; "
                "solve it with --solver milp (or --solver auto)"
            ),
        )
    term = Termination.HEURISTIC if res.termination == Termination.OPTIMAL else res.termination
    return dataclasses.replace(
        res,
        status=SolutionStatus.FEASIBLE,
        termination=term,
        bound=None,
        message=f"{res.message}; best contiguous schedule only",
    )
