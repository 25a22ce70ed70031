"""HiGHS on the reduced hourly MILP, from the incumbent: first with the pausable phases' hours
continuous (a relaxation: its bound holds), then the exact model with what is left (the
pipeline's reduced-MILP stage, :func:`formulations.pipeline.reduced_milp`)."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from formulations.exact.milp.model import MilpModel, build, loose_columns
from formulations.exact.milp.solution import point_from_schedule, schedule_from_point
from formulations.incumbent import Incumbent
from formulations.lp.highs_runner import RawSolution, solve_highs, solve_pyomo
from planner.model.configs import Config, ConfigSpace
from planner.model.result import GAP_TOLERANCE, Termination
from planner.model.windows import Windows

#: How far from 0 or 1 a column of a phase that may pause may be in a point of the
#: relaxation (pauses continuous) that is read as a plan.
INTEGRALITY_TOL = 1e-6


#: The exact model follows the relaxation only with at least this many seconds left, and
#: at least EXACT_ROOT_FACTOR times as many as the relaxation took (same root LP; medium-compete
#: at a 3 s limit: the exact model given 0.7 s stopped after 1.5 s).
EXACT_MIN_S = 1.0
#: ... the relaxation often ends early (at a point below the plan, ``objective_target``), and
#: HiGHS neither stops inside the exact model's root nor at the watchdog's cancel: on
#: medium-compete at a 3 s limit the relaxation took 0.80-0.87 s and the exact model, given
#: 1.01-1.15 s, 2.07-2.19 s, so the solve ended at 3.97-4.24 s (past the limit's second).
EXACT_ROOT_FACTOR = 2.5


#: HiGHS options for the reduced MILP. Presolve off: on the fixed time-indexed models it
#: removes little and takes most of the time (week-7b: 1.4 s to 0.01% without, 12.3 s with),
#: and HiGHS does not check its time limit while it runs.
HIGHS_OPTIONS: dict[str, object] = {"presolve": "off"}


def no_plan_message(raw: RawSolution) -> str:
    """What a solve without a plan says, by the MILP's termination."""
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
    if raw.termination == Termination.OPTIMAL:
        return (
            f"the solver's answer ({raw.message}) is not a plan that meets every constraint "
            "(the pipeline's check of its point failed); please report it"
        )
    return f"the solver found no plan ({raw.message})"


def model_stats(mm: MilpModel) -> dict[str, float]:
    """The model's size: variables, constraints, nonzeros."""
    return {
        "variables": mm.lp.num_vars,
        "constraints": mm.lp.num_rows,
        "nonzeros": mm.lp.num_nonzeros,
    }


def solve_reduced(
    space: ConfigSpace,
    windows: Windows,
    masks: dict[tuple[str, int], np.ndarray],
    st: Incumbent,
    backend: str,
    verbose: bool,
    t0: float,
) -> str:
    """Build and solve the reduced MILP (of ``st.inst``) from the incumbent; returns the
    solver's name."""
    st.tracker.stage("milp", "reduced MILP")
    u0 = st.upper
    tb = time.perf_counter()
    try:
        mm = build(st.inst, space, windows, masks, st.single)
    except MemoryError:
        if st.plan is None:
            raise
        st.notes.append("building the reduced MILP ran out of memory; keeping the best plan")
        return "milp-bound"
    st.stats["build_s"] = time.perf_counter() - tb
    st.stats.update(model_stats(mm))
    start = point_from_schedule(mm, st.schedule) if st.schedule is not None else None
    if start is not None and mm.lp.violations(start):
        st.notes.append(
            "the incumbent is not a start of the reduced model: " + mm.lp.violations(start)[0]
        )
        start = None
    lower = st.bound
    loose = loose_columns(mm) if backend != "pyomo" else np.zeros(0, dtype=np.int64)
    relaxed = False  # the stage running (offer and on_event read it)
    points: list[np.ndarray] = []  # the relaxation's last point that was not a plan

    def combined(b: float | None) -> float:
        return lower if b is None else max(lower, min(u0, b))

    def offer(x: np.ndarray | None) -> None:
        if x is None:
            return
        if relaxed and np.any(np.abs(x[loose] - np.round(x[loose])) > INTEGRALITY_TOL):
            st.stats["relaxed_points"] = st.stats.get("relaxed_points", 0.0) + 1
            points[:] = [x]
            return
        st.offer(schedule_from_point(mm, x), "MILP")

    def on_event(kind: str, obj: float | None, bound: float | None, x: np.ndarray | None) -> None:
        offer(x)
        st.prove(combined(bound), "MILP bound (pauses relaxed)" if relaxed else "MILP bound")
        st.tracker.tick()

    name = "milp-bound"
    # the relaxation first (pauses continuous), then, if it ends without closing the gap,
    # the exact model with what is left
    for relaxed in [True, False] if len(loose) else [False]:
        left = st.left()
        if left <= 0.1 or st.closed:
            break
        root = EXACT_ROOT_FACTOR * st.stats.get("relaxed_solve_s", 0.0)
        if not relaxed and left < max(EXACT_MIN_S, root):
            # the exact model solves the same root LP again, and HiGHS does not stop inside
            # it: with less time than that takes it would overrun the limit
            st.notes.append(f"no time for the exact model after the relaxation ({left:.1f} s)")
            break
        if backend == "pyomo":
            raw = solve_pyomo(mm.lp, left, st.gap, st.threads, verbose)
            name = "milp-pyomo"
        else:
            raw = solve_highs(
                mm.lp,
                left,
                st.gap,
                st.threads,
                start,
                verbose,
                options=relaxed_options(st) if relaxed else HIGHS_OPTIONS,
                on_event=on_event,
                continuous=loose if relaxed else None,
            )
            name = "milp-highs"
        st.stats["solve_s"] = st.stats.get("solve_s", 0.0) + raw.runtime_s
        if relaxed:
            st.stats["relaxed_solve_s"] = raw.runtime_s
            why = {
                Termination.OPTIMAL: "",
                Termination.INTERRUPTED: ", until it held a point below the plan by more than "
                "the gap",
            }.get(raw.termination, f" ({raw.termination})")
            st.notes.append(
                f"the MILP with the pausable phases' hours continuous (a relaxation: its bound "
                f"holds) ran {raw.runtime_s:.1f} s{why}"
            )
        offer(raw.x)
        exact_end = raw.termination == Termination.OPTIMAL and not relaxed
        if exact_end and raw.bound is None and raw.objective is not None:
            raw.bound = raw.objective
        st.prove(combined(raw.bound), "MILP bound")
        if raw.termination == Termination.INFEASIBLE and st.plan is None:
            st.stats["milp_infeasible"] = 1.0
        if raw.termination == Termination.ERROR:
            st.notes.append(f"the MILP failed ({raw.message}); the best plan so far is kept")
            st.stats["milp_error"] = 1.0
        st.stats["milp_termination"] = float(list(Termination).index(raw.termination))
        # a relaxation that closed its own gap, or found a point it cannot prove the plan
        # against, proved nothing of a plan: if the exact model gets no time after it, the
        # solve stopped at its limit
        done = raw.termination == Termination.OPTIMAL or (
            relaxed and raw.termination == Termination.INTERRUPTED
        )
        st.raw = replace(raw, termination=Termination.TIME_LIMIT) if relaxed and done else raw
        if not done:
            break
        if relaxed and points and not st.closed:
            on_chosen(mm, points[-1], masks, st)
        if st.schedule is not None:  # the exact model starts from the best plan so far
            point = point_from_schedule(mm, st.schedule)
            start = None if point is None or mm.lp.violations(point) else point
    return name


