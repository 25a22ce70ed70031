"""Re-plan from now: progress and the running configuration, derived from an earlier plan,
and a hand-computed re-plan after a lost region (the arithmetic in comments). Every plan is
verified by the independent checker against the instance it was made for."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from builders import assert_valid, instance_from, two_regions

import planner
from planner.checker import verify
from planner.checker.planfile import plan_from_dict
from planner.interfaces.replan import ReplanError, replan, state_at, write_instance
from planner.model.configs import build_config_space
from planner.solve import solve


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


def with_prep(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with a 2-hour data preparation (20 GPU-hours on 10 G) before its job."""
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
    return d


def test_phases_done_and_not_started(tmp_path: Path) -> None:
    # Two phases in a chain: prep (2 h) then job (8 h). From hour 5 prep is done and job is
    # under way; the derived instance, written out, reads back and verifies the new plan.
    d = with_prep(two_regions())
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

    from planner.interfaces.cli import _register, app

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


# ------------------------------------------------------------------ issue 23: keep the past


def _solved(d: dict[str, Any]) -> Any:
    inst = instance_from(d)
    old = solve(inst, solver="milp", time_limit=30, gap=0.0).plan
    assert old is not None
    return inst, old


def test_the_past_is_costed_at_the_prices_it_was_bought_at() -> None:
    # The plan ran hours 0-2 on a at $1/GPU-h: $30 rental + 3 h x 10 kW x $20/MWh = $0.60.
    # The file now says $2/GPU-h in a (a price change): the past stays $30.60; the rest
    # (hours 3-7 on a, or b at $2 too) is planned at $2: 5 x ($20 + $0.20) = $101.00.
    inst, old = _solved(two_regions())
    now = two_regions()
    now["regions"]["a"]["offers"]["G"]["on_demand"]["usd_per_gpu_hour"] = 2.0
    now["regions"]["b"]["offers"]["G"]["on_demand"]["usd_per_gpu_hour"] = 2.0
    r = replan(instance_from(now), old, 3, old_instance=inst, solver="milp", gap=0.0)
    plan = r.result.plan
    assert plan is not None and plan.replan is not None
    assert plan.replan["history_usd"] == pytest.approx(30.60, abs=1e-9)
    assert plan.costs["total"] == pytest.approx(101.0, abs=1e-9)
    assert_valid(r.instance, plan)
    # without the old instance the past is costed at the file's prices ($60.60), and said so
    r = replan(instance_from(now), old, 3, solver="milp", gap=0.0)
    assert r.result.plan is not None and r.result.plan.replan is not None
    assert r.result.plan.replan["history_usd"] == pytest.approx(60.60, abs=1e-9)
    assert any("not known" in n for n in r.notes)


def test_a_region_deleted_from_the_file_is_a_lost_region() -> None:
    # Region a is deleted from the file at hour 3. G never fails here (failures 0), so the
    # job writes no checkpoint: its run in a is lost whole and it starts again in b, 8 h in
    # hours 3-10: rental 8 x 10 x $1 = $80, energy 8 x 10 kW x $50/MWh = $4; total $84.
    inst, old = _solved(two_regions())
    now = two_regions()
    del now["regions"]["a"]
    r = replan(instance_from(now), old, 3, old_instance=inst, solver="milp", gap=0.0)
    plan = r.result.plan
    assert plan is not None
    assert "regions.a" in r.updates and r.updates["regions.a"]["capacity"] == {"G": 0}
    assert "phases.job.progress" not in r.updates
    p = plan.phase("job")
    assert (p.region, p.hours) == ("b", tuple(range(3, 11)))
    assert plan.costs["total"] == pytest.approx(84.0, abs=1e-9)
    assert plan.replan is not None and plan.replan["lost"] == ["regions.a"]
    assert plan.replan["history_usd"] == pytest.approx(30.60, abs=1e-9)
    assert_valid(r.instance, plan)


