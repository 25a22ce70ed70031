"""The local executor: a pool of worker processes that survives its workers.

Each worker is a process (``forkserver`` start method where the platform has it, else
``spawn``; never a plain ``fork`` of a parent that may hold threads and a database handle)
with its own pipe to the parent. It gets the base instance once, then scenarios one task
each (solved one at a time; the next is queued behind so the worker never idles), with the
solver on one thread. The parent waits on every pipe and every process sentinel together, so
it learns at once of

- a result: handed to ``on_result`` (which stores it) and the worker gets the next scenario;
- a dead worker (segfault, ``os._exit``, the kernel's OOM killer, ``kill -9``): its scenario
  is recorded as ``failed`` with how the process ended, and a new worker replaces it. A
  SIGKILL comes from the kernel's out-of-memory killer or from outside (``kill -9``, a
  supervisor); :func:`describe_exit` tells them apart by the kernel's count of out-of-memory
  kills (``oom_kill`` in /proc/vmstat) while the scenario ran, else by the worker's peak
  resident memory (sampled from /proc at least every :data:`SAMPLE_S` seconds) against its
  memory limit;
- a hung worker: past ``time_limit + grace`` seconds on one scenario it is killed
  (``SIGKILL``), its scenario recorded as ``timeout``, and replaced.

Memory: each worker sets ``RLIMIT_AS`` (its address space) to ``memory_gb``; an allocation
beyond it raises ``MemoryError`` in Python (recorded as ``failed``, the worker carries on)
or kills the worker in native code (recorded as a dead worker). Default: the machine's
physical memory divided by the number of workers.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

from planner.interfaces.grid.task import (
    FAILED,
    TIMEOUT,
    BasePayload,
    GridOptions,
    Task,
    empty_outcome,
    now,
    run_scenario,
)

OnResult = Callable[[dict[str, Any]], None]
#: Modules the forkserver imports once, so that a new worker starts in milliseconds.
PRELOAD = [
    "planner.interfaces.grid.task",
    "planner.solve",
    "formulations.exact.milp",
    "formulations.choose",
    "formulations.portfolio",
    "formulations.heuristics.baseline",
]
#: Give up when this many workers in a row die before taking any scenario.
MAX_START_FAILURES = 5
#: Seconds between samples of the workers' peak resident memory (at most).
SAMPLE_S = 1.0
#: A peak resident memory at or above this share of the worker's limit is "near" it.
NEAR_LIMIT = 0.8


def default_workers() -> int:
    """The CPUs this process may run on (its affinity, else the CPU count): the default number of
    local workers."""
    return max(
        1,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
    )


def physical_memory_gb() -> float | None:
    """The machine's RAM in GiB, None where it cannot be read: the default per-worker memory limit
    is a share of it."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def oom_kills() -> int | None:
    """Out-of-memory kills the kernel has made since boot (``oom_kill`` in /proc/vmstat,
    Linux >= 4.13, every cgroup's included); None where it cannot be read."""
    try:
        with open("/proc/vmstat", encoding="ascii") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def peak_rss_bytes(pid: int | None) -> int | None:
    """The peak resident memory of process ``pid`` so far (``VmHWM``, Linux); None when it
    cannot be read (gone, a zombie, not Linux)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def describe_exit(
    exitcode: int | None,
    *,
    oom_kills: int | None = None,
    peak_gb: float | None = None,
    limit_gb: float | None = None,
) -> str:
    """How a worker process ended, for the scenario's error column. For a SIGKILL, whether
    the kernel's out-of-memory killer sent it: ``oom_kills`` is how many out-of-memory kills
    the kernel made while the worker ran the scenario (None: unknown); else ``peak_gb``, its
    peak resident memory, against ``limit_gb``, its memory limit (near: at least
    :data:`NEAR_LIMIT` of it)."""
    if exitcode is None:
        return "the worker process vanished"
    if exitcode >= 0:
        return f"the worker process exited with status {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    head = f"the worker process was killed by {name}"
    if -exitcode != signal.SIGKILL:
        return head
    memory = ""
    if peak_gb is not None:
        memory = f"its peak resident memory was {peak_gb:.2f} GB"
        if limit_gb is not None:
            memory += f" of a {limit_gb:.2f} GB limit"
    if oom_kills is not None and oom_kills > 0:
        return (
            f"{head}, most likely by the kernel's out-of-memory killer ({oom_kills} "
            f"out-of-memory kill(s) on this machine while it ran{'; ' + memory if memory else ''})"
            "; lower --workers or --memory-gb, or simplify the scenario"
        )
    if oom_kills == 0:
        return (
            f"{head} from outside (kill -9, a supervisor or a job scheduler), not by the "
            "out-of-memory killer: the kernel recorded no out-of-memory kill while it ran"
            + (f"; {memory}" if memory else "")
        )
    if peak_gb is not None and limit_gb is not None:
        if peak_gb >= NEAR_LIMIT * limit_gb:
            return f"{head}, probably by the out-of-memory killer: {memory}, near the limit"
        return (
            f"{head} from outside, not for memory: {memory}, far below the limit "
            "(kill -9, a supervisor or a job scheduler)"
        )
    return f"{head} (by another process, or by the kernel's out-of-memory killer)"


def _context() -> BaseContext:
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return mp.get_context("spawn")


def _worker_main(
    conn: Connection, base: BasePayload, opts: GridOptions, memory_bytes: int | None
) -> None:
    """Worker loop: receive a :class:`Task`, send back its outcome; stop on ``None`` or when
    the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if memory_bytes:
        try:
            import resource

            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            lim = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
            resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
        except (ImportError, ValueError, OSError):
            pass
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        out = run_scenario(base, task, opts)
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return


