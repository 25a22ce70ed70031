"""The Ray executor: the same scenarios, solved as tasks on an existing Ray cluster.

Install with ``pip install -e .[ray]``. The cluster is the one already initialised in this
process (``ray.init`` called by the caller), else the one at ``address`` or
``$RAY_ADDRESS``; with neither, Ray attaches to a cluster started on this machine with
``ray start --head`` or starts a private one for the run. Every node needs ``trainplan``
installed (the task function is imported there by name).

Each scenario is one task (``num_cpus=1``, ``max_retries=0``: a failure is recorded, not
retried behind the user's back) running :func:`planner.interfaces.grid.task.run_scenario`, the
function the local workers run; the base instance is put in the object store once. At most
``workers`` tasks are in flight (default: the cluster's CPUs), so results arrive, and are
stored by this process, as they finish. A task that raises or whose worker dies is recorded
as ``failed`` with Ray's reason; a task running past ``time_limit + grace`` seconds (counted
from submission) is cancelled with ``force=True`` (its worker is killed) and recorded as
``timeout``. ``memory_gb`` becomes the task's Ray ``memory`` resource (Ray's memory monitor
enforces it); Ray workers are reused across tasks, so no ``RLIMIT_AS`` is set in them.

Attaching. Ray 2.60 starts clusters with token authentication by default, and a process
attaches to one only with ``RAY_AUTH_MODE=token`` set (the token from ``~/.ray/auth_token``,
``RAY_AUTH_TOKEN_PATH`` or ``RAY_AUTH_TOKEN``); without it Ray retries for about 20 s and
raises a bare "Failed to connect". :func:`attach_failure` says which it was: nothing answers
at the address, or the cluster answers and refused this process (then: set
``RAY_AUTH_MODE=token``, or check the token).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from planner.interfaces.grid import task as tk
from planner.interfaces.grid.runner import OnResult
from planner.interfaces.grid.task import BasePayload, GridOptions, Task

INSTALL_HINT = (
    "the Ray executor needs Ray: pip install -e '.[ray]' (or pip install 'trainplan[ray]')"
)


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be reached."""


def import_ray() -> ModuleType:
    """Import Ray lazily, with an install hint when it is missing."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(INSTALL_HINT) from None
    return ray


#: What to set to attach to a cluster with token authentication (Ray 2.60's default).
AUTH_HINT = (
    "Ray 2.60 clusters use token authentication by default, and attaching to one needs "
    "RAY_AUTH_MODE=token in this process's environment (with the cluster's token in "
    "~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN): set RAY_AUTH_MODE=token "
    "and run again"
)


def attach_failure(address: str | None, error: BaseException) -> str:
    """Why attaching to the Ray cluster at ``address`` (None: the one on this machine)
    failed, in trainplan's words (see the module docstring)."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    where = address or "this machine"
    msg = f"cannot attach to a Ray cluster at {where}: {first}"
    token = os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "token"
    answers = _answers(address) if address else None
    if answers is False:
        return (
            f"{msg}; nothing answers at {address}: is the cluster running? (`ray start "
            "--head` prints its address)"
        )
    if token:
        return (
            f"{msg}; RAY_AUTH_MODE=token is set: check that RAY_AUTH_TOKEN, "
            "RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token holds this cluster's token"
        )
    if answers:
        return f"{msg}; the cluster answers but refused this process: {AUTH_HINT}"
    return f"{msg}; if a cluster runs with token authentication: {AUTH_HINT}"


def _answers(address: str) -> bool | None:
    """Whether something accepts TCP connections at ``host:port`` (None: not such an
    address)."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
            return True
    except OSError:
        return False


class RayExecutor:
    """Solve scenarios as Ray tasks (see the module docstring)."""

    name = "ray"

    def __init__(
        self,
        workers: int | None = None,
        address: str | None = None,
        memory_gb: float | None = None,
        grace_s: float = 60.0,
    ) -> None:
        self.requested_workers = workers
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.memory_gb = memory_gb or None
        self.grace_s = grace_s
        self._ray: ModuleType | None = None
        self._owns_session = False

    @property
    def workers(self) -> int:
        """The workers asked for, else the Ray cluster's CPUs."""
        if self.requested_workers:
            return self.requested_workers
        ray = self.connect()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def connect(self) -> ModuleType:
        """Attach to the cluster (once); raises :class:`RayUnavailable` with the reason."""
        if self._ray is not None:
            return self._ray
        ray = import_ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as e:
                raise RayUnavailable(attach_failure(self.address, e)) from None
            self._owns_session = True
        self._ray = ray
        return ray

    def close(self) -> None:
        """Disconnect if this executor made the connection (never stops a cluster)."""
        if self._ray is not None and self._owns_session:
            self._ray.shutdown()
        self._ray = None
        self._owns_session = False

    def run(
        self, base: BasePayload, opts: GridOptions, tasks: Sequence[Task], on_result: OnResult
    ) -> None:
        """Solve the tasks as Ray tasks (one CPU each, no retry, the memory limit when set), the
        base instance put once; each outcome goes to ``on_result`` in this process as it
        finishes."""
        ray = self.connect()
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if self.memory_gb:
            options["memory"] = int(self.memory_gb * 2**30)
        remote = ray.remote(**options)(tk.run_scenario)
        base_ref = ray.put(base)
        limit = opts.time_limit + self.grace_s
        todo = list(reversed(tasks))
        inflight: dict[Any, tuple[Task, float, str]] = {}
        width = self.workers
        try:
            while todo or inflight:
                while todo and len(inflight) < width:
                    task = todo.pop()
                    inflight[remote.remote(base_ref, task, opts)] = (
                        task,
                        time.monotonic(),
                        tk.now(),
                    )
                first = min(t0 for _, t0, _ in inflight.values())
                ready, _ = ray.wait(
                    list(inflight),
                    num_returns=1,
                    timeout=max(0.0, first + limit - time.monotonic()),
                )
                for ref in ready:
                    task, _t0, started = inflight.pop(ref)
                    on_result(self._collect(ray, ref, task, started))
                for ref, (task, t0, started) in list(inflight.items()):
                    if time.monotonic() > t0 + limit:
                        ray.cancel(ref, force=True)
                        del inflight[ref]
                        on_result(
                            tk.empty_outcome(
                                task,
                                tk.TIMEOUT,
                                f"cancelled after {limit:g} s (time limit "
                                f"{opts.time_limit:g} s + grace {self.grace_s:g} s)",
                                started,
                            )
                        )
        finally:
            for ref in inflight:
                with contextlib.suppress(Exception):  # best effort on the way out
                    ray.cancel(ref, force=True)
            self.close()

    @staticmethod
    def _collect(ray: ModuleType, ref: Any, task: Task, started: str) -> dict[str, Any]:
        try:
            out: dict[str, Any] = ray.get(ref)
            return out
        except ray.exceptions.OutOfMemoryError:
            why = "out of memory: Ray's memory monitor killed the task"
        except ray.exceptions.WorkerCrashedError:
            why = "the Ray worker process died while solving this scenario"
        except ray.exceptions.RayError as e:
            text = str(e).strip().splitlines()
            why = f"Ray: {type(e).__name__}: {text[0] if text else ''}"
        return tk.empty_outcome(task, tk.FAILED, why, started)
