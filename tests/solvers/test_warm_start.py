"""Warm starts (planner.solve(start=...), formulations.heuristics.warm) and the
contracts-at-fixed-times step (formulations.exact.milp.recontract): every plan checked by the
independent checker."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from builders import ROUND_GPU, assert_valid, instance_from, region

import planner
from formulations.exact.milp.recontract import recontract
from formulations.heuristics.lookahead import LookAhead, lookahead_schedule
from formulations.heuristics.warm import start_placements
from planner.interfaces.replan import replan
from planner.model.configs import config_space
from planner.model.costs import cost_plan
from planner.model.schedule import Assignment, Schedule, with_reservations
from planner.model.windows import time_windows

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


@pytest.fixture(scope="module")
def week() -> tuple[Any, Any]:
    inst = planner.read(INSTANCES / "week-7b.yaml")
    res = planner.solve(inst, time_limit=60, gap=0.001)
    assert res.plan is not None
    return inst, res.plan


def test_a_plan_is_its_own_warm_start(week: tuple[Any, Any]) -> None:
    inst, plan = week
    space = config_space(inst)
    kept = start_placements(space, inst.release, plan)
    assert set(kept) == {p.name for p in plan.phases}  # every phase keeps its placement
    sched = lookahead_schedule(inst, space, start=kept)
    assert sched is not None
    assert cost_plan(inst, sched).objective == pytest.approx(plan.objective, rel=1e-9)
    res = planner.solve(inst, time_limit=30, start=plan)
    assert res.stats["warm_start_kept"] == len(plan.phases)
    assert res.plan is not None and res.objective <= plan.objective + 1e-6
    assert_valid(inst, res.plan)


def _busiest(plan: Any, hour: int) -> str:
    use: dict[str, float] = {}
    for p in plan.phases:
        n = sum(1 for h in p.hours if h >= hour)
        use[p.region] = use.get(p.region, 0.0) + n * p.gpus
    return max(sorted(use), key=lambda r: use[r])


@pytest.mark.parametrize("change", ["price", "lost"])
def test_a_replan_starts_from_the_old_plan(week: tuple[Any, Any], change: str) -> None:
    inst, plan = week
    hour = inst.hours // 2
    r = _busiest(plan, hour)
    if change == "price":
        new = inst.replace({f"regions.{r}.electricity.scale": 1.3})
    else:
        new = inst.replace({f"regions.{r}.capacity.{g}": 0 for g in inst.spec.regions[r].capacity})
    rp = replan(new, plan, hour, time_limit=30, gap=0.001)
    res = rp.result
    assert res.plan is not None
    assert_valid(rp.instance, res.plan)
    running = [p.name for p in rp.instance.active_phases]
    kept = res.stats.get("warm_start_kept", 0)
    if change == "price":
        assert kept == len(running)  # nothing the old plan does from the hour breaks
    else:
        # the phases in the lost region move; nothing runs there any more
        assert kept < len(running)
        assert all(p.region != r for p in res.plan.phases)


def test_a_start_that_no_longer_fits_is_placed_anew(week: tuple[Any, Any]) -> None:
    inst, plan = week
    space = config_space(inst)
    kept = start_placements(space, inst.release, plan)
    # the first phase's start moved before its release: not kept, placed by the look-ahead
    first = inst.order[0]
    a = kept[first]
    bad = dict(kept)
    bad[first] = Assignment(a.config, tuple(h - 1_000 for h in a.hours))
    la = LookAhead(inst, space, time_windows(inst, space.fewest_hours()), start=bad)
    got = la.assignments()
    assert got is not None and got[first].hours[0] >= inst.release[first]


# ----------------------------------------------------------------------------- recontract


def three_jobs() -> dict[str, Any]:
    """One pool of 10 GPUs (one node), free power and storage, $1/GPU-h on demand or a
    reservation for the whole 24 h at $0.70/GPU-h (exactly 10 GPUs); three jobs of 80
    GPU-hours in a chain, 8 h each on the 10 GPUs."""
    offers = {
        "on_demand": {"usd_per_gpu_hour": 1.0},
        "reserved": {"usd_per_gpu_hour": 0.7, "min_gpus": 10, "max_gpus": 10},
    }
    r = region("UTC", {"constant": 0.0}, offers)
    phases = []
    for k in range(3):
        phases.append(
            {
                "name": f"job{k}",
                "kind": "data_preparation",
                "work": {"gpu_hours": 80, "gpu": "G"},
                "predecessors": [f"job{k - 1}"] if k else [],
                "power_load": 1.0,
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
            }
        )
    return {
        "name": "three",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 24},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"only": r},
        "phases": phases,
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def test_contracts_at_fixed_times_buy_the_reservation_that_pays() -> None:
    # On demand: 3 jobs x 80 GPU-h x $1 = $240. Reserving the 10 GPUs for the 24 h costs
    # 10 x 24 x $0.70 = $168 and covers all three: $72 less. (For two jobs, 160 < 168: it
    # would not pay.)
    inst = instance_from(copy.deepcopy(three_jobs()))
    space = config_space(inst)
    od = {n: next(c for c in cs if c.contract == "on_demand") for n, cs in space.by_phase.items()}
    sched = Schedule(
        {f"job{k}": Assignment(od[f"job{k}"], tuple(range(8 * k, 8 * k + 8))) for k in range(3)}
    )
    before = cost_plan(inst, sched)
    assert before.objective == pytest.approx(240.0)
    found = recontract(inst, space, time_windows(inst, space.fewest_hours()), sched, 240.0, 30)
    assert found is not None
    after_sched, after = found
    assert after.objective == pytest.approx(168.0)
    assert all(after_sched[n].config.contract == "reserved" for n in after_sched)
    assert all(after_sched[n].hours == sched[n].hours for n in sched)  # the hours kept
    assert_valid(inst, after)
    # two jobs: the reservation does not pay, nothing changes
    two = three_jobs()
    two["phases"] = two["phases"][:2]
    inst2 = instance_from(two)
    space2 = config_space(inst2)
    od2 = {n: next(c for c in cs if c.contract == "on_demand") for n, cs in space2.by_phase.items()}
    sched2 = with_reservations(
        inst2,
        {f"job{k}": Assignment(od2[f"job{k}"], tuple(range(8 * k, 8 * k + 8))) for k in range(2)},
    )
    assert sched2 is not None
    assert (
        recontract(inst2, space2, time_windows(inst2, space2.fewest_hours()), sched2, 160.0, 30)
        is None
    )


@pytest.mark.parametrize("name", ["week-7b", "medium-compete"])
def test_screening_the_look_ahead_changes_no_placement(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # the preemptible placements tried in the order of a lower bound, stopping at the first
    # bound above the best found: the schedule of trying every configuration
    import sys

    sys.path.insert(0, str(INSTANCES.parent / "benchmarks"))
    import generate

    inst = generate.load(name)
    space = config_space(inst)
    screened = lookahead_schedule(inst, space)
    monkeypatch.setattr(
        LookAhead,
        "_screened",
        lambda self, name, configs, *rest: [(c, float("-inf")) for c in configs],
    )
    every = lookahead_schedule(inst, space)
    assert screened is not None and every is not None
    assert {n: (a.config.index, a.hours) for n, a in screened.assignments.items()} == {
        n: (a.config.index, a.hours) for n, a in every.assignments.items()
    }
