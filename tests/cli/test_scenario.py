"""A team's own run, from a blank file to a launchable plan that shows its saving.

"Fine-tune a 13B model on up to 64 H100s within 3 days, data in the EU, two EU regions,
evaluation on L4s": the instance is the complete example of docs/instance-format.md (the
documented format alone: GPUs by catalog name, a December 2026 horizon on 2023's prices as a
price profile), written into a fresh folder with the two price extracts beside it, then
checked, solved, verified, reported and exported through the command line, as a user would.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import planner
from planner.instance.catalog import gpu_by_name
from planner.interfaces.cli import _register, app
from planner.model.plan import file_sha256

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "instance-format.md"
PRICES = ROOT / "instances" / "data" / "prices"

_register()


def documented_example() -> str:
    """The YAML block under "A complete example" in docs/instance-format.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1]
    m = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert m is not None, "the document lost its example"
    return m.group(1)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The user's folder: instance.yaml and data/prices/, then plan.json, report.html and
    sky/ written by the CLI."""
    folder = tmp_path_factory.mktemp("team")
    (folder / "data" / "prices").mkdir(parents=True)
    for market in ("DE-LU", "FR"):
        name = f"price_{market}_2023.csv"
        shutil.copyfile(PRICES / name, folder / "data" / "prices" / name)
    inst_file = folder / "instance.yaml"
    inst_file.write_text(documented_example(), encoding="utf-8")
    runner = CliRunner()
    out: dict[str, Any] = {"folder": folder, "instance": inst_file}
    out["check"] = runner.invoke(app, ["check", str(inst_file)])
    out["solve"] = runner.invoke(
        app, ["solve", str(inst_file), "-o", str(folder / "plan.json"), "--time-limit", "60"]
    )
    out["verify"] = runner.invoke(app, ["verify", str(inst_file), str(folder / "plan.json")])
    out["report"] = runner.invoke(app, ["report", str(folder / "plan.json")])
    out["export"] = runner.invoke(
        app, ["export", str(folder / "plan.json"), "--to", "skypilot", "-o", str(folder / "sky")]
    )
    return out


def test_the_documented_file_is_the_scenario() -> None:
    doc = yaml.safe_load(documented_example())
    assert doc["gpu_types"] == {"H100-SXM": {}, "L4": {}}  # by catalog name alone
    assert doc["horizon"]["hours"] == 72  # three days
    assert str(doc["horizon"]["start"]).startswith("2026-12-07")
    regions = doc["regions"]
    assert set(regions) == {"eu-de", "eu-fr"}
    assert all(r["timezone"].startswith("Europe/") for r in regions.values())
    assert all(r["electricity"]["reference_year"] == 2023 for r in regions.values())
    assert all(r["capacity"]["H100-SXM"] == 64 for r in regions.values())
    ft, ev = doc["phases"]
    assert max(ft["options"]["gpu_counts"]) == 64 and ft["data"]["home_region"] == "eu-de"
    assert ev["gpu_types"] == ["L4"] and ev["work"]["passes"] == "forward"


def test_check_accepts_it_with_catalog_figures_and_2026_prices(run: dict[str, Any]) -> None:
    assert run["check"].exit_code == 0, run["check"].output
    inst = planner.read(run["instance"])
    # the catalog's figures, untouched
    assert inst.gpu("H100-SXM").memory_gb == gpu_by_name("H100-SXM").memory_gb == 80
    assert inst.gpu("L4").board_power_w == 72
    assert inst.gpu("H100-SXM").catalog == "H100-SXM"
    # the price profile: 2026-12-07 00:00 UTC is Monday 01:00 in Berlin; 2023's Monday
    # nearest 7 December is 4 December, 01:00 CET = 00:00 UTC, whose DE-LU price is read
    # from the CSV itself, plus the 50 USD/MWh adder
    rows = {}
    with (PRICES / "price_DE-LU_2023.csv").open() as fh:
        for line in fh.readlines()[1:]:
            t, _local, v = line.strip().split(",")
            rows[datetime.fromisoformat(t)] = float(v)
    ref = datetime(2023, 12, 4, tzinfo=UTC)
    assert inst.price["eu-de"][0] == pytest.approx(rows[ref] + 50.0, abs=1e-9)
    # and hour 71 (Wednesday 23:00 UTC) reads 2023-12-06 23:00 UTC
    assert inst.price["eu-de"][71] == pytest.approx(
        rows[datetime(2023, 12, 6, 23, tzinfo=UTC)] + 50.0, abs=1e-9
    )


def test_solve_plans_the_finetune_and_the_evaluation(run: dict[str, Any]) -> None:
    res = run["solve"]
    assert res.exit_code == 0, res.output
    data = json.loads((run["folder"] / "plan.json").read_text())
    phases = {p["name"]: p for p in data["phases"]}
    ft, ev = phases["finetune"], phases["evaluation"]
    assert ft["gpu"] == "H100-SXM" and ft["gpus"] <= 64 and ft["region"] in ("eu-de", "eu-fr")
    assert ev["gpu"] == "L4"
    assert min(ev["hours"]) >= max(ft["hours"]) + 1  # after the fine-tune
    assert max(ft["hours"]) < 72 and max(ev["hours"]) < 72  # within three days
    # the plan records its instance (relative to the plan) and the file's hash
    assert data["instance_file"] == {
        "path": "instance.yaml",
        "sha256": file_sha256(run["instance"]),
    }
    # and opens with the answer: the saving against the lever-free baseline
    a = data["attribution"]
    assert a["plan"]["objective"] == pytest.approx(data["objective"])
    assert a["saving"]["objective"] == pytest.approx(a["baseline"]["objective"] - data["objective"])
    assert a["saving"]["objective"] >= 0
    assert sum(s["saving"] for s in a["levers"]) == pytest.approx(a["saving"]["objective"])
    assert "lever-free baseline" in res.output


def test_verify_accepts_the_plan(run: dict[str, Any]) -> None:
    assert run["verify"].exit_code == 0, run["verify"].output


def test_report_finds_the_instance_and_shows_the_saving_first(run: dict[str, Any]) -> None:
    assert run["report"].exit_code == 0, run["report"].output
    page = (run["folder"] / "plan.html").read_text()
    data = json.loads((run["folder"] / "plan.json").read_text())
    base = f"{data['attribution']['baseline']['objective']:,.2f}"
    assert page.index('id="answer"') < page.index('id="schedule"') < page.index('id="solver"')
    assert base in page[page.index('id="answer"') : page.index('id="schedule"')]
    # prices and capacity are drawn: the instance was found from the plan's record
    assert "No instance was given" not in page


def test_export_gives_one_launchable_task_per_phase(run: dict[str, Any]) -> None:
    assert run["export"].exit_code == 0, run["export"].output
    sky = run["folder"] / "sky"
    data = json.loads((run["folder"] / "plan.json").read_text())
    doc = yaml.safe_load(documented_example())
    files = sorted(sky.glob("*.yaml"))  # one per run of hours: the first of each phase
    tasks: dict[str, Any] = {}
    for f in files:
        t = yaml.safe_load(f.read_text())
        tasks.setdefault(t["envs"]["TRAINPLAN_PHASE"], t)
    assert set(tasks) == {p["name"] for p in data["phases"]}
    for p in data["phases"]:
        t = tasks[p["name"]]
        res = t["resources"]
        region = doc["regions"][p["region"]]
        assert res["cloud"] == "aws" and res["region"] == region["cloud_region"]
        assert res["use_spot"] == (p["contract"] == "spot")
        name, per_node = res["accelerators"].split(":")
        assert name == {"H100-SXM": "H100", "L4": "L4"}[p["gpu"]]
        assert float(per_node) * t["num_nodes"] >= p["gpus"]
        assert t["envs"]["TRAINPLAN_START"] == p["start"]
    ft = tasks["finetune"]
    assert ft["num_nodes"] == data["phases"][0]["gpus"] / 8
    script = sky / "launch.sh"
    dry = subprocess.run(
        ["bash", str(script)],
        env={"DRY_RUN": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert dry.returncode == 0, dry.stderr
    # managed jobs (the evaluation may run on spot), the evaluation after the fine-tune
    launches = [ln for ln in dry.stdout.splitlines() if ln.startswith("sky jobs launch")]
    assert len(launches) >= 2
    assert ft["name"] in launches[0] and tasks["evaluation"]["name"] in launches[-1]
