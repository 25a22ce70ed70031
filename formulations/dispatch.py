"""Which formulation solves an instance, and the entry point for the non-preemptive ones.

- Some phase is preemptible (may pause): the hourly MILP (:mod:`formulations.milp`), the only
  model of pauses, resumes and parking; it also handles non-preemptive phases in the same
  instance through its contiguity constraint.
- Every phase is non-preemptive: a phase is fixed by its configuration and start hour, and
  two exact models of the same costs exist: the start-time MILP on HiGHS
  (:mod:`formulations.starttime`) and CP-SAT (:mod:`formulations.cpsat`). The start-time
  MILP's capacity rows hold one nonzero per (start, running hour), configurations x window
  x run length; CP-SAT's interval model grows with configurations x window only.

Measured by ``benchmarks/cpsat_vs_milp.py`` (2 threads, 60 s, shared machine; seconds to a
proved optimum, or objective at the limit):

=====  ===========  ====================  ===================  =====================
size   nonzeros     CP-SAT                HiGHS presolve off   HiGHS presolve on
=====  ===========  ====================  ===================  =====================
XS     17k          0.1 s                 0.0 s                0.4 s
S      56k / 114k   0.2 / 0.4 s           0.1 / 0.3 s          0.6 / 3.4-9.4 s
M      243k         3.5 s                 5.6-11.9 s           7.5-37.8 s
L      2.1M         17,469 (bound 8.7k)   21,376 (bound 16.2k)
XL     14.6M        26,222                26,228 (no bound)
=====  ===========  ====================  ===================  =====================

So HiGHS (with presolve off) up to :data:`HIGHS_MAX_NONZEROS`, CP-SAT above. HiGHS's
presolve cannot be switched off until ``formulations.highs_runner.solve_highs`` takes
options; with presolve on HiGHS was slower than CP-SAT at every size, so until then "auto"
picks CP-SAT throughout.

``solve_nonpreemptive(..., portfolio=True)`` lets the two help each other: for "starttime",
CP-SAT runs first for a share of the time and its schedule becomes HiGHS's MIP start; for
"cpsat", the start-time MILP runs first (when small enough) and its plan becomes CP-SAT's
hint. The final bound is the better of the two proved bounds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from formulations.starttime.data import WarmStart, estimate_nonzeros
from planner.configs import ConfigSpace, config_space
from planner.instance.model import Instance
from planner.progress import ProgressFn
from planner.result import Result, SolutionStatus, Termination, within_gap

#: At most this many start-time capacity nonzeros, "auto" picks the start-time MILP on
#: HiGHS (when its presolve can be turned off); above it, CP-SAT (see the table above).
HIGHS_MAX_NONZEROS = 150_000

#: Share of the time limit the first solver of a portfolio gets, and its cap in seconds.
PORTFOLIO_SHARE = 0.3
PORTFOLIO_FIRST_MAX_S = 20.0


def pausable(inst: Instance, space: ConfigSpace) -> list[str]:
    """The preemptible phases that can actually pause: some configuration runs more than one
    hour. A phase whose every configuration runs a single hour has one run whatever it may
    do, so the non-preemptive models are exact for it (no resume, no parking)."""
    return [
        p.name
        for p in inst.active_phases
        if p.preemptible and any(c.hours > 1 for c in space.by_phase.get(p.name, ()))
    ]


def choose(inst: Instance) -> tuple[str, str]:
    """("milp" | "cpsat" | "starttime", a one-sentence reason), from the model that would be
    built: the start-time MILP's size counts only the capacity rows it keeps."""
    active = inst.active_phases
    if not active:
        return "milp", "nothing to plan: every phase is done (the plan is empty)"
    space = config_space(inst)
    pre = pausable(inst, space)
    if pre:
        names = ", ".join(pre[:3]) + (" ..." if len(pre) > 3 else "")
        return "milp", (
            f"milp: {len(pre)} of {len(active)} phases may pause ({names}), and "
            "only the hourly MILP models pauses and resumes"
        )
    seg = [p.name for p in active if p.options.max_segments > 1]
    if seg:
        names = ", ".join(seg[:3]) + (" ..." if len(seg) > 3 else "")
        return "milp", (
            f"milp: {names} may change configuration at checkpoints (max_segments > 1), "
            "and only the hourly MILP models segments and migrations"
        )
    running = [p.name for p in active if p.running is not None]
    if running:
        return "milp", (
            f"milp: {', '.join(running[:3])} continue from a running configuration, and "
            "the hourly MILP models the migration off it"
        )
    if _has_terms(space):
        return "milp", "milp: reserved terms are modelled by the hourly MILP only"
    if space.infeasible:
        return "milp", (
            "milp: some phase has no feasible configuration, which the hourly MILP reports"
        )
    nvar, nnz = estimate_nonzeros(inst, space)
    n = len(active)
    if nnz <= HIGHS_MAX_NONZEROS:
        return "starttime", (
            f"starttime: all {n} phases are non-preemptive and the start-time MILP is "
            f"small ({nvar:,} starts, {_si(nnz)} capacity nonzeros <= "
            f"{_si(HIGHS_MAX_NONZEROS)}), where HiGHS proves optimality fastest"
        )
    return "cpsat", (
        f"cpsat: all {n} phases are non-preemptive and the start-time MILP would "
        f"have {_si(nnz)} capacity nonzeros ({nvar:,} starts), more than "
        f"{_si(HIGHS_MAX_NONZEROS)}"
    )


def _has_terms(space: ConfigSpace) -> bool:
    """Some configuration runs under a named reserved term."""
    return any(c.term for cs in space.by_phase.values() for c in cs)


def _si(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return f"{n:,}"


def solve_nonpreemptive(
    inst: Instance,
    solver: str,
    time_limit: float,
    gap: float,
    threads: int | None,
    verbose: bool,
    *,
    start: WarmStart | None = None,
    portfolio: bool = False,
    space: ConfigSpace | None = None,
    on_progress: ProgressFn | None = None,
) -> Result:
    """Solve with "cpsat" (CP-SAT) or "starttime" (the start-time MILP). ``start`` (the warm
    start) is a schedule or plan (e.g. the hourly MILP's): CP-SAT takes it as a solution hint,
    HiGHS as a MIP start.

    Preemptible phases, if any, are scheduled as one contiguous run each: the plan is valid
    but may cost more than one that pauses, so it is reported as feasible, without a bound
    (use the hourly MILP, ``--solver milp``, for those instances)."""
    from formulations.starttime import build_data, solve_starttime

    if solver not in ("cpsat", "starttime"):
        raise ValueError(
            f"unknown non-preemptive solver {solver!r}; expected 'cpsat' or 'starttime'"
        )
    t0 = time.perf_counter()
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
    if _has_terms(space):
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

    def run(which: str, limit: float, start: WarmStart | None) -> Result:
        """CP-SAT ("cpsat") or the start-time MILP ("starttime") for ``limit`` seconds, from
        ``start`` (CP-SAT's solution hint, the MILP's MIP start)."""
        if which == "cpsat":  # ortools (and pandas) load only when CP-SAT runs
            from formulations.cpsat import solve_cpsat

            solve: Callable[..., Result] = solve_cpsat
        else:
            solve = solve_starttime
        return solve(
            inst,
            space,
            limit,
            gap,
            threads,
            start,
            verbose=verbose,
            data=data,
            notes=notes,
            on_progress=on_progress,
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
        res = _merge(res, first, time.perf_counter() - t0, gap)
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
