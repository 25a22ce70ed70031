"""Work beside the main line on a second core: a function run in a forked child process
while the parent goes on, its result collected afterwards.

Three users:

- ``trainplan solve`` compares its plan with the lever-free baseline and the cheapest
  as-soon-as-possible plan lever by lever (:func:`planner.analysis.attribution.lever_chain`),
  none of which depends on the plan. On a machine with a core to spare it is computed while
  the solver runs: on the 100-phase lab quarter that comparison takes longer than a minute's
  solve. The child is forked after the instance is read and checked (it inherits the
  instance and its configuration space).
- the configuration space of a large instance enumerates every other phase in a child
  while the parent enumerates the rest (:func:`planner.model.configs._enumerate_all`);
- the Lagrangian relaxation of a large instance evaluates half of its precedence components
  in a child that serves every evaluation of the ascent (:class:`Served`,
  :meth:`formulations.bounds.lagrange.Relaxation.evaluate`).

:mod:`multiprocessing` flushes the standard streams before it forks, so nothing buffered is
written twice; the child never touches the terminal and sends back its result or its
exception through a pipe. Whatever goes wrong on the way (no ``fork`` on the platform, no
second core, a child that died) the caller computes the same thing in the parent: the answer
never depends on where it was computed.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
import os
import threading
import weakref
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
    share the cores, and a daemonic child may have none), it runs no other Python thread
    (:func:`_forks_safely`), no :class:`Beside` child is at work (it has the spare core) and
    a second core is spare."""
    return (
        _forks_safely()
        and multiprocessing.parent_process() is None
        and not any(b.running() for b in _BESIDE)
        and spare_core(1)
    )


