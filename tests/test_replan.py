"""Re-plan from now: progress and the running configuration, derived from an earlier plan,
and a hand-computed re-plan after a lost region (the arithmetic in comments). Every plan is
verified by the independent checker against the instance it was made for."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_valid, instance_from
from test_milp import FREE_STORAGE, ROUND_GPU

import planner
from planner.checker import verify
from planner.checker.planfile import plan_from_dict
from planner.configs import build_config_space
from planner.replan import ReplanError, replan, state_at, write_instance
from planner.solve import solve


def two_regions(capacity_a: int | list[int] = 10) -> dict[str, Any]:
    """Regions a ($20/MWh) and b ($50/MWh), both UTC, 10 GPUs x 1 kW at $1/GPU-h; one
    non-preemptible job of 80 GPU-hours (8 h on 10 GPUs) in a 12-hour horizon, a 36 GB
    checkpoint, tiers and links at 1 GB/s, instant restarts."""

    def region(price: float, cap: int | list[int]) -> dict[str, Any]:
        return {
            "timezone": "UTC",
            "pue": 1.0,
            "electricity": {"constant": price},
            "capacity": {"G": cap},
            "offers": {"G": {"on_demand": {"usd_per_gpu_hour": 1.0}}},
            "storage": FREE_STORAGE,
            "default_link_gb_per_s": 1.0,
        }

    return {
        "name": "lost",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 12},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"a": region(20, capacity_a), "b": region(50, 10)},
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "work": {"gpu_hours": 80, "gpu": "G"},
                "power_load": 1.0,
                "checkpoint_gb": 36,
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
            }
        ],
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def test_replan_after_a_lost_region() -> None:
    # The plan: region a, hours 0-7: rental 8 x 10 x $1 = $80, energy 8 x 10 kW x $20/MWh =
    # $1.60, total $81.60. At hour 3 region a is lost (capacity 0 from hour 3).
    inst = instance_from(two_regions())
    old = solve(inst, solver="milp", time_limit=30, gap=0.0).plan
    assert old is not None
    assert (old.phase("job").region, old.phase("job").hours) == ("a", tuple(range(8)))
    assert old.costs["total"] == pytest.approx(81.60, abs=1e-9)
    lost = instance_from(two_regions([10, 10, 10] + [0] * 9))
    # State at hour 3: hours 0-2 did 3/8 of the work; the checkpoint is on a's configuration.
    ups = state_at(lost, old, 3)
    assert ups["phases.job.progress"] == {"fraction": pytest.approx(0.375)}
    assert ups["phases.job.running"]["region"] == "a"
    assert ups["phases.job.release"] == 3
    # The rest, 5/8 of 8 h = 5 h, can only run in b: hours 3-7, rental 5 x $10 = $50, energy
    # 5 x 10 kW x $50/MWh = $2.50, and the migration off a (mean prices 20 and 50 $/MWh: a
    # held hour costs $10.20 on a, $10.50 on b):
    #   write 36 GB at 1 GB/s = 0.01 h of a                 $0.102
    #   move 36 GB x $0.02 + wait 0.01 h of b                $0.72 + $0.105
    #   read 36 GB at 1 GB/s = 0.01 h of b                   $0.105
    #   migration $1.032; the rest costs $53.532.
    r = replan(lost, old, 3, solver="milp", time_limit=30, gap=0.0)
    plan = r.result.plan
    assert plan is not None
    p = plan.phase("job")
    assert (p.region, p.hours) == ("b", (3, 4, 5, 6, 7))
    (seg,) = p.segments
    assert seg.migration["from"] == "running"
    assert seg.migration["total"] == pytest.approx(1.032, abs=1e-9)
    assert plan.costs["total"] == pytest.approx(53.532, abs=1e-6)
    assert_valid(r.instance, plan)
    # what changed: a 3-7 -> b 3-7; hours 0-2 cost $30.60 (rental 30 + energy 0.60)
    block = plan.replan
    assert block is not None and block["from_hour"] == 3
    assert block["history_usd"] == pytest.approx(30.60, abs=1e-9)
    (ch,) = block["changes"]
    assert ch["changed"] and ch["before"]["segments"][0]["hours"] == [3, 4, 5, 6, 7]
    assert ch["after"]["segments"][0]["config"].endswith("@b")
    # the checker catches the migration left out of the plan
    doc = json.loads(plan.to_json())
    doc["phases"][0]["segments"][0]["migration"] = {}
    v = verify(r.instance, plan_from_dict(doc))
    assert any(
        x.kind == "migration" and "from the running configuration is left out" in x.message
        for x in v.violations
    )


def test_replan_without_a_change_goes_on_at_no_cost() -> None:
    # Nothing lost: from hour 3 the job goes on on a in hours 3-7, no migration, and the rest
    # costs 5 x ($10 + $0.20) = $51.00.
    inst = instance_from(two_regions())
    old = solve(inst, solver="milp", time_limit=30, gap=0.0).plan
    assert old is not None
    r = replan(inst, old, 3, solver="milp", time_limit=30, gap=0.0)
    plan = r.result.plan
    assert plan is not None
    p = plan.phase("job")
    assert (p.region, p.hours, p.segments) == ("a", (3, 4, 5, 6, 7), ())
    assert plan.costs["total"] == pytest.approx(51.0, abs=1e-9)
    assert not plan.replan["changes"][0]["changed"]  # type: ignore[index]
    assert_valid(r.instance, plan)
    # a break on the running configuration is a write and a restart: starting at hour 4
    space = build_config_space(r.instance)
    (a,) = [c for c in space["job"] if c.region == "a"]
    assert a.continues and a.entry == pytest.approx((0.2, 0.004, 0.0))


def test_phases_done_and_not_started(tmp_path: Path) -> None:
    # Two phases in a chain: prep (2 h) then job (8 h). From hour 5 prep is done and job is
    # under way; the derived instance, written out, reads back and verifies the new plan.
    d = two_regions()
    d["phases"].insert(
        0,
        {
            "name": "prep",
            "kind": "data_preparation",
            "work": {"gpu_hours": 20, "gpu": "G"},
            "power_load": 1.0,
            "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
        },
    )
    d["phases"][1]["predecessors"] = ["prep"]
    inst = instance_from(d)
    old = solve(inst, solver="milp", time_limit=30, gap=0.0).plan
    assert old is not None and old.phase("prep").hours == (0, 1)
    ups = state_at(inst, old, 5)
    assert ups["phases.prep.done"] is True
    assert ups["phases.job.progress"]["fraction"] == pytest.approx(3 / 8)
    r = replan(inst, old, 5, solver="milp", time_limit=30, gap=0.0)
    assert r.result.plan is not None
    f = tmp_path / "derived.json"
    write_instance(r.instance, f)
    again = planner.read(f)
    assert verify(again, r.result.plan).ok
    with pytest.raises(ReplanError, match="inside the horizon"):
        state_at(inst, old, 40)
    late = copy.deepcopy(d)
    late["phases"][1]["deadline"] = 5
    with pytest.raises(ReplanError, match="deadline"):
        state_at(instance_from(late), old, 5)


def test_cli_replans_from_an_hour_and_verify_accepts_it(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from planner.cli import _register, app

    _register()
    run = CliRunner()
    first = tmp_path / "lost.json"
    first.write_text(json.dumps(two_regions()))
    old = tmp_path / "old.json"
    res = run.invoke(app, ["solve", str(first), "--solver", "milp", "-o", str(old)])
    assert res.exit_code == 0, res.output
    now = tmp_path / "now.json"
    now.write_text(json.dumps(two_regions([10, 10, 10] + [0] * 9)))
    new = tmp_path / "new.json"
    res = run.invoke(
        app,
        ["solve", str(now), "--from", "3", "--plan", str(old), "--solver", "milp", "-o", str(new)],
    )
    assert res.exit_code == 0, res.output
    assert "changes from hour 3" in res.output and "@b" in res.output
    derived = tmp_path / "new.instance.json"
    res = run.invoke(app, ["verify", str(derived), str(new)])
    assert res.exit_code == 0, res.output
    # --from without --plan, and an hour outside the horizon, are input errors (status 2)
    assert run.invoke(app, ["solve", str(now), "--from", "3"]).exit_code == 2
    res = run.invoke(app, ["solve", str(now), "--from", "30", "--plan", str(old)])
    assert res.exit_code == 2 and "inside the horizon" in res.output


def test_a_running_configuration_the_instance_cannot_run_is_reported() -> None:
    # G has no fp8 peak: leaving a run at fp8 could not be priced, so the phase has no
    # configuration and says why (check, solve and explain show it)
    d = two_regions()
    d["phases"][0]["running"] = {
        "gpu": "G",
        "region": "a",
        "contract": "on_demand",
        "gpus": 10,
        "tier": "hot",
        "precision": "fp8",
    }
    (why,) = build_config_space(instance_from(d)).infeasible
    assert "the running configuration (10 x G on_demand in a, fp8" in why.reason
    res = solve(instance_from(d), solver="milp", time_limit=10)
    assert res.plan is None and "running configuration" in res.message
