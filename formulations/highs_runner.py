"""Run a :class:`LinearProgram` on HiGHS: straight through highspy, or through Pyomo.

The time limit is honoured twice: HiGHS gets it as an option, and a watchdog cancels the
solve from outside if HiGHS overruns it (seen here by 100 s on a large model).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import highspy
import numpy as np

from formulations.linear import LinearProgram

#: HiGHS shares one thread pool per process: the first thread count used is kept.
_THREADS: int | None = None

#: Seconds past the time limit before the watchdog cancels HiGHS.
GRACE_S = 2.0


@dataclass
class RawSolution:
    """What a MILP run produced, in solver-neutral terms."""

    status: str  # optimal | time_limit | infeasible | interrupted | error | unknown
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    gap: float | None
    runtime_s: float
    message: str = ""


_BANNER_SILENCED = False


def _new_highs() -> highspy.Highs:
    """A Highs object; the first one in a process prints a banner on stdout, which would mix
    into JSON output, so it is created with stdout redirected."""
    global _BANNER_SILENCED
    if _BANNER_SILENCED:
        return highspy.Highs()
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _BANNER_SILENCED = True
    return h


def _threads(requested: int | None) -> int:
    global _THREADS
    if _THREADS is None:
        _THREADS = max(1, requested or 1)
    return _THREADS


def solve_highs(
    lp: LinearProgram, time_limit: float, gap: float, threads: int | None = None,
    start: np.ndarray | None = None, verbose: bool = False, seed: int = 0,
) -> RawSolution:
    """Solve with highspy from arrays (CSR rows), with an optional MIP start."""
    a = lp.arrays()
    h = _new_highs()
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
    h.setOptionValue("mip_rel_gap", float(gap))
    h.setOptionValue("threads", _threads(threads))
    h.setOptionValue("random_seed", int(seed))
    model = highspy.HighsLp()
    model.num_col_ = lp.num_vars
    model.num_row_ = lp.num_rows
    model.col_cost_ = a["cost"]
    model.col_lower_ = a["lower"]
    model.col_upper_ = a["upper"]
    model.row_lower_ = a["row_lower"]
    model.row_upper_ = a["row_upper"]
    model.offset_ = lp.offset
    model.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    model.a_matrix_.num_col_ = lp.num_vars
    model.a_matrix_.num_row_ = lp.num_rows
    model.a_matrix_.start_ = a["row_ptr"]
    model.a_matrix_.index_ = a["row_idx"]
    model.a_matrix_.value_ = a["row_val"]
    model.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                          for i in a["integer"]]
    h.passModel(model)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(map(float, start))
        sol.value_valid = True
        h.setSolution(sol)
    t0 = time.perf_counter()
    h.HandleUserInterrupt = True
    thread = h.startSolve()
    cancelled = False
    while True:
        done, _ = h.wait(0.05)
        if done:
            break
        if not cancelled and time.perf_counter() - t0 > time_limit + GRACE_S:
            h.cancelSolve()
            cancelled = True
    thread.join(timeout=5.0)
    runtime = time.perf_counter() - t0
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_sol else None
    obj = float(info.objective_function_value) if has_sol else None
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    mgap = float(info.mip_gap) if has_sol and math.isfinite(info.mip_gap) else None
    MS = highspy.HighsModelStatus
    if ms == MS.kOptimal:
        status = "optimal"
        if bound is None and obj is not None:
            bound = obj
    elif ms in (MS.kTimeLimit, MS.kIterationLimit, MS.kSolutionLimit):
        status = "time_limit"
    elif ms == MS.kInterrupt or cancelled:
        status = "time_limit" if cancelled else "interrupted"
    elif ms in (MS.kInfeasible, MS.kUnboundedOrInfeasible):
        status = "infeasible"
    elif ms in (MS.kSolveError, MS.kModelError, MS.kLoadError, MS.kPresolveError,
                MS.kPostsolveError, MS.kMemoryLimit):
        status = "error"
    else:
        status = "unknown"
    if status == "optimal" and not lp.num_vars:
        obj = lp.offset
    return RawSolution(status, x, obj, bound, mgap, runtime, h.modelStatusToString(ms))


def solve_pyomo(
    lp: LinearProgram, time_limit: float, gap: float, threads: int | None = None,
    verbose: bool = False,
) -> RawSolution:
    """Solve the Pyomo translation through Pyomo's current HiGHS interface."""
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    from pyomo.contrib.solver.solvers.highs import Highs

    from formulations.pyomo_model import to_pyomo, values_of

    _new_highs()  # silence the banner before Pyomo creates its own Highs
    m = to_pyomo(lp)
    t0 = time.perf_counter()
    res = Highs().solve(
        m, time_limit=float(max(time_limit, 0.01)), rel_gap=float(gap), tee=bool(verbose),
        threads=_threads(threads), raise_exception_on_nonoptimal_result=False,
        load_solutions=False,
    )
    runtime = time.perf_counter() - t0
    tc = res.termination_condition
    has_sol = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    x = None
    if has_sol:
        res.solution_loader.load_vars()
        x = values_of(m, lp)
    obj = float(res.incumbent_objective) if res.incumbent_objective is not None else None
    bound = res.objective_bound
    bound = float(bound) if bound is not None and math.isfinite(bound) else None
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        status = "optimal"
    elif tc in (TerminationCondition.maxTimeLimit, TerminationCondition.iterationLimit):
        status = "time_limit"
    elif tc in (TerminationCondition.provenInfeasible,
                TerminationCondition.infeasibleOrUnbounded):
        status = "infeasible"
    elif tc == TerminationCondition.interrupted:
        status = "interrupted"
    elif tc == TerminationCondition.error:
        status = "error"
    else:
        status = "unknown"
    g = None
    if obj is not None and bound is not None:
        g = abs(obj - bound) / max(abs(obj), 1e-9)
    return RawSolution(status, x, obj, bound, g, runtime, str(tc))