def test_a_lost_run_resumes_from_its_last_durable_checkpoint() -> None:
    # With failures (0.05 per GPU-hour, 10 GPUs: lambda = 0.5/h, M = 7,200 s) and a sync
    # checkpoint of 36 GB written at 1 GB/s (delta = 36 s), Daly's interval is
    #   tau = sqrt(2 x 36 x 7200) (1 + sqrt(0.0025)/3 + 0.0025/9) - 36
    #       = 720 x 1.0169444 - 36 = 696.2 s,
    # so the job computes 8 / (1 - 36 / 732.2) = 8.41367 h (9 planned hours). When a is lost
    # at hour 3, the work since the last checkpoint, (tau + delta) / 2 = 366.1 s = 0.101694 h
    # of the 3 hours run, is lost: progress (3 - 0.101694) / 8.41367 = 0.344476.
    d = two_regions()
    d["gpu_types"]["G"] = {**d["gpu_types"]["G"], "failures_per_gpu_hour": 0.05}
    inst, old = _solved(d)
    now = copy.deepcopy(d)
    del now["regions"]["a"]
    tau = 720 * (1 + 0.05 / 3 + 0.0025 / 9) - 36
    work_h = 8 / (1 - 36 / (tau + 36))
    want = (3 - (tau + 36) / 2 / 3600) / work_h
    assert want == pytest.approx(0.344476, abs=2e-6)
    ups = state_at(instance_from(now), old, 3, inst)
    assert ups["phases.job.progress"]["fraction"] == pytest.approx(want, rel=1e-9)
    assert ups["phases.job.running"]["region"] == "a"


def _reserved_regions() -> dict[str, Any]:
    d = two_regions()
    d["regions"]["a"]["offers"]["G"] = {
        "reserved": {"usd_per_gpu_hour": 0.5, "min_gpus": 10, "max_gpus": 10}
    }
    return d


def test_a_reservation_without_terms_survives_a_replan() -> None:
    # A whole-horizon reservation of 10 G in a at $0.50: 10 x 12 h x $0.50 = $60, the job on
    # it in hours 0-7 pays its energy, 8 x 10 kW x $20/MWh = $1.60: $61.60. From hour 3 the
    # commitment is paid: before hour 3 $15 (3 h) + energy $0.60 = $15.60 spent; $45 of it
    # lies after hour 3; the job goes on, free, on the committed term: energy 5 x $0.20 = $1.
    inst, old = _solved(_reserved_regions())
    assert old.reserved == (("a", "G", 10),)
    assert old.costs["total"] == pytest.approx(61.60, abs=1e-9)
    r = replan(inst, old, 3, old_instance=inst, solver="milp", gap=0.0)
    plan = r.result.plan
    assert plan is not None and plan.replan is not None
    assert r.updates["phases.job.running"]["term"] == "committed"
    p = plan.phase("job")
    assert (p.region, p.contract, p.term, p.hours) == (
        "a",
        "reserved",
        "committed",
        (3, 4, 5, 6, 7),
    )
    assert plan.costs["total"] == pytest.approx(1.0, abs=1e-9)
    # the old plan is the warm start, its run on the commitment found on the free term
    assert r.result.stats["warm_start_kept"] == 1
    assert plan.replan["history_usd"] == pytest.approx(15.60, abs=1e-9)
    assert plan.replan["reserved_after_usd"] == pytest.approx(45.0, abs=1e-9)
    assert_valid(r.instance, plan)


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from planner.interfaces.cli import _register, app

    _register()
    return CliRunner().invoke(app, list(args))


