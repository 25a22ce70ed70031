"""The hourly MILP: hand-computed optima, backend agreement, model-vs-costing consistency,
metamorphic properties, time-limit behaviour. Every plan goes through the checker."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from builders import (
    NIGHT,
    NIGHT_NY,
    ROUND_GPU,
    assert_valid,
    generated,
    instance_from,
    one_phase,
    region,
    solved,
    three_cheap_hours,
    tiny_dict,
)

from formulations.exact.milp.model import build
from formulations.exact.milp.solution import point_from_schedule
from formulations.heuristics.greedy import greedy
from formulations.pipeline import solve_milp
from planner.model.configs import build_config_space
from planner.model.costs import cost_plan
from planner.model.options import SolveOptions
from planner.model.result import SolutionStatus, Termination
from planner.solve import solve


def test_time_zones_shift_the_cheap_night() -> None:
    # 10 GPUs x 1 kW = 10 kW for 4 h (40 GPU-hours on 10 GPUs); rental $1/GPU-h everywhere.
    # Berlin (UTC+2) is cheap 00-06 local = 22:00-04:00 UTC: hours 0-3 at $20/MWh.
    # New York (UTC-4) is cheap 00-06 local = 04:00-10:00 UTC: hours 4-9 at $10/MWh.
    # Deadline hour 8: New York runs 4-7 at 10 kW x $10/MWh = $0.10/h -> energy $0.40,
    # Berlin could only reach $0.80. Total = rental 4 x 10 x $1 = $40 + $0.40 = $40.40.
    od = {"on_demand": {"usd_per_gpu_hour": 1.0}}
    d = one_phase(
        {
            "berlin": region("Europe/Berlin", NIGHT, od),
            "newyork": region("America/New_York", NIGHT_NY, od),
        },
        40,
        deadline=8,
    )
    _, res = solved(d)
    p = res.plan.phase("job")
    assert (p.region, p.hours) == ("newyork", (4, 5, 6, 7))
    assert res.plan.costs["total"] == pytest.approx(40.40, abs=1e-6)
    # Deadline hour 7: New York has only 3 cheap hours (3 at $100 + 3 x $10: $1.00 + $0.30),
    # Berlin's 0-3 cost 4 x $0.20 = $0.80: Berlin wins, total $40.80.
    d["phases"][0]["deadline"] = 7
    _, res = solved(d)
    p = res.plan.phase("job")
    assert (p.region, p.hours) == ("berlin", (0, 1, 2, 3))
    assert res.plan.costs["total"] == pytest.approx(40.80, abs=1e-6)


@pytest.mark.parametrize(("gpu_hours", "reserved"), [(130, 10), (110, 0)])
def test_reserved_pays_only_above_utilisation(gpu_hours: float, reserved: int) -> None:
    # Horizon T = 20 h, 10 GPUs. On-demand $2.00/GPU-h; reserved $1.20/GPU-h for all 20 h.
    # n hours on demand cost 2.00 x 10 x n; reserved 1.20 x 10 x 20 = $240: reserved pays when
    # n > 12 (utilisation above 60%). n = 13: on-demand $260 > $240 -> reserve 10 GPUs.
    # n = 11: on-demand $220 < $240 -> no reservation. Energy is free (price 0).
    offers = {"on_demand": {"usd_per_gpu_hour": 2.0}, "reserved": {"usd_per_gpu_hour": 1.2}}
    d = one_phase({"r": region("UTC", {"constant": 0}, offers)}, gpu_hours, deadline=20, hours=20)
    _, res = solved(d)
    got = {(r, g): n for r, g, n in res.plan.reserved}
    assert got.get(("r", "G"), 0) == reserved
    expected = 240.0 if reserved else 2.0 * gpu_hours
    assert res.plan.costs["rental"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("rate", "spares"), [(0.0075, 8), (0.005, 0)])
def test_spare_node_pays_only_above_failure_rate(rate: float, spares: int) -> None:
    # 8 GPUs on one 8-GPU node at $1/GPU-h, free energy, no checkpoint (data preparation),
    # failures noticed at once (detect 0): a failure costs its downtime D at the hourly rental
    # rho, and failures also strike the downtime: f = lambda / (1 - lambda D) per running hour.
    # Without a spare, D = restart 10 h and rho = $8: 8 + f x 10 x 8 per hour. With a spare
    # node (8 more GPUs), D = swap 0.1 h and rho = $16: 16 + f x 0.1 x 16. At lambda_job 0.05
    # the two are 16 + 0.0804 against 8 + 4 / 0.5 = 16: no spare; at 0.06 the spare pays,
    # 16.0966 against 8 + 4.8 / 0.4 = 20.
    gpu = dict(ROUND_GPU, gpus_per_node=8, failures_per_gpu_hour=rate)
    d = one_phase(
        {
            "r": region(
                "UTC", {"constant": 0}, {"on_demand": {"usd_per_gpu_hour": 1.0}}, capacity=16
            )
        },
        80,
        deadline=24,
        gpu=gpu,
        options={"gpu_counts": [8], "extra_spare_nodes": [0, 1]},
        failure={"restart_hours": 10, "spare_swap_hours": 0.1, "detect_hours": 0},
    )
    _, res = solved(d)
    p = res.plan.phase("job")
    assert p.spare_gpus == spares
    # 10 h of work. Rate 0.005, lambda = 0.04, no spare: f = 0.04 / 0.6 = 0.0666667,
    # 10 x (8 + 0.0666667 x 10 x 8) = 80 + 53.3333 = 133.3333. Rate 0.0075, lambda = 0.06,
    # spare: f = 0.06 / 0.994 = 0.0603622, 10 x (16 + 0.0603622 x 0.1 x 16) = 160.9658.
    expected = 10 * (16 + 0.06 / 0.994 * 0.1 * 16) if spares else 10 * (8 + 0.04 / 0.6 * 80)
    assert res.plan.costs["total"] == pytest.approx(expected, abs=1e-6)


def test_billing_granularity_rounds_up_blocks() -> None:
    # 10 GPUs at $1/GPU-h billed in 4-hour blocks; 5 h of work. Electricity is free except
    # hours 0-3 ($1000/MWh), so the job runs hours 4-8: blocks {1, 2} -> 8 billed hours =
    # $80 rental, though only 5 h are used. (Starting at hour 8 would also use 2 blocks.)
    offers = {"on_demand": {"usd_per_gpu_hour": 1.0, "billing_granularity_hours": 4}}
    prices = [1000.0] * 4 + [0.0] * 20
    d = one_phase({"r": region("UTC", {"values": prices}, offers)}, 50, deadline=24)
    _, res = solved(d)
    assert res.plan.costs["rental"] == pytest.approx(80.0)
    assert res.plan.costs["energy"] == pytest.approx(0.0)


def test_preemptible_phase_takes_the_cheap_hours() -> None:
    # A preemptible 3-hour job, prices 50 except hours 2, 7, 11 at $5/MWh; resume overhead 0.
    # It runs exactly those three hours: energy 3 x 10 kW x $5/MWh = $0.15, rental $30.
    _, res = solved(three_cheap_hours(0.0))
    assert res.plan.phase("job").hours == (2, 7, 11)
    assert res.plan.costs["total"] == pytest.approx(30.15)


def test_backends_agree_and_model_matches_costing(tiny: Any) -> None:
    a = solve_milp(tiny, SolveOptions(backend="highs", gap=0.0))
    b = solve_milp(tiny, SolveOptions(backend="pyomo", gap=0.0))
    assert a.plan is not None and b.plan is not None
    assert a.objective == pytest.approx(b.objective, rel=1e-7)
    assert_valid(tiny, a.plan)
    assert_valid(tiny, b.plan)
    # The MILP objective of a schedule's point equals the costed plan: model == cost model.
    space = build_config_space(tiny)
    mm = build(tiny, space)
    sched = greedy(tiny, space)
    assert sched is not None
    point = point_from_schedule(mm, sched)
    assert point is not None
    assert mm.lp.violations(point) == []
    plan = cost_plan(tiny, sched)
    assert mm.lp.objective_of(point) == pytest.approx(plan.objective, rel=1e-9)
    assert a.objective <= plan.objective + 1e-6


# ----------------------------------------------------------------------------- metamorphic


def optimum(d: dict[str, Any]) -> float:
    inst = instance_from(d)
    res = solve_milp(inst, SolveOptions(backend="highs", gap=0.0, time_limit=60))
    assert res.termination == Termination.OPTIMAL, res.summary()
    assert res.plan is not None
    assert_valid(inst, res.plan)
    return float(res.objective or math.nan)


SEEDS = [1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_more_capacity_never_raises_the_optimum(seed: int) -> None:
    d = generated(seed)
    base = optimum(d)
    d["regions"]["west"]["capacity"]["A100"] += 8
    assert optimum(d) <= base + 1e-6


@pytest.mark.parametrize("seed", SEEDS)
def test_later_deadline_never_raises_the_optimum(seed: int) -> None:
    d = generated(seed)
    d["phases"][1]["deadline"] = 30
    base = optimum(d)
    d["phases"][1]["deadline"] = 36
    assert optimum(d) <= base + 1e-6


@pytest.mark.parametrize("seed", SEEDS)
def test_higher_price_never_lowers_the_optimum(seed: int) -> None:
    d = generated(seed)
    base = optimum(d)
    d["regions"]["east"]["electricity"]["values"] = [
        v + 20 for v in d["regions"]["east"]["electricity"]["values"]
    ]
    d["regions"]["east"]["offers"]["L4"]["on_demand"]["usd_per_gpu_hour"] += 0.3
    assert optimum(d) >= base - 1e-6


@pytest.mark.parametrize("seed", SEEDS)
def test_scaling_all_prices_scales_the_optimum(seed: int) -> None:
    d = generated(seed)
    base = optimum(d)
    k = 3.0
    for r in d["regions"].values():
        e = r["electricity"]
        e["scale"] = k
        for offers in r["offers"].values():
            for offer in offers.values():
                offer["usd_per_gpu_hour"] *= k
        r.setdefault("storage", {"hot": {"usd_per_gb_month": 0.10, "write_gb_per_s": 5.0}})
        for tier in r["storage"].values():
            tier["usd_per_gb_month"] = tier.get("usd_per_gb_month", 0.1) * k
        r["default_transfer_usd_per_gb"] = 0.02 * k
    assert optimum(d) == pytest.approx(k * base, rel=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_dominated_configuration_is_never_chosen(seed: int) -> None:
    # Give every region a second hot tier identical to "hot" but dearer: each configuration
    # on it is dominated by its twin on "hot" in the same pool (same GPUs, hours, power; more
    # storage cost), so pruning drops it and the unpruned optimum never uses it.
    d = generated(seed)
    d["phases"][0]["data"] = {"size_gb": 500}  # so that every phase pays for storage
    for r in d["regions"].values():
        r["storage"] = {
            "hot": {"usd_per_gb_month": 0.10, "write_gb_per_s": 5.0},
            "hot2": {"usd_per_gb_month": 0.30, "write_gb_per_s": 5.0},
        }
    inst = instance_from(d)
    space = build_config_space(inst)
    assert not any(c.tier == "hot2" for cs in space.by_phase.values() for c in cs)
    unpruned = build_config_space(inst, prune=False)
    assert any(c.tier == "hot2" for cs in unpruned.by_phase.values() for c in cs)
    res = solve_milp(inst, SolveOptions(backend="highs", gap=0.0), space=unpruned)
    assert res.plan is not None
    assert_valid(inst, res.plan)
    assert all(p.tier != "hot2" for p in res.plan.phases)
    assert res.objective == pytest.approx(optimum(d), rel=1e-7)


# ----------------------------------------------------------------------------- limits


def hard_instance() -> Any:
    """A week-long variant of tiny with preemptible phases and many configurations: HiGHS
    does not prove it optimal in a second or two."""
    d = tiny_dict()
    d["horizon"]["hours"] = 168
    rng = random.Random(7)
    d["regions"]["east"]["electricity"] = {"values": [rng.uniform(0, 200) for _ in range(168)]}
    d["phases"][0]["options"] = {"gpu_counts": [1, 2, 4], "fractions": [0.25, 0.5]}
    d["phases"][1]["options"] = {"gpu_counts": [1, 2, 4, 8, 16]}
    d["phases"][1]["preemptible"] = True
    d["phases"][1]["deadline"] = 168
    d["phases"][1]["work"]["tokens"] = 3e9
    extra = [
        {
            "name": f"eval{i}",
            "kind": "evaluation",
            "model": "m1b",
            "work": {"tokens": 2e8, "passes": "forward"},
            "predecessors": ["finetune"],
            "preemptible": True,
            "options": {"gpu_counts": [1, 2, 4, 8]},
        }
        for i in range(4)
    ]
    d["phases"].extend(extra)
    return instance_from(d)


def test_time_limit_is_honoured_and_reports_gap_or_no_plan() -> None:
    inst = hard_instance()
    res = solve(inst, solver="milp", time_limit=1.0, backend="highs")
    assert res.runtime_s <= 1.0 + 4.0
    if res.plan is None:
        assert res.termination == Termination.TIME_LIMIT
        assert "no plan found in time" in res.message
    else:
        assert_valid(inst, res.plan)
        assert res.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)
        if res.termination == Termination.TIME_LIMIT:
            assert res.status == SolutionStatus.FEASIBLE
            # the proved gap, unless HiGHS stopped before it had any bound
            assert (res.gap is not None and res.gap >= 0) or res.bound is None


def test_infeasible_deadline_is_reported_not_raised() -> None:
    d = tiny_dict()
    d["phases"][1]["deadline"] = 3  # finetune's fastest config needs 3 h after prep's 3 h
    inst = instance_from(d)
    res = solve(inst, solver="milp", time_limit=10)
    assert res.plan is None
    assert res.termination in (Termination.INFEASIBLE, Termination.NO_CONFIGURATION)
    assert "explain" in res.message


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_isolated_solve_matches_in_process(tiny: Any) -> None:
    from formulations.lp.highs_runner import solve_highs

    space = build_config_space(tiny)
    mm = build(tiny, space)
    a = solve_highs(mm.lp, 30, 0.0, isolate=False)
    b = solve_highs(mm.lp, 30, 0.0, isolate=True)
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-9)


def test_overrunning_solver_is_stopped_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    # HiGHS gets 30 s but the hard limit is moved to ~1.5 s after start: the child process is
    # killed and the caller gets "time_limit" promptly, with whatever incumbent was streamed.
    import time as _time

    import formulations.lp.highs_runner as hr

    inst = hard_instance()
    space = build_config_space(inst, prune=False)
    mm = build(inst, space)
    monkeypatch.setattr(hr, "GRACE_S", -29.5)
    t0 = _time.perf_counter()
    raw = hr.solve_highs(mm.lp, 30, 0.0, isolate=True)
    took = _time.perf_counter() - t0
    assert raw.status == "time_limit"
    assert "stopped from outside" in raw.message
    assert took < 5


# ----------------------------------------------------------------------------- LP strength


def lp_value(inst: Any) -> float:
    """The optimum of the hourly MILP's LP relaxation (every integrality dropped)."""
    import numpy as np

    from formulations.lp.highs_runner import load_arrays, new_highs

    mm = build(inst, build_config_space(inst))
    a = mm.lp.arrays()
    a["integer"] = np.zeros_like(a["integer"])
    h = new_highs()
    h.setOptionValue("output_flag", False)
    load_arrays(h, a, mm.lp.offset)
    h.run()
    return float(h.getInfo().objective_function_value)


