"""Solve the start-time MILP on HiGHS and return the common
:class:`~planner.model.result.Result`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from formulations.exact.starttime.data import StartData, no_plan_message, objective_of
from formulations.exact.starttime.model import StartModel, build, choice_of_point, point_of
from formulations.lp.highs_runner import RawSolution, solve_highs, solve_pyomo
from formulations.pipeline import contiguous_entry, contiguous_finish, contiguous_start
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.options import SolveOptions
from planner.model.result import Result, Termination
from planner.model.schedule import Pool

SOLVER = "starttime-highs"

#: HiGHS options for the start-time MILP. Presolve off: on the benchmark's S instance HiGHS
#: spent 8.0 of 8.4 s in presolve (0.5 s in all without it), its time limit is not checked
#: during presolve (a 2 s limit ran 9-10 s), and the time-indexed LP needs no reductions.
HIGHS_OPTIONS: dict[str, Any] = {"presolve": "off"}


def model_stats(sm: StartModel) -> dict[str, float]:
    """The start-time model's size for the result's statistics: variables, constraints, nonzeros,
    starts and configurations merged as duplicates."""
    return {
        "variables": sm.lp.num_vars,
        "constraints": sm.lp.num_rows,
        "nonzeros": sm.lp.num_nonzeros,
        "starts": sm.data.num_starts,
        "duplicate_configs": sm.data.duplicates,
    }


def solve_starttime(
    inst: Instance,
    options: SolveOptions = SolveOptions(),
    *,
    space: ConfigSpace | None = None,
    data: StartData | None = None,
    notes: tuple[str, ...] = (),
    heuristic_start: bool = True,
) -> Result:
    """Build and solve the start-time MILP within ``options.time_limit`` to ``options.gap``.
    ``options.start`` (a contiguous schedule, e.g. CP-SAT's, or a plan) becomes a MIP start;
    a start that does not fit the model is reported in the plan notes and dropped.
    ``options.backend``: "highs" or "auto" (arrays into highspy; takes the MIP start) or
    "pyomo" (through Pyomo's HiGHS interface, no MIP start). Without a start, the look-ahead
    (else greedy) schedule is the MIP start when ``heuristic_start``. ``options.on_progress``
    hears the start's objective and HiGHS's incumbents and bounds. ``space`` / ``data``: the
    configuration space and start tables when already built."""
    o = options
    entry = contiguous_entry(inst, o, space, data, SOLVER)
    if isinstance(entry, Result):
        return entry
    data, tracker, t0 = entry
    sm = build(data)
    stats = model_stats(sm)
    stats["build_s"] = time.perf_counter() - t0
    note_list = list(notes)
    x0 = None
    st = contiguous_start(data, o.start, heuristic_start)
    also = (
        ((f"{st.source} start", st.choice, st.reserved),)
        if st is not None and st.choice is not None and st.violation is None
        else ()
    )
    if st is not None and st.choice is None:
        note_list.append(
            "MIP start dropped: it is not a contiguous schedule inside the modelled windows"
        )
    elif st is not None and st.violation is not None:
        note_list.append("MIP start dropped: " + st.violation)
    elif st is not None and st.choice is not None:
        x0 = point_of(sm, st.choice, st.reserved)
        bad = sm.lp.violations(x0)
        if bad:
            note_list.append("MIP start dropped: " + bad[0])
            x0 = None
        else:
            stats["start_objective"] = sm.lp.objective_of(x0)
            tracker.offer_plan(stats["start_objective"], f"{st.source} start")
            note_list.append(
                f"MIP start: the {st.source} schedule ({stats['start_objective']:,.2f})"
            )
    remaining = max(0.05, o.time_limit - (time.perf_counter() - t0))
    tracker.stage("milp", "start-time MILP")

    def on_event(kind: str, obj: float | None, bound: float | None, x: object) -> None:
        if kind == "incumbent":
            tracker.offer_plan(obj)
        tracker.offer_bound(bound)
        tracker.tick()

    if o.backend == "pyomo":
        raw = solve_pyomo(sm.lp, remaining, o.gap, o.threads, o.verbose)
    else:
        raw = solve_highs(
            sm.lp,
            remaining,
            o.gap,
            o.threads,
            x0,
            o.verbose,
            options=HIGHS_OPTIONS,
            on_event=on_event,
        )
        stats["highs_presolve_off"] = 1.0
    return tracker.finish(result_of(sm, raw, t0, tuple(note_list), stats, o.gap, also))


def result_of(
    sm: StartModel,
    raw: RawSolution,
    t0: float,
    notes: tuple[str, ...],
    stats: dict[str, float],
    gap: float | None = None,
    also: tuple[tuple[str, Mapping[str, tuple[int, int]], Mapping[Pool, int]], ...] = (),
) -> Result:
    """The start-time MILP's Result from HiGHS's answer; ``also``: the MIP start, kept as an
    alternative plan (:func:`formulations.pipeline.contiguous_finish`)."""
    term = raw.termination
    stats["solve_s"] = raw.runtime_s
    if raw.x is None:
        return contiguous_finish(
            sm.data,
            SOLVER,
            term,
            False,
            None,
            {},
            raw.bound,
            t0,
            f"{no_plan_message(term)} ({raw.message})",
            notes,
            stats,
            threads=raw.threads,
        )
    choice, reserved = choice_of_point(sm, raw.x)
    if raw.objective is not None:
        stats["solver_objective"] = raw.objective
    return contiguous_finish(
        sm.data,
        SOLVER,
        term,
        term == Termination.OPTIMAL,
        choice,
        reserved,
        raw.bound,
        t0,
        raw.message,
        notes,
        stats,
        objective_of(sm.data, choice, reserved),
        threads=raw.threads,
        gap=gap,
        also=also,
    )
