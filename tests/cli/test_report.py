"""``trainplan report``: the HTML page, the PNG files, the monitoring flags and bad input.

The plan comes from the MILP on tests/data/tiny.yaml (about a second); the flag tests use
hand-made phases so the arithmetic is in the comments.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib.image
import numpy as np
import pytest
import typer
from builders import command_app
from typer.testing import CliRunner, Result

import planner
from planner.interfaces.report import (
    CHARTS,
    SECTIONS,
    ReportError,
    check_match,
    phase_facts,
    predicted_utilisation,
    render,
    write_pngs,
)
from planner.interfaces.report.facts import PLAN_WIDE, cost_rows
from planner.model.plan import COST_KEYS, PhasePlan, Plan
from planner.model.result import Result as SolveResult
from planner.model.result import SolveHeader
from planner.model.schedule import hour_runs

DATA = Path(__file__).parents[1] / "data"
TINY = DATA / "tiny.yaml"


@pytest.fixture(scope="module")
def inst() -> planner.Instance:
    return planner.read(TINY)


@pytest.fixture(scope="module")
def result(inst: planner.Instance) -> SolveResult:
    from planner.solve import solve

    res = solve(inst, time_limit=30)
    assert res.plan is not None, res.message
    return res


@pytest.fixture(scope="module")
def plan(result: SolveResult) -> Plan:
    assert result.plan is not None
    return result.plan


@pytest.fixture(scope="module")
def header(result: SolveResult) -> SolveHeader:
    return SolveHeader.from_file_dict(result.to_dict())


@pytest.fixture(scope="module")
def page(plan: Plan, inst: planner.Instance, header: SolveHeader) -> str:
    return render(plan, inst, header=header)


def _phase(**kw: Any) -> PhasePlan:
    base: dict[str, Any] = dict(
        name="ft",
        gpu="A100",
        region="east",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=0,
        precision="bf16",
        zero=1,
        recompute="none",
        tp=1,
        pp=1,
        tier="hot",
        hours=(10, 11, 12, 13, 14),
        costs={k: 0.0 for k in COST_KEYS},
        info={
            "work_hours": 4.6,
            "memory_gb": 40.0,
            "model_states_gb": 30.0,
            "activations_gb": 6.0,
            "memory_capacity_gb": 76.0,
            "expected_failures": 0.01,
            "failure_rate_per_h": 0.002,
            "checkpoint_interval_s": 3600.0,
            "checkpoint_gb": 18.0,
            "facility_kw": 7.0,
        },
    )
    base.update(kw)
    return PhasePlan(**base)


def _plan(*phases: PhasePlan, **kw: Any) -> Plan:
    base: dict[str, Any] = dict(
        instance="tiny",
        horizon_start=datetime(2023, 6, 5, tzinfo=UTC),
        objective=100.0,
        costs={**{k: 0.0 for k in COST_KEYS}, "total": 0.0},
        phases=phases,
    )
    base.update(kw)
    return Plan(**base)


# ----------------------------------------------------------------------------- the page


def test_page_has_every_section_and_the_plan_numbers(
    plan: Plan, header: SolveHeader, page: str
) -> None:
    for s in SECTIONS:
        assert f'<section id="{s}">' in page, s
    # Every cost component, the total and each phase's costs, formatted as 1,234.56.
    for k in (*COST_KEYS, "total"):
        assert f"{plan.costs[k]:,.2f}" in page, k
    for p in plan.phases:
        assert f"<td>{p.name}</td>" in page
        for k in COST_KEYS:
            assert f'<td class="n">{p.costs[k]:,.2f}</td>' in page, (p.name, k)
        # Start and end as UTC dates: horizon start + start_hour hours.
        start = plan.horizon_start.astimezone(UTC) + timedelta(hours=p.start_hour)
        end = plan.horizon_start.astimezone(UTC) + timedelta(hours=p.end_hour)
        assert start.strftime("%Y-%m-%d %H:%M UTC") in page
        assert end.strftime("%Y-%m-%d %H:%M UTC") in page
        if p.info.get("expected_failures") is not None:
            assert f"{p.info['expected_failures']:.4g}" in page
    # Solver status, bound and gap.
    assert plan.objective is not None and header.bound is not None and header.gap is not None
    assert f"<td>{header.status}</td>" in page and f"<td>{header.termination}</td>" in page
    assert f"{plan.objective:,.2f}" in page and f"{header.bound:,.2f}" in page
    assert f"{header.gap:.4%}" in page
    # Six charts inline: Gantt, costs, memory, failures, prices, capacity.
    assert page.count("<svg") == len(CHARTS) == 6
    assert "No instance was given" not in page


def test_page_shows_region_prices_and_capacity_of_the_instance(
    plan: Plan, page: str, inst: planner.Instance
) -> None:
    # tiny: east constant 60 USD/MWh; west 120, 40 from 22:00 to 06:00 Berlin time. Over the
    # 48 h from 2023-06-05 00:00 UTC (02:00 CEST) the cheap band covers 04:00 of the first
    # day (4 h) + 20:00-04:00 UTC (8 h) + 20:00-24:00 (4 h) = 16 h, so the mean is
    # (16 x 40 + 32 x 120) / 48 = 93.33.
    assert float(np.mean(inst.price["west"])) == pytest.approx(93.333, abs=1e-3)
    prices = page.split('<section id="prices">')[1].split("</section>")[0]
    assert "<td>east</td>" in prices and "<td>west</td>" in prices
    assert '<td class="n">93.3</td>' in prices and '<td class="n">60.0</td>' in prices
    capacity = page.split('<section id="capacity">')[1].split("</section>")[0]
    for p in plan.phases:
        assert f"<td>{p.region} / {p.gpu}</td>" in capacity


def test_page_has_no_external_references(plan: Plan, page: str) -> None:
    for html in (page, render(plan, None)):
        assert "http://" not in html and "https://" not in html
        assert not re.search(r"""(src|href)\s*=\s*["']?//""", html)
        for attr in re.findall(r"""\bsrc\s*=\s*["']([^"']*)""", html):
            assert attr.startswith("data:"), attr
        assert not re.search(r"url\((?!#)", html), "only in-document url(#id) references"
        assert "<script" not in html and "<link" not in html and "@import" not in html


