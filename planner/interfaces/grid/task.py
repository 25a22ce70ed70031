"""The work of one scenario, the same in a local worker process and in a Ray task.

A worker gets the base instance once (:class:`BasePayload`: the raw document, so nothing
but plain data crosses a process boundary), then one :class:`Task` at a time, and answers
with an outcome: a flat dict of store columns (:data:`planner.interfaces.grid.store.COLUMNS`).

Test hooks (for the test suite; not for production use). They are environment variables of
the process that starts the grid, read when the run starts and passed to the workers with
the solver options (:func:`hooks_from_env`). Each names a scenario by its ID, by ``axis=value``
or by a parameter value as text, or several separated by commas:

- ``TRAINPLAN_GRID_TEST_CRASH``: the worker calls ``os._exit(1)`` instead of solving, as a
  segfaulting solver would die, to check that the grid isolates the failure;
- ``TRAINPLAN_GRID_TEST_KILL``: the worker sends itself SIGKILL, as ``kill -9`` from outside
  would, to check that the grid does not blame the out-of-memory killer;
- ``TRAINPLAN_GRID_TEST_RAISE``: the worker raises ``RuntimeError`` instead of solving;
- ``TRAINPLAN_GRID_TEST_HANG``: the worker sleeps forever, to check the kill after
  ``time_limit + grace``;
- ``TRAINPLAN_GRID_TEST_ALLOC``: the worker allocates 4 GiB before solving, to check that
  the per-worker memory limit turns into a failed scenario.

and ``TRAINPLAN_GRID_TEST_DELAY=<seconds>`` makes every scenario sleep that long before
solving (outside ``solve_s``), so that a test can interrupt a grid mid-way.
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import socket
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.instance.errors import InstanceError
from planner.model.plan import COST_KEYS

if TYPE_CHECKING:
    from planner.instance.model import Instance

HOOK_CRASH = "TRAINPLAN_GRID_TEST_CRASH"
HOOK_KILL = "TRAINPLAN_GRID_TEST_KILL"
HOOK_RAISE = "TRAINPLAN_GRID_TEST_RAISE"
HOOK_HANG = "TRAINPLAN_GRID_TEST_HANG"
HOOK_ALLOC = "TRAINPLAN_GRID_TEST_ALLOC"
HOOK_DELAY = "TRAINPLAN_GRID_TEST_DELAY"

#: Statuses stored for a scenario. All are terminal; ``failed`` and ``timeout`` are redone
#: by ``--retry-failed``.
OK, FEASIBLE, INFEASIBLE, TIMEOUT, FAILED = "ok", "feasible", "infeasible", "timeout", "failed"
STATUSES = (OK, FEASIBLE, INFEASIBLE, TIMEOUT, FAILED)
RETRYABLE = (FAILED, TIMEOUT)


@dataclass(frozen=True)
class BasePayload:
    """The base instance as plain data (rebuilt with ``from_dict`` in each worker)."""

    raw: Mapping[str, Any]
    source: str
    base_dir: str
    key: str
    #: The folder besides ``base_dir`` that the instance's files may come from (its
    #: ``data_root``), so that workers read the same files the driver did.
    data_root: str | None = None

    @classmethod
    def of(cls, inst: Instance) -> BasePayload:
        """The base instance as workers receive it: its raw document, source and folders, and a hash
        that keys the worker's cache of the built instance."""
        root = None if inst.data_root is None else str(inst.data_root)
        key = hashlib.sha256(
            pickle.dumps((inst.raw, inst.source, str(inst.base_dir), root))
        ).hexdigest()
        return cls(
            raw=inst.raw, source=inst.source, base_dir=str(inst.base_dir), key=key, data_root=root
        )


@dataclass(frozen=True)
class GridOptions:
    """A grid's solver options for every scenario (the solver by name, the limits, the
    backend; planner.solve builds the solvers' SolveOptions record from them) and the test
    hooks (:func:`hooks_from_env`)."""

    solver: str = "auto"
    time_limit: float = 60.0
    gap: float = 1e-4
    backend: str = "auto"
    threads: int = 1
    #: ``TRAINPLAN_GRID_TEST_*`` variables set when the run started (see the module doc).
    hooks: tuple[tuple[str, str], ...] = ()


def hooks_from_env() -> tuple[tuple[str, str], ...]:
    """The test-hook variables set in this process's environment."""
    return tuple(
        sorted((k, v) for k, v in os.environ.items() if k.startswith("TRAINPLAN_GRID_TEST_") and v)
    )


@dataclass(frozen=True)
class Task:
    """One scenario to solve: its ID, the labels shown for it and the ``replace`` updates."""

    id: str
    params: Mapping[str, Any]
    updates: Mapping[str, Any]


_BASES: dict[str, Instance] = {}