@dataclass
class _Slot:
    """A worker and the scenarios sent to it, oldest (the one it is solving) first."""

    proc: BaseProcess
    conn: Connection
    queue: deque[Task] = field(default_factory=deque)
    #: When the worker started the oldest scenario (monotonic seconds, and as UTC text), and
    #: the kernel's out-of-memory kill count then (:func:`oom_kills`).
    t0: float = 0.0
    started_at: str = ""
    oom0: int | None = None
    #: The worker's peak resident memory seen so far (bytes; :func:`peak_rss_bytes`).
    peak: int | None = None

    def begin(self) -> None:
        """The worker starts the oldest scenario of its queue now."""
        self.t0, self.started_at, self.oom0 = time.monotonic(), now(), oom_kills()

    def sample(self) -> None:
        got = peak_rss_bytes(self.proc.pid)
        if got is not None:
            self.peak = max(self.peak or 0, got)

    def death(self, limit_gb: float | None) -> str:
        """How the worker ended, with what tells an out-of-memory kill from another."""
        after = oom_kills()
        return describe_exit(
            self.proc.exitcode,
            oom_kills=None if after is None or self.oom0 is None else after - self.oom0,
            peak_gb=None if self.peak is None else self.peak / 2**30,
            limit_gb=limit_gb,
        )