def test_the_printed_verify_works_and_the_new_plan_records_its_instance(tmp_path: Path) -> None:
    # the instance reads its electricity from a CSV in its own folder; the re-plan is written
    # to another folder: the derived instance takes a copy of the CSV with it
    src = tmp_path / "inst"
    src.mkdir()
    (src / "price.csv").write_text(
        "time,price\n" + "".join(f"2023-06-05T{h:02d}:00:00Z,20\n" for h in range(12))
    )
    d = two_regions()
    d["regions"]["a"]["electricity"] = {
        "csv": "price.csv",
        "column": "price",
        "time_column": "time",
    }
    first = src / "lost.json"
    first.write_text(json.dumps(d))
    old = tmp_path / "old.json"
    assert _cli("solve", str(first), "--solver", "milp", "-o", str(old)).exit_code == 0
    out = tmp_path / "out"
    out.mkdir()
    new = out / "new.json"
    res = _cli("solve", str(first), "--from", "3", "--plan", str(old), "-o", str(new))
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "check it with:" in ln)
    cmd = line.split("check it with: trainplan ")[1].split()
    assert cmd == ["verify", str(out / "new.instance.json"), str(new)]
    res = _cli(*cmd)
    assert res.exit_code == 0, res.output
    derived = json.loads((out / "new.instance.json").read_text())
    assert derived["regions"]["a"]["electricity"]["csv"] == "new.instance.data/price.csv"
    # the new plan records its instance: report and export find it
    doc = json.loads(new.read_text())
    assert doc["instance_file"]["path"] == "new.instance.json"
    res = _cli("report", str(new))
    assert res.exit_code == 0, res.output


def _old_plan_file(tmp_path: Path, change: Any) -> tuple[Path, Path]:
    first = tmp_path / "lost.json"
    first.write_text(json.dumps(_reserved_regions()))
    old = tmp_path / "old.json"
    assert _cli("solve", str(first), "--solver", "milp", "-o", str(old)).exit_code == 0
    doc = json.loads(old.read_text())
    change(doc)
    old.write_text(json.dumps(doc))
    return first, old


@pytest.mark.parametrize(
    ("change", "named"),
    [
        # hours -74..-1 would mark a 74-hour phase done (hour -1 priced as hour 11)
        (lambda d: d["phases"][0].update(hours=list(range(-74, 0))), "[job]"),
        # one real hour listed 200 times would mark the phase done
        (lambda d: d["phases"][0].update(hours=[1] * 200), "[job]"),
        # reserved entries the instance cannot hold
        (lambda d: d["reserved"].append({"region": "b", "gpu": "G", "gpus": 5}), "reserved"),
        (lambda d: d["reserved"].__setitem__(0, {**d["reserved"][0], "gpus": 500}), "reserved"),
    ],
)
def test_from_refuses_an_old_plan_that_does_not_fit_its_instance(
    tmp_path: Path, change: Any, named: str
) -> None:
    first, old = _old_plan_file(tmp_path, change)
    res = _cli("solve", str(first), "--from", "3", "--plan", str(old))
    assert res.exit_code == 2, res.output
    assert "does not fit its instance" in res.output and named in res.output


def test_from_now_and_iso_times() -> None:
    from datetime import UTC, datetime

    from planner.interfaces.cli.solve import parse_from

    inst = instance_from(two_regions())  # starts 2023-06-05T00:00Z
    assert parse_from("5", inst) == 5
    # 03:20 is under way: the re-plan starts at the next whole hour
    assert parse_from("2023-06-05T03:20:00Z", inst) == 4
    assert parse_from("2023-06-05T03:00:00+00:00", inst) == 3
    assert parse_from("now", inst, datetime(2023, 6, 5, 7, 59, tzinfo=UTC)) == 8


def _chain() -> dict[str, Any]:
    d = two_regions()
    d["phases"][0]["work"] = {"tokens": 8e9, "flops_convention": "6nd"}
    d["phases"][0]["model"] = "m"
    d["phases"][0]["kind"] = "training"
    d["models"] = {"m": {"params": 1.0e9 / 3}}
    d["phases"][0]["mfu"] = 1.0
    return with_prep(d)