def test_svg_ids_are_unique_and_references_resolve(page: str) -> None:
    # matplotlib numbers its groups figure_1, axes_1, ... in every SVG; pasted as they are,
    # six charts would repeat those ids.
    ids = re.findall(r'\bid="([^"]+)"', page)
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, dupes[:5]
    refs = set(re.findall(r'href="#([^"]+)"', page)) | set(re.findall(r"url\(#([^)]+)\)", page))
    assert refs and refs <= set(ids)


def test_page_without_instance_says_so_and_skips_instance_charts(plan: Plan) -> None:
    html = render(plan, None, instance_note="The plan's instance 'tiny' was not found.")
    assert html.count("No instance was given") == 2  # prices and capacity sections
    assert "The plan&#x27;s instance &#x27;tiny&#x27; was not found." in html
    assert html.count("<svg") == 4
    assert "-prices-" not in html and "-capacity-" not in html
    assert f"{plan.costs['total']:,.2f}" in html


def test_names_are_escaped_in_page_and_charts(plan: Plan, inst: planner.Instance) -> None:
    p0 = plan.phases[0]
    odd = replace(plan, phases=(replace(p0, name="<b>$x$ & y</b>"), *plan.phases[1:]))
    html = render(odd, inst, header=SolveHeader(notes=("<script>alert(1)</script>",)))
    assert "<b>$x$" not in html and "<script>" not in html
    assert "&lt;b&gt;$x$ &amp; y&lt;/b&gt;" in html


# ----------------------------------------------------------------------------- the figures


def test_predicted_utilisation_and_headroom_flags() -> None:
    # 4.6 work hours on 8 GPUs + 8 spares held for 5 hours: 4.6 x 8 / (5 x 16) = 0.46.
    spare = phase_facts(_phase(spare_gpus=8))
    assert spare.utilisation == pytest.approx(0.46)
    assert spare.flags == ["predicted GPU utilisation 46% is below 70%"]
    # Without spares: 4.6 / 5 = 0.92, memory 40 of 76 GB: headroom 36 / 76 = 47.4%, no flag.
    ok = phase_facts(_phase())
    assert ok.utilisation == pytest.approx(0.92) and ok.headroom == pytest.approx(36 / 76)
    assert ok.flags == []
    # 73 of 76 GB: headroom 3 / 76 = 3.9% < 5%.
    tight = phase_facts(_phase(info={**_phase().info, "memory_gb": 73.0}))
    assert tight.headroom == pytest.approx(3 / 76)
    assert tight.flags == ["memory headroom 3.9% is under 5%"]
    # 72 of 76 GB: 4 / 76 = 5.3%, just clear of the line.
    assert phase_facts(_phase(info={**_phase().info, "memory_gb": 72.0})).flags == []
    # 80 of 76 GB is an overflow, not a headroom warning.
    over = phase_facts(_phase(info={**_phase().info, "memory_gb": 80.0}))
    assert over.flags == ["memory overflow: 80.0 GB needed, 76.0 GB usable"]
    # 3.4 work hours in 5: 68% < 70%.
    assert predicted_utilisation(_phase(info={"work_hours": 3.4})) == pytest.approx(0.68)
    # No figures in info (or figures of the wrong type): nothing derived, nothing flagged.
    bare = phase_facts(_phase(info={"work_hours": "4.6", "memory_gb": None}))
    assert bare.utilisation is None and bare.headroom is None and bare.flags == []


