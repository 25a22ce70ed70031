"""`trainplan levers`: the lever-free baseline, each lever alone and all together.

Hand-computed savings on tests/data/levers_tou.yaml (one region, one GPU type, one phase):
10 GPUs x (0 W idle + 1000 W x 0.9 load) = 9 kW of IT power for 4 h; rental 10 x 2 x 4 =
80 USD in every plan; electricity 200 USD/MWh in hours 0-11 and 50 USD/MWh in hours 12-23.
Every plan of every run goes through the independent checker.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import DATA, assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

from planner.cli import app
from planner.cli import levers as _register_levers  # noqa: F401  (registers the command)
from planner.instance import read
from planner.levers import (
    AIR_PUE,
    LEVER_KEYS,
    LeverError,
    LeverReport,
    LeverRun,
    build_baseline,
    evaluate_levers,
)

TOU = DATA / "levers_tou.yaml"


@pytest.fixture(scope="module")
def tou_report() -> LeverReport:
    return evaluate_levers(read(TOU), time_limit=30)


@pytest.fixture(scope="module")
def tiny_report() -> LeverReport:
    return evaluate_levers(instance_from(tiny_dict(), "tiny.yaml"), time_limit=30)


def _all_runs(rep: LeverReport) -> list[LeverRun]:
    return [rep.baseline, *rep.levers, rep.all_levers]


def test_time_shifting_saving_is_the_price_difference(tou_report: LeverReport) -> None:
    rep = tou_report
    # baseline: PUE 1.58 (the site's 1.2 is better than air), as soon as possible: hours 0-3
    # at 200 USD/MWh: 9 kW x 1.58 = 14.22 kW; 14.22 x 4 h x 200 / 1000 = 11.376 USD energy;
    # total 80 + 11.376 = 91.376
    assert rep.baseline.plan is not None
    assert rep.baseline.plan.phase("job").hours == (0, 1, 2, 3)
    assert rep.baseline.cost == pytest.approx(91.376, abs=1e-6)
    # time shifting alone (still PUE 1.58): 4 cheap hours at 50 USD/MWh:
    # 14.22 x 4 x 50 / 1000 = 2.844; saving 11.376 - 2.844 = 8.532 USD (9.34 %)
    ts = rep.run("time_shifting")
    assert ts.method == "milp"
    assert ts.plan is not None and min(ts.plan.phase("job").hours) >= 12
    assert ts.saving_usd == pytest.approx(8.532, abs=1e-6)
    assert ts.saving_pct == pytest.approx(8.532 / 91.376, rel=1e-9)
    # cooling alone: PUE 1.2 instead of 1.58, still hours 0-3:
    # 9 x 1.2 = 10.8 kW; 10.8 x 4 x 200 / 1000 = 8.64; saving 11.376 - 8.64 = 2.736
    assert rep.run("cooling").saving_usd == pytest.approx(2.736, abs=1e-6)
    # all levers: 10.8 x 4 x 50 / 1000 = 2.16 USD energy; total 82.16; saving 9.216 (10.1 %)
    assert rep.all_levers.cost == pytest.approx(82.16, abs=1e-6)
    assert rep.all_levers.saving_usd == pytest.approx(9.216, abs=1e-6)
    # the levers overlap: 8.532 + 2.736 - 9.216 = 2.052 counted twice by the single runs
    assert rep.interaction_usd == pytest.approx(9.216 - 8.532 - 2.736, abs=1e-6)
    assert rep.headline() == "all levers: -10.1% (the article claims -45%)"
    for r in _all_runs(rep):
        assert r.plan is not None
        assert_valid(r.instance, r.plan)


def test_constant_price_gives_time_shifting_nothing() -> None:
    # the same instance at a constant 125 USD/MWh: every hour costs the same, so waiting
    # saves nothing (the MILP may pick other hours at the same cost)
    inst = read(TOU).replace({"regions.r.electricity": {"constant": 125}})
    rep = evaluate_levers(inst, time_limit=30, levers=["time_shifting"])
    # baseline 80 + 14.22 x 4 x 125 / 1000 = 80 + 7.11 = 87.11
    assert rep.baseline.cost == pytest.approx(87.11, abs=1e-6)
    assert rep.run("time_shifting").saving_usd == pytest.approx(0.0, abs=1e-6)


def test_levers_with_nothing_to_choose_save_nothing(tou_report: LeverReport) -> None:
    # one region, one GPU type, one count, one storage tier, on-demand only, no failures
    # (so spare nodes only cost money): none of these levers can save anything
    for key in ("region", "gpu_type", "elastic", "storage", "contracts", "spares", "precision"):
        r = tou_report.run(key)
        assert r.saving_usd == pytest.approx(0.0, abs=1e-9), key
    assert tou_report.run("storage").note.startswith("nothing to choose")
    assert tou_report.run("region").note.startswith("nothing to choose")


def test_baseline_rules_restrict_every_lever() -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    b = build_baseline(inst)
    base = b.instance
    # east's PUE 1.2 is raised to air cooling; west is air-cooled already
    assert base.region("east").effective_pue == AIR_PUE
    assert base.region("west").effective_pue == AIR_PUE
    for p in base.active_phases:
        assert p.options.contracts == ("on_demand",)
        assert p.options.extra_spare_nodes == (0,)
        # the most capable GPU allowed for finetune (the phase with the most FLOPs): A100
        # (312 bf16 TFLOPS against L4's 121)
        assert p.gpu_types == ("A100",)
        # west: 1.8 USD + 0.4 kW x 1.58 x mean price; east: 2.0 + ... -> west is cheaper
        assert p.regions == ("west",)
        # whole nodes: 8 GPUs (prep may use 1, 2 or 4: rounded up to one 8-GPU node)
        assert p.options.gpu_counts == (8,)
        assert p.options.precision == ("bf16",)
    assert base.phase("finetune").options.zero == (0,)
    assert base.phase("finetune").options.recompute == ("none",)
    for c, hours in b.schedule.values():
        assert c.contract == "on_demand" and c.spare_gpus == 0
        assert hours == tuple(range(hours[0], hours[0] + c.hours))
    # as soon as possible: prep from its release (hour 0), finetune right after it
    assert min(b.schedule["prep"][1]) == 0
    assert min(b.schedule["finetune"][1]) == max(b.schedule["prep"][1]) + 1


def test_every_single_lever_sits_between_baseline_and_all(tiny_report: LeverReport) -> None:
    rep = tiny_report
    base = rep.baseline.cost
    assert base is not None and rep.all_levers.cost is not None
    gap = 1e-4  # the MILP's default relative gap
    for r in rep.levers:
        assert r.cost is not None, r.key
        assert r.cost <= base + 1e-9, r.key
        assert rep.all_levers.cost <= r.cost * (1 + gap) + 1e-9, r.key
        assert r.saving_usd == pytest.approx(base - r.cost)
    # on tiny, spot for the preemptible prep and 4-GPU prep (not a whole node) both pay
    contracts, elastic = rep.run("contracts").saving_usd, rep.run("elastic").saving_usd
    assert contracts is not None and contracts > 1.0
    assert elastic is not None and elastic > 1.0
    assert (rep.all_levers.saving_usd or 0.0) > contracts
    for r in _all_runs(rep):
        assert r.plan is not None
        assert_valid(r.instance, r.plan)


def test_lever_never_reported_as_a_loss(tiny_report: LeverReport) -> None:
    # the baseline plan stays available when a lever is switched on, so no lever costs money
    for r in tiny_report.levers:
        assert r.saving_usd is not None and r.saving_usd >= -1e-9, r.key


def test_unknown_lever_and_infeasible_instance() -> None:
    with pytest.raises(LeverError, match="unknown lever 'wind'"):
        evaluate_levers(read(TOU), levers=["wind"])
    d = tiny_dict()
    d["phases"][1]["deadline"] = 2  # finetune cannot finish by hour 2 after prep
    with pytest.raises(LeverError, match="trainplan explain"):
        evaluate_levers(instance_from(d), time_limit=10)


def test_cli_table_json_and_chart(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["levers", str(TOU), "--time-limit", "30"])
    assert res.exit_code == 0, res.output
    assert "all levers: -10.1% (the article claims -45%)" in res.output
    for key in ("time shifting", "cooling", "region choice"):
        assert key in res.output
    png = tmp_path / "w.png"
    res = runner.invoke(app, ["levers", str(TOU), "--json", "--png", str(png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [r["key"] for r in data["levers"]] == list(LEVER_KEYS)
    assert math.isclose(data["all_levers"]["saving_usd"], 9.216, abs_tol=1e-6)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["levers", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["levers", str(TOU), "--only", "wind"])
    assert res.exit_code == 2 and "unknown lever" in res.output
    res = runner.invoke(app, ["levers", str(TOU), "--png", str(tmp_path / "w.jpg")])
    assert res.exit_code == 2 and ".png" in res.output


def test_carbon_cap_is_lifted_with_a_note() -> None:
    # a cap is a constraint, not a lever: the greedy baseline could not honour it
    inst = read(TOU).replace(
        {"regions.r.carbon_intensity": {"constant": 500}, "objective.carbon_cap_tonnes": 0.001}
    )
    rep = evaluate_levers(inst, time_limit=30, levers=["cooling"])
    assert any("carbon_cap_tonnes is lifted" in n for n in rep.notes)
    assert rep.all_levers.instance.spec.objective.carbon_cap_tonnes is None
    assert rep.all_levers.cost == pytest.approx(82.16, abs=1e-6)


def test_baseline_loosens_to_whole_node_counts_when_one_count_misses_the_deadline() -> None:
    # explain_deadline.yaml with 10 or 20 GPUs allowed and 20 in the pool: on its smallest
    # whole node (10 GPUs) each phase fits its own window (prep 4 h, train 6 h by hour 8) but
    # not the chain (4 + 6 = 10 > 8). With 20 GPUs train takes 60 / 20 = 3 h: the baseline
    # lets each phase pick a whole-node count, and says so.
    inst = read(DATA / "explain_deadline.yaml").replace(
        {
            "phases.prep.options.gpu_counts": [10, 20],
            "phases.train.options.gpu_counts": [10, 20],
            "regions.r.capacity.G": 20,
        }
    )
    b = build_baseline(inst)
    assert any("whole-node counts" in n for n in b.notes)
    assert b.instance.phase("train").options.gpu_counts == (10, 20)
    train, hours = b.schedule["train"]
    assert max(hours) + 1 <= 8 and train.gpus == 20
    rep = evaluate_levers(inst, time_limit=30, levers=["elastic"])
    assert rep.baseline.plan is not None
    assert_valid(rep.baseline.instance, rep.baseline.plan)
