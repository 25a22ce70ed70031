"""Solver failures: a solver that raises, runs out of memory, or stops at its time limit
without any plan gives a clear :class:`~planner.model.result.Result` from ``planner.solve.solve``
(termination ``error`` or ``time_limit``, no plan, a message saying what happened and what to
do), ``trainplan solve`` exits 3 with that message and no traceback (1 when the instance is
infeasible, 2 for bad input, 130 when interrupted), and in a grid only the failing scenario's
row fails.

The failures are simulated with monkeypatching at the points where the real ones happen:
inside ``formulations.lp.highs_runner.solve_highs`` (creating the HiGHS object), inside Pyomo's
HiGHS interface, in CP-SAT's ``solve``, and in the model builders (MemoryError). Heuristics
are switched off where they would otherwise hand over a plan before the solver runs.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import pytest
from ortools.sat.python import cp_model
from typer.testing import CliRunner
from typer.testing import Result as CliResult

import formulations.exact.cpsat.solve as cpsat_solve
import formulations.exact.milp.run as milp_run
import formulations.exact.starttime.solve as starttime_solve
import formulations.lp.highs_runner as highs_runner
import formulations.pipeline as pipeline
from formulations.heuristics.lookahead import LookAhead
from formulations.lp.highs_runner import RawSolution
from planner.instance import Instance, read
from planner.interfaces.cli.app import app
from planner.interfaces.cli.exits import EXIT_INFEASIBLE, EXIT_INPUT, EXIT_SOLVER
from planner.interfaces.grid.api import grid_frame, resolve_options, run_grid
from planner.interfaces.grid.spec import build_instance, load_grid
from planner.interfaces.grid.task import BasePayload, GridOptions, Task, run_scenario
from planner.model.options import SolveOptions
from planner.model.result import Result, SolutionStatus, Termination

#: The modules (``planner.solve`` the attribute is the function, re-exported by ``planner``).
planner_solve = importlib.import_module("planner.solve")
cli_solve = importlib.import_module("planner.interfaces.cli.solve")  # registers the command

DATA = Path(__file__).parents[1] / "data"
TINY = DATA / "tiny.yaml"

CRASH = "HiGHS: simulated crash"
NO_PLAN_IN_TIME = (
    "no plan found in time: the solver stopped at its time limit without a "
    "feasible plan; raise --time-limit or relax the instance"
)
OUT_OF_MEMORY = (
    "the solver ran out of memory; try a coarser instance, fewer configurations "
    "(options.gpu_counts) or a shorter horizon"
)


def raiser(exc: BaseException) -> Callable[..., NoReturn]:
    def fail(*args: Any, **kwargs: Any) -> NoReturn:
        raise exc

    return fail


@pytest.fixture
def tiny() -> Instance:
    return read(TINY)


def without_heuristics(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hourly MILP gets no incumbent (no look-ahead, greedy or relaxation plan), so it
    must build and solve its model."""
    monkeypatch.setattr(pipeline, "lookahead_schedule", lambda *a, **k: None)
    monkeypatch.setattr(LookAhead, "schedule", lambda *a, **k: None)
    monkeypatch.setattr(pipeline, "greedy", lambda *a, **k: None)
    monkeypatch.setattr(pipeline, "relaxed_plan", lambda *a, **k: None)


def no_schedule(*args: Any, **kwargs: Any) -> tuple[None, str]:
    return None, "none"


def time_limit_without_solution(
    lp: Any, time_limit: float, *args: Any, **kwargs: Any
) -> RawSolution:
    """What solve_highs returns when HiGHS stops at its time limit before any solution."""
    return RawSolution("time_limit", None, None, None, None, time_limit, "Time limit reached")


def crash_inside_highs(monkeypatch: pytest.MonkeyPatch, backend: str, exc: BaseException) -> None:
    """``exc`` raised inside the real solve_highs (creating the Highs object) or inside
    Pyomo's HiGHS interface."""
    if backend == "highs":
        monkeypatch.setattr(highs_runner, "new_highs", raiser(exc))
    else:
        from pyomo.contrib.solver.solvers.highs import Highs

        monkeypatch.setattr(Highs, "solve", raiser(exc))


# ----------------------------------------------------------------------------- library


@pytest.mark.parametrize("backend", ["highs", "pyomo"])
def test_a_solver_that_raises_gives_an_error_result(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance, backend: str
) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, backend, RuntimeError(CRASH))
    res = planner_solve.solve(tiny, solver="milp", backend=backend, time_limit=5)
    assert res.termination == Termination.ERROR
    assert res.status == SolutionStatus.NONE and res.plan is None and res.objective is None
    assert res.message.startswith(f"the solver failed: RuntimeError: {CRASH}")
    assert res.runtime_s >= 0


def test_a_solver_error_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tiny: Instance) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, "highs", RuntimeError(CRASH))
    res = planner_solve.solve(tiny, solver="milp", backend="highs", time_limit=5)
    assert "--solver" in res.message and "--backend" in res.message, res.message