def test_flags_and_missing_figures_reach_the_page() -> None:
    flagged = _phase(name="idle-spares", spare_gpus=8)
    tight = _phase(
        name="tight", hours=(20, 21), info={**_phase().info, "memory_gb": 73.0, "work_hours": 2.0}
    )
    bare = _phase(name="bare", hours=(30,), info={})
    html = render(_plan(flagged, tight, bare), None)
    mon = html.split('<section id="monitoring">')[1].split("</section>")[0]
    assert "2 of 3 phases flagged: idle-spares, tight" in mon
    assert "predicted GPU utilisation 46% is below 70%" in mon
    assert "memory headroom 3.9% is under 5%" in mon
    assert '<td class="n">46.0%</td>' in mon and '<td class="n">100.0%</td>' in mon
    assert "n/a" in mon


def test_segments_and_plan_wide_costs() -> None:
    assert hour_runs((9, 3, 4, 10, 5)) == [(3, 6), (9, 11)]
    # Phases carry rental 30 + 30; the plan's rental 100 includes a reserved commitment of 40
    # (not any phase's) and porting 25.
    a = _phase(name="a", costs={**{k: 0.0 for k in COST_KEYS}, "rental": 30.0})
    b = _phase(name="b", costs={**{k: 0.0 for k in COST_KEYS}, "rental": 30.0})
    plan = _plan(
        a,
        b,
        costs={**{k: 0.0 for k in COST_KEYS}, "rental": 100.0, "porting": 25.0, "total": 125.0},
    )
    rows = dict(cost_rows(plan))
    assert rows[PLAN_WIDE]["rental"] == pytest.approx(40.0)
    assert rows[PLAN_WIDE]["porting"] == pytest.approx(25.0)
    html = render(plan, None)
    assert f"<td>{PLAN_WIDE}</td>" in html and '<td class="n">65.00</td>' in html
    assert '<td class="n">125.00</td>' in html


def test_instance_that_does_not_fit_the_plan(plan: Plan, inst: planner.Instance) -> None:
    p0 = plan.phases[0]
    bad = replace(
        plan,
        phases=(replace(p0, region="north", hours=(47, 48)), *plan.phases[1:]),
        horizon_start=plan.horizon_start + timedelta(hours=1),
    )
    with pytest.raises(ReportError) as e:
        check_match(bad, inst, "p.json", "tiny.yaml")
    text = str(e.value)
    assert "p.json: horizon_start: the plan starts at 2023-06-05T01:00:00+00:00" in text
    assert f"p.json: phases[0] ({p0.name}).region: 'north' is not a region" in text
    assert f"phases[0] ({p0.name}).hours: hour 48 is outside the instance's horizon 0..47" in text
    with pytest.raises(ReportError):
        render(bad, inst)


# ----------------------------------------------------------------------------- PNG files