def test_status_comes_back_from_the_runs(tmp_path: Path) -> None:
    # job: 8e9 tokens x 6 x 1e9/3 FLOPs = 1.6e19 FLOPs on 10 G at 100 TFLOP/s, MFU 1: 4.44 h
    # -> 5 hours. The plan: prep hours 0-1, job 2-6. At hour 4 the job's progress file says
    # 6e9 of 8e9 tokens (ahead of the plan's 2 of 4.44 h): a quarter is left, 1.11 h -> 2 h.
    inst, old = _solved(_chain())
    assert old.phase("prep").hours == (0, 1) and old.phase("job").hours == (2, 3, 4, 5, 6)
    from planner.interfaces.export.layout import build_layout
    from planner.interfaces.runstatus import read_status

    lay = build_layout(inst, old)
    jobs = {u.phase: u.job for u in lay.units}
    queue = tmp_path / "queue.json"
    queue.write_text(
        json.dumps(
            [
                {"job_id": 1, "job_name": jobs["prep"], "status": "SUCCEEDED"},
                {"job_id": 2, "job_name": jobs["job"], "status": "RUNNING"},
                {"job_id": 3, "job_name": "someone-elses", "status": "FAILED"},
            ]
        )
    )
    bucket = tmp_path / "bucket" / "job" / "checkpoints"
    bucket.mkdir(parents=True)
    (bucket / "progress.json").write_text(
        json.dumps({"phase": "job", "tokens": 6e9, "job": jobs["job"], "updated": "x"})
    )
    status = read_status([queue, tmp_path / "bucket"], inst, old)
    assert status["prep"].done and not status["job"].done
    assert status["job"].progress == {"tokens": 6e9}
    ups = state_at(inst, old, 4, inst, status)
    assert ups["phases.prep.done"] is True
    assert ups["phases.job.progress"] == {"tokens": 6e9}
    assert ups["phases.job.running"]["region"] == "a"
    r = replan(inst, old, 4, old_instance=inst, status=status, solver="milp", gap=0.0)
    plan = r.result.plan
    assert plan is not None and plan.phase("job").hours == (4, 5)
    assert_valid(r.instance, plan)
    # a queue that never saw the job: not started, planned again from scratch (5 hours)
    queue.write_text(json.dumps([{"job_id": 1, "job_name": jobs["prep"], "status": "SUCCEEDED"}]))
    status = read_status([queue], inst, old)
    assert not status["job"].started
    ups = state_at(inst, old, 4, inst, status)
    assert "phases.job.progress" not in ups and ups["phases.prep.done"] is True
    # through the command line, and a bad progress file is an input error naming its field
    inst_file = tmp_path / "chain.json"
    inst_file.write_text(json.dumps(_chain()))
    old_file = tmp_path / "old.json"
    assert _cli("solve", str(inst_file), "--solver", "milp", "-o", str(old_file)).exit_code == 0
    (bucket / "progress.json").write_text(json.dumps({"phase": "job", "tokens": -1}))
    res = _cli(
        "solve",
        str(inst_file),
        "--from",
        "4",
        "--plan",
        str(old_file),
        "--status",
        str(tmp_path / "bucket"),
    )
    assert res.exit_code == 2 and "tokens: expected a non-negative number" in res.output