def test_an_unexpected_solver_exception_is_an_error_result(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance
) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, "highs", KeyError("column 17"))
    res = planner_solve.solve(tiny, solver="milp", backend="highs", time_limit=5)
    assert res.termination == Termination.ERROR and res.plan is None
    assert "KeyError" in res.message


@pytest.mark.parametrize("solver", ["milp", "starttime", "cpsat"])
def test_running_out_of_memory_gives_an_error_result(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance, solver: str
) -> None:
    # each formulation's model builder raises MemoryError, as a huge model would
    without_heuristics(monkeypatch)
    module = {"milp": milp_run, "starttime": starttime_solve, "cpsat": cpsat_solve}[solver]
    monkeypatch.setattr(module, "build", raiser(MemoryError()))
    res = planner_solve.solve(tiny, solver=solver, time_limit=5)
    assert res.termination == Termination.ERROR and res.plan is None
    assert res.message == OUT_OF_MEMORY


def test_milp_time_limit_without_a_plan(monkeypatch: pytest.MonkeyPatch, tiny: Instance) -> None:
    without_heuristics(monkeypatch)
    monkeypatch.setattr(milp_run, "solve_highs", time_limit_without_solution)
    res = planner_solve.solve(tiny, solver="milp", backend="highs", time_limit=1)
    assert res.termination == Termination.TIME_LIMIT
    assert res.status == SolutionStatus.NONE and res.plan is None and res.gap is None
    assert res.message == NO_PLAN_IN_TIME
    # HiGHS proved no bound: the bounds of the relaxations are still valid and reported (the
    # DP bound, never below the separable one)
    lower = res.stats["lower_bound"]
    assert math.isfinite(lower) and lower > 0
    assert res.bound == res.stats["dp_bound"] >= lower


def test_starttime_time_limit_without_a_plan(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance
) -> None:
    monkeypatch.setattr(pipeline, "heuristic_schedule", no_schedule)
    monkeypatch.setattr(starttime_solve, "solve_highs", time_limit_without_solution)
    res = planner_solve.solve(tiny, solver="starttime", time_limit=1)
    assert res.termination == Termination.TIME_LIMIT and res.plan is None
    assert res.message.startswith(NO_PLAN_IN_TIME), res.message


def test_cpsat_time_limit_without_a_plan(monkeypatch: pytest.MonkeyPatch, tiny: Instance) -> None:
    # CP-SAT runs to its limit and stops with status UNKNOWN (no solution, no proof): the
    # wall time passes, then the real search runs with no deterministic time left
    real = cp_model.CpSolver.solve

    def unknown_at_the_limit(self: cp_model.CpSolver, model: Any, *args: Any) -> Any:
        time.sleep(self.parameters.max_time_in_seconds)
        self.parameters.max_deterministic_time = 0.0
        status = real(self, model, *args)
        assert status == cp_model.UNKNOWN
        return status

    monkeypatch.setattr(pipeline, "heuristic_schedule", no_schedule)
    monkeypatch.setattr(cp_model.CpSolver, "solve", unknown_at_the_limit)
    res = planner_solve.solve(tiny, solver="cpsat", time_limit=0.3)
    assert res.termination == Termination.TIME_LIMIT and res.plan is None
    assert res.message == f"{NO_PLAN_IN_TIME} (UNKNOWN)"


# ----------------------------------------------------------------------------- the CLI


def run_solve(*args: str) -> CliResult:
    return CliRunner().invoke(app, ["solve", str(TINY), *args])


def assert_clean(res: CliResult, code: int, message: str) -> None:
    """Exit ``code``, ``message`` on stderr, no plan on stdout, no traceback anywhere."""
    assert res.exit_code == code, res.output
    assert isinstance(res.exception, SystemExit)
    err = " ".join(res.stderr.split())
    assert message in err, res.stderr
    assert "plan for" not in res.stdout
    assert "Traceback" not in res.output and "internal error" not in res.output


@pytest.mark.parametrize("backend", ["highs", "pyomo"])
def test_cli_solver_crash_exits_3(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, backend, RuntimeError(CRASH))
    res = run_solve("--solver", "milp", "--backend", backend, "--time-limit", "5")
    assert_clean(res, EXIT_SOLVER, f"no plan: the solver failed: RuntimeError: {CRASH}")


def test_cli_no_plan_in_time_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    without_heuristics(monkeypatch)
    monkeypatch.setattr(milp_run, "solve_highs", time_limit_without_solution)
    res = run_solve("--solver", "milp", "--backend", "highs", "--time-limit", "1")
    assert_clean(res, EXIT_SOLVER, f"no plan: {NO_PLAN_IN_TIME}")


def test_cli_out_of_memory_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    without_heuristics(monkeypatch)
    monkeypatch.setattr(milp_run, "build", raiser(MemoryError()))
    res = run_solve("--solver", "milp", "--time-limit", "5")
    assert_clean(res, EXIT_SOLVER, f"no plan: {OUT_OF_MEMORY}")


