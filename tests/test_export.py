"""``trainplan export --to skypilot``: the task YAMLs and the launch script, parsed and
checked against the plan (no SkyPilot install needed: launch.sh runs with DRY_RUN=1)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import instance_from, tiny_dict
from typer.testing import CliRunner

from planner.cli import _register, app
from planner.export import export_skypilot
from planner.export.skypilot import plan_order
from planner.plan import PhasePlan, Plan
from planner.schedule import hour_runs
from planner.solve import solve

_register()


def _tiny_with_clouds() -> dict[str, Any]:
    d = tiny_dict()
    d["regions"]["east"].update(cloud="aws", cloud_region="us-east-1")
    d["regions"]["west"].update(cloud="gcp", cloud_region="europe-west3")
    d["gpu_types"]["A100"]["accelerator"] = "A100-80GB"
    return d


@pytest.fixture(scope="module")
def solved() -> tuple[Any, Plan]:
    inst = instance_from(_tiny_with_clouds(), "tiny.yaml")
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    return inst, res.plan


def _tasks(folder: Path) -> dict[str, dict[str, Any]]:
    return {f.name: yaml.safe_load(f.read_text()) for f in sorted(folder.glob("*.yaml"))}


def _dry_run(script: Path) -> list[str]:
    out = subprocess.run(
        ["bash", str(script)],
        env={"DRY_RUN": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_one_task_per_phase_matches_the_plan(solved: tuple[Any, Plan], tmp_path: Path) -> None:
    inst, plan = solved
    done = export_skypilot(inst, plan, tmp_path)
    tasks = _tasks(tmp_path)
    assert len(tasks) == len(plan.phases) == len(done.tasks)
    order = [p.name for p in plan_order(inst, plan)]
    for i, name in enumerate(order, start=1):
        p = plan.phase(name)
        files = [f for f in tasks if f.startswith(f"{i:02d}-")]
        assert len(files) == 1, (i, name, list(tasks))
        t = tasks[files[0]]
        assert t["name"] == name
        res = t["resources"]
        region = inst.region(p.region)
        assert res["cloud"] == region.cloud and res["region"] == region.cloud_region
        assert res["use_spot"] is (p.contract == "spot")
        acc, count = res["accelerators"].split(":")
        assert acc == {"A100": "A100-80GB", "L4": "L4"}[p.gpu]
        per_node = inst.gpu(p.gpu).gpus_per_node
        if p.gpus <= per_node:
            # a part of one node: the count itself, one node (plus spare nodes)
            assert float(count) == p.gpus
            assert t["num_nodes"] == 1 + p.spare_gpus // per_node
        else:
            assert int(count) == per_node
            assert t["num_nodes"] == -(-p.gpus // per_node) + p.spare_gpus // per_node
        envs = t["envs"]
        assert (
            envs["TRAINPLAN_START"]
            == plan.to_dict()["phases"][[q.name for q in plan.phases].index(name)]["start"]
        )
        assert int(envs["TRAINPLAN_HOURS"]) == len(p.hours)
        assert envs["TRAINPLAN_PRECISION"] == p.precision and int(envs["TRAINPLAN_ZERO"]) == p.zero
        assert len(envs["TRAINPLAN_SEGMENTS"].split()) == len(hour_runs(p.hours))
        assert "run" in t


def test_launch_script_starts_phases_in_plan_order(
    solved: tuple[Any, Plan], tmp_path: Path
) -> None:
    inst, plan = solved
    done = export_skypilot(inst, plan, tmp_path)
    lines = _dry_run(done.script)
    launched = [ln.split()[-1] for ln in lines if ln.startswith("sky launch")]
    # every segment of every phase is launched, in time order
    starts: list[tuple[int, str]] = []
    for t in done.tasks:
        starts += [(a, t.file) for a, _b in t.segments]
    assert launched == [f for _, f in sorted(starts, key=lambda x: x[0])]
    # the first launch waits for the first phase's start, printed before it
    first = plan_order(inst, plan)[0]
    when = plan.to_dict()["phases"][[q.name for q in plan.phases].index(first.name)]["start"]
    assert lines.index(f"# at {when}") < lines.index(
        next(ln for ln in lines if ln.startswith("sky launch"))
    )


def _plan_of(phases: list[PhasePlan]) -> Plan:
    from datetime import UTC, datetime

    costs = {
        k: 0.0 for k in ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon")
    }
    return Plan(
        "tiny", datetime(2023, 6, 5, tzinfo=UTC), 0.0, {**costs, "total": 0.0}, tuple(phases)
    )


def _entry(name: str, **kw: Any) -> PhasePlan:
    base: dict[str, Any] = dict(
        gpu="A100",
        region="west",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=0,
        precision="bf16",
        zero=0,
        recompute="none",
        tp=1,
        pp=1,
        tier="hot",
        hours=(0, 1),
    )
    base.update(kw)
    return PhasePlan(name=name, **base)


def test_slices_spares_and_pauses(tmp_path: Path) -> None:
    inst = instance_from(_tiny_with_clouds(), "tiny.yaml")
    plan = _plan_of(
        [
            # a paused spot phase on half a card: two segments, stopped in between
            _entry("prep", gpus=0.5, contract="spot", hours=(0, 1, 5, 6)),
            # 16 GPUs and one spare node: 2 + 1 nodes of 8
            _entry("finetune", gpus=16.0, spare_gpus=8, hours=(7, 8, 9)),
        ]
    )
    done = export_skypilot(inst, plan, tmp_path)
    tasks = _tasks(tmp_path)
    prep = tasks["01-prep.yaml"]
    assert prep["resources"]["accelerators"] == "A100-80GB:0.5"
    assert prep["resources"]["use_spot"] is True and prep["num_nodes"] == 1
    ft = tasks["02-finetune.yaml"]
    assert ft["resources"]["accelerators"] == "A100-80GB:8" and ft["num_nodes"] == 3
    lines = [ln for ln in _dry_run(done.script) if ln.startswith("sky ") or ln.startswith("# at")]
    assert lines == [
        "# at 2023-06-05T00:00:00+00:00",
        "sky launch -y -d -c tp-tiny-prep 01-prep.yaml",
        "# at 2023-06-05T02:00:00+00:00",
        "sky stop -y tp-tiny-prep",
        "# at 2023-06-05T05:00:00+00:00",
        "sky launch -y -d --down -c tp-tiny-prep 01-prep.yaml",
        "# at 2023-06-05T07:00:00+00:00",
        "sky launch -y -d --down -c tp-tiny-finetune 02-finetune.yaml",
    ]


def test_regions_without_a_cloud_region_are_warned(tmp_path: Path) -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    plan = _plan_of([_entry("finetune")])
    done = export_skypilot(inst, plan, tmp_path)
    assert any("names no cloud region" in w for w in done.warnings)
    t = _tasks(tmp_path)["01-finetune.yaml"]
    assert t["resources"]["region"] == "west" and "cloud" not in t["resources"]


def test_cli_needs_the_instance_and_refuses_unknown_targets(tmp_path: Path) -> None:
    d = _tiny_with_clouds()
    inst_file = tmp_path / "tiny.yaml"
    inst_file.write_text(yaml.safe_dump(d))
    runner = CliRunner()
    res = runner.invoke(app, ["-q", "solve", str(inst_file), "-o", str(tmp_path / "p.json")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["export", str(tmp_path / "p.json"), "--to", "slurm", "-o", "x"])
    assert res.exit_code == 2 and "--to" in res.output
    res = runner.invoke(app, ["export", str(tmp_path / "p.json"), "-o", str(tmp_path / "sky")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "sky" / "launch.sh").is_file()
    inst_file.unlink()
    res = runner.invoke(app, ["export", str(tmp_path / "p.json"), "-o", str(tmp_path / "sky2")])
    assert res.exit_code == 2 and "needs the plan's instance" in res.output