class LocalExecutor:
    """Solve scenarios in ``workers`` local processes (see the module docstring).

    Each worker holds up to ``prefetch`` scenarios: the one it is solving and the next, so it
    never waits for the parent to store a result before starting the next scenario. A dead or
    hung worker's current scenario is recorded; the ones queued behind it go back to the
    front of the queue."""

    name = "local"

    def __init__(
        self,
        workers: int | None = None,
        memory_gb: float | None = None,
        grace_s: float = 60.0,
        prefetch: int = 2,
    ) -> None:
        self.workers = workers or default_workers()
        if memory_gb is None:
            total = physical_memory_gb()
            memory_gb = None if total is None else max(1.0, total / self.workers)
        self.memory_gb = memory_gb if memory_gb else None
        self.grace_s = grace_s
        self.prefetch = max(1, prefetch)

    def run(
        self, base: BasePayload, opts: GridOptions, tasks: Sequence[Task], on_result: OnResult
    ) -> None:
        """Solve ``tasks``; call ``on_result(outcome)`` in this process, once per task, in
        the order they finish. Returns when every task has an outcome."""
        ctx = _context()
        pending: deque[Task] = deque(tasks)
        slots: list[_Slot] = []
        limit = opts.time_limit + self.grace_s
        mem = int(self.memory_gb * 2**30) if self.memory_gb else None
        start_failures = 0

        def spawn() -> _Slot:
            parent, child = ctx.Pipe(duplex=True)
            proc = ctx.Process(  # type: ignore[attr-defined]
                target=_worker_main,
                args=(child, base, opts, mem),
                daemon=True,
                name="trainplan-grid-worker",
            )
            proc.start()
            child.close()
            return _Slot(proc=proc, conn=parent)

        def feed(s: _Slot) -> None:
            while pending and len(s.queue) < self.prefetch:
                task = pending.popleft()
                try:
                    s.conn.send(task)
                except (BrokenPipeError, OSError):
                    pending.appendleft(task)  # the worker is dead; noticed below
                    return
                if not s.queue:
                    s.begin()
                s.queue.append(task)

        def retire(s: _Slot, kill: bool) -> Task | None:
            """Remove a worker; requeue what it had not started; return what it was on."""
            if kill and s.proc.is_alive():
                s.proc.kill()
            s.proc.join(timeout=5)
            s.conn.close()
            slots.remove(s)
            current = s.queue.popleft() if s.queue else None
            pending.extendleft(reversed(s.queue))
            s.queue.clear()
            return current

        try:
            while pending or any(s.queue for s in slots):
                busy = sum(bool(s.queue) for s in slots)
                while len(slots) < min(self.workers, busy + len(pending)):
                    slots.append(spawn())
                for s in slots:
                    feed(s)
                waiting = [s for s in slots if s.queue]
                timeout = 0.5
                if waiting:
                    timeout = max(0.0, min(s.t0 + limit for s in waiting) - time.monotonic())
                wait(
                    [s.conn for s in waiting] + [s.proc.sentinel for s in slots],
                    timeout=min(timeout, SAMPLE_S),
                )
                for s in slots:
                    if s.proc.is_alive():
                        s.sample()
                for s in list(slots):
                    got: list[dict[str, Any]] = []
                    while s.queue and _readable(s.conn):
                        try:
                            got.append(s.conn.recv())
                        except (EOFError, OSError):
                            break  # died mid-send; handled as a dead worker below
                        s.queue.popleft()
                        s.begin()
                        start_failures = 0
                    if got:
                        feed(s)  # before storing: the worker goes on meanwhile
                        for out in got:
                            on_result(out)
                    if not s.proc.is_alive():
                        pid, code = s.proc.pid, s.proc.exitcode
                        started = s.started_at
                        why = s.death(self.memory_gb or physical_memory_gb())
                        current = retire(s, kill=False)
                        if current is not None:
                            on_result(
                                empty_outcome(
                                    current,
                                    FAILED,
                                    f"{why} while solving this scenario",
                                    started,
                                    pid,
                                )
                            )
                        elif not got:
                            start_failures += 1
                            if start_failures >= MAX_START_FAILURES:
                                raise RuntimeError(
                                    f"{MAX_START_FAILURES} worker processes in a row died "
                                    f"before solving anything ({describe_exit(code)}); is "
                                    "--memory-gb too small?"
                                )
                    elif s.queue and time.monotonic() > s.t0 + limit:
                        pid, started = s.proc.pid, s.started_at
                        hung = retire(s, kill=True)
                        assert hung is not None
                        on_result(
                            empty_outcome(
                                hung,
                                TIMEOUT,
                                f"killed after {limit:g} s (time limit "
                                f"{opts.time_limit:g} s + grace {self.grace_s:g} s): "
                                "the worker did not return",
                                started,
                                pid,
                            )
                        )
        finally:
            _shut_down(slots)


def _shut_down(slots: list[_Slot]) -> None:
    """End every worker: idle ones are told to stop (None) and given two seconds together,
    busy ones (an error or interrupt left them mid-task) are killed; none outlives the run."""
    for s in list(slots):
        if not s.queue:
            with contextlib.suppress(BrokenPipeError, OSError):
                s.conn.send(None)
    deadline = time.monotonic() + 2.0
    for s in list(slots):
        if s.queue:
            s.proc.kill()
        s.proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if s.proc.is_alive():
            s.proc.kill()
            s.proc.join(timeout=5)
        s.conn.close()
    slots.clear()


def _readable(conn: Connection) -> bool:
    try:
        return conn.poll()
    except (EOFError, OSError):
        return False
