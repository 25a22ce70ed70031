"""`trainplan levers`: the lever-free baseline (the one solve and report use), each lever
alone, all together, and the attribution of the saving to the levers.

Hand-computed savings on tests/data/levers_tou.yaml (one region, one GPU type, one phase):
10 GPUs x (0 W idle + 1000 W x 0.9 load) = 9 kW of IT power at the site's PUE 1.2 for 4 h;
rental 10 x 2 x 4 = 80 USD in every plan; electricity 200 USD/MWh in hours 0-11 and 50
USD/MWh in hours 12-23. Every plan of every run goes through the independent checker, on the
instance itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from builders import DATA, assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

from planner.analysis.attribution import ORDER, attribute
from planner.analysis.levers import (
    LEVER_KEYS,
    LeverError,
    LeverReport,
    LeverRun,
    build_baseline,
    evaluate_levers,
)
from planner.checker import verify
from planner.instance import read
from planner.interfaces.cli import app
from planner.interfaces.cli import levers as _register_levers  # noqa: F401  (registers the command)
from planner.solve import solve

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
    # baseline at the site's PUE 1.2, as soon as possible: hours 0-3 at 200 USD/MWh:
    # 9 kW x 1.2 = 10.8 kW; 10.8 x 4 h x 200 / 1000 = 8.64 USD energy; total 80 + 8.64 = 88.64
    assert rep.baseline.plan is not None
    assert rep.baseline.plan.phase("job").hours == (0, 1, 2, 3)
    assert rep.baseline.cost == pytest.approx(88.64, abs=1e-6)
    # time shifting: 4 cheap hours at 50 USD/MWh: 10.8 x 4 x 50 / 1000 = 2.16; total 82.16;
    # saving 8.64 - 2.16 = 6.48 USD (7.31 %)
    ts = rep.run("time_shifting")
    assert ts.method == "milp"
    assert ts.plan is not None and min(ts.plan.phase("job").hours) >= 12
    assert ts.saving_usd == pytest.approx(6.48, abs=1e-6)
    assert ts.saving_pct == pytest.approx(6.48 / 88.64, rel=1e-9)
    assert rep.all_levers.cost == pytest.approx(82.16, abs=1e-6)
    assert rep.all_levers.saving_usd == pytest.approx(6.48, abs=1e-6)
    # time shifting is the only lever with anything to choose: no interaction
    assert rep.interaction_usd == pytest.approx(0.0, abs=1e-6)
    assert rep.headline() == "all levers: -7.3% against the lever-free baseline"
    inst = read(TOU)
    for r in _all_runs(rep):
        assert r.plan is not None
        assert_valid(inst, r.plan)


def test_attribution_credits_the_price_difference_to_time_shifting(
    tou_report: LeverReport,
) -> None:
    a = tou_report.attribution
    assert a is not None
    assert [s.key for s in a.levers] == list(ORDER)
    assert a.baseline_objective == pytest.approx(88.64, abs=1e-6)
    assert a.plan_objective == pytest.approx(82.16, abs=1e-6)
    # energy is the only component that moves: 8.64 -> 2.16
    comp = a.component_savings()
    assert comp["energy"] == pytest.approx(6.48, abs=1e-6)
    assert comp["rental"] == pytest.approx(0.0, abs=1e-9)
    steps = {s.key: s.saving for s in a.levers}
    assert steps["time_shifting"] == pytest.approx(6.48, abs=1e-6)
    assert sum(steps.values()) == pytest.approx(a.saving, abs=1e-9)


def test_constant_price_gives_time_shifting_nothing() -> None:
    # the same instance at a constant 125 USD/MWh: every hour costs the same, so waiting
    # saves nothing (the MILP may pick other hours at the same cost)
    inst = read(TOU).replace({"regions.r.electricity": {"constant": 125}})
    rep = evaluate_levers(inst, time_limit=30, levers=["time_shifting"])
    # baseline 80 + 10.8 x 4 x 125 / 1000 = 80 + 5.4 = 85.4
    assert rep.baseline.cost == pytest.approx(85.4, abs=1e-6)
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
    base = b.variant(inst, [])
    # the sites are the instance's: east keeps its PUE 1.2 (PUE is not a lever)
    assert base.region("east").effective_pue == 1.2
    for p in base.active_phases:
        assert p.options.contracts == ("on_demand",)
        assert p.options.extra_spare_nodes == (0,)
        # the most capable GPU allowed for finetune (the phase with the most FLOPs): A100
        # (312 bf16 TFLOPS against L4's 121)
        assert p.gpu_types == ("A100",)
        # one A100-hour on demand at the mean price: east 2.0 + 0.4 kW x 1.2 x 60 / 1000 =
        # 2.0288; west 1.8 + 0.4 x 1.58 x 93.33 / 1000 = 1.8590 (tou mean: 8 h at 40 and
        # 16 h at 120 a day) -> west
        assert p.regions == ("west",)
        assert p.options.precision == ("bf16",)
    # whole nodes where the phase allows one (finetune: 8 of [8, 16]); prep allows only
    # 1, 2 or 4 GPUs: the smallest whole count, never more than it may use
    assert base.phase("prep").options.gpu_counts == (1,)
    assert base.phase("finetune").options.gpu_counts == (8,)
    assert base.phase("finetune").options.zero == (0,)
    assert base.phase("finetune").options.recompute == ("none",)
    for c, hours in b.schedule.values():
        assert c.contract == "on_demand" and c.spare_gpus == 0
        assert hours == tuple(range(hours[0], hours[0] + c.hours))
    # as soon as possible: prep from its release (hour 0), finetune right after it
    assert min(b.schedule["prep"][1]) == 0
    assert min(b.schedule["finetune"][1]) == max(b.schedule["prep"][1]) + 1
    # the baseline is a plan of the instance itself: the checker accepts it
    assert_valid(inst, b.plan)


def test_one_baseline_for_solve_levers_and_the_attribution(tiny_report: LeverReport) -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    base = solve(inst, solver="baseline")
    assert base.plan is not None
    assert base.objective == pytest.approx(tiny_report.baseline.cost, rel=1e-12)
    a = tiny_report.attribution
    assert a is not None
    assert a.baseline_objective == pytest.approx(base.objective, rel=1e-12)
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    again = attribute(inst, res.plan)
    assert again.baseline_objective == pytest.approx(base.objective, rel=1e-12)


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
    # on tiny, spot for the preemptible prep and a 2- or 4-GPU prep (the baseline's one GPU
    # is slow, 12 h of rental and storage) both pay
    contracts, elastic = rep.run("contracts").saving_usd, rep.run("elastic").saving_usd
    assert contracts is not None and contracts > 1.0
    assert elastic is not None and elastic > 1.0
    assert (rep.all_levers.saving_usd or 0.0) > contracts
    inst = instance_from(tiny_dict(), "tiny.yaml")
    for r in _all_runs(rep):
        assert r.plan is not None
        assert_valid(inst, r.plan)


def test_attribution_adds_up_and_only_the_last_step_may_be_negative(
    tiny_report: LeverReport,
) -> None:
    a = tiny_report.attribution
    assert a is not None
    assert a.plan_objective == pytest.approx(tiny_report.all_levers.cost, rel=1e-12)
    total = sum(s.saving for s in a.levers)
    assert total == pytest.approx(a.saving, abs=1e-9)
    for s in a.levers[:-1]:
        assert s.saving >= -1e-9, s.key
    # every step's cost is a plan cost: the steps descend from the baseline to the plan
    assert a.levers[0].cost == pytest.approx(a.baseline_objective - a.levers[0].saving)
    assert a.levers[-1].cost == pytest.approx(a.plan_objective)
    comp = a.component_savings()
    # (costs are stated to 1e-6 USD per component)
    assert sum(comp[k] for k in comp if k != "total") == pytest.approx(comp["total"], abs=1e-5)


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
    assert "all levers: -7.3% against the lever-free baseline" in res.output
    for key in ("time shifting", "region choice", "saving by lever"):
        assert key in res.output
    # nothing cites a document the user's clone lacks: no article claim, no bare tags
    assert "claims -" not in res.output and "[1.2]" not in res.output
    assert "docs/levers.md" in res.output
    png = tmp_path / "w.png"
    res = runner.invoke(app, ["levers", str(TOU), "--json", "--png", str(png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [r["key"] for r in data["levers"]] == list(LEVER_KEYS)
    assert math.isclose(data["all_levers"]["saving_usd"], 6.48, abs_tol=1e-6)
    assert math.isclose(data["attribution"]["saving"]["objective"], 6.48, abs_tol=1e-6)
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
    rep = evaluate_levers(inst, time_limit=30, levers=["region"])
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
    assert b.variant(inst, []).phase("train").options.gpu_counts == (10, 20)
    train, hours = b.schedule["train"]
    assert max(hours) + 1 <= 8 and train.gpus == 20
    rep = evaluate_levers(inst, time_limit=30, levers=["elastic"])
    assert rep.baseline.plan is not None
    assert verify(inst, rep.baseline.plan).ok
