"""Run a :class:`LinearProgram` on HiGHS: straight through highspy, or through Pyomo.

The time limit is honoured twice: HiGHS gets it as an option, and a watchdog cancels the
solve from outside if HiGHS overruns it (seen here by 100 s on a large model).

Threads: HiGHS runs its parallel work on one scheduler per process, created with the thread
count of the first solve; a later solve asking for another count would fail (HiGHS returns
"not set"). :func:`use_threads` rebuilds the scheduler when the count changes, so every solve
runs with the threads it asked for, and :class:`RawSolution` says how many that was.

Native statuses map to :class:`planner.result.Termination` through one table per backend:
:data:`HIGHS_TERMINATION` (highspy's model status) and :func:`pyomo_termination` (Pyomo's
termination condition).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np

from formulations.linear import LinearProgram
from planner.result import Termination

#: Seconds past the time limit before the watchdog cancels HiGHS.
GRACE_S = 2.0

_MS = highspy.HighsModelStatus
#: highspy model status -> termination (anything else: UNKNOWN).
HIGHS_TERMINATION: dict[Any, Termination] = {
    _MS.kOptimal: Termination.OPTIMAL,
    _MS.kTimeLimit: Termination.TIME_LIMIT,
    _MS.kIterationLimit: Termination.TIME_LIMIT,
    _MS.kSolutionLimit: Termination.TIME_LIMIT,
    _MS.kInterrupt: Termination.INTERRUPTED,
    _MS.kInfeasible: Termination.INFEASIBLE,
    _MS.kUnboundedOrInfeasible: Termination.INFEASIBLE,
    _MS.kSolveError: Termination.ERROR,
    _MS.kModelError: Termination.ERROR,
    _MS.kLoadError: Termination.ERROR,
    _MS.kPresolveError: Termination.ERROR,
    _MS.kPostsolveError: Termination.ERROR,
    _MS.kMemoryLimit: Termination.ERROR,
}


@dataclass
class RawSolution:
    """What a MILP run produced, in solver-neutral terms; ``threads`` it ran with."""

    termination: Termination
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    gap: float | None
    runtime_s: float
    message: str = ""
    threads: int = 1

    @property
    def status(self) -> str:
        return self.termination.value


_BANNER_SILENCED = False


def new_highs() -> highspy.Highs:
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


#: The thread count of this process's HiGHS scheduler (None: not created yet). HiGHS keeps
#: the scheduler itself; this mirrors it so that it is rebuilt only when a count changes.
_scheduler_threads: int | None = None


def use_threads(requested: int | None) -> int:
    """Make the next HiGHS solve in this process run with ``requested`` threads (default 1),
    rebuilding HiGHS's process-wide scheduler if it was created with another count; returns
    the count. Call it between solves, not while one runs."""
    global _scheduler_threads
    n = max(1, int(requested or 1))
    if _scheduler_threads is not None and _scheduler_threads != n:
        highspy.Highs.resetGlobalScheduler(True)
    _scheduler_threads = n
    return n


def load_arrays(
    h: highspy.Highs, a: dict[str, np.ndarray], offset: float, start: np.ndarray | None = None
) -> None:
    """Pass a LinearProgram's arrays (``LinearProgram.arrays()``, CSR rows) to ``h``, with an
    optional MIP start."""
    n_col, n_row = len(a["cost"]), len(a["row_lower"])
    model = highspy.HighsLp()
    model.num_col_ = n_col
    model.num_row_ = n_row
    model.col_cost_ = a["cost"]
    model.col_lower_ = a["lower"]
    model.col_upper_ = a["upper"]
    model.row_lower_ = a["row_lower"]
    model.row_upper_ = a["row_upper"]
    model.offset_ = offset
    model.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    model.a_matrix_.num_col_ = n_col
    model.a_matrix_.num_row_ = n_row
    model.a_matrix_.start_ = a["row_ptr"]
    model.a_matrix_.index_ = a["row_idx"]
    model.a_matrix_.value_ = a["row_val"]
    model.integrality_ = [
        highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
        for i in a["integer"]
    ]
    h.passModel(model)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(map(float, start))
        sol.value_valid = True
        h.setSolution(sol)


@dataclass(frozen=True)
class HighsJob:
    """One HiGHS solve: the model's arrays (``LinearProgram.arrays()``) and offset, and how
    to run it. Picklable, so it can be handed to a child process."""

    arrays: dict[str, np.ndarray]
    offset: float
    time_limit: float
    gap: float
    threads: int
    start: np.ndarray | None
    verbose: bool
    seed: int
    options: Mapping[str, object]


def _solve_arrays(
    job: HighsJob,
    on_incumbent: Callable[[float, float | None, np.ndarray], None] | None = None,
) -> RawSolution:
    """Solve in this process, reporting every improving MIP solution to ``on_incumbent``."""
    a, offset, time_limit, threads = job.arrays, job.offset, job.time_limit, job.threads
    n_col = len(a["cost"])
    h = new_highs()
    for key, value in job.options.items():
        h.setOptionValue(key, value)  # type: ignore[arg-type]
    h.setOptionValue("output_flag", bool(job.verbose))
    h.setOptionValue("time_limit", float(max(time_limit, 0.01)))
    h.setOptionValue("mip_rel_gap", float(job.gap))
    h.setOptionValue("threads", use_threads(threads))
    h.setOptionValue("random_seed", int(job.seed))
    load_arrays(h, a, offset, job.start)
    if on_incumbent is not None:

        def improving(e: Any) -> None:
            d = e.data_out
            bound = float(d.mip_dual_bound) if math.isfinite(d.mip_dual_bound) else None
            on_incumbent(
                float(d.objective_function_value), bound, np.asarray(d.mip_solution, dtype=float)
            )

        h.cbMipImprovingSolution.subscribe(improving)
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
    term = HIGHS_TERMINATION.get(ms, Termination.UNKNOWN)
    if cancelled and term in (Termination.INTERRUPTED, Termination.UNKNOWN):
        term = Termination.TIME_LIMIT  # the watchdog stopped it at the time limit
    if term == Termination.OPTIMAL:
        if bound is None and obj is not None:
            bound = obj
        if not n_col:
            obj = offset
    return RawSolution(term, x, obj, bound, mgap, runtime, h.modelStatusToString(ms), threads)


#: Models with at least this many nonzeros are solved in a child process that is killed at
#: the hard limit (time limit + grace) if HiGHS does not stop by itself; smaller ones in
#: this process, where HiGHS honours its limit closely.
ISOLATE_MIN_NONZEROS = 100_000


def solve_highs(
    lp: LinearProgram,
    time_limit: float,
    gap: float,
    threads: int | None = None,
    start: np.ndarray | None = None,
    verbose: bool = False,
    seed: int = 0,
    isolate: bool | None = None,
    options: Mapping[str, object] | None = None,
) -> RawSolution:
    """Solve with highspy from arrays (CSR rows), with an optional MIP start.

    With ``isolate`` (default: models of ISOLATE_MIN_NONZEROS or more) HiGHS runs in a child
    process that streams each improving solution back; if HiGHS overruns the limit by more
    than GRACE_S, the child is killed and the best solution streamed so far is returned with
    the last bound HiGHS reported, and a child that dies (out of memory) is reported as an
    error instead of taking the caller down. ``options`` are further HiGHS options (e.g.
    ``{"presolve": "off"}``)."""
    job = HighsJob(
        lp.arrays(),
        lp.offset,
        time_limit,
        gap,
        max(1, int(threads or 1)),
        start,
        verbose,
        seed,
        dict(options or {}),
    )
    if isolate is None:
        isolate = lp.num_nonzeros >= ISOLATE_MIN_NONZEROS
    return _solve_isolated(job) if isolate else _solve_arrays(job)


def _child(job: HighsJob, conn: Any) -> None:
    def send(obj: float, bound: float | None, x: np.ndarray) -> None:
        conn.send(("incumbent", obj, bound, x))

    try:
        raw = _solve_arrays(job, send)
        conn.send(("final", raw))
    except MemoryError:
        conn.send(("error", "HiGHS ran out of memory"))
    except Exception as e:  # reported to the parent, which turns it into a result
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _solve_isolated(job: HighsJob) -> RawSolution:
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    recv_conn, send_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, send_conn), daemon=True)
    time_limit, threads = job.time_limit, job.threads
    t0 = time.perf_counter()
    proc.start()
    send_conn.close()
    hard = t0 + time_limit + GRACE_S + 1.0  # the child also needs to start up
    best: tuple[float, float | None, np.ndarray] | None = None
    last_bound: float | None = None
    final: RawSolution | None = None
    error: str | None = None
    killed = False
    while True:
        left = hard - time.perf_counter()
        if left <= 0:
            proc.kill()
            killed = True
            break
        try:
            ready = recv_conn.poll(min(left, 0.2))
        except (EOFError, OSError):
            break
        if ready:
            try:
                msg = recv_conn.recv()
            except (EOFError, OSError):
                break
            if msg[0] == "incumbent":
                best = (msg[1], msg[2], msg[3])
                last_bound = msg[2] if msg[2] is not None else last_bound
            elif msg[0] == "final":
                final = msg[1]
                break
            else:
                error = msg[1]
                break
        elif not proc.is_alive():
            break
    proc.join(timeout=2.0)
    if proc.is_alive():
        proc.kill()
        proc.join(timeout=2.0)
    runtime = time.perf_counter() - t0
    if final is not None:
        final.runtime_s = runtime
        return final
    x = best[2] if best is not None else None
    obj = best[0] if best is not None else None
    g = None if obj is None or last_bound is None else abs(obj - last_bound) / max(abs(obj), 1e-9)
    if killed:
        return RawSolution(
            Termination.TIME_LIMIT,
            x,
            obj,
            last_bound,
            g,
            runtime,
            f"HiGHS overran its time limit by more than {GRACE_S:g} s and was "
            "stopped from outside; the best plan it had found is returned",
            threads,
        )
    why = error or (f"the HiGHS process died (exit code {proc.exitcode}; out of memory?)")
    return RawSolution(Termination.ERROR, x, obj, last_bound, g, runtime, why, threads)


def solve_pyomo(
    lp: LinearProgram,
    time_limit: float,
    gap: float,
    threads: int | None = None,
    verbose: bool = False,
) -> RawSolution:
    """Solve the Pyomo translation through Pyomo's current HiGHS interface."""
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.solvers.highs import Highs

    from formulations.pyomo_model import to_pyomo, values_of

    new_highs()  # silence the banner before Pyomo creates its own Highs
    m = to_pyomo(lp)
    t0 = time.perf_counter()
    n_threads = use_threads(threads)
    res = Highs().solve(
        m,
        time_limit=float(max(time_limit, 0.01)),
        rel_gap=float(gap),
        tee=bool(verbose),
        threads=n_threads,
        raise_exception_on_nonoptimal_result=False,
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
    term = pyomo_termination().get(tc, Termination.UNKNOWN)
    g = None
    if obj is not None and bound is not None:
        g = abs(obj - bound) / max(abs(obj), 1e-9)
    return RawSolution(term, x, obj, bound, g, runtime, str(tc), n_threads)


def pyomo_termination() -> dict[Any, Termination]:
    """Pyomo contrib.solver termination condition -> termination (anything else: UNKNOWN).
    A function, not a module constant, so that Pyomo loads only when it is used."""
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    return {
        TC.convergenceCriteriaSatisfied: Termination.OPTIMAL,
        TC.maxTimeLimit: Termination.TIME_LIMIT,
        TC.iterationLimit: Termination.TIME_LIMIT,
        TC.provenInfeasible: Termination.INFEASIBLE,
        TC.infeasibleOrUnbounded: Termination.INFEASIBLE,
        TC.interrupted: Termination.INTERRUPTED,
        TC.error: Termination.ERROR,
    }
