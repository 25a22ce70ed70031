"""One solver interface (issue 25): the start-time MILP is ``--solver starttime`` (the old
name ``highs``, which is also a MILP backend, is taken with a deprecation note), the warm
start is ``start`` everywhere, and every solver entry point takes one options record."""

from __future__ import annotations

import pytest
from builders import DATA, assert_valid
from typer.testing import CliRunner

import planner.interfaces.cli.solve  # noqa: F401  (registers the command on app)
from planner.instance.model import Instance
from planner.interfaces.cli.app import app
from planner.solve import RENAMED, SOLVERS, solve, solver_name

NOTE = "--solver highs is now --solver starttime"


def test_starttime_is_a_solver_and_highs_its_old_name() -> None:
    assert "starttime" in SOLVERS and "highs" not in SOLVERS
    assert RENAMED == {"highs": "starttime"}
    assert solver_name("starttime") == ("starttime", None)
    new, note = solver_name("highs")
    assert new == "starttime" and note is not None and note.startswith(NOTE)
    with pytest.raises(ValueError, match="starttime"):
        solver_name("gurobi")


def test_the_old_name_solves_the_same_with_a_deprecation_note(tiny: Instance) -> None:
    new = solve(tiny, solver="starttime", time_limit=20, gap=0.0)
    old = solve(tiny, solver="highs", time_limit=20, gap=0.0)
    assert new.plan is not None and old.plan is not None
    assert_valid(tiny, old.plan)
    # the same model: the same solver name and objective; only the old name has the note
    assert old.solver == new.solver and old.solver.startswith("starttime")
    assert old.objective == pytest.approx(new.objective, rel=1e-9)
    assert any(n.startswith(NOTE) for n in old.notes), old.notes
    assert not any(NOTE in n for n in new.notes), new.notes


def _solve_cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(
        app, ["solve", str(DATA / "tiny.yaml"), "--time-limit", "20", "--no-attribution", *args]
    )
    return res.exit_code, res.stdout, res.stderr


def test_cli_takes_starttime_and_the_old_name_with_a_note_on_stderr() -> None:
    code, out, err = _solve_cli("--solver", "starttime")
    assert code == 0, err
    assert "(starttime" in out and NOTE not in out + err
    code, out, err = _solve_cli("--solver", "highs")
    assert code == 0, err
    assert NOTE in err and NOTE not in out
    assert "(starttime" in out


def test_cli_refuses_an_unknown_solver_naming_starttime() -> None:
    code, _out, err = _solve_cli("--solver", "gurobi")
    assert code == 2
    assert "starttime" in err and "highs" not in err.replace("'gurobi'", "")


def test_a_grid_takes_the_old_name_as_starttime() -> None:
    from planner.interfaces.grid import load_grid
    from planner.interfaces.grid.api import resolve_options

    spec = load_grid(DATA / "grid_small.yaml")
    assert resolve_options(spec, "highs").solver == "starttime"
    assert resolve_options(spec, "starttime").solver == "starttime"
    with pytest.raises(ValueError, match="starttime"):
        resolve_options(spec, "gurobi")


# ----------------------------------------------------------------------------- options record


def test_the_options_record_is_frozen_and_checked() -> None:
    import dataclasses

    from planner.model.options import SolveOptions

    o = SolveOptions(time_limit=5, gap=0.01, threads=2, backend="pyomo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.gap = 0.5  # type: ignore[misc]
    assert o.but(time_limit=1.0) == SolveOptions(1.0, 0.01, 2, "pyomo")
    for bad, field in (
        ({"time_limit": 0}, "time_limit"),
        ({"gap": 1.5}, "gap"),
        ({"threads": 0}, "threads"),
        ({"backend": "gurobi"}, "backend"),
    ):
        with pytest.raises(ValueError, match=field):
            SolveOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gap"):
        o.but(gap=-1)


def test_every_solver_entry_point_takes_the_record() -> None:
    import inspect

    from formulations.exact.cpsat import solve_cpsat
    from formulations.exact.starttime import solve_starttime
    from formulations.heuristics.baseline import solve_baseline
    from formulations.pipeline import solve_milp
    from formulations.portfolio import solve_nonpreemptive

    for fn in (solve_milp, solve_starttime, solve_cpsat, solve_baseline, solve_nonpreemptive):
        params = inspect.signature(fn).parameters
        assert params["options"].annotation == "SolveOptions", fn.__name__
        # the shared options are the record's, never loose keywords beside it
        loose = {"time_limit", "gap", "threads", "backend", "verbose", "on_progress", "start"}
        assert not loose & set(params), (fn.__name__, loose & set(params))


@pytest.mark.parametrize(
    ("solver", "target"),
    [
        ("milp", "formulations.pipeline.solve_milp"),
        ("starttime", "formulations.portfolio.solve_nonpreemptive"),
        ("highs", "formulations.portfolio.solve_nonpreemptive"),
        ("cpsat", "formulations.portfolio.solve_nonpreemptive"),
        ("baseline", "formulations.heuristics.baseline.solve_baseline"),
    ],
)
def test_solve_builds_one_record_and_hands_it_on(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance, solver: str, target: str
) -> None:
    import importlib

    from planner.model.options import SolveOptions
    from planner.model.result import Result, Termination

    seen: list[SolveOptions] = []

    def fake(inst: Instance, *args: object, **kwargs: object) -> Result:
        opts = [a for a in (*args, *kwargs.values()) if isinstance(a, SolveOptions)]
        seen.extend(opts)
        return Result.no_plan("fake", Termination.UNKNOWN, "fake", runtime_s=0.0)

    module, _, name = target.rpartition(".")
    monkeypatch.setattr(importlib.import_module(module), name, fake)

    def progress(ev: object) -> None:
        pass

    solve(
        tiny,
        solver=solver,
        time_limit=7.0,
        gap=0.02,
        threads=1,
        backend="highs",
        verbose=False,
        on_progress=progress,
    )
    assert len(seen) == 1, seen
    o = seen[0]
    # the keywords as given, the time limit what is left of it after the checks
    assert (o.gap, o.threads, o.backend, o.verbose, o.on_progress) == (
        0.02,
        1,
        "highs",
        False,
        progress,
    )
    assert 0.7 <= o.time_limit <= 7.0 and o.start is None


# ----------------------------------------------------------------------------- one enumeration


@pytest.mark.parametrize("solver", ["auto", "milp", "starttime", "cpsat", "baseline"])
def test_one_solve_enumerates_the_instance_once_per_kind(
    monkeypatch: pytest.MonkeyPatch, solver: str
) -> None:
    """``warn_numerics`` (the numeric checks before any model) and the solver share the
    configuration space: one ``planner.solve`` enumerates the instance's configurations at
    most once per kind (pruned, full), and the model solvers only the pruned kind. (The
    baseline also enumerates the lever-free variant it builds: another instance.)"""
    import collections
    import warnings

    from builders import instance_from, tiny_dict

    import planner.model.configs as pc

    inst = instance_from(tiny_dict(), "tiny.yaml")  # a fresh object: nothing cached yet
    calls: collections.Counter[bool] = collections.Counter()
    real = pc._enumerate_all

    def counting(i: Instance, prefilter: bool) -> object:
        if i is inst:
            calls[prefilter] += 1
        return real(i, prefilter)

    monkeypatch.setattr(pc, "_enumerate_all", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve(inst, solver=solver, time_limit=20)
    assert res.plan is not None, res.message
    assert calls[True] == 1, calls  # the pruned space: the numeric checks' and the solver's
    assert calls[False] == (1 if solver == "baseline" else 0), calls
