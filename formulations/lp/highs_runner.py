"""Run a :class:`LinearProgram` on HiGHS: straight through highspy, or through Pyomo.

Two ways to run highspy, one result (:class:`RawSolution`):

- **in this process** (small models): HiGHS gets the time limit as an option, and a watchdog
  cancels the solve if HiGHS overruns it;
- **in a child process** (models of :data:`ISOLATE_MIN_NONZEROS` nonzeros or more), started
  as ``python -m formulations.lp.highs_child``: a fresh interpreter that imports only this
  package, never the caller's main module (multiprocessing's ``spawn`` and ``forkserver``
  re-run a library script that has no ``if __name__ == "__main__":`` guard). The child
  streams every improving solution and, every :data:`BOUND_EVERY_S` seconds, HiGHS's
  current dual bound (``mip_dual_bound`` of the MIP interrupt callback) back through a pipe;
  it stops itself at the deadline (the interrupt callback) and is killed if it overruns it
  by :data:`GRACE_S` (HiGHS does not check its limit during presolve), or if its resident
  memory passes the cap (:func:`memory_cap`). Whatever happens to the child, the caller gets
  the best solution and the best bound streamed so far. A caller that knows an isolated solve
  is coming starts its child ahead (:func:`prestart`): the child's interpreter and imports
  (about 0.35 s) then run beside the caller's work (fixing, building the model), and the
  solve takes the waiting child; on month-70b re-planned after a lost region the HiGHS stage
  went from 1.35 s to 0.92 s (a benchmark beside it), 0.86-0.90 s of it HiGHS itself before
  it skipped the feasibility jump with a start (:data:`WITH_START`: 0.39 s since).

``on_event(kind, objective, bound, x)`` (both ways) hears ``"incumbent"`` (an improving
solution, with its vector) and ``"bound"`` (HiGHS's primal and dual bounds, no vector).

Threads: HiGHS runs its parallel work on one scheduler per process, created with the thread
count of the first solve; a later solve asking for another count would fail (HiGHS returns
"not set"). :func:`use_threads` rebuilds the scheduler when the count changes, so every solve
runs with the threads it asked for, and :class:`RawSolution` says how many that was.

Native statuses map to :class:`planner.model.result.Termination` through one table per backend:
:data:`HIGHS_TERMINATION` (highspy's model status) and :func:`pyomo_termination` (Pyomo's
termination condition).
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np

from formulations.lp.linear import LinearProgram, substituted
from planner.model.result import Termination

#: Seconds past the deadline before the child is killed (the in-process watchdog cancels).
GRACE_S = 0.5
#: Seconds between the bound reports a running MIP sends.
BOUND_EVERY_S = 0.25

_MS = highspy.HighsModelStatus
#: highspy model status -> termination (anything else: UNKNOWN).
HIGHS_TERMINATION: dict[Any, Termination] = {
    _MS.kOptimal: Termination.OPTIMAL,
    _MS.kTimeLimit: Termination.TIME_LIMIT,
    _MS.kIterationLimit: Termination.TIME_LIMIT,
    _MS.kSolutionLimit: Termination.TIME_LIMIT,
    _MS.kInterrupt: Termination.INTERRUPTED,
    _MS.kObjectiveTarget: Termination.INTERRUPTED,  # option objective_target: a caller's stop
    _MS.kInfeasible: Termination.INFEASIBLE,
    _MS.kUnboundedOrInfeasible: Termination.INFEASIBLE,
    _MS.kSolveError: Termination.ERROR,
    _MS.kModelError: Termination.ERROR,
    _MS.kLoadError: Termination.ERROR,
    _MS.kPresolveError: Termination.ERROR,
    _MS.kPostsolveError: Termination.ERROR,
    _MS.kMemoryLimit: Termination.ERROR,
}

#: What a running solve reports: (kind, objective, bound, x or None).
EventFn = Callable[[str, float | None, float | None, np.ndarray | None], None]


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
        """The termination as its string value (what the result header records)."""
        return self.termination.value


_BANNER_SILENCED = False


def new_highs() -> highspy.Highs:
    """A Highs object; the first one in a process prints a banner on stdout, which would mix
    into JSON output, so it is created with stdout redirected."""
    global _BANNER_SILENCED
    if _BANNER_SILENCED:
        return highspy.Highs()
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
    to run it; ``deadline`` is a ``time.monotonic()`` instant (the system's monotonic clock,
    the same in a child process) by which the solve stops. Picklable."""

    arrays: dict[str, np.ndarray]
    offset: float
    time_limit: float
    gap: float
    threads: int
    start: np.ndarray | None
    verbose: bool
    seed: int
    options: Mapping[str, object]
    deadline: float


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


