"""Work beside the main line on a second core: a function run in a forked child process
while the parent goes on, its result collected afterwards.

Two users:

- ``trainplan solve`` compares its plan with the lever-free baseline and the cheapest
  as-soon-as-possible plan lever by lever (:func:`planner.analysis.attribution.lever_chain`),
  none of which depends on the plan. On a machine with a core to spare it is computed while
  the solver runs: on the 100-phase lab quarter that comparison takes longer than a minute's
  solve. The child is forked after the instance is read and checked (it inherits the
  instance and its configuration space).
- the configuration space of a large instance enumerates the later half of its phases in a
  child while the parent enumerates the first (:func:`planner.model.configs._enumerate_all`).

:mod:`multiprocessing` flushes the standard streams before it forks, so nothing buffered is
written twice; the child never touches the terminal and sends back its result or its
exception through a pipe. Whatever goes wrong on the way (no ``fork`` on the platform, no
second core, a child that died) the caller computes the same thing in the parent: the answer
never depends on where it was computed.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


def spare_core(threads: int | None) -> bool:
    """Whether this process may use a second core beside a solve with ``threads`` solver
    threads (None: one): more usable cores than the solve takes."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores > (threads or 1)


def may_fork() -> bool:
    """Whether this process may start a child beside itself: the platform forks, it is not a
    :mod:`multiprocessing` child (the attribution's child, a grid's worker: they already
    share the cores, and a daemonic child may have none) and a second core is spare."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and multiprocessing.parent_process() is None
        and spare_core(1)
    )


class Beside(Generic[T]):
    """``fn()`` run in a forked child from construction on (when ``enabled`` and the platform
    forks); :meth:`result` waits for it, or computes ``fn()`` here when there is no child or
    it failed to answer."""

    def __init__(self, fn: Callable[[], T], enabled: bool = True) -> None:
        self.fn = fn
        self.proc: Any = None
        self.conn: Any = None
        if not enabled or "fork" not in multiprocessing.get_all_start_methods():
            return
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)

        def run() -> None:
            try:
                out: tuple[str, Any] = ("ok", fn())
            except Exception as e:  # sent back and raised in the parent
                out = ("raised", e)
            try:
                send.send(out)
            except Exception as e:  # unpicklable: the parent computes it again
                send.send(("failed", repr(e)))

        try:
            self.proc = ctx.Process(target=run, name="trainplan-beside", daemon=True)
            self.proc.start()
        except OSError:
            self.proc = None
            return
        send.close()
        self.conn = recv

    def result(self, here: Callable[[], T] | None = None) -> T:
        """The child's answer (its exception raised here), or the same computed here:
        ``here()`` when given (e.g. ``fn`` with a progress line the child could not draw),
        else ``fn()``."""
        again = self.fn if here is None else here
        if self.proc is None:
            return again()
        try:
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            kind, value = "failed", "no answer"
        finally:
            self.conn.close()
            self.proc.join(timeout=5)
            if self.proc.is_alive():
                self.proc.kill()
        if kind == "ok":
            return cast(T, value)
        if kind == "raised":
            raise value
        return again()

    def cancel(self) -> None:
        """Stop the child (the command ends without its result)."""
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
