"""``trainplan simulate``: the replay of a plan against random failures, preemptions and
recovery agrees with the plan's analytic expected failure cost (planner/model/costs.py) within the
simulation's 99% confidence interval, gives the hand-computed chance of a deadline with no
slack, and is drawn in the report."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from builders import assert_valid, instance_from, tiny_dict, two_regions
from typer.testing import CliRunner

import planner
from planner.analysis.simulate import simulate
from planner.interfaces.cli import _register, app
from planner.solve import solve

_register()
ROOT = Path(__file__).resolve().parents[2]


def failing() -> dict[str, Any]:
    """two_regions with failures that matter: 0.05 per GPU-hour on 10 GPUs (lambda 0.5/h), a
    sync 36 GB checkpoint and 0.3 h restarts: L ~ 0.1 + 0.3 h, lambda L ~ 0.2, so that the
    renewal term (failures during lost time) is a fifth of the cost."""
    d = two_regions()
    d["gpu_types"]["G"] = {**d["gpu_types"]["G"], "failures_per_gpu_hour": 0.05}
    d["failure"] = {"restart_hours": 0.3, "detect_hours": 0.0, "checkpoint": "sync"}
    return d


def _plan(inst: Any) -> Any:
    res = solve(inst, solver="milp", time_limit=60, gap=0.0)
    assert res.plan is not None
    assert_valid(inst, res.plan)
    return res.plan


def _agrees(inst: Any, plan: Any, runs: int, seed: int) -> None:
    sim = simulate(inst, plan, runs=runs, seed=seed)
    mean, half = sim.mean_ci(sim.failure_usd)
    analytic = plan.costs["failure"]
    assert abs(mean - analytic) <= half, (mean, half, analytic)
    for p, entry in zip(sim.phases, [plan.phase(p.name) for p in sim.phases], strict=True):
        assert p.analytic_failure_usd == entry.costs["failure"]


def test_the_simulated_failure_cost_agrees_with_the_analytic_one() -> None:
    inst = instance_from(failing())
    plan = _plan(inst)
    sim = simulate(inst, plan, runs=20_000, seed=7)
    mean, half = sim.mean_ci(sim.failure_usd)
    analytic = plan.costs["failure"]
    assert abs(mean - analytic) <= half, (mean, half, analytic)
    # a replay without failures during lost time (lambda instead of f = lambda/(1 - lambda L))
    # would be about lambda L = 20% lower: far outside the interval, under 2% of the mean
    assert half < 0.02 * analytic
    # the plan's cost is the simulated mean's centre: total = plan - expected + simulated
    tmean, thalf = sim.mean_ci(sim.total_usd)
    assert abs(tmean - plan.costs["total"]) <= thalf


@pytest.mark.parametrize("which", ["tiny", "week-7b"])
def test_agreement_on_spot_pauses_sla_and_shipped_plans(which: str) -> None:
    if which == "tiny":
        d = tiny_dict()
        # spot with a preemption series, an SLA credit on the on-demand region
        d["regions"]["west"]["offers"]["A100"]["spot"]["preemptions_per_hour"] = {
            "values": [0.05 + 0.1 * (h % 3) for h in range(48)]
        }
        d["regions"]["east"]["sla"] = {"provider_fault_share": 0.5, "credit_multiplier": 2.0}
        inst = instance_from(d, "tiny.yaml")
    else:
        inst = planner.read(ROOT / "instances" / "week-7b.yaml")
    plan = solve(inst, time_limit=60).plan
    assert plan is not None
    _agrees(inst, plan, 20_000, 3)


def test_a_deadline_without_slack_holds_only_without_a_failure() -> None:
    # The job needs 9 hours (8 h of work, checkpoint overhead) and its deadline is hour 9: it
    # holds only when no failure hits its 9 hours, P = exp(-9 x 0.5) = exp(-4.5) = 0.011109.
    d = failing()
    d["phases"][0]["deadline"] = 9
    inst = instance_from(d)
    plan = _plan(inst)
    assert plan.phase("job").hours == tuple(range(9))
    sim = simulate(inst, plan, runs=40_000, seed=11)
    (p,) = sim.phases
    want = math.exp(-4.5)
    half = 2.576 * math.sqrt(want * (1 - want) / sim.runs)
    assert abs(sim.deadline_probability(p) - want) <= half
    # every failure pushes the end: the mean end is the planned end plus the lost hours
    assert float(p.end_hour.min()) == 9.0 and float(p.end_hour.mean()) > 9.0


def test_no_failures_no_spread_and_successors_wait() -> None:
    # G never fails and nothing is preemptible: every run is the plan
    d = two_regions()
    d["phases"].append(
        {
            **copy.deepcopy(d["phases"][0]),
            "name": "next",
            "predecessors": ["job"],
            "work": {"gpu_hours": 10, "gpu": "G"},
        }
    )
    inst = instance_from(d)
    plan = _plan(inst)
    sim = simulate(inst, plan, runs=100, seed=0)
    assert float(sim.failure_usd.max()) == 0.0
    assert float(sim.total_usd.min()) == float(sim.total_usd.max()) == plan.costs["total"]
    for p in sim.phases:
        assert set(p.end_hour.tolist()) == {float(plan.phase(p.name).end_hour)}
        assert sim.deadline_probability(p) == 1.0
    # with failures, the successor never ends before the job it waits for plus its own hours
    d2 = failing()
    d2["phases"].append(
        {
            **copy.deepcopy(d2["phases"][0]),
            "name": "next",
            "predecessors": ["job"],
            "work": {"gpu_hours": 10, "gpu": "G"},
        }
    )
    d2["horizon"]["hours"] = 24
    inst2 = instance_from(d2)
    plan2 = _plan(inst2)
    sim2 = simulate(inst2, plan2, runs=2_000, seed=5)
    job, nxt = (next(p for p in sim2.phases if p.name == n) for n in ("job", "next"))
    span = plan2.phase("next").end_hour - plan2.phase("next").start_hour
    assert bool((nxt.end_hour >= job.end_hour + span - 1e-9).all())


def test_simulate_command_and_the_report_section(tmp_path: Path) -> None:
    inst_file = tmp_path / "fail.json"
    inst_file.write_text(json.dumps(failing()))
    plan = tmp_path / "plan.json"
    run = CliRunner()
    assert run.invoke(app, ["-q", "solve", str(inst_file), "-o", str(plan)]).exit_code == 0
    sim = tmp_path / "sim.json"
    res = run.invoke(app, ["simulate", str(plan), "--runs", "2000", "-o", str(sim), "--embed"])
    assert res.exit_code == 0, res.output
    assert "P(deadline holds)" in res.output and "failure cost: simulated mean" in res.output
    doc = json.loads(sim.read_text())
    assert doc["format"] == "trainplan-simulation/1" and doc["runs"] == 2000
    assert json.loads(plan.read_text())["simulation"] == doc
    page = tmp_path / "r.html"
    res = run.invoke(app, ["report", str(plan), "-o", str(page)])
    assert res.exit_code == 0, res.output
    html = page.read_text()
    assert 'id="simulation"' in html and "2,000 replays" in html and "csim-" in html
    # a tampered summary is refused, naming the field
    doc["phases"][0]["deadline_probability"] = 3
    sim.write_text(json.dumps(doc))
    res = run.invoke(app, ["report", str(plan), "--simulation", str(sim), "-o", str(page)])
    assert res.exit_code == 2 and "deadline_probability" in res.output
