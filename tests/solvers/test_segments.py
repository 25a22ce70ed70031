"""Segments: a phase that changes configuration at checkpoints. Hand-computed optima (the
arithmetic in comments) on the hourly MILP, every plan verified by the independent checker,
and the checker catching a planted violation of each new kind."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from builders import (
    OD,
    ROUND_GPU,
    assert_valid,
    elastic,
    instance_from,
    region,
    solved,
    two_nights,
)

from formulations.choose import choose
from planner.checker import verify
from planner.checker.planfile import plan_from_dict
from planner.model.configs import build_config_space, enumerate_phase
from planner.model.costs import cost_plan, migration_cost
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.model.schedule import schedule_of


def test_a_phase_follows_two_regions_nights() -> None:
    # Energy per hour is 10 kW x price: Berlin $0.20 at night (hours 0-3), $1.00 by day;
    # New York $1.00 in hours 0-3, $0.10 at night (hours 4-7). Rental $10/h anywhere.
    # Best single region: New York 0-7, energy 4 x 1.00 + 4 x 0.10 = $4.40, total $84.40
    # (Berlin: 4 x 0.20 + 4 x 1.00 = $4.80).
    # Following the nights: Berlin 0-3 ($0.80) then New York 4-7 ($0.40), energy $1.20, and
    # the migration (mean prices over the 8 h: Berlin 60, New York 55 $/MWh, so a held hour
    # costs $10 + 10 kW x 60/1000 = $10.60 in Berlin, $10.55 in New York):
    #   write 36 GB at 1 GB/s = 0.01 h of Berlin's GPUs          $0.106
    #   move 36 GB x $0.02/GB                                       $0.72
    #        and wait 36 GB / 1 GB/s = 0.01 h of New York's GPUs    $0.1055
    #   read 36 GB at 1 GB/s (restart 0 h) = 0.01 h of New York's   $0.1055
    #   migration $1.037: total 80 + 1.20 + 1.037 = $82.237, $2.163 below the best single.
    d = two_nights()
    inst, res = solved(d)
    p = res.plan.phase("job")
    assert [(s.region, s.hours) for s in p.segments] == [
        ("berlin", (0, 1, 2, 3)),
        ("newyork", (4, 5, 6, 7)),
    ]
    m = p.segments[1].migration
    assert m["total"] == pytest.approx(1.037, abs=1e-6)
    assert m["transfer"] == pytest.approx(0.72, abs=1e-9)
    assert m["rental"] == pytest.approx(0.3, abs=1e-9)
    assert res.plan.costs["total"] == pytest.approx(82.237, abs=1e-6)
    single = copy.deepcopy(d)
    single["phases"][0]["options"]["max_segments"] = 1
    _, one = solved(single)
    assert one.plan.phase("job").region == "newyork"
    assert one.plan.costs["total"] == pytest.approx(84.40, abs=1e-6)
    assert one.plan.costs["total"] - res.plan.costs["total"] == pytest.approx(2.163, abs=1e-6)
    # the plan file says it and reads back
    doc = json.loads(res.plan.to_json())
    assert doc["format"] == "trainplan-plan/3" and len(doc["phases"][0]["segments"]) == 2
    assert verify(inst, plan_from_dict(doc)).ok
    assert choose(inst)[0] == "milp"


@pytest.mark.parametrize(
    "stated", [{"hours": 99.0}, {"transfer": 0.5}, {"from": "running"}], ids=str
)
def test_a_migration_stated_where_none_happens_is_refused(stated: dict[str, Any]) -> None:
    # found by the long fuzz run: segment 0 of a phase that is not running has no migration;
    # a plan file stating one (99 hours of it) was accepted, and the report would show it
    inst, res = solved(two_nights())
    doc = json.loads(res.plan.to_json())
    doc["phases"][0]["segments"][0]["migration"] = stated
    v = verify(inst, plan_from_dict(doc))
    assert [x.kind for x in v.violations] == ["migration"]
    assert "segment 0 states a migration" in v.violations[0].message


def test_a_checkpoint_too_dear_to_move_stays() -> None:
    # As above, but moving out of Berlin costs $0.20/GB: the move is 36 x 0.20 = $7.20 and
    # the migration 0.106 + 7.20 + 0.1055 + 0.1055 = $7.517, so following the nights costs
    # 80 + 1.20 + 7.517 = $88.717 > $84.40: the phase stays in New York on one configuration.
    inst, res = solved(two_nights(0.2))
    p = res.plan.phase("job")
    assert not p.segments and p.region == "newyork" and p.hours == tuple(range(8))
    assert res.plan.costs["total"] == pytest.approx(84.40, abs=1e-6)
    space = build_config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "berlin"]
    (n,) = [c for c in space["job"] if c.region == "newyork"]
    assert migration_cost(inst, b, n).total == pytest.approx(7.517, abs=1e-9)
    follow = cost_plan(inst, schedule_of({}, segments={"job": [(b, range(4)), (n, range(4, 8))]}))
    assert follow.costs["total"] == pytest.approx(88.717, abs=1e-6)
    assert_valid(inst, follow)


def test_elastic_scaling_into_cheap_hours() -> None:
    # 10 GPUs need 104/10 = 10.4 h -> 11 h > 9: alone they miss the deadline. 20 GPUs run at
    # 16 GPU-equivalents (0.8): 104/16 = 6.5 h -> 7 h in hours 0-6: rental 20 x 7 = $140,
    # energy 20 kW x $0.50/kWh x 3 dear hours = $30, total $170.
    # Elastic: 20 GPUs in the 4 free hours do 4/6.5 = 64/104 of the work, then 10 GPUs the
    # rest, 40/104 x 10.4 = 4 h (hours 4-7): rental 80 + 40 = $120, energy 10 kW x $0.50 x 4
    # = $20, and one migration within the region: no checkpoint to move or read, a 0.5 h
    # restart of the 10 GPUs at $10 + 10 kW x mean price 300 $/MWh = $13/h: $6.50.
    # Total $146.50, $23.50 below the best fixed count. (20 GPUs for 5 h then 10 for 3 h:
    # $130 + $25 + $6.50 = $161.50; 10 GPUs in the free hours first: $160 + $6.50.)
    _inst, res = solved(elastic())
    p = res.plan.phase("job")
    assert [(s.gpus, s.hours) for s in p.segments] == [
        (20.0, (0, 1, 2, 3)),
        (10.0, (4, 5, 6, 7)),
    ]
    assert [s.work for s in p.segments] == pytest.approx([64 / 104, 40 / 104])
    assert p.segments[1].migration["total"] == pytest.approx(6.5, abs=1e-9)
    assert res.plan.costs["total"] == pytest.approx(146.50, abs=1e-6)
    fixed = elastic()
    fixed["phases"][0]["options"]["max_segments"] = 1
    _, one = solved(fixed)
    assert one.plan.phase("job").gpus == 20 and one.plan.costs["total"] == pytest.approx(170.0)


def test_segment_changes_restrict_what_may_change() -> None:
    # Only the region may change: the elastic instance (one region) has no plan in segments,
    # and the best is the fixed 20-GPU run at $170.
    d = elastic()
    d["phases"][0]["options"]["segment_changes"] = ["region"]
    _inst, res = solved(d)
    assert not res.plan.phase("job").segments
    assert res.plan.costs["total"] == pytest.approx(170.0, abs=1e-6)


# ----------------------------------------------------------------------------- the checker


def _follow(inst: Any) -> Plan:
    space = build_config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "berlin"]
    (n,) = [c for c in space["job"] if c.region == "newyork"]
    return cost_plan(inst, schedule_of({}, segments={"job": [(b, range(4)), (n, range(4, 8))]}))


def test_checker_catches_a_segment_that_does_not_fit_in_memory() -> None:
    # A second GPU type S, like G but with 8 GB: the phase needs 20 GB per GPU beyond the
    # buffers, so S fits nowhere; a plan whose second segment runs on S in New York breaks
    # memory in that segment only.
    d = two_nights()
    d["gpu_types"]["S"] = dict(ROUND_GPU, memory_gb=8)
    ny = d["regions"]["newyork"]
    ny["capacity"]["S"] = 10
    ny["offers"]["S"] = OD
    d["phases"][0]["memory_gb"] = 20
    inst = instance_from(d)
    space = build_config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "berlin"]
    every, _ = enumerate_phase(inst, inst.phase("job"), every=True)
    (s,) = [c for c in every if c.gpu == "S" and c.region == "newyork"]
    plan = cost_plan(inst, schedule_of({}, segments={"job": [(b, range(4)), (s, range(4, 8))]}))
    v = verify(inst, plan)
    assert [x.kind for x in v.violations] == ["memory"]
    assert v.violations[0].message.startswith("segment 1: 10 x S")


def test_checker_catches_a_migration_cost_left_out() -> None:
    inst = instance_from(two_nights())
    plan = _follow(inst)
    assert_valid(inst, plan)
    doc = json.loads(plan.to_json())
    seg = doc["phases"][0]["segments"][1]
    m = seg.pop("migration")
    for k in ("rental", "energy", "transfer"):  # the phase and the plan without it
        doc["phases"][0]["costs"][k] -= m[k]
        doc["costs"][k] -= m[k]
        doc["costs"]["total"] -= m[k]
        doc["objective"] -= m[k]
    v = verify(inst, plan_from_dict(doc))
    kinds = {x.kind for x in v.violations}
    assert "migration" in kinds and "cost" in kinds
    (x,) = [x for x in v.violations if x.kind == "migration"]
    assert "segment 1: the migration from segment 0 is left out" in x.message
    assert "1.037" in x.message


def test_checker_catches_work_short_across_segments() -> None:
    # Berlin 0-3 does half the work (4 of 8 h); New York 4-6 only 3/8: 7/8 in all.
    inst = instance_from(two_nights())
    space = build_config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "berlin"]
    (n,) = [c for c in space["job"] if c.region == "newyork"]
    plan = cost_plan(inst, schedule_of({}, segments={"job": [(b, range(4)), (n, range(4, 7))]}))
    v = verify(inst, plan)
    assert [x.kind for x in v.violations] == ["work"]
    assert "the segments do 0.875000 of the work, short of 1" in v.violations[0].message


def test_checker_catches_segments_out_of_order_and_too_many() -> None:
    inst = instance_from(two_nights())
    doc = json.loads(_follow(inst).to_json())
    segs = doc["phases"][0]["segments"]
    segs[0]["hours"], segs[1]["hours"] = segs[1]["hours"], segs[0]["hours"]
    v = verify(inst, plan_from_dict(doc))
    assert any(
        x.kind == "segments" and "segment 1 starts at hour 0, before segment 0 ends" in x.message
        for x in v.violations
    )
    doc = json.loads(_follow(inst).to_json())
    extra = copy.deepcopy(doc["phases"][0]["segments"][0])
    extra["hours"] = []
    doc["phases"][0]["segments"].append(extra)
    v = verify(inst, plan_from_dict(doc))
    messages = [x.message for x in v.violations if x.kind == "segments"]
    assert "3 segments; options.max_segments allows 2" in messages
    assert "segment 2 has no hours" in messages


def _air_cooled(d: dict[str, Any]) -> dict[str, Any]:
    """PUE 1.58 (air, the lever-free baseline's): the cooling lever has nothing to choose."""
    for r in d["regions"].values():
        r["pue"] = 1.58
    return d


def test_levers_measure_follow_the_sun_and_elastic_scaling() -> None:
    from planner.analysis.levers import evaluate_levers

    # Two nights at PUE 1.58: 10 GPUs draw 15.8 kW. The lever-free baseline runs one
    # configuration in the region of the least mean GPU-hour (New York, mean 55 vs 60 $/MWh),
    # hours 0-7: rental $80 + energy 1.58 x $4.40 = $86.952. Follow the sun (measured with
    # region choice and time on, as it needs them): Berlin 0-3, New York 4-7, energy
    # 1.58 x $1.20 = $1.896, migration 0.01 h x (10 + 15.8 x 0.060) + 0.72 + 2 x 0.01 h x
    # (10 + 15.8 x 0.055) = 0.10948 + 0.72 + 0.21738 = $1.04686: $82.94286, a saving of
    # $4.00914. Elastic scaling has nothing to change (one GPU count).
    inst = instance_from(_air_cooled(two_nights()))
    rep = evaluate_levers(inst, time_limit=30, levers=["region", "follow_sun", "elastic_scaling"])
    assert rep.baseline.cost == pytest.approx(86.952, abs=1e-6)
    sun = rep.run("follow_sun")
    assert sun.cost == pytest.approx(82.94286, abs=1e-6)
    assert sun.saving_usd == pytest.approx(4.00914, abs=1e-6)
    assert "time shifting and region on" in sun.note
    assert rep.run("region").saving_usd == pytest.approx(0.0, abs=1e-6)
    assert rep.run("elastic_scaling").saving_usd == pytest.approx(0.0, abs=1e-6)
    assert rep.all_levers.cost == pytest.approx(82.94286, abs=1e-6)
    # Elastic at PUE 1.58: the baseline takes the smallest count that meets the deadline
    # (20 GPUs, hours 0-6): $140 + 3 h x 31.6 kW x $0.50 = $187.40. Elastic scaling: 20 GPUs
    # in hours 0-3, 10 in 4-7: $120 + 4 h x 15.8 kW x $0.50 = $31.60 + the restart 0.5 h x
    # (10 + 15.8 x 0.300) = $7.37: $158.97, a saving of $28.43.
    rep = evaluate_levers(instance_from(_air_cooled(elastic())), time_limit=30)
    assert rep.baseline.cost == pytest.approx(187.40, abs=1e-6)
    run = rep.run("elastic_scaling")
    assert run.cost == pytest.approx(158.97, abs=1e-6)
    assert run.saving_usd == pytest.approx(28.43, abs=1e-6)
    assert rep.run("follow_sun").saving_usd == pytest.approx(0.0, abs=1e-6)


def test_report_draws_a_phase_that_moves_as_one_bar_across_pools() -> None:
    from planner.interfaces.report import render
    from planner.interfaces.report.charts import gantt

    inst, res = solved(two_nights())
    fig = gantt(res.plan, inst)
    ax = fig.axes[0]
    # two pool rows (berlin / G and newyork / G), one bar per segment, joined by the dashed
    # migration line at hour 4, both in the phase's colour
    assert [t.get_text() for t in ax.get_yticklabels()] == ["berlin / G", "newyork / G"]
    bars = [c for c in ax.collections if len(c.get_paths())]
    assert len(bars) == 2
    assert bars[0].get_facecolor().tolist() == bars[1].get_facecolor().tolist()
    (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert list(line.get_ydata()) == [0, 1]
    page = render(res.plan, inst)
    assert "Segments and migrations" in page and "from 0" in page


def test_the_segment_bound_is_valid_and_prunes_segments_that_cannot_pay() -> None:
    from formulations.bounds.separable import phase_bounds, single_segment
    from formulations.pipeline import solve_milp
    from planner.model.configs import config_space
    from planner.model.windows import time_windows

    def bound(d: dict[str, Any]) -> Any:
        inst = instance_from(d)
        space = config_space(inst)
        win = time_windows(inst, space.fewest_hours())
        return phase_bounds(inst, space, win.start, win.end)["job"]

    # two nights: the bound of plans in two segments is the optimum itself, $82.237
    b = bound(two_nights())
    assert b.multi == pytest.approx(82.237, abs=1e-6) and b.best <= 82.237 + 1e-9
    # the dear move: plans in two segments cost at least $86.34 > $84.40 on one configuration:
    # the phase needs no segments, and the one-configuration plan is proved by the bound
    b = bound(two_nights(0.2))
    assert 84.40 < b.multi <= 88.717 + 1e-9
    assert single_segment({"job": b}, 84.40, 0.0) == ({"job"}, pytest.approx(b.multi))
    res = solve_milp(instance_from(two_nights(0.2)), SolveOptions(time_limit=30, gap=0.0))
    assert res.solver == "milp-bound" and res.bound == pytest.approx(84.40, abs=1e-6)
    # elastic: below the optimum ($146.50)
    b = bound(elastic())
    assert b.best <= 146.50 + 1e-9 and b.multi <= 146.50 + 1e-9


def test_a_spot_job_falls_back_to_on_demand_when_spot_turns_dear() -> None:
    # A preemptible job, 10 GPUs x 6 h, free power, no checkpoint, no resume overhead. Spot
    # costs $0.50/GPU-h in hours 0-3 and $4.00 after; on demand $2.00. One configuration:
    # spot 4 x $5 + 2 x $40 = $100 (on demand 6 x $20 = $120). In two segments: spot in hours
    # 0-3 ($20), then on demand for the rest, 2 h ($40), after a 0.5 h restart of the
    # on-demand GPUs at $20/h ($10): $70 (any two of hours 4-7: pausing costs nothing here).
    offers = {
        "spot": {"usd_per_gpu_hour": {"values": [0.5] * 4 + [4.0] * 4}, "preemptions_per_hour": 0},
        "on_demand": {"usd_per_gpu_hour": 2.0},
    }
    d = {
        "name": "fallback",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 8},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"r": region("UTC", {"constant": 0}, offers)},
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "work": {"gpu_hours": 60, "gpu": "G"},
                "preemptible": True,
                "resume_overhead_hours": 0,
                "power_load": 1.0,
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0], "max_segments": 2},
            }
        ],
        "failure": {"restart_hours": 0.5, "detect_hours": 0.0, "checkpoint": "sync"},
    }
    _, res = solved(d)
    p = res.plan.phase("job")
    spot, od = p.segments
    assert (spot.contract, spot.hours) == ("spot", (0, 1, 2, 3))
    assert od.contract == "on_demand" and len(od.hours) == 2 and min(od.hours) >= 4
    assert od.migration["total"] == pytest.approx(10.0, abs=1e-9)
    assert res.plan.costs["total"] == pytest.approx(70.0, abs=1e-6)