#: HiGHS options set when a MIP start is given and the caller does not set them: the
#: feasibility-jump heuristic searches for a first solution before the root LP, which the
#: start already is (month-70b re-planned after a lost region: 0.79 s with it, 0.39 s
#: without, the same bound in one node; HiGHS 1.16). Options this HiGHS does not know are
#: left alone.
WITH_START: dict[str, object] = {"mip_heuristic_run_feasibility_jump": False}


def apply_options(h: highspy.Highs, options: Mapping[str, object], start: bool) -> None:
    """Set the caller's ``options``, then, with a MIP start, those of :data:`WITH_START` the
    caller did not set and this HiGHS knows."""
    for key, value in options.items():
        h.setOptionValue(key, value)  # type: ignore[arg-type]
    if start:
        for key, value in WITH_START.items():
            if key not in options and h.getOptionType(key)[0] == highspy.HighsStatus.kOk:
                h.setOptionValue(key, value)  # type: ignore[arg-type]


def _solve_arrays(job: HighsJob, on_event: EventFn | None = None) -> RawSolution:
    """Solve in this process; report improving solutions and, every BOUND_EVERY_S, the bound
    to ``on_event``; stop at ``job.deadline`` (the interrupt callback, and a watchdog that
    cancels the solve GRACE_S later)."""
    a, offset, threads = job.arrays, job.offset, job.threads
    n_col = len(a["cost"])
    h = new_highs()
    apply_options(h, job.options, job.start is not None)
    h.setOptionValue("output_flag", bool(job.verbose))
    left = min(job.time_limit, job.deadline - time.monotonic())
    h.setOptionValue("time_limit", float(max(left, 0.01)))
    h.setOptionValue("mip_rel_gap", float(job.gap))
    h.setOptionValue("threads", use_threads(threads))
    h.setOptionValue("random_seed", int(job.seed))
    load_arrays(h, a, offset, job.start)
    last = [-math.inf]
    deadline = job.deadline

    def interrupt(e: Any) -> None:
        now = time.monotonic()
        if now >= deadline and e.data_in is not None:
            e.data_in.user_interrupt = True
        if on_event is not None and now - last[0] >= BOUND_EVERY_S:
            last[0] = now
            d = e.data_out
            on_event("bound", _finite(d.mip_primal_bound), _finite(d.mip_dual_bound), None)

    h.cbMipInterrupt.subscribe(interrupt)
    if on_event is not None:

        def improving(e: Any) -> None:
            d = e.data_out
            on_event(
                "incumbent",
                float(d.objective_function_value),
                _finite(d.mip_dual_bound),
                np.asarray(d.mip_solution, dtype=float),
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
        if not cancelled and time.monotonic() > deadline + GRACE_S:
            h.cancelSolve()
            cancelled = True
    thread.join(timeout=5.0)
    runtime = time.perf_counter() - t0
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_sol else None
    obj = float(info.objective_function_value) if has_sol else None
    bound = _finite(info.mip_dual_bound)
    mgap = float(info.mip_gap) if has_sol and math.isfinite(info.mip_gap) else None
    term = HIGHS_TERMINATION.get(ms, Termination.UNKNOWN)
    if term == Termination.INTERRUPTED and time.monotonic() >= deadline - 0.01:
        term = Termination.TIME_LIMIT  # our interrupt at the deadline
    if cancelled and term in (Termination.INTERRUPTED, Termination.UNKNOWN):
        term = Termination.TIME_LIMIT  # the watchdog stopped it at the time limit
    if term == Termination.OPTIMAL:
        if bound is None and obj is not None:
            bound = obj
        if not n_col:
            obj = offset
    return RawSolution(term, x, obj, bound, mgap, runtime, h.modelStatusToString(ms), threads)


#: Models with at least this many nonzeros are solved in a child process that is killed at
#: the hard limit (deadline + grace) if HiGHS does not stop by itself; smaller ones in this
#: process, where HiGHS honours its limit closely (its presolve is short on them).
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
    on_event: EventFn | None = None,
    memory_limit: float | None = None,
    continuous: np.ndarray | None = None,
) -> RawSolution:
    """Solve with highspy from arrays (CSR rows), with an optional MIP start, within
    ``time_limit`` seconds from now.

    With ``isolate`` (default: models of ISOLATE_MIN_NONZEROS or more) HiGHS runs in a child
    process (module docstring): if it overruns, dies or passes ``memory_limit`` bytes of
    resident memory (default :func:`memory_cap`), the best solution and the best bound it
    streamed are returned (termination TIME_LIMIT when it was stopped at the deadline, ERROR
    otherwise, with the reason). ``options`` are further HiGHS options (e.g.
    ``{"presolve": "off"}``); ``on_event`` hears incumbents and bounds as they come.

    Columns fixed at 0 (hours the bound excluded) are not passed to HiGHS: with its presolve
    off they would stay in every LP of the tree; nor are columns that a row of their own
    defines (:func:`formulations.lp.linear.substituted`). Points come back at full length.
    ``continuous``: columns solved as continuous although the model says integer (a
    relaxation: its bound holds for ``lp``, its points need not be points of ``lp``)."""
    sub, expand = substituted(lp)
    if continuous is not None and len(continuous):
        sub = dict(sub)
        sub["integer"] = sub["integer"].copy()
        sub["integer"][np.asarray(continuous, dtype=np.int64)] = False
    arrays, keep = without_fixed_zeros(sub)

    def full(x: np.ndarray | None) -> np.ndarray | None:
        if x is None:
            return x
        if keep is not None:
            out = np.zeros(len(keep))
            out[keep] = x
            x = out
        return x if expand is None else expand(x)

    job = HighsJob(
        arrays,
        lp.offset,
        time_limit,
        gap,
        max(1, int(threads or 1)),
        start if start is None or keep is None else np.asarray(start)[keep],
        verbose,
        seed,
        dict(options or {}),
        time.monotonic() + max(0.0, time_limit),
    )
    events = on_event
    if on_event is not None and (keep is not None or expand is not None):

        def events(kind: str, obj: float | None, bound: float | None, x: np.ndarray | None) -> None:
            on_event(kind, obj, bound, full(x))

    if isolate is None:
        isolate = len(arrays["row_idx"]) >= ISOLATE_MIN_NONZEROS
    if not isolate:
        raw = _solve_arrays(job, events)
    else:
        raw = _solve_isolated(job, events, memory_cap() if memory_limit is None else memory_limit)
    raw.x = full(raw.x)
    return raw