def base_instance(base: BasePayload) -> Instance:
    """The base instance, built once per process."""
    inst = _BASES.get(base.key)
    if inst is None:
        from planner.instance.read import from_dict

        inst = from_dict(base.raw, base.source, Path(base.base_dir), data_root=base.data_root)
        _BASES.clear()
        _BASES[base.key] = inst
    return inst


def now() -> str:
    """UTC time as ISO text with microseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _hooked(var: str, task: Task, opts: GridOptions) -> bool:
    spec = dict(opts.hooks).get(var)
    if not spec:
        return False
    names = {task.id}
    for k, v in task.params.items():
        names.add(f"{k}={v}")
        names.add(str(v))
    return any(s.strip() in names for s in spec.split(","))


def status_of(termination: str, has_plan: bool) -> str:
    """Store status from the solver's termination: a plan proven optimal (or within the gap,
    or a heuristic's) is ``ok``; a plan cut short by the time limit is ``feasible``; no plan
    because none exists is ``infeasible``; no plan in time is ``timeout``; anything else is
    ``failed``."""
    if has_plan:
        return FEASIBLE if termination in ("time_limit", "interrupted", "unknown") else OK
    if termination in ("infeasible", "no_configuration"):
        return INFEASIBLE
    if termination == "time_limit":
        return TIMEOUT
    return FAILED


def empty_outcome(
    task: Task,
    status: str,
    error: str,
    started_at: str,
    pid: int | None = None,
    host: str | None = None,
) -> dict[str, Any]:
    """The outcome of a scenario that produced no result (crash, hang, exception)."""
    return {
        "id": task.id,
        "status": status,
        "error": error,
        "started_at": started_at,
        "finished_at": now(),
        "worker_pid": pid,
        "host": host,
    }


def run_scenario(base: BasePayload, task: Task, opts: GridOptions) -> dict[str, Any]:
    """Build the scenario's instance and solve it; never raises for a bad scenario (the
    error is in the outcome). ``solve_s`` is the wall time spent inside
    :func:`planner.solve.solve`, ``cpu_s`` the worker's CPU time in it (all threads);
    ``build_s`` the time to build the variant."""
    started = now()
    pid, host = os.getpid(), socket.gethostname()
    if _hooked(HOOK_CRASH, task, opts):
        os._exit(1)
    if _hooked(HOOK_KILL, task, opts):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    if _hooked(HOOK_HANG, task, opts):
        while True:
            time.sleep(3600)
    delay = dict(opts.hooks).get(HOOK_DELAY)
    if delay:
        time.sleep(float(delay))
    try:
        if _hooked(HOOK_RAISE, task, opts):
            raise RuntimeError(f"test hook {HOOK_RAISE} raised for scenario {task.id}")
        if _hooked(HOOK_ALLOC, task, opts):
            hog = bytearray(4 * 2**30)
            del hog
        from planner.solve import solve

        t0 = time.perf_counter()
        inst = base_instance(base).replace(task.updates)
        t1, c1 = time.perf_counter(), time.process_time()
        o = opts
        res = solve(inst, o.solver, o.time_limit, o.gap, o.threads, o.backend)
        t2, c2 = time.perf_counter(), time.process_time()
    except MemoryError:
        return empty_outcome(
            task,
            FAILED,
            "out of memory (the worker's memory limit, --memory-gb, was reached)",
            started,
            pid,
            host,
        )
    except InstanceError as e:
        return empty_outcome(task, FAILED, f"invalid scenario: {e}", started, pid, host)
    except Exception as e:
        tb = traceback.format_exc(limit=6)
        return empty_outcome(task, FAILED, f"{type(e).__name__}: {e}\n{tb}", started, pid, host)
    plan = res.plan
    status = status_of(res.termination.value, plan is not None)
    out: dict[str, Any] = {
        "id": task.id,
        "status": status,
        "termination": res.termination.value,
        "error": None if status in (OK, FEASIBLE) else (res.message or res.termination.value),
        "solver": res.solver,
        "objective": _finite(res.objective),
        "bound": _finite(res.bound),
        "gap": _finite(res.gap),
        "runtime_s": res.runtime_s,
        "solve_s": t2 - t1,
        "cpu_s": c2 - c1,
        "build_s": t1 - t0,
        "started_at": started,
        "worker_pid": pid,
        "host": host,
    }
    if plan is not None:
        for k in (*COST_KEYS, "total"):
            out[f"cost_{k}"] = float(plan.costs.get(k, 0.0))
        out["energy_kwh"] = plan.energy_kwh
        out["emissions_t"] = plan.emissions_t
        out["plan"] = res.to_json(indent=None)
        if plan.phases:
            out["makespan_h"] = max(p.end_hour for p in plan.phases)
    out["finished_at"] = now()
    return out


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