def _forks_safely() -> bool:
    """The platform forks and no other Python thread runs: a thread may hold a lock when the
    process forks (a console or a log being written), and the child would wait for it for
    ever. Every child here is forked only then."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


#: The :class:`Beside` objects of this process: while one's child runs (the attribution
#: beside ``trainplan solve``), it has the spare core, and :func:`may_fork` says no.
_BESIDE: weakref.WeakSet[Beside[Any]] = weakref.WeakSet()


def patience(own_s: float) -> float:
    """How long to wait for a child's half of work after this process took ``own_s`` for its
    own: twice that and 10 s more. A child that has not answered by then is stopped and its
    half computed here (a child that waits on a lock never answers)."""
    return 2.0 * own_s + 10.0


def _reply(conn: Any, compute: Callable[[], Any], raise_there: bool) -> None:
    """In a child: send ``("ok", compute())`` through ``conn``; if it raises, ``("raised",
    e)`` for the parent to raise, or ``("failed", repr(e))`` for it to compute again; an
    answer that cannot be sent (unpicklable) is ``("failed", ...)``."""
    try:
        out: tuple[str, Any] = ("ok", compute())
    except Exception as e:
        out = ("raised", e) if raise_there else ("failed", repr(e))
    try:
        conn.send(out)
    except Exception as e:
        conn.send(("failed", repr(e)))


def _started(ctx: Any, target: Callable[[], None], name: str) -> Any:
    """A daemonic child of the fork context running ``target``, started; None when the
    system refuses one. The child freezes what it inherited out of its collector's passes
    (:mod:`planner.collector`): the parent's instance, spaces and modules, which it keeps to
    its end."""

    def child() -> None:
        gc.freeze()
        target()

    try:
        proc = ctx.Process(target=child, name=name, daemon=True)
        proc.start()
    except OSError:
        return None
    return proc


class Beside(Generic[T]):
    """``fn()`` run in a forked child from construction on (when ``enabled`` and the platform
    forks); :meth:`result` waits for it, or computes ``fn()`` here when there is no child or
    it failed to answer."""

    def __init__(self, fn: Callable[[], T], enabled: bool = True) -> None:
        self.fn = fn
        self.proc: Any = None
        self.conn: Any = None
        if not enabled or not _forks_safely():
            return
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        self.proc = _started(ctx, lambda: _reply(send, fn, raise_there=True), "trainplan-beside")
        if self.proc is None:
            return
        send.close()
        self.conn = recv
        _BESIDE.add(self)

    def running(self) -> bool:
        """Whether its child is still at work: alive, with no answer sent yet."""
        if self.proc is None or self.conn is None or self.conn.closed:
            return False
        try:
            return bool(self.proc.is_alive() and not self.conn.poll())
        except OSError:
            return False

    def result(self, here: Callable[[], T] | None = None, wait: float | None = None) -> T:
        """The child's answer (its exception raised here), or the same computed here:
        ``here()`` when given (e.g. ``fn`` with a progress line the child could not draw),
        else ``fn()``; also when the child has not answered within ``wait`` seconds (None:
        as long as it takes)."""
        again = self.fn if here is None else here
        if self.proc is None:
            return again()
        try:
            if wait is not None and not self.conn.poll(wait):
                raise TimeoutError
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            kind, value = "failed", "no answer"
        finally:
            self.conn.close()
        if kind == "failed" and self.proc.is_alive():
            self.proc.kill()  # it did not answer: no use waiting for it to end
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
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
        if self.conn is not None:
            self.conn.close()


A = TypeVar("A")


def _stop(proc: Any, conn: Any) -> None:
    """End a :class:`Served` child: ask it to stop, then make sure."""
    with contextlib.suppress(Exception):
        conn.send(None)
    with contextlib.suppress(Exception):
        conn.close()
    proc.join(timeout=2)
    if proc.is_alive():
        proc.kill()
        proc.join(timeout=5)


class Served(Generic[A, T]):
    """``fn(arg)`` served by one forked child for one argument after another: :meth:`submit`
    sends an argument (``None`` is reserved), :meth:`result` waits for its answer. A child
    that fails to answer, or whose answer cannot be sent, is stopped, and that call and every
    later one are computed here (``here``): the answer never depends on where it was
    computed. :meth:`close` stops the child, as does collecting the object; the child is
    daemonic, so it never outlives this process."""

    def __init__(self, fn: Callable[[A], T]) -> None:
        self.proc: Any = None
        self.conn: Any = None
        self.pending = False
        if not _forks_safely():
            return
        ctx = multiprocessing.get_context("fork")
        mine, theirs = ctx.Pipe(duplex=True)

        def serve() -> None:
            mine.close()
            while True:
                try:
                    arg = theirs.recv()
                except (EOFError, OSError):
                    return
                if arg is None:
                    return
                # failed: the parent computes it again (and raises it there)
                _reply(theirs, functools.partial(fn, arg), raise_there=False)

        self.proc = _started(ctx, serve, "trainplan-served")
        if self.proc is None:
            return
        theirs.close()
        self.conn = mine
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.conn)

    @property
    def alive(self) -> bool:
        """Whether a child serves the calls (else they are computed here)."""
        return self.proc is not None

    def submit(self, arg: A) -> bool:
        """Send ``arg`` to the child; False (and nothing sent) when there is none, or it is
        gone."""
        if self.proc is None or self.pending:
            return False
        try:
            self.conn.send(arg)
        except Exception:
            self.close()
            return False
        self.pending = True
        return True

    def result(self, here: Callable[[], T], wait: float | None = None) -> T:
        """The answer to the argument submitted, or ``here()`` when the child did not give
        it, or not within ``wait`` seconds (None: as long as it takes); the child is then
        stopped."""
        if not self.pending:
            return here()
        self.pending = False
        try:
            if wait is not None and not self.conn.poll(wait):
                raise TimeoutError
            kind, value = self.conn.recv()
        except Exception:
            kind, value = "failed", "no answer"
        if kind == "ok":
            return cast(T, value)
        self.close()
        return here()

    def close(self) -> None:
        """Stop the child (idempotent); later calls are computed here."""
        if self.proc is not None:
            self._finalizer()
            self.proc = None
            self.pending = False