def _assert_not_blank(path: Path) -> None:
    img = matplotlib.image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 800
    rgb = img[..., :3]
    # A chart is mostly white with coloured bars, lines and text: many distinct colours and
    # a clear spread of values. A blank (or single-colour) image has std 0 and one colour.
    assert float(rgb.std()) > 0.05, path.name
    colours = np.unique((rgb.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert len(colours) > 20, path.name
    assert float((rgb < 0.9).any(axis=2).mean()) > 0.01, f"{path.name}: almost all white"


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_pngs_written_and_not_blank(plan: Plan, inst: planner.Instance, tmp_path: Path) -> None:
    paths = write_pngs(plan, inst, tmp_path / "charts")
    assert [p.name for p in paths] == [f"{c}.png" for c in CHARTS]
    for p in paths:
        _assert_not_blank(p)
    without = write_pngs(plan, None, tmp_path / "bare")
    assert [p.name for p in without] == ["gantt.png", "costs.png", "memory.png", "failures.png"]


# ----------------------------------------------------------------------------- the command


def _cli() -> typer.Typer:
    """A root app holding ``report`` alone (:func:`builders.command_app`)."""
    return command_app("report")


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(_cli(), ["report", *map(str, args)])


def test_cli_finds_the_instance_beside_the_plan(plan: Plan, tmp_path: Path) -> None:
    shutil.copy(TINY, tmp_path / "tiny.yaml")
    plan.write(tmp_path / "plan.json")
    r = run(tmp_path / "plan.json", "--png", tmp_path / "png")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "plan.html").read_text(encoding="utf-8")  # default: PLAN with .html
    assert html.count("<svg") == 6 and "No instance was given" not in html
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == sorted(
        f"{c}.png" for c in CHARTS
    )
    assert "tiny.yaml (the plan's instance name, beside the plan)" in r.stdout


def test_cli_without_instance_writes_the_page_and_says_so(plan: Plan, tmp_path: Path) -> None:
    plan.write(tmp_path / "plan.json")
    r = run(tmp_path / "plan.json", "-o", tmp_path / "out.html")
    assert r.exit_code == 0, r.output
    assert "'tiny' was not found" in r.stdout and "pass --instance" in r.stdout
    html = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert "No instance was given" in html and html.count("<svg") == 4


def test_cli_explicit_instance(plan: Plan, tmp_path: Path) -> None:
    plan.write(tmp_path / "plan.json")
    r = run(tmp_path / "plan.json", "--instance", TINY, "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("<svg") == 6


def _bad_plan(plan: Plan, tmp_path: Path) -> Path:
    d = json.loads(plan.to_json())
    d["phases"][0]["gpus"] = "eight"
    del d["costs"]["total"]
    path = tmp_path / "bad plan.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def test_cli_bad_plan_file_exits_2_naming_file_and_field(plan: Plan, tmp_path: Path) -> None:
    path = _bad_plan(plan, tmp_path)
    r = run(path, "-o", tmp_path / "x.html")
    assert r.exit_code == 2, r.output
    name = plan.phases[0].name
    assert f"{path}: phases[0] ({name}).gpus: expected a finite number, got 'eight'" in r.stderr
    assert f"{path}: costs.total: required field is missing" in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "cannot parse"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_cli_unreadable_plan_exits_2(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content, encoding="utf-8")
    r = run(path)
    assert r.exit_code == 2, r.output
    assert str(path) in r.stderr and expected in r.stderr


def test_cli_missing_plan_and_bad_output(plan: Plan, tmp_path: Path) -> None:
    r = run(tmp_path / "nope.json")
    assert r.exit_code == 2 and f"{tmp_path / 'nope.json'}: file does not exist" in r.stderr
    plan.write(tmp_path / "plan.json")
    # a missing folder is created (and named); a file where a folder should be is refused
    r = run(tmp_path / "plan.json", "-o", tmp_path / "no" / "such" / "r.html")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "no" / "such" / "r.html").is_file()
    assert f"created folder {tmp_path / 'no'}" in r.stderr
    r = run(tmp_path / "plan.json", "-o", tmp_path / "plan.json" / "r.html")
    assert r.exit_code == 2 and "is not a folder" in r.stderr
    # The default output is PLAN with the suffix .html: never the plan file itself.
    plan.write(tmp_path / "plan.html")
    r = run(tmp_path / "plan.html")
    assert r.exit_code == 2 and "is the plan file itself" in r.stderr
    assert (tmp_path / "plan.html").read_text(encoding="utf-8").startswith("{")
    (tmp_path / "f").write_text("x")
    r = run(tmp_path / "plan.json", "--png", tmp_path / "f")
    assert r.exit_code == 2 and "--png" in r.stderr and "expected a folder" in r.stderr


def test_cli_plan_that_does_not_fit_the_instance(plan: Plan, tmp_path: Path) -> None:
    d = json.loads(plan.to_json())
    d["phases"][0]["region"] = "north"
    (tmp_path / "plan.json").write_text(json.dumps(d), encoding="utf-8")
    r = run(tmp_path / "plan.json", "--instance", TINY)
    assert r.exit_code == 2, r.output
    assert "does not fit the instance" in r.stderr
    assert f"phases[0] ({plan.phases[0].name}).region: 'north' is not a region" in r.stderr


def test_cli_plan_with_hours_that_cannot_be_dates(plan: Plan, tmp_path: Path) -> None:
    d = json.loads(plan.to_json())
    d["phases"][0]["hours"] = [-3, 4]
    (tmp_path / "plan.json").write_text(json.dumps(d), encoding="utf-8")
    r = run(tmp_path / "plan.json")
    assert r.exit_code == 2, r.output
    assert (
        f"phases[0] ({plan.phases[0].name}).hours: expected hours in 0..999999, got -3" in r.stderr
    )


def test_entry_point_bad_plan_no_traceback(plan: Plan, tmp_path: Path) -> None:
    """The real entry point, as a user runs it: exit 2, a message, no traceback."""
    path = _bad_plan(plan, tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from planner.interfaces.cli import main; main()",
            "report",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "gpus" in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr
