"""Solve the CP-SAT model and return the common :class:`~planner.model.result.Result`.

Status mapping (CP-SAT -> termination, solution), :data:`CPSAT_TERMINATION`, then the one
rule of :mod:`planner.model.result` (optimal exactly when the bound proves the plan within the
requested gap): OPTIMAL (objective = bound, or stopped by ``relative_gap_limit``) ->
optimal, optimal; FEASIBLE -> time_limit (or interrupted when stopped well before the
limit), feasible; INFEASIBLE -> infeasible, none; MODEL_INVALID -> error, none; UNKNOWN ->
time_limit (or unknown when stopped well before it), none.

The bound reported is CP-SAT's best objective bound divided by the scale, minus the rounding
bound of the integer costs, so it stays a valid lower bound on the exact objective (none
when CP-SAT found no solution). If CP-SAT stops at its time limit without a solution and
its hint is a feasible schedule, the hint is returned as a feasible plan.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from formulations.exact.cpsat.model import CpsatModel, build
from formulations.exact.starttime.data import Pool, StartData, no_plan_message, objective_of
from formulations.pipeline import contiguous_entry, contiguous_finish, contiguous_start
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.options import SolveOptions
from planner.model.progress import Tracker
from planner.model.result import Result, Termination

SOLVER = "cpsat"

#: Parameters set on every solve (measured with benchmarks/cpsat_vs_milp.py).
DEFAULT_PARAMS: dict[str, object] = {"cp_model_probing_level": 0}

#: CP-SAT status -> (termination when it stopped at the time limit, termination when it
#: stopped before it, has a solution). OPTIMAL is split further by whether the gap is closed.
CPSAT_TERMINATION: dict[Any, tuple[Termination, Termination, bool]] = {
    cp_model.OPTIMAL: (Termination.OPTIMAL, Termination.OPTIMAL, True),
    cp_model.FEASIBLE: (Termination.TIME_LIMIT, Termination.INTERRUPTED, True),
    cp_model.INFEASIBLE: (Termination.INFEASIBLE, Termination.INFEASIBLE, False),
    cp_model.MODEL_INVALID: (Termination.ERROR, Termination.ERROR, False),
    cp_model.UNKNOWN: (Termination.TIME_LIMIT, Termination.UNKNOWN, False),
}


@dataclass(frozen=True)
class Progress:
    """One improving solution: wall seconds since the solve started, objective and bound
    (unscaled USD)."""

    seconds: float
    objective: float
    bound: float


class _Recorder(cp_model.CpSolverSolutionCallback):
    def __init__(
        self,
        scale: float,
        t0: float,
        out: list[Progress],
        tracker: Tracker | None = None,
        rounding: float = 0.0,
    ) -> None:
        super().__init__()
        self.scale, self.t0, self.out = scale, t0, out
        self.tracker, self.rounding = tracker, rounding

    def on_solution_callback(self) -> None:
        obj = self.objective_value / self.scale
        bound = self.best_objective_bound / self.scale
        self.out.append(Progress(time.perf_counter() - self.t0, obj, bound))
        if self.tracker is not None:
            # the scaled objective is within the rounding bound of the exact one
            self.tracker.offer_plan(obj + self.rounding)
            self.tracker.offer_bound(bound - self.rounding)


def canonical(cm: CpsatModel, choice: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """The same plan with interchangeable phases' assignments sorted by start, as the
    symmetry-breaking order requires."""
    out = dict(choice)
    for names in cm.groups:
        for name, assigned in zip(
            names, sorted((choice[n] for n in names), key=lambda a: a[1]), strict=True
        ):
            out[name] = assigned
    return out


def add_hint(
    cm: CpsatModel, choice: Mapping[str, tuple[int, int]], reserved: Mapping[Pool, int]
) -> None:
    """Hint every decision of a choice ``{phase: (table, start)}`` (made canonical)."""
    d, m = cm.data, cm.model
    choice = canonical(cm, choice)
    region: dict[str, str] = {}
    fams: set[str] = set()
    for name, (k, tau) in choice.items():
        tables = d.tables[name]
        m.add_hint(cm.start[name], tau)
        for j in range(len(tables)):
            m.add_hint(cm.present[(name, j)], j == k)
            if (name, j) in cm.y:
                for pos, s in enumerate(tables[j].starts.tolist()):
                    m.add_hint(cm.y[(name, j)][pos], j == k and s == tau)
        if name in cm.cfg:
            e = d.windows.start[name]
            width = max(int(t.starts[-1]) for t in tables) - e + 1
            m.add_hint(cm.cfg[name], k)
            m.add_hint(cm.index[name], k * width + tau - e)
            t = tables[k]
            m.add_hint(cm.cost[name], int(cm.scaled(t.cost[tau - int(t.starts[0])])))
        region[name] = tables[k].config.region
        fams.add(d.family(tables[k].config))
    for (name, r), lit in cm.region.items():
        m.add_hint(lit, region.get(name) == r)
    for i, w in cm.pair.items():
        tr = d.transfers[i]
        m.add_hint(w, region.get(tr.pred) == tr.src and region.get(tr.succ) == tr.dst)
    for fam, u in cm.used.items():
        m.add_hint(u, fam in fams)
    for pool, rv in cm.R.items():
        m.add_hint(rv, reserved.get(pool, 0))


def read_choice(
    cm: CpsatModel, solver: cp_model.CpSolver
) -> tuple[dict[str, tuple[int, int]], dict[Pool, int]]:
    """The solved model's choice: per phase (configuration table index, start hour) and the reserved
    GPUs committed per pool."""
    choice: dict[str, tuple[int, int]] = {}
    for name, tables in cm.data.tables.items():
        k = next(j for j in range(len(tables)) if solver.boolean_value(cm.present[(name, j)]))
        choice[name] = (k, int(solver.value(cm.start[name])))
    reserved = {pool: int(solver.value(r)) for pool, r in cm.R.items()}
    return choice, reserved


def solve_cpsat(
    inst: Instance,
    options: SolveOptions = SolveOptions(),
    *,
    space: ConfigSpace | None = None,
    mode: str = "auto",
    scale: float | None = None,
    redundant: bool = True,
    symmetry: bool = True,
    heuristic_start: bool = True,
    data: StartData | None = None,
    progress: list[Progress] | None = None,
    notes: tuple[str, ...] = (),
    seed: int = 0,
    params: Mapping[str, object] | None = None,
) -> Result:
    """Build and solve the CP-SAT model of a non-preemptive instance within
    ``options.time_limit`` (building included) to ``options.gap``.

    ``options.start``: the warm start, a contiguous schedule or a plan (e.g. from the MILP),
    given to CP-SAT as a solution hint; without one, the look-ahead (else greedy) schedule of
    :func:`formulations.exact.starttime.data.heuristic_schedule` when ``heuristic_start``.
    ``options.threads`` -> ``num_workers`` (None: all cores); ``options.backend`` is the
    MILPs' and not used here. ``progress`` collects every improving solution. ``params`` are
    further CP-SAT parameters by name (e.g. ``{"cp_model_probing_level": 1}``)."""
    o = options
    entry = contiguous_entry(inst, o, space, data, SOLVER)
    if isinstance(entry, Result):
        return entry
    data, tracker, t0 = entry
    cm = build(data, mode, scale, redundant, symmetry)
    note_list = [*notes, *cm.notes]
    stats: dict[str, float] = {
        "scale": cm.scale,
        "demand_scale": cm.demand_scale,
        "rounding_terms": cm.rounding_terms,
        "rounding_bound_usd": cm.rounding_bound,
        "starts": data.num_starts,
        "duplicate_configs": data.duplicates,
        "literal_mode": 1.0 if cm.mode == "literal" else 0.0,
        **{k: float(v) for k, v in cm.counts.items()},
    }
    fallback: tuple[dict[str, tuple[int, int]], dict[Pool, int]] | None = None
    st = contiguous_start(data, o.start, heuristic_start)
    if st is not None and st.choice is not None and st.objective is not None:
        add_hint(cm, st.choice, st.reserved)
        stats["hint_objective"] = st.objective
        note_list.append(f"CP-SAT hint: the {st.source} schedule ({st.objective:,.2f})")
        if st.violation is None:
            fallback = (st.choice, st.reserved)
    elif st is not None and o.start is not None:
        note_list.append("hint dropped: not a contiguous schedule inside the modelled windows")
    stats["build_s"] = time.perf_counter() - t0
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.max_time_in_seconds = max(0.05, o.time_limit - (time.perf_counter() - t0))
    prm.num_workers = int(o.threads) if o.threads else (os.cpu_count() or 1)
    prm.relative_gap_limit = float(o.gap)
    prm.log_search_progress = bool(o.verbose)
    prm.random_seed = int(seed)
    for key, value in {**DEFAULT_PARAMS, **(params or {})}.items():
        setattr(prm, key, value)
    out: list[Progress] = [] if progress is None else progress
    if st is not None and st.objective is not None and st.violation is None:
        tracker.offer_plan(st.objective, f"{st.source} hint")
    tracker.stage("cpsat", "CP-SAT")
    if o.on_progress is not None:

        def on_bound(b: float) -> None:
            tracker.offer_bound(b / cm.scale - cm.rounding_bound)

        solver.best_bound_callback = on_bound
    ts = time.perf_counter()
    status = solver.solve(cm.model, _Recorder(cm.scale, ts, out, tracker, cm.rounding_bound))
    wall = time.perf_counter() - ts
    stats["solve_s"] = wall
    stats["branches"] = float(solver.num_branches)
    stats["conflicts"] = float(solver.num_conflicts)
    if out:
        stats["first_solution_s"] = out[0].seconds
    res = _result(
        cm,
        solver,
        status,
        wall,
        prm.max_time_in_seconds,
        t0,
        tuple(note_list),
        stats,
        fallback,
        prm.num_workers,
        o.gap,
    )
    return tracker.finish(res)


def _result(
    cm: CpsatModel,
    solver: cp_model.CpSolver,
    status: cp_model.CpSolverStatus,
    wall: float,
    limit: float,
    t0: float,
    notes: tuple[str, ...],
    stats: dict[str, float],
    fallback: tuple[dict[str, tuple[int, int]], dict[Pool, int]] | None,
    threads: int,
    gap: float | None = None,
) -> Result:
    # CP-SAT stops without proof only at a limit or when interrupted
    hit_limit = wall >= 0.5 * limit
    at_limit, early, has_sol = CPSAT_TERMINATION.get(
        status, (Termination.TIME_LIMIT, Termination.UNKNOWN, False)
    )
    term = at_limit if hit_limit else early
    # without a solution CP-SAT's bound may be its unset default (0), not a proved bound
    bound = solver.best_objective_bound / cm.scale - cm.rounding_bound if has_sol else None
    optimal = False
    if status == cp_model.OPTIMAL:
        optimal = solver.objective_value <= solver.best_objective_bound
        term = Termination.OPTIMAL
    name = solver.status_name(status)
    if not has_sol and fallback is not None and term == Termination.TIME_LIMIT:
        choice, reserved = fallback
        exact = objective_of(cm.data, choice, reserved)
        notes = (*notes, "CP-SAT found no solution in time: the plan is its (feasible) hint")
        return contiguous_finish(
            cm.data,
            SOLVER,
            term,
            False,
            choice,
            reserved,
            bound,
            t0,
            f"hint only ({name})",
            notes,
            stats,
            exact,
            threads=threads,
            gap=gap,
        )
    if not has_sol:
        msg = no_plan_message(term)
        if term == Termination.ERROR:
            msg = f"CP-SAT rejected the model: {cm.model.validate()}"
        return contiguous_finish(
            cm.data,
            SOLVER,
            term,
            False,
            None,
            {},
            bound,
            t0,
            f"{msg} ({name})",
            notes,
            stats,
            threads=threads,
        )
    choice, reserved = read_choice(cm, solver)
    scaled_obj = solver.objective_value / cm.scale
    stats["solver_objective"] = scaled_obj
    exact = objective_of(cm.data, choice, reserved)
    stats["rounding_error_usd"] = abs(exact - scaled_obj)
    notes = (
        *notes,
        f"integer costs: {cm.scale:g} units per USD; rounding changes the "
        f"objective by at most {cm.rounding_bound:.3g} USD ({cm.rounding_terms} terms x "
        f"<= 0.5/{cm.scale:g}); this solution: {abs(exact - scaled_obj):.3g} USD",
    )
    return contiguous_finish(
        cm.data,
        SOLVER,
        term,
        optimal,
        choice,
        reserved,
        bound,
        t0,
        name,
        notes,
        stats,
        exact,
        threads=threads,
        gap=gap,
        also=(("hint", *fallback),) if fallback is not None else (),
    )
