"""Work beside the solve (planner/beside.py): the attribution's plan-free
part computed in a forked child while the parent solves, and the same answer whatever goes
wrong with the child."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from planner.analysis.attribution import BaselineError, attribute, lever_chain
from planner.beside import Beside, spare_core
from planner.instance import read
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[2]
PARENT = os.getpid()

needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork"), reason="the work beside the solve needs fork"
)


@needs_fork
def test_the_work_runs_in_a_child_and_comes_back() -> None:
    b = Beside(os.getpid)
    assert b.proc is not None
    pid = b.result()
    assert pid != PARENT and pid == b.proc.pid


def test_without_a_spare_core_it_runs_here() -> None:
    b = Beside(os.getpid, enabled=False)
    assert b.proc is None and b.result() == PARENT
    # computed here, the caller may say how (with a progress line the child could not draw)
    assert Beside(os.getpid, enabled=False).result(lambda: -1) == -1


@needs_fork
def test_an_answer_from_the_child_is_not_computed_again() -> None:
    assert Beside(os.getpid).result(lambda: -1) not in (-1, PARENT)


@needs_fork
def test_an_error_in_the_child_is_raised_here() -> None:
    def fails() -> None:
        raise BaselineError("no baseline for this one")

    with pytest.raises(BaselineError, match="no baseline for this one"):
        Beside(fails).result()


@needs_fork
def test_an_answer_that_cannot_cross_is_computed_here() -> None:
    def lock_of_pid() -> tuple[int, object]:
        return os.getpid(), threading.Lock()  # a lock does not pickle

    pid, _ = Beside(lock_of_pid).result()
    assert pid == PARENT


@needs_fork
def test_a_child_that_dies_is_computed_here() -> None:
    def dies_there() -> int:
        if os.getpid() != PARENT:
            os._exit(3)
        return os.getpid()

    assert Beside(dies_there).result() == PARENT


@needs_fork
def test_a_cancelled_child_is_gone() -> None:
    b = Beside(lambda: threading.Event().wait(60))
    b.cancel()
    assert b.proc is not None and not b.proc.is_alive()


def test_a_second_core_is_spare_only_beside_fewer_solver_threads() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert spare_core(None) == (cores > 1)
    assert not spare_core(cores)


@needs_fork
def test_the_attribution_from_the_child_is_the_attribution() -> None:
    inst = read(ROOT / "instances" / "week-7b.yaml")
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    chain = Beside(lambda: lever_chain(inst))
    got = attribute(inst, res.plan, chain=chain.result())
    assert got.to_dict() == attribute(inst, res.plan).to_dict()
    assert got.levers[-1].key == "time_shifting" and len(got.levers) == 10


@needs_fork
def test_what_was_printed_before_is_printed_once(tmp_path: Path) -> None:
    # text still in this process's buffer when the child is forked is written once: by this
    # process, not again when the child exits
    import subprocess
    import sys

    script = tmp_path / "once.py"
    script.write_text(
        "import sys\n"
        "from planner.beside import Beside\n"
        "sys.stdout.write('before the child ')\n"
        "print(Beside(lambda: 'answer').result())\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out == "before the child answer\n"


def test_the_work_waits_when_the_solver_takes_every_core() -> None:
    # CP-SAT keeps every core busy by default (also when "auto" picks it): nothing beside it
    from planner.interfaces.cli.solve import _solver_threads

    inst = read(ROOT / "instances" / "week-7b.yaml")  # auto picks the hourly MILP
    assert _solver_threads(inst, "cpsat", None) == os.cpu_count()
    assert not spare_core(_solver_threads(inst, "cpsat", None))
    assert _solver_threads(inst, "cpsat", 1) == 1
    assert _solver_threads(inst, "auto", None) is None
    assert _solver_threads(inst, "milp", None) is None


@needs_fork
def test_no_child_forks_beside_itself() -> None:
    """A child (the attribution's, a grid worker) never starts one of its own: it already
    shares the cores, and a daemonic child may have none."""
    from planner.beside import may_fork

    assert may_fork() == spare_core(1)
    inner = Beside(may_fork)
    assert inner.proc is not None and inner.result() is False


def _square_or_fail(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    return x * x


@needs_fork
def test_a_served_child_answers_one_call_after_another() -> None:
    """planner.beside.Served: the child answers each argument in turn (its pid shows where);
    one it fails on is made good here and stops it, and every later call runs here."""
    from planner.beside import Served

    s: Served[int, tuple[int, int]] = Served(lambda x: (_square_or_fail(x), os.getpid()))
    assert s.alive
    answers = []
    for x in (2, 3):
        assert s.submit(x)
        assert not s.submit(x)  # one call at a time
        answers.append(s.result(lambda: (-1, PARENT)))
    assert [a for a, _ in answers] == [4, 9]
    assert all(pid not in (PARENT, None) for _, pid in answers)
    assert s.submit(-1)
    assert s.result(lambda: (-1, PARENT)) == (-1, PARENT)  # failed there: made good here
    assert not s.alive and not s.submit(5)
    assert s.result(lambda: (25, PARENT)) == (25, PARENT)
    s.close()  # idempotent


@needs_fork
def test_a_served_child_ends_with_its_owner() -> None:
    from planner.beside import Served

    s: Served[int, int] = Served(_square_or_fail)
    proc = s.proc
    assert proc is not None and proc.is_alive()
    del s
    import gc

    gc.collect()
    proc.join(timeout=10)
    assert not proc.is_alive()


def _sleep_then(x: int) -> int:
    import time

    time.sleep(60)
    return x


@needs_fork
def test_a_child_that_does_not_answer_in_time_is_stopped_and_made_good() -> None:
    """A child waiting on a lock it inherited never answers: after ``wait`` seconds its
    work is computed here and the child stopped."""
    import time

    from planner.beside import Served

    t0 = time.perf_counter()
    b = Beside(lambda: _sleep_then(1))
    assert b.result(lambda: 2, wait=0.5) == 2
    assert not b.proc.is_alive()
    s: Served[int, int] = Served(_sleep_then)
    assert s.submit(3)
    assert s.result(lambda: 4, wait=0.5) == 4 and not s.alive
    assert time.perf_counter() - t0 < 30


def test_no_fork_beside_another_python_thread() -> None:
    import threading

    from planner.beside import may_fork

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not may_fork()
    finally:
        stop.set()
        t.join()


@needs_fork
def test_no_fork_while_the_attribution_has_the_spare_core() -> None:
    """While a Beside child works (the attribution beside ``trainplan solve``), it has the
    spare core: the enumeration and the DP do not fork beside it; once it has answered,
    they may again."""
    from planner.beside import may_fork

    b = Beside(lambda: _sleep_briefly(1.0))
    assert b.running() and not may_fork()
    assert b.result() == 1.0
    assert not b.running() and may_fork() == spare_core(1)


def _sleep_briefly(s: float) -> float:
    import time

    time.sleep(s)
    return s


def test_beside_another_thread_the_work_runs_here() -> None:
    """No child at all is forked while another Python thread runs (it may hold a lock the
    child would wait on for ever): Beside and Served compute here."""
    import threading

    from planner.beside import Served

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        b = Beside(os.getpid)
        assert b.proc is None and b.result() == PARENT
        s: Served[int, int] = Served(_square_or_fail)
        assert not s.alive and not s.submit(3) and s.result(lambda: 9) == 9
    finally:
        stop.set()
        t.join()
