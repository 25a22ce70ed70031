"""One solver interface (issue 25): the start-time MILP is ``--solver starttime`` (the old
name ``highs``, which is also a MILP backend, is taken with a deprecation note), the warm
start is ``start`` everywhere, and every solver entry point takes one options record."""

from __future__ import annotations

import pytest
from conftest import DATA, assert_valid
from typer.testing import CliRunner

import planner.cli.solve  # noqa: F401  (registers the command on app)
from planner.cli.app import app
from planner.instance.model import Instance
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
    from planner.grid import load_grid
    from planner.grid.api import resolve_options

    spec = load_grid(DATA / "grid_small.yaml")
    assert resolve_options(spec, "highs").solver == "starttime"
    assert resolve_options(spec, "starttime").solver == "starttime"
    with pytest.raises(ValueError, match="starttime"):
        resolve_options(spec, "gurobi")