def test_cli_out_of_memory_outside_the_solver_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    # MemoryError outside planner.solve (here: while reading the instance) is caught by
    # `guarded`
    monkeypatch.setattr(cli_solve, "load_instance", raiser(MemoryError()))
    res = run_solve("--time-limit", "5")
    assert_clean(
        res,
        EXIT_SOLVER,
        "error: out of memory; try a coarser --slot, fewer configurations or a smaller instance",
    )


def test_cli_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, "highs", KeyboardInterrupt())
    res = run_solve("--solver", "milp", "--backend", "highs", "--time-limit", "5")
    assert_clean(res, 130, "interrupted")


def test_cli_unexpected_solver_exception_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    without_heuristics(monkeypatch)
    crash_inside_highs(monkeypatch, "highs", KeyError("column 17"))
    res = run_solve("--solver", "milp", "--backend", "highs", "--time-limit", "5")
    assert_clean(res, EXIT_SOLVER, "no plan: the solver failed: KeyError")


def test_cli_infeasible_exits_1(tmp_path: Path) -> None:
    # finetune's fastest configuration needs 3 h (8 A100s); a deadline at hour 2 leaves 2 h
    f = tmp_path / "late.yaml"
    f.write_text(TINY.read_text().replace("    deadline: 48\n", "    deadline: 2\n"))
    res = CliRunner().invoke(app, ["solve", str(f), "--time-limit", "5"])
    assert_clean(
        res,
        EXIT_INFEASIBLE,
        "no plan: finetune: the fastest configuration needs "
        "3 h but the window from release (hour 0) to deadline "
        "(hour 2) is 2 h",
    )
    assert f"explain the conflict with: trainplan explain {f}" in " ".join(res.stderr.split())


def test_cli_bad_input_exits_2() -> None:
    path = DATA / "bad_cycle.yaml"
    res = CliRunner().invoke(app, ["solve", str(path), "--time-limit", "5"])
    assert_clean(res, EXIT_INPUT, f"{path}: phases: precedence cycle: prep -> finetune -> prep")


# ----------------------------------------------------------------------------- grids


class InProcess:
    """A grid executor that solves scenarios one by one in this process, so that a
    monkeypatched solver applies (the local executor's worker processes would not see it)."""

    name = "in-process"
    workers = 1

    def run(
        self,
        base: BasePayload,
        opts: GridOptions,
        tasks: list[Task],
        on_result: Callable[[dict[str, Any]], None],
    ) -> None:
        for task in tasks:
            on_result(run_scenario(base, task, opts))


def test_a_failing_scenario_fails_only_its_row(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """grid_small.yaml: fleet (both, east_only) x east price (x1, x2) x east PUE (1.2, 1.5).
    In the east_only, PUE 1.5 scenarios the solver crashes (x1) or runs out of memory (x2);
    in east_only, PUE 1.2, x2 it stops at its time limit without a plan. The five others
    are solved as if nothing had happened."""
    spec = load_grid(DATA / "grid_small.yaml")
    real = planner_solve._dispatch

    def dispatch(inst: Instance, solver: str, *args: Any) -> Result:
        east_only = float(inst.capacity[("west", "A100")].max()) == 0
        pue, price = inst.region("east").pue, float(inst.price["east"][0])
        if east_only and pue == 1.5:
            raise RuntimeError(CRASH) if price == 60 else MemoryError()
        if east_only and price == 120:
            return Result.no_plan(solver, Termination.TIME_LIMIT, NO_PLAN_IN_TIME, runtime_s=1.0)
        return real(inst, solver, *args)

    monkeypatch.setattr(planner_solve, "_dispatch", dispatch)
    opts = resolve_options(spec, time_limit=5)
    store = tmp_path / "g.sqlite"
    report = run_grid(spec, store, InProcess(), opts)
    assert report.solved == {"ok": 5, "failed": 2, "timeout": 1}
    df = grid_frame(spec, store).set_index("id")
    by_params = {
        (
            sc.params["fleet"],
            sc.params["regions.east.electricity*"],
            sc.params["regions.east.pue"],
        ): sc
        for sc in spec.scenarios
    }
    crash = df.loc[by_params[("east_only", 1, 1.5)].id]
    oom = df.loc[by_params[("east_only", 2, 1.5)].id]
    slow = df.loc[by_params[("east_only", 2, 1.2)].id]
    assert crash["status"] == "failed"
    assert crash["error"].startswith(f"the solver failed: RuntimeError: {CRASH}")
    assert (oom["status"], oom["error"]) == ("failed", OUT_OF_MEMORY)
    assert (slow["status"], slow["error"]) == ("timeout", NO_PLAN_IN_TIME)
    for key, sc in by_params.items():
        if key in (("east_only", 1, 1.5), ("east_only", 2, 1.5), ("east_only", 2, 1.2)):
            objective: Any = df.loc[sc.id, "objective"]
            assert pd.isna(objective)
            continue
        row = df.loc[sc.id]
        assert row["status"] == "ok", (key, row["error"])
        direct = real(
            build_instance(spec.base, sc),
            opts.solver,
            SolveOptions(time_limit=opts.time_limit, gap=opts.gap, threads=1, backend=opts.backend),
        )
        assert direct.objective is not None
        assert row["objective"] == pytest.approx(direct.objective, rel=1e-6)
