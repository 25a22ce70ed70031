"""Valid files that the solvers got wrong (issue 16, "Solver failures on valid files"):

- a carbon cap on an instance without carbon data (every emission is 0): the start-time
  MILP's check of its MIP start raised IndexError in ``np.add.reduceat`` on the empty cap row;
- an instance whose phases are all ``done``: an empty plan (costs 0, optimal, verified), not
  HiGHS's "Empty" model status as a solver failure;
- a preemptible phase that fits only when it pauses: the contiguous models (``cpsat``,
  ``starttime``) cannot plan it, which is no proof of infeasibility (termination ``unknown``, exit
  3, pointing to ``--solver milp``), and the hourly MILP plans it;
- an instance infeasible only through its carbon cap: the message names the cap and the
  least emissions any plan reaches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import DATA, assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

import planner.interfaces.cli.solve  # registers the command
import planner.interfaces.cli.verify  # noqa: F401  (registers the command)
from formulations.lp.linear import LinearProgram
from planner.instance import read
from planner.interfaces.cli.app import app
from planner.interfaces.cli.exits import EXIT_INFEASIBLE, EXIT_SOLVER
from planner.model.result import SolutionStatus, Termination
from planner.solve import solve


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "inst.json") -> Path:
    import json

    f = tmp_path / name
    f.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    return f


# ----------------------------------------------------------------------------- empty rows


def test_row_activities_with_empty_rows_anywhere() -> None:
    # rows: [x0 + 2 x1], [] (empty), [3 x1], [] (empty, last: reduceat's offset past the end)
    lp = LinearProgram()
    lp.add_vars("x", ["a", "b"], 0, 1)
    lp.add_row("r", 0, [0, 1], [1.0, 2.0], upper=3.0)
    lp.add_row("r", 1, [], [], upper=0.0)
    lp.add_row("r", 2, [1], [3.0], upper=3.0)
    lp.add_row("r", 3, [], [], lower=0.0, upper=0.0)
    x = np.array([1.0, 1.0])
    assert lp.activities(x).tolist() == [3.0, 0.0, 3.0, 0.0]
    assert lp.violations(x) == []
    # an empty row whose bounds exclude 0 is violated by every point
    lp.add_row("r", 4, [], [], lower=1.0)
    assert lp.violations(x) == ["row r[4]: 0.0 not in [1.0, inf]"]


def test_a_carbon_cap_without_carbon_data(solver: str) -> None:
    # tiny has no carbon_intensity: every plan emits 0 t, so a 1 t cap always holds and the
    # optimum is the uncapped one
    d = tiny_dict()
    d["objective"] = {"carbon_cap_tonnes": 1.0}
    inst = instance_from(d)
    res = solve(inst, solver=solver, time_limit=20)
    assert res.plan is not None, res.message
    assert res.termination != Termination.ERROR
    assert res.plan.emissions_t == 0.0
    assert_valid(inst, res.plan)
    free = solve(instance_from(tiny_dict()), solver=solver, time_limit=20)
    assert free.plan is not None
    assert res.plan.objective == pytest.approx(free.plan.objective, rel=1e-6)


# ----------------------------------------------------------------------------- all done


def _all_done() -> dict[str, Any]:
    d = tiny_dict()
    for p in d["phases"]:
        p["done"] = True
    return d


def test_every_phase_done_is_an_empty_optimal_plan(solver: str) -> None:
    inst = instance_from(_all_done())
    res = solve(inst, solver=solver, time_limit=10)
    assert res.plan is not None, res.message
    assert res.termination == Termination.OPTIMAL
    assert res.status == SolutionStatus.OPTIMAL
    assert res.plan.phases == () and res.plan.reserved == ()
    assert res.plan.objective == 0.0 and res.bound == 0.0 and res.gap == 0.0
    assert all(v == 0.0 for v in res.plan.costs.values())
    assert_valid(inst, res.plan)


def test_every_phase_done_through_the_cli(tmp_path: Path) -> None:
    f = _write(tmp_path, _all_done())
    out = tmp_path / "plan.json"
    res = CliRunner().invoke(app, ["solve", str(f), "--solver", "milp", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "nothing to plan" in res.stdout
    assert "no plan" not in res.output and "Empty" not in res.output
    v = CliRunner().invoke(app, ["verify", str(f), str(out)])
    assert v.exit_code == 0, v.output


# ----------------------------------------------------------------------------- pauses


def _needs_pauses() -> dict[str, Any]:
    """prep alone (preemptible, 12 GPU-h on 4 A100s = 3 h) where east's A100s are there only
    in even hours and nowhere else: 3 running hours need 5 hours with two pauses; no
    contiguous run of 3 hours exists."""
    d = tiny_dict()
    d["phases"] = [d["phases"][0]]
    d["phases"][0]["options"] = {"gpu_counts": [4]}
    d["regions"]["east"]["capacity"] = {"A100": [4 if t % 2 == 0 else 0 for t in range(48)]}
    d["regions"]["west"]["capacity"] = {"A100": 0}
    return d


@pytest.mark.parametrize("solver", ["starttime", "cpsat"])
def test_the_contiguous_models_do_not_call_a_pausing_phase_infeasible(solver: str) -> None:
    res = solve(instance_from(_needs_pauses()), solver=solver, time_limit=10)
    assert res.plan is None
    assert res.termination == Termination.UNKNOWN  # undecided, not infeasible
    assert res.bound is None
    assert "cannot plan this instance" in res.message and "prep may pause" in res.message
    assert "--solver milp" in res.message
    assert not res.message.startswith("infeasible")


def test_the_hourly_milp_plans_the_pausing_phase() -> None:
    inst = instance_from(_needs_pauses())
    for solver in ("milp", "auto"):
        res = solve(inst, solver=solver, time_limit=20)
        assert res.plan is not None, res.message
        (p,) = res.plan.phases
        assert len(p.hours) == 3 and all(h % 2 == 0 for h in p.hours)
        assert not p.contiguous
        assert_valid(inst, res.plan)


def test_cli_contiguous_model_on_a_pausing_phase_exits_3(tmp_path: Path) -> None:
    f = _write(tmp_path, _needs_pauses())
    res = CliRunner().invoke(app, ["solve", str(f), "--solver", "cpsat", "--time-limit", "10"])
    assert res.exit_code == EXIT_SOLVER, res.output
    err = " ".join(res.stderr.split())
    assert "the contiguous model (cpsat) cannot plan this instance" in err
    assert "--solver milp" in err
    assert "no contiguous schedule" not in err and "infeasible:" not in err
    assert "explain" not in err  # nothing to explain: the instance is not shown infeasible


# ----------------------------------------------------------------------------- carbon cap

#: levers_tou.yaml's one job draws 9 kW x PUE 1.2 = 10.8 kW for 4 h = 43.2 kWh whatever
#: its hours; at 500 gCO2/kWh that is 43.2 x 500 / 1e6 = 0.0216 t, above a 0.01 t cap.
LEAST_T = 0.0216


def _capped(cap: float) -> Any:
    return read(DATA / "levers_tou.yaml").replace(
        {"regions.r.carbon_intensity": {"constant": 500}, "objective.carbon_cap_tonnes": cap}
    )


@pytest.mark.parametrize("solver", ["auto", "milp", "starttime", "cpsat"])
def test_a_carbon_cap_only_infeasibility_names_the_cap(solver: str) -> None:
    res = solve(_capped(0.01), solver=solver, time_limit=20)
    assert res.plan is None and res.termination == Termination.INFEASIBLE
    assert "carbon_cap_tonnes = 0.01 t" in res.message, res.message
    assert (
        f"least emissions of any plan that meets every deadline, precedence and capacity "
        f"limit, {LEAST_T:g} t" in res.message
    )
    assert f"raise the cap to at least {LEAST_T:g} t" in res.message
    assert "no plan meets every deadline" not in res.message


def test_the_least_emissions_named_are_enough_and_needed() -> None:
    # the figure in the message is the least: a cap at it has a plan, 1% below it has none
    ok = solve(_capped(LEAST_T * (1 + 1e-9)), solver="milp", time_limit=20)
    assert ok.plan is not None and ok.plan.emissions_t == pytest.approx(LEAST_T, rel=1e-9)
    assert_valid(_capped(LEAST_T * (1 + 1e-9)), ok.plan)
    assert solve(_capped(LEAST_T * 0.99), solver="milp", time_limit=20).plan is None


def test_an_infeasibility_that_is_not_the_cap_keeps_its_message() -> None:
    # a deadline no configuration meets: infeasible with or without the cap
    inst = _capped(100.0).replace({"phases.job.deadline": 2})
    res = solve(inst, solver="milp", time_limit=20)
    assert res.plan is None and res.termination in (
        Termination.INFEASIBLE,
        Termination.NO_CONFIGURATION,
    )
    assert "carbon cap" not in res.message


def test_cli_carbon_cap_only_infeasibility(tmp_path: Path) -> None:
    from planner.instance.read import load_document

    doc = load_document(DATA / "levers_tou.yaml")
    doc["regions"]["r"]["carbon_intensity"] = {"constant": 500}
    doc["objective"] = {"carbon_cap_tonnes": 0.01}
    f = _write(tmp_path, doc)
    res = CliRunner().invoke(app, ["solve", str(f), "--time-limit", "20"])
    assert res.exit_code == EXIT_INFEASIBLE, res.output
    err = " ".join(res.stderr.split())
    assert "the carbon cap objective.carbon_cap_tonnes = 0.01 t is below the least emissions" in err
    assert f"{LEAST_T:g} t" in err
