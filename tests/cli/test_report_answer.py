"""The report's answer and its instance: ``solve`` records the instance (path relative to the
plan, SHA-256) and the attribution; ``report`` finds the instance from the record, refuses a
different file, opens with the saving, shows local times on request and marks emissions
incomplete where a region has no carbon data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from builders import DATA
from typer.testing import CliRunner

import planner
from planner.analysis.attribution import Attribution, attribute
from planner.interfaces.cli import _register, app
from planner.model.plan import InstanceRef, Plan, file_sha256

_register()


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """tiny.yaml in ``inst/``, its plan written by the CLI into ``plans/`` (another folder)."""
    root = tmp_path_factory.mktemp("answer")
    (root / "inst").mkdir()
    (root / "plans").mkdir()
    inst = root / "inst" / "tiny.yaml"
    shutil.copyfile(DATA / "tiny.yaml", inst)
    plan = root / "plans" / "plan.json"
    res = CliRunner().invoke(app, ["solve", str(inst), "-o", str(plan)])
    assert res.exit_code == 0, res.output
    return {"root": root, "instance": inst, "plan": plan, "solve_output": res.output}


def test_the_plan_records_its_instance_relative_to_itself(solved: dict[str, Any]) -> None:
    data = json.loads(solved["plan"].read_text())
    ref = InstanceRef.from_file_dict(data)
    assert ref == InstanceRef("../inst/tiny.yaml", file_sha256(solved["instance"]))
    assert ref.locate(solved["plan"]).resolve() == solved["instance"].resolve()
    # the rest of the file is still a trainplan-plan/2 any reader takes
    assert data["format"] == "trainplan-plan/2"
    assert Plan.from_dict(data).objective == pytest.approx(data["objective"])


def test_solve_and_report_tell_one_story(solved: dict[str, Any], tmp_path: Path) -> None:
    data = json.loads(solved["plan"].read_text())
    a = Attribution.from_dict(data["attribution"])
    # what solve printed is what it wrote
    assert f"${a.baseline_objective:,.2f}" in solved["solve_output"]
    # and what the attribution gives afresh on the instance
    inst = planner.read(solved["instance"])
    again = attribute(inst, Plan.from_dict(data))
    assert again.baseline_objective == pytest.approx(a.baseline_objective, rel=1e-12)
    assert [s.saving for s in again.levers] == pytest.approx([s.saving for s in a.levers])
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(solved["plan"]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    answer = page[page.index('id="answer"') : page.index('id="schedule"')]
    assert f"{a.baseline_objective:,.2f}" in answer and f"{abs(a.saving):,.2f}" in answer
    for s in a.levers:
        assert s.label in answer
    # the instance was found from the plan's record: prices and capacity are drawn
    assert "No instance was given" not in page


def test_report_refuses_an_instance_that_changed(solved: dict[str, Any], tmp_path: Path) -> None:
    other = tmp_path / "inst"
    other.mkdir()
    plan = tmp_path / "plan.json"
    shutil.copyfile(solved["plan"], plan)
    changed = other / "tiny.yaml"
    changed.write_text(solved["instance"].read_text() + "\n# edited\n")
    data = json.loads(plan.read_text())
    data["instance_file"]["path"] = "inst/tiny.yaml"
    plan.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["report", str(plan), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2
    assert "is not the instance" in res.output and "SHA-256" in res.output
    # and so does --instance with another file
    res = CliRunner().invoke(
        app,
        ["report", str(solved["plan"]), "--instance", str(changed), "-o", str(tmp_path / "r.html")],
    )
    assert res.exit_code == 2 and "is not the instance" in res.output


def test_local_times_and_incomplete_emissions(solved: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "local.html"
    res = CliRunner().invoke(app, ["report", str(solved["plan"]), "-o", str(out), "--local-time"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "start (local time of the region)" in page
    plan = Plan.from_dict(json.loads(solved["plan"].read_text()))
    zones = {"east": ("EDT",), "west": ("CEST",)}
    for p in plan.phases:
        assert any(z in page for z in zones[p.region]), p.region
    # tiny has no carbon series: the emissions are marked incomplete
    assert "incomplete: no carbon data for" in page
    utc = tmp_path / "utc.html"
    assert CliRunner().invoke(app, ["report", str(solved["plan"]), "-o", str(utc)]).exit_code == 0
    assert "start (UTC)" in utc.read_text()


def test_report_computes_the_attribution_when_the_file_has_none(
    solved: dict[str, Any], tmp_path: Path
) -> None:
    recorded = json.loads(solved["plan"].read_text())["attribution"]
    plan = tmp_path / "plain.json"
    res = CliRunner().invoke(
        app, ["solve", str(solved["instance"]), "-o", str(plan), "--no-attribution"]
    )
    assert res.exit_code == 0, res.output
    assert "attribution" not in json.loads(plan.read_text())
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(plan), "-o", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    answer = page[page.index('id="answer"') : page.index('id="schedule"')]
    assert f"{recorded['baseline']['objective']:,.2f}" in answer
    assert f"{recorded['saving']['objective']:,.2f}" in answer