@pytest.mark.slow
def test_month_70b_replans_from_hour_200_after_a_spot_price_change(tmp_path: Path) -> None:
    # The shipped month-70b runs pre-training on a whole-horizon reservation (an offer without
    # terms). After a spot price change (2.25 -> 3.70 USD) it re-plans from hour 200: the
    # pre-training goes on on its committed pool; the past is costed at the old prices.
    root = Path(__file__).resolve().parents[2] / "instances"
    old = tmp_path / "old.json"
    res = _cli(
        "-q",
        "solve",
        str(root / "month-70b.yaml"),
        "--gap",
        "0.01",
        "--no-attribution",
        "-o",
        str(old),
    )
    assert res.exit_code == 0, res.output
    text = (
        (root / "month-70b.yaml")
        .read_text()
        .replace("spot: {usd_per_gpu_hour: 2.25", "spot: {usd_per_gpu_hour: 3.70")
    )
    now = root / f".month-70b-now-{os.getpid()}.yaml"
    try:
        now.write_text(text)
        new = tmp_path / "new.json"
        res = _cli(
            "solve", str(now), "--from", "200", "--plan", str(old), "--gap", "0.01", "-o", str(new)
        )
    finally:
        now.unlink()
    assert res.exit_code == 0, res.output
    doc = json.loads(new.read_text())
    from planner.checker.planfile import read_plan as _read

    before = _read(old)
    block = doc["replan"]
    inst = planner.read(root / "month-70b.yaml")
    from planner.interfaces.replan import history_usd, reserved_after_usd

    assert block["history_usd"] == pytest.approx(history_usd(inst, before, 200))
    assert block["reserved_after_usd"] == pytest.approx(reserved_after_usd(inst, before, 200))
    assert block["reserved_after_usd"] > 0
    assert _cli("verify", str(tmp_path / "new.instance.json"), str(new)).exit_code == 0


def test_an_instance_edited_in_place_keeps_the_past_at_its_old_prices(tmp_path: Path) -> None:
    # The user changes the price in the file the plan was made from (2.10 -> 3.70 in the
    # issue; here $1 -> $2 per GPU-hour) and re-plans with that same file: the plan keeps the
    # instance as planned, so hours 0-2 stay 3 x ($10 + $0.20) = $30.60.
    first = tmp_path / "lost.json"
    first.write_text(json.dumps(two_regions()))
    old = tmp_path / "old.json"
    assert _cli("solve", str(first), "--solver", "milp", "-o", str(old)).exit_code == 0
    now = two_regions()
    now["regions"]["a"]["offers"]["G"]["on_demand"]["usd_per_gpu_hour"] = 2.0
    first.write_text(json.dumps(now))
    new = tmp_path / "new.json"
    res = _cli("solve", str(first), "--from", "3", "--plan", str(old), "-o", str(new))
    assert res.exit_code == 0, res.output
    assert json.loads(new.read_text())["replan"]["history_usd"] == pytest.approx(30.60)
    assert "spent before hour 3 $30.60" in res.output
    # a plan file without the copy: the past at the file's prices, and the output says so
    doc = json.loads(old.read_text())
    del doc["instance_snapshot"]
    old.write_text(json.dumps(doc))
    res = _cli("solve", str(first), "--from", "3", "--plan", str(old), "-o", str(new))
    assert res.exit_code == 0, res.output
    assert json.loads(new.read_text())["replan"]["history_usd"] == pytest.approx(60.60)
    assert "has changed since" in res.output


@pytest.mark.parametrize("name", ["week-7b", "month-70b"])
def test_the_old_plans_configuration_is_found_narrowed_as_in_full(name: str) -> None:
    # config_of enumerates the phase only on the entry's GPU type, region, contract,
    # precision and tier: the configuration it finds is the one of the whole phase's
    # enumeration, field by field (work hours, rates, failures: what the state derives)
    import dataclasses

    from planner.interfaces.replan import config_of
    from planner.model.configs import enumerate_phase
    from planner.model.plan import CONFIG_FIELDS

    inst = planner.read(Path(__file__).resolve().parents[2] / "instances" / f"{name}.yaml")
    plan = solve(inst, time_limit=20, gap=0.01).plan
    assert plan is not None
    parts = [(e.name, part) for e in plan.phases for part in e.parts()]
    assert len(parts) >= 4
    for phase, part in parts:
        want = {**{k: getattr(part, k) for k in CONFIG_FIELDS}, "term": part.term}
        every, _ = enumerate_phase(inst, inst.phase(phase), every=True)
        full = [c for c in every if c.plan_fields() == want]
        found = config_of(inst, phase, part)
        assert len(full) == 1 and found is not None, (phase, part)
        assert dataclasses.replace(found, index=0) == dataclasses.replace(full[0], index=0)