def peaky_run(preemptible: bool) -> dict[str, Any]:
    """A 2-hour job on 10 GPUs ($1/GPU-h), 4 hours at 5, 500, 500, 5 USD/MWh, due at hour 4."""
    offers = {"on_demand": {"usd_per_gpu_hour": 1.0}}
    return one_phase(
        {"r": region("UTC", {"values": [5.0, 500.0, 500.0, 5.0]}, offers)},
        20,
        deadline=4,
        hours=4,
        preemptible=preemptible,
    )


@pytest.mark.parametrize("ratio", [64, 0], ids=["summed", "difference"])
def test_lp_of_a_contiguous_run_is_the_convex_hull_of_its_runs(
    ratio: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import formulations.exact.milp.model as model

    monkeypatch.setattr(model, "SUMMED_RUN_MAX_RATIO", ratio)
    # Runs {0,1} and {2,3} cost 20 rental + 10 kW x 505 USD/MWh = 25.05, {1,2} 30. A row
    # "one segment start" (sum u <= z) lets the LP run hour 0 fully and 1/3 of hours 1-3
    # (energy 10 x (5 + 1005/3) / 1000 = 3.40, LP 23.40); start variables y with
    # x[t] = sum of the starts covering t give exactly the integer optimum.
    inst, res = solved(peaky_run(preemptible=False))
    assert res.objective == pytest.approx(25.05)
    assert lp_value(inst) == pytest.approx(25.05, abs=1e-6)


def test_preemptible_run_keeps_its_pauses() -> None:
    # The same job, preemptible and free to resume, runs hours 0 and 3 (20 + 10 x 10 / 1000);
    # its LP is that optimum too (the two cheapest hours, no resume cost): the start
    # variables are the non-preemptible phases' alone.
    d = peaky_run(preemptible=True)
    d["phases"][0]["resume_overhead_hours"] = 0.0
    inst, res = solved(d)
    assert res.plan.phase("job").hours == (0, 3)
    assert res.objective == pytest.approx(20.10)
    assert lp_value(inst) == pytest.approx(20.10, abs=1e-6)


def test_open_runs_marks_the_starts_whose_hours_are_all_open() -> None:
    from formulations.bounds.separable import open_runs

    ok = [True, True, False, True, True, True]
    assert open_runs(ok, 2).tolist() == [True, False, False, True, True]
    assert open_runs(ok, 3).tolist() == [False, False, False, True]
    assert open_runs(ok, 7).tolist() == []


def crowded_pair() -> dict[str, Any]:
    """Two 2-hour jobs on 10 GPUs ($1/GPU-h) in a pool of 15, hours at 5, 5, 500, 500
    USD/MWh, both due at hour 4; "b" may pause, "a" may not. They cannot overlap, so one
    runs in the dear hours: 2 x 20 rental + 10 kW x (2 x 5 + 2 x 500) / 1000 = 50.10. With
    b's hours continuous, b at half load through all four hours beside a's cheap run fits the
    pool and costs 40 + 0.10 + 5.05 = 45.15: a relaxation only."""
    offers = {"on_demand": {"usd_per_gpu_hour": 1.0}}
    d = one_phase(
        {"r": region("UTC", {"values": [5.0, 5.0, 500.0, 500.0]}, offers, capacity=15)},
        20,
        deadline=4,
        hours=4,
    )
    a = d["phases"][0]
    a["name"] = "a"
    b = {**a, "name": "b", "preemptible": True, "resume_overhead_hours": 0.0}
    d["phases"] = [a, b]
    return d


def test_relaxed_pauses_then_the_exact_model_prove_the_optimum() -> None:
    # The MILP solves the relaxation with the pausable phases' hours continuous first (its
    # bound 45.15 cannot prove 50.10), then the exact model, which does.
    from formulations.exact.milp.model import loose_columns
    from formulations.lp.highs_runner import solve_highs

    inst, res = solved(crowded_pair())
    assert res.objective == pytest.approx(50.10)
    assert res.bound == pytest.approx(50.10, abs=1e-6)
    assert res.termination == Termination.OPTIMAL
    assert "relaxed_solve_s" in res.stats
    assert {res.plan.phase("a").hours, res.plan.phase("b").hours} == {(0, 1), (2, 3)}
    mm = build(inst, build_config_space(inst))
    loose = loose_columns(mm)
    assert len(loose) == 4 + 3  # b's four hours, its finish indicator after hours 1-3
    relaxed = solve_highs(mm.lp, 10, 0.0, 1, isolate=False, continuous=loose)
    assert relaxed.objective == pytest.approx(45.15)