def without_fixed_zeros(
    arrays: dict[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """The model without its columns fixed at 0 (lower = upper = 0), which contribute
    nothing to any row or to the objective, and the mask of the columns kept (None: all)."""
    keep = ~((arrays["lower"] == 0.0) & (arrays["upper"] == 0.0))
    if keep.all():
        return arrays, None
    idx = arrays["row_idx"]
    entry = keep[idx]
    new = np.cumsum(keep) - 1
    kept = np.concatenate([[0], np.cumsum(entry)])
    out = dict(arrays)
    for k in ("cost", "lower", "upper", "integer"):
        out[k] = arrays[k][keep]
    out["row_idx"] = new[idx[entry]]
    out["row_val"] = arrays["row_val"][entry]
    out["row_ptr"] = kept[arrays["row_ptr"]]
    return out, keep


# ----------------------------------------------------------------------------- the child


def memory_cap() -> float:
    """Bytes of resident memory the HiGHS child may use before it is stopped:
    ``TRAINPLAN_MEMORY_GB`` if set, else 85% of the memory available when the solve starts
    (``MemAvailable`` of /proc/meminfo; 8 GB where that cannot be read)."""
    env = os.environ.get("TRAINPLAN_MEMORY_GB")
    if env:
        try:
            return float(env) * 1024**3
        except ValueError:
            pass
    return 0.85 * available_memory()


def available_memory() -> float:
    """``MemAvailable`` in bytes (8 GB where /proc/meminfo cannot be read)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 8.0 * 1024**3


def _rss(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return float(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0.0


def send_frame(fd: int, obj: object) -> None:
    """Write one length-prefixed pickle to a pipe (the child's side of the stream)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _FrameReader:
    """Reassembles length-prefixed pickles from a non-blocking pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.eof = False

    def read(self) -> list[Any]:
        try:
            chunk = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            chunk = None
        if chunk == b"":
            self.eof = True
        elif chunk:
            self.buf += chunk
        out = []
        while len(self.buf) >= 8:
            (n,) = struct.unpack("<Q", self.buf[:8])
            if len(self.buf) < 8 + n:
                break
            out.append(pickle.loads(bytes(self.buf[8 : 8 + n])))
            del self.buf[: 8 + n]
        return out


def _child_env() -> dict[str, str]:
    """The child's environment: the caller's, with this interpreter's import path (so that
    ``formulations`` is found however the caller found it) and stdout unbuffered."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([here, *paths])
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class _Child:
    """A started HiGHS child: the process, the read end of its event pipe, its stderr file
    and the process that started it (a forked copy of the caller must not use it)."""

    proc: subprocess.Popen[bytes]
    r: int
    err: Any
    owner: int

    def discard(self) -> None:
        """Stop the child and close what leads to it."""
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        os.close(self.r)
        self.err.close()


def _spawn(verbose: bool) -> _Child:
    """Start ``python -m formulations.lp.highs_child``; it imports and then waits for its job
    on stdin."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _Child.discard or the solve)
    out: Any = subprocess.DEVNULL
    if verbose:
        try:
            out = sys.stderr.fileno()  # HiGHS's log, kept off the caller's stdout
        except (AttributeError, OSError, ValueError):
            out = subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "formulations.lp.highs_child", str(w)],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            pass_fds=(w,),
            env=_child_env(),
            close_fds=True,
        )
    except BaseException:
        os.close(r)
        err.close()
        raise
    finally:
        os.close(w)
    return _Child(proc, r, err, os.getpid())


#: The child started ahead of the next isolated solve (:func:`prestart`), if any, and the
#: lock that lets one thread at a time take or replace it.
_spare: _Child | None = None
_spare_lock = threading.Lock()


def _take_spare() -> _Child | None:
    global _spare
    with _spare_lock:
        spare, _spare = _spare, None
    return spare


def prestart() -> None:
    """Start the child the next isolated solve will take, so that its interpreter and imports
    (about 0.35 s: numpy, highspy) run beside the caller's work (building the model) instead
    of before the solve. At most one waits; :func:`discard_spare` stops it, and it ends by
    itself when this process does (its stdin closes)."""
    global _spare
    with _spare_lock:
        if _spare is not None and _spare.owner == os.getpid():
            if _spare.proc.poll() is None:
                return
            _spare.discard()  # it died waiting: its pipe and log go with it
        _spare = _spawn(False)


def discard_spare() -> None:
    """Stop the child :func:`prestart` started, if no solve took it."""
    spare = _take_spare()
    if spare is not None and spare.owner == os.getpid():
        spare.discard()


atexit.register(discard_spare)


def _child_for(job: HighsJob) -> _Child:
    """The prestarted child when it is this process's, alive and quiet (a verbose job's
    child writes HiGHS's log to stderr), else a new one."""
    spare = _take_spare()
    if spare is not None and spare.owner == os.getpid():
        if not job.verbose and spare.proc.poll() is None:
            return spare
        spare.discard()
    return _spawn(job.verbose)


def _solve_isolated(job: HighsJob, on_event: EventFn | None, mem_cap: float) -> RawSolution:
    t0 = time.perf_counter()
    child = _child_for(job)
    proc, r, err = child.proc, child.r, child.err
    best: tuple[float, float | None, np.ndarray] | None = None
    last_bound: float | None = None
    final: RawSolution | None = None
    error: str | None = None
    why_killed: str | None = None
    reader = _FrameReader(r)
    try:
        assert proc.stdin is not None
        try:
            pickle.dump(job, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the child died before reading: reported below
        hard = job.deadline + GRACE_S
        next_mem = 0.0
        while final is None and error is None:
            now = time.monotonic()
            if now > hard:
                why_killed = "deadline"
                break
            if now >= next_mem:
                next_mem = now + 0.1
                if _rss(proc.pid) > mem_cap:
                    why_killed = "memory"
                    break
            ready, _, _ = select.select([r], [], [], min(0.1, max(0.0, hard - now)))
            if ready:
                for msg in reader.read():
                    kind = msg[0]
                    if kind == "incumbent":
                        best = (msg[1], msg[2], msg[3])
                        last_bound = msg[2] if msg[2] is not None else last_bound
                        if on_event is not None:
                            on_event("incumbent", msg[1], msg[2], msg[3])
                    elif kind == "bound":
                        last_bound = msg[2] if msg[2] is not None else last_bound
                        if on_event is not None:
                            on_event("bound", msg[1], msg[2], None)
                    elif kind == "final":
                        final = msg[1]
                    else:
                        error = msg[1]
                if reader.eof:
                    break
            elif proc.poll() is not None:
                break  # gone without closing the pipe (cannot happen; no wait forever)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        os.close(r)
    runtime = time.perf_counter() - t0
    if final is not None:
        final.runtime_s = runtime
        err.close()
        return final
    err.seek(0)
    tail = err.read()[-600:].decode(errors="replace").strip()
    err.close()
    x = best[2] if best is not None else None
    obj = best[0] if best is not None else None
    g = None if obj is None or last_bound is None else abs(obj - last_bound) / max(abs(obj), 1e-9)
    if why_killed == "deadline":
        return RawSolution(
            Termination.TIME_LIMIT,
            x,
            obj,
            last_bound,
            g,
            runtime,
            f"HiGHS overran its time limit by more than {GRACE_S:g} s and was stopped from "
            "outside; the best solution and bound it had reported are kept",
            job.threads,
        )
    if why_killed == "memory":
        why = (
            f"HiGHS passed the memory cap of {mem_cap / 1024**3:.1f} GB and was stopped; "
            "the best solution and bound it had reported are kept"
        )
    else:
        why = error or (
            f"the HiGHS process died (exit code {proc.returncode}; out of memory?)"
            + (f": {tail}" if tail else "")
        )
    return RawSolution(Termination.ERROR, x, obj, last_bound, g, runtime, why, job.threads)


def child_main(fd: int) -> int:
    """The child's work (``python -m formulations.lp.highs_child FD``): read a pickled
    :class:`HighsJob` from stdin, solve it, stream events and the final result to ``fd``. A
    prestarted child whose stdin closes before a job came (:func:`discard_spare`, or its
    parent ended) just ends."""
    try:
        job = pickle.load(sys.stdin.buffer)
    except EOFError:
        os.close(fd)
        return 0

    def send(kind: str, obj: float | None, bound: float | None, x: np.ndarray | None) -> None:
        send_frame(fd, (kind, obj, bound, x))

    try:
        raw = _solve_arrays(job, send)
        send_frame(fd, ("final", raw))
    except MemoryError:
        send_frame(fd, ("error", "HiGHS ran out of memory"))
    except Exception as e:  # reported to the parent, which turns it into a result
        send_frame(fd, ("error", f"{type(e).__name__}: {e}"))
    finally:
        os.close(fd)
    return 0


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

    from formulations.lp.pyomo_model import to_pyomo, values_of

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
