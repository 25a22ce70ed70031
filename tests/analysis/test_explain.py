"""`trainplan explain`: pre-checks and the smallest relaxation, on hand-checkable instances
(tests/data/explain_*.yaml; the arithmetic is in each file's header). Every plan goes
through the independent checker, and every reported relaxation is checked to be enough:
applied to the instance, the MILP finds a plan; one unit less, it does not."""

from __future__ import annotations

import json

import pytest
from builders import DATA, assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

from planner.analysis.explain import Explanation, explain
from planner.instance import read
from planner.interfaces.cli import app
from planner.interfaces.cli import explain as _register_explain  # noqa: F401  (registers the command)
from planner.model.result import Termination
from planner.solve import solve


def _solve(inst):  # type: ignore[no-untyped-def]
    return solve(inst, solver="milp", time_limit=30, backend="highs")


def _only(ex: Explanation, kind: str, source: str):  # type: ignore[no-untyped-def]
    found = [f for f in ex.findings if f.kind == kind and f.source == source]
    assert len(found) == 1, ex.lines()
    return found[0]


def test_memory_names_the_phase_and_the_gigabytes() -> None:
    ex = explain(read(DATA / "explain_memory.yaml"), time_limit=30)
    assert not ex.feasible and ex.proven
    f = _only(ex, "memory", "pre-check")
    # 100 GB working set + 1.5 GB buffers = 101.5 GB against 80 GiB x 0.90 = 85.899 x 0.90
    # = 77.309 GB usable (10% headroom): 24.191 GB short
    assert f.phase == "embed"
    assert f.amount == pytest.approx(101.5 - 80 * 2**30 / 1e9 * 0.90, abs=1e-9)
    assert "101.5 GB" in f.message and "77.3 GB usable" in f.message
    # the other phase still runs: the relaxation changes nothing else
    smallest = ex.relaxations[0]
    assert smallest.penalty == pytest.approx(0.0, abs=1e-9) and not smallest.findings
    assert smallest.plan is not None and smallest.instance is not None
    assert [p.name for p in smallest.plan.phases] == ["score"]
    assert_valid(smallest.instance, smallest.plan)


def test_deadline_reports_the_missing_hours() -> None:
    inst = read(DATA / "explain_deadline.yaml")
    ex = explain(inst, time_limit=30)
    assert not ex.feasible and ex.proven
    # prep 40 GPU-h / 10 GPUs = 4 h, then train 60 / 10 = 6 h: earliest finish hour 10,
    # deadline hour 8 -> 2 h short, both as a pre-check and as the smallest relaxation
    pre = _only(ex, "deadline", "pre-check")
    assert (pre.phase, pre.amount) == ("train", 2.0)
    assert "prep -> train" in pre.message
    rel = _only(ex, "deadline", "relaxation")
    assert (rel.phase, rel.amount) == ("train", 2.0)
    assert "+2 h" in rel.message
    # no capacity can shorten a precedence chain of fixed-size phases
    alt = [r for r in ex.relaxations if r.name == "capacity only"]
    assert alt and alt[0].status == "infeasible"
    smallest = ex.relaxations[0]
    assert smallest.plan is not None and smallest.instance is not None
    assert_valid(smallest.instance, smallest.plan)
    # the relaxation is enough, and the smallest: deadline 10 has a plan, 9 has none
    ok = _solve(inst.replace({"phases.train.deadline": 10}))
    assert ok.plan is not None
    assert_valid(inst.replace({"phases.train.deadline": 10}), ok.plan)
    assert _solve(inst.replace({"phases.train.deadline": 9})).plan is None


def test_capacity_reports_the_hours_and_gpus() -> None:
    inst = read(DATA / "explain_capacity.yaml")
    ex = explain(inst, time_limit=30)
    assert not ex.feasible and ex.proven
    # a and b must both run in hours 0-3 on 10 GPUs each: 20 GPUs against 10
    pre = _only(ex, "capacity", "pre-check")
    assert (pre.region, pre.gpu) == ("r", "G")
    assert pre.hours == (0, 1, 2, 3)
    assert pre.amount == pytest.approx(10.0)
    assert pre.phases == ("a", "b")
    # smallest: one phase 4 h late (4 penalty units) rather than 10 GPUs x 4 h (40 units)
    rel = _only(ex, "deadline", "relaxation")
    assert rel.phase in ("a", "b") and rel.amount == 4.0
    assert ex.relaxations[0].penalty == pytest.approx(4.0, abs=1e-6)
    # the capacity-only alternative: +10 GPUs in hours 0-3 (40 GPU-hours)
    alt = [r for r in ex.relaxations if r.name == "capacity only"]
    assert len(alt) == 1 and alt[0].penalty == pytest.approx(40.0, abs=1e-6)
    (cap,) = [f for f in alt[0].findings if f.kind == "capacity"]
    assert cap.hours == (0, 1, 2, 3) and cap.amount == pytest.approx(10.0)
    assert "+10 GPUs in hours 0-3" in cap.message
    # enough: 20 GPUs in hours 0-3 gives a plan
    more = inst.replace({"regions.r.capacity.G": [20] * 4 + [10] * 20})
    res = _solve(more)
    assert res.plan is not None
    assert_valid(more, res.plan)


def test_carbon_cap_overshoot() -> None:
    # levers_tou.yaml with 500 gCO2/kWh everywhere and a 0.01 t cap: the job draws
    # 9 kW x 1.2 PUE = 10.8 kW for 4 h = 43.2 kWh -> 43.2 x 500 / 1e6 = 0.0216 t;
    # 0.0116 t over the cap whatever the hours
    inst = read(DATA / "levers_tou.yaml").replace(
        {"regions.r.carbon_intensity": {"constant": 500}, "objective.carbon_cap_tonnes": 0.01}
    )
    ex = explain(inst, time_limit=30)
    assert not ex.feasible and ex.proven
    f = _only(ex, "carbon", "relaxation")
    assert f.amount == pytest.approx(0.0116, abs=1e-9)


def test_feasible_instance_says_so() -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    ex = explain(inst, time_limit=30)
    assert ex.feasible and ex.proven and ex.findings == []
    assert "is feasible" in ex.lines()[0]
    assert ex.plan is not None
    assert_valid(inst, ex.plan)
    # the plan is the optimum: the MILP agrees on its cost
    opt = _solve(inst)
    assert opt.termination in (Termination.OPTIMAL, Termination.GAP_REACHED)
    assert opt.objective is not None
    assert ex.plan.objective == pytest.approx(opt.objective, rel=1e-4)


def test_cli_exit_codes_and_json() -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["explain", str(DATA / "tiny.yaml")])
    assert res.exit_code == 0, res.output
    assert "is feasible" in res.output
    res = runner.invoke(app, ["explain", str(DATA / "explain_deadline.yaml")])
    assert res.exit_code == 1, res.output
    assert "train: deadline +2 h" in res.output
    res = runner.invoke(app, ["explain", str(DATA / "explain_capacity.yaml"), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.output)
    assert data["feasible"] is False
    assert {f["kind"] for f in data["findings"]} == {"capacity", "deadline"}
    res = runner.invoke(app, ["explain", str(DATA / "bad_syntax.yaml")])
    assert res.exit_code == 2