@pytest.mark.parametrize("case", ["sun", "dear", "elastic", "three", "preemptible"])
def test_the_segment_model_prices_a_schedule_as_the_cost_model(case: str) -> None:
    """The MILP point of a schedule in segments is feasible and its objective equals the
    costed plan (model == cost model), for moves, dear moves, elastic counts, three segments
    (Berlin, New York, Berlin) and a preemptible phase that pauses between segments."""
    from formulations.exact.milp.model import build
    from formulations.exact.milp.solution import point_from_schedule, schedule_from_point

    d = two_nights(0.2) if case == "dear" else elastic() if case == "elastic" else two_nights()
    if case in ("three", "preemptible"):
        d["horizon"]["hours"] = d["phases"][0]["deadline"] = 12
        d["phases"][0]["options"]["max_segments"] = 3
        d["phases"][0]["preemptible"] = case == "preemptible"
    inst = instance_from(d)
    space = build_config_space(inst)
    by = {(c.region, c.gpus): c for c in space["job"]}
    if case == "elastic":
        parts = [(by[("r", 20.0)], range(4)), (by[("r", 10.0)], range(4, 8))]
    elif case == "three":
        parts = [
            (by[("berlin", 10.0)], range(3)),
            (by[("newyork", 10.0)], range(3, 6)),
            (by[("berlin", 10.0)], range(6, 8)),
        ]
    elif case == "preemptible":
        parts = [(by[("berlin", 10.0)], [0, 2, 3]), (by[("newyork", 10.0)], [5, 6, 8, 9, 11])]
    else:
        parts = [(by[("berlin", 10.0)], range(4)), (by[("newyork", 10.0)], range(4, 8))]
    sched = schedule_of({}, segments={"job": parts})
    plan = cost_plan(inst, sched)
    assert_valid(inst, plan)
    mm = build(inst, space)
    point = point_from_schedule(mm, sched)
    assert point is not None
    assert mm.lp.violations(point) == []
    assert mm.lp.objective_of(point) == pytest.approx(plan.objective, rel=1e-9)
    back = schedule_from_point(mm, point)
    assert [tuple(a.hours) for a in back.parts("job")] == [tuple(h) for _, h in parts]