#: Share of the time left that the MILP on the relaxation's configurations may take.
CHOSEN_SHARE = 0.25
#: The gap the MILP on the relaxation's configurations closes, as a share of the solve's.
CHOSEN_GAP_SHARE = 0.5


def on_chosen(
    mm: MilpModel,
    point: np.ndarray,
    masks: dict[tuple[str, int], np.ndarray],
    st: Incumbent,
) -> None:
    """Finds: the exact MILP with each phase on the configuration the relaxation's point
    chose (its ``z[p,c] = 1``; every configuration of a phase in segments), within
    CHOSEN_SHARE of the time left, offered to ``st``. The relaxation keeps every ``z``
    integral and relaxes only the pausable phases' hours, so its point names one
    configuration per phase; with those fixed the model is a small fraction of the reduced
    one, and its optimum is often within the gap of the relaxation's bound (month-70b
    re-planned after a lost region: 0.11% above it after 0.8 s, 0.03% after 2.8 s, where
    the reduced model's own search needed 7 s for 0.2%)."""
    chosen: dict[str, tuple[Config, ...]] = {}
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            chosen[name] = configs
            continue
        on = tuple(c for c in configs if point[mm.z[(name, c.index)]] > 0.5)
        if len(on) != 1:
            return
        chosen[name] = on
    if all(len(cs) == len(mm.space.by_phase[n]) for n, cs in chosen.items()):
        return  # the reduced model itself
    st.tracker.stage("milp", "MILP on the relaxation's configurations")
    sub = mm.space.restricted(chosen)
    keep = {(n, c.index) for n, cs in chosen.items() for c in cs}
    fixed = build(
        st.inst, sub, mm.windows, {k: m for k, m in masks.items() if k in keep}, st.single
    )
    limit = CHOSEN_SHARE * st.left()

    def on_event(kind: str, obj: float | None, bound: float | None, x: np.ndarray | None) -> None:
        if x is not None:
            st.offer(schedule_from_point(fixed, x), "MILP on the relaxation's configurations")
        st.tracker.tick()

    # it stops with a point the solve's bound proves within the gap (objective_target), or
    # at a tighter gap than the solve's against its own bound
    target = st.bound / (1 - st.gap) if st.gap < 1 and 0 < st.bound < math.inf else None
    options = {**HIGHS_OPTIONS, **({} if target is None else {"objective_target": target})}
    raw = solve_highs(
        fixed.lp,
        limit,
        CHOSEN_GAP_SHARE * st.gap,
        st.threads,
        options=options,
        on_event=on_event,
    )
    st.stats["chosen_solve_s"] = raw.runtime_s
    if raw.x is not None:
        st.offer(schedule_from_point(fixed, raw.x), "MILP on the relaxation's configurations")


def relaxed_options(st: Incumbent) -> dict[str, object]:
    """HiGHS options for the relaxation: with a plan of cost U, it stops once it holds a
    point below ``U (1 - gap)``, since its bound can then never prove the plan within the gap
    and the exact model had better have the time (``objective_target``)."""
    if st.plan is None:
        return dict(HIGHS_OPTIONS)
    u = st.plan.objective
    return {**HIGHS_OPTIONS, "objective_target": u - (st.gap + GAP_TOLERANCE) * abs(u)}
