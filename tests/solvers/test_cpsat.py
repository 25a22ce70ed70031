"""Contiguous scheduling: CP-SAT and the start-time MILP against the hourly MILP.

Checked here: on seeded non-preemptive variants of tiny.yaml all three reach the same
optimum (CP-SAT within its stated rounding); the start-time objective of any schedule equals
the costed plan (cost_plan); a hand-computed case where contiguity costs more than pausing;
hints, MIP starts and the portfolio; choose(); time limits; infeasibility. Every plan goes
through the independent checker.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import ROUND_GPU, instance_from, tiny_dict

from formulations.choose import HIGHS_MAX_NONZEROS, choose
from formulations.exact.cpsat import solve_cpsat
from formulations.exact.starttime import build, build_data, solve_starttime
from formulations.exact.starttime.data import (
    choice_of,
    estimate_nonzeros,
    least_reserved,
    objective_of,
    schedule_of,
)
from formulations.exact.starttime.model import point_of
from formulations.pipeline import solve_milp
from formulations.portfolio import solve_nonpreemptive
from planner.instance.model import Instance
from planner.model.configs import build_config_space
from planner.model.costs import cost_plan
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.model.result import Result, SolutionStatus, Termination


def checked(inst: Instance, plan: Plan | None) -> None:
    """The independent checker must accept every plan."""
    from planner.checker import verify

    assert plan is not None
    v = verify(inst, plan)
    assert v.ok, "checker rejected the plan:\n" + "\n".join(map(str, v.violations))


def plan_of(res: Result) -> Plan:
    assert res.plan is not None, res.summary()
    return res.plan


def obj(res: Result) -> float:
    assert res.objective is not None, res.summary()
    return res.objective


# ----------------------------------------------------------------------------- instances


def variant(seed: int) -> dict[str, Any]:
    """A seeded non-preemptive variant of tiny.yaml with four phases (prep -> finetune ->
    eval, and an independent side job competing for A100s), hourly prices and carbon,
    capacity dips, and per seed one of: block billing with a minimum rental, a reserved
    offer, porting + data transfer costs, fractional GPU slices."""
    rng = random.Random(seed)
    T = 24
    d = tiny_dict()
    d["horizon"]["hours"] = T
    for r in ("east", "west"):
        reg = d["regions"][r]
        reg["electricity"] = {"values": [round(rng.uniform(10, 160), 1) for _ in range(T)]}
        reg["carbon_intensity"] = {"values": [round(rng.uniform(100, 600)) for _ in range(T)]}
    east_a100 = [16] * T
    a = rng.randrange(0, T - 6)
    for t in range(a, a + rng.randrange(3, 7)):
        east_a100[t] = 8
    west_a100 = [8] * T
    b = rng.randrange(0, T - 4)
    west_a100[b : b + 3] = [0, 0, 0]
    d["regions"]["east"]["capacity"] = {"A100": east_a100, "L4": 16}
    d["regions"]["west"]["capacity"] = {"A100": west_a100}
    d["objective"] = {"carbon_usd_per_tonne": 40.0}
    prep, ft = d["phases"]
    prep["preemptible"] = False
    prep["release"] = rng.randrange(0, 4)
    prep["work"]["gpu_hours"] = rng.choice([8, 12, 16])
    ft["deadline"] = rng.choice([20, 24])
    ft["output_gb"] = 4.0
    ev = {
        "name": "eval",
        "kind": "evaluation",
        "predecessors": ["finetune"],
        "work": {"gpu_hours": 4, "gpu": "A100"},
        "options": {"gpu_counts": [1, 2]},
    }
    side = {
        "name": "side",
        "kind": "data_preparation",
        "deadline": T,
        "work": {"gpu_hours": rng.choice([16, 24]), "gpu": "A100"},
        "gpu_types": ["A100"],
        "options": {"gpu_counts": [4, 8], "extra_spare_nodes": [0]},
    }
    d["phases"] = [prep, ft, ev, side]
    kind = seed % 4
    if kind == 0:
        d["regions"]["east"]["offers"]["L4"]["on_demand"].update(
            billing_granularity_hours=4, min_rental_hours=10
        )
        d["regions"]["west"]["offers"]["A100"]["on_demand"].update(billing_granularity_hours=3)
    elif kind == 1:
        d["regions"]["east"]["offers"]["A100"]["reserved"] = {
            "usd_per_gpu_hour": 0.35,
            "min_gpus": 4,
            "max_gpus": 16,
        }
    elif kind == 2:
        d["gpu_types"]["L4"]["family"] = "ada"
        d["families"] = {"ada": {"porting_usd": 6.0}}
        prep["gpu_types"] = ["L4"]  # only east offers L4: the data must move from west
        prep["data"] = {"size_gb": 200, "home_region": "west"}
        prep["output_gb"] = 50.0
    else:
        ev["options"] = {"gpu_counts": [1], "fractions": [0.5]}
        ev["gpu_types"] = ["L4"]
        ev["work"] = {"gpu_hours": 1, "gpu": "A100"}  # 2.6 L4-hours: 3 h on 1, 6 h on 0.5
        d["regions"]["east"]["capacity"]["L4"] = [2] * T
        d["phases"].append(dict(ev, name="eval2", predecessors=["prep"]))
    return d


SEEDS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def solved() -> dict[int, tuple[Instance, Result, Result, Result]]:
    """Every seed solved by CP-SAT, the start-time MILP and the plain hourly MILP (no bound
    pruning: the reference model), to optimality."""
    out = {}
    for seed in SEEDS:
        inst = instance_from(variant(seed), f"<variant {seed}>")
        cp = solve_cpsat(inst, SolveOptions(time_limit=20, gap=0.0, threads=2))
        st = solve_starttime(inst, SolveOptions(time_limit=20, gap=0.0, threads=2))
        hm = solve_milp(
            inst, SolveOptions(time_limit=30, gap=0.0, threads=2, backend="highs"), prune=False
        )
        out[seed] = (inst, cp, st, hm)
    return out


# ----------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("seed", SEEDS)
def test_three_models_reach_the_same_optimum(solved: Any, seed: int) -> None:
    inst, cp, st, hm = solved[seed]
    for res in (cp, st, hm):
        assert res.termination == Termination.OPTIMAL, res.summary()
        assert res.status == SolutionStatus.OPTIMAL
        checked(inst, res.plan)
        assert all(p.contiguous for p in plan_of(res).phases)
    # The start-time MILP and the hourly MILP optimise the same exact costs.
    assert st.objective == pytest.approx(hm.objective, rel=1e-7, abs=1e-6)
    # CP-SAT optimises rounded costs: its plan (costed exactly) is feasible, so it is no
    # better than the optimum, and no worse than the optimum plus twice the rounding bound.
    rb = cp.stats["rounding_bound_usd"]
    assert rb <= cp.stats["rounding_terms"] * 0.5 / cp.stats["scale"] + 1e-12
    assert st.objective - 1e-6 <= cp.objective <= st.objective + 2 * rb + 1e-6
    assert cp.stats["rounding_error_usd"] <= rb + 1e-9
    # Bounds are valid lower bounds.
    assert cp.bound is not None and cp.bound <= st.objective + 1e-6
    # Each formulation's own objective is the costed plan's.
    assert cp.stats["objective_mismatch_usd"] < 1e-6
    assert st.stats["objective_mismatch_usd"] < 1e-6
    assert st.stats["solver_objective"] == pytest.approx(st.objective, rel=1e-7, abs=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_hourly_milp_with_bound_pruning_reaches_the_optimum(solved: Any, seed: int) -> None:
    # solve_milp's default path (separable bound, heuristic, pruning of configurations and
    # hours) must not lose the optimum the plain models agree on.
    inst, _, st, _ = solved[seed]
    res = solve_milp(inst, SolveOptions(time_limit=30, gap=0.0, threads=2, backend="highs"))
    assert res.objective == pytest.approx(st.objective, rel=1e-7, abs=1e-6), res.notes


def test_variants_exercise_the_coupling_terms(solved: Any) -> None:
    # The seeds are only a test of those features if the optima use them.
    _, cp0, _, _ = solved[0]
    _, cp1, _, _ = solved[1]
    _, cp2, _, _ = solved[2]
    _, cp3, _, _ = solved[3]
    assert plan_of(cp1).reserved, "seed 1: expected a reserved pool in the optimum"
    assert plan_of(cp2).costs["transfer"] > 0 and plan_of(cp2).costs["porting"] == 6.0
    assert cp3.stats["demand_scale"] == 2  # half-GPU slices make demands integral at x2
    assert plan_of(cp0).costs["carbon"] > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_start_cost_equals_costed_plan_for_any_schedule(seed: int) -> None:
    # For random (configuration, start) choices, feasible or not, the start-time objective
    # and the MILP point's objective equal cost_plan's weighted total: the precomputed
    # start costs, transfers, porting and reserved pools are the cost model, hour for hour.
    inst = instance_from(variant(seed))
    space = build_config_space(inst)
    data = build_data(inst, space)
    sm = build(data)
    rng = np.random.default_rng(seed)
    for _ in range(25):
        choice = {}
        for name, tables in data.tables.items():
            k = int(rng.integers(len(tables)))
            choice[name] = (k, int(rng.choice(tables[k].starts)))
        reserved = least_reserved(data, choice)
        sched = schedule_of(data, choice, reserved)
        plan = cost_plan(inst, sched)
        assert objective_of(data, choice, reserved) == pytest.approx(plan.objective, rel=1e-9)
        assert sm.lp.objective_of(point_of(sm, choice, reserved)) == pytest.approx(
            plan.objective, rel=1e-9
        )
        assert choice_of(data, sched) == choice


# ----------------------------------------------------------------------------- contiguity


def one_job(preemptible: bool) -> Instance:
    # One region, prices over 8 hours: [100, 10, 10, 500, 500, 10, 10, 100] USD/MWh.
    # A GPU with 1 kW board power, no idle draw, no host overhead, PUE 1, no failures, free
    # storage; 40 GPU-hours on 10 GPUs = 4 h at 10 kW; rental $1/GPU-h = $10/h.
    gpu = dict(ROUND_GPU)
    d = {
        "name": "split",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 8},
        "gpu_types": {"G": gpu},
        "regions": {
            "r": {
                "timezone": "UTC",
                "pue": 1.0,
                "electricity": {"values": [100, 10, 10, 500, 500, 10, 10, 100]},
                "capacity": {"G": 10},
                "offers": {"G": {"on_demand": {"usd_per_gpu_hour": 1.0}}},
                "storage": {"hot": {"usd_per_gb_month": 0.0}},
            }
        },
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "power_load": 1.0,
                "work": {"gpu_hours": 40, "gpu": "G"},
                "preemptible": preemptible,
                "resume_overhead_hours": 0.25,
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
            }
        ],
    }
    return instance_from(d, "<split>")


def test_contiguity_costs_more_than_pausing() -> None:
    # Energy per hour = 10 kW x price / 1000 = price / 100 USD. Rental 4 h x $10 = $40 always.
    # Pausing: run hours 1, 2, 5, 6 at $0.10 each = $0.40, plus one resume:
    #   0.25 h x (rental $10 + 10 kW x mean price 1240/8 = 155 USD/MWh / 1000 = $1.55)
    #   = 0.25 x 11.55 = $2.8875  ->  40 + 0.40 + 2.8875 = $43.2875.
    # Contiguous: the best 4-hour window is 0-3 or 4-7: (100 + 10 + 10 + 500) / 100 = $6.20
    #   ->  40 + 6.20 = $46.20.  Contiguity costs 46.20 - 43.2875 = $2.9125 more.
    pre = solve_milp(one_job(True), SolveOptions(gap=0.0, backend="highs"))
    con = solve_milp(one_job(False), SolveOptions(gap=0.0, backend="highs"))
    assert pre.objective == pytest.approx(43.2875, abs=1e-6)
    assert con.objective == pytest.approx(46.20, abs=1e-6)
    assert obj(con) - obj(pre) == pytest.approx(2.9125, abs=1e-6)
    assert plan_of(pre).phase("job").hours == (1, 2, 5, 6)
    inst = one_job(False)
    for res in (
        solve_cpsat(inst, SolveOptions(gap=0.0, threads=2)),
        solve_starttime(inst, SolveOptions(gap=0.0)),
    ):
        assert res.objective == pytest.approx(46.20, abs=1e-6)
        assert plan_of(res).phase("job").hours in ((0, 1, 2, 3), (4, 5, 6, 7))
        checked(inst, res.plan)


def test_capacity_dip_does_not_hide_the_cheap_hours() -> None:
    # The only 10-GPU pool has no capacity in hour 5; prices are $10/MWh in hours 6-9 and
    # $50 elsewhere (T = 12). The 4-hour job runs 6-9: energy 4 x 10 kW x $10/MWh = $0.40,
    # rental $40, total $40.40. Runs spanning hour 5 are impossible, runs after it are not:
    # a model (or bound) that lets the dip hide later hours finds $42.00 (hours 0-3) instead,
    # or claims a bound above $40.40.
    inst = one_job(False)
    d = dict(inst.raw)
    d["horizon"] = {"start": "2023-06-05T00:00:00Z", "hours": 12}
    d["regions"]["r"]["capacity"] = {"G": [10] * 5 + [0] + [10] * 6}
    d["regions"]["r"]["electricity"] = {"values": [50] * 6 + [10] * 4 + [50] * 2}
    inst = instance_from(d, "<dip>")
    for res in (
        solve_cpsat(inst, SolveOptions(gap=0.0, threads=2)),
        solve_starttime(inst, SolveOptions(gap=0.0)),
        solve_milp(inst, SolveOptions(gap=0.0, backend="highs")),
    ):
        assert res.objective == pytest.approx(40.40, abs=1e-6), (res.solver, res.notes)
        assert res.bound is not None and res.bound <= 40.40 + 1e-6, (res.solver, res.bound)
        assert plan_of(res).phase("job").hours == (6, 7, 8, 9)
        checked(inst, res.plan)


def test_carbon_cap_moves_the_run() -> None:
    # Prices [100, 100, 100, 100, 10, 10, 10, 10] USD/MWh, intensity 100 g/kWh in hours 0-3
    # and 500 in 4-7; 10 kW for 4 h. Per start: energy $ = sum price / 100, tonnes =
    # sum 10 kW x ci / 1e6:  0-3: $4.00, 0.004 t;  1-4: $3.10, 0.008 t;  2-5: $2.20, 0.012 t;
    # 3-6: $1.30, 0.016 t;  4-7: $0.40, 0.020 t. Uncapped the job runs 4-7 for $40.40; with a
    # cap of exactly 0.008 t it runs 1-4 for 40 + 3.10 = $43.10.
    inst = one_job(False)
    d = dict(inst.raw)
    d["regions"]["r"]["electricity"] = {"values": [100] * 4 + [10] * 4}
    d["regions"]["r"]["carbon_intensity"] = {"values": [100] * 4 + [500] * 4}
    assert solve_cpsat(
        instance_from(d), SolveOptions(gap=0.0, threads=2)
    ).objective == pytest.approx(40.40)
    d["objective"] = {"carbon_cap_tonnes": 0.008}
    inst = instance_from(d, "<capped>")
    for res in (
        solve_cpsat(inst, SolveOptions(gap=0.0, threads=2)),
        solve_starttime(inst, SolveOptions(gap=0.0)),
        solve_milp(inst, SolveOptions(gap=0.0, backend="highs"), prune=False),
    ):
        assert res.objective == pytest.approx(43.10, abs=1e-6), res.solver
        assert plan_of(res).phase("job").hours == (1, 2, 3, 4)
        assert plan_of(res).emissions_t == pytest.approx(0.008, abs=1e-12)
        checked(inst, res.plan)


def test_preemptible_instance_through_cpsat_is_a_restriction() -> None:
    # The contiguous best ($46.20) is a valid plan of the preemptible job but not its
    # optimum ($43.2875): reported feasible, without a bound, with a note.
    inst = one_job(True)
    res = solve_nonpreemptive(
        inst, "cpsat", SolveOptions(time_limit=10.0, gap=0.0, threads=2, verbose=False)
    )
    assert res.status == SolutionStatus.FEASIBLE and res.bound is None
    assert res.objective == pytest.approx(46.20, abs=1e-6)
    assert any("without pauses" in n for n in res.notes)
    checked(inst, res.plan)


# ----------------------------------------------------------------------------- dispatch


def test_choose() -> None:
    tiny = instance_from(tiny_dict())
    pick, why = choose(tiny)  # prep is preemptible in tiny.yaml
    assert pick == "milp" and "prep" in why and "pause" in why
    d = tiny_dict()
    d["phases"][0]["preemptible"] = False
    inst = instance_from(d)
    pick, why = choose(inst)
    _, nnz = estimate_nonzeros(inst, build_config_space(inst))
    small = nnz <= HIGHS_MAX_NONZEROS
    assert pick == ("starttime" if small else "cpsat")
    assert why.startswith(pick + ":") and "2 phases are non-preemptive" in why
    # a long horizon with many phases: the start-time model is too large
    d["horizon"]["hours"] = 24 * 30
    d["phases"][1]["deadline"] = 24 * 30
    d["phases"] += [dict(d["phases"][0], name=f"p{i}") for i in range(20)]
    big = instance_from(d)
    pick, why = choose(big)
    assert pick == "cpsat" and "nonzeros" in why


def test_solve_auto_routes_nonpreemptive_instances() -> None:
    from planner.solve import solve

    inst = one_job(False)
    res = solve(inst, "auto", time_limit=10, gap=0.0, threads=2)
    assert res.solver in ("cpsat", "starttime-highs")
    assert res.objective == pytest.approx(46.20, abs=1e-6)


# ----------------------------------------------------------------------------- hints


def test_hints_and_portfolio(solved: Any) -> None:
    inst, cp, st, hm = solved[1]
    # The hourly MILP's plan as CP-SAT's hint; CP-SAT's schedule as HiGHS's MIP start.
    a = solve_cpsat(inst, SolveOptions(time_limit=20, gap=0.0, threads=2, start=hm.plan))
    assert any("hint: the given schedule" in n for n in a.notes)
    assert a.stats["hint_objective"] == pytest.approx(hm.objective, rel=1e-9)
    assert a.objective == pytest.approx(cp.objective, abs=1e-6)
    sched = {
        p.name: (
            next(c for c in build_config_space(inst)[p.name] if c.label == p.info["config"]),
            p.hours,
        )
        for p in plan_of(cp).phases
    }
    b = solve_starttime(inst, SolveOptions(time_limit=20, gap=0.0, start=sched))
    assert b.stats["start_objective"] == pytest.approx(cp.objective, rel=1e-9)
    assert b.objective == pytest.approx(st.objective, rel=1e-7)
    # Portfolio: CP-SAT first, then HiGHS from its schedule; the bound is the better one.
    c = solve_nonpreemptive(
        inst,
        "starttime",
        SolveOptions(time_limit=20.0, gap=0.0, threads=2, verbose=False),
        portfolio=True,
    )
    assert c.objective == pytest.approx(st.objective, rel=1e-7)
    assert any("portfolio" in n for n in c.notes)
    checked(inst, c.plan)
    # ... and the other way: the start-time MILP first, its plan as CP-SAT's hint (here it
    # already proves the optimum, so CP-SAT is not needed).
    e = solve_nonpreemptive(
        inst,
        "cpsat",
        SolveOptions(time_limit=20.0, gap=0.0, threads=2, verbose=False),
        portfolio=True,
    )
    assert e.objective == pytest.approx(st.objective, rel=1e-7)
    assert any("portfolio: starttime-highs closed the gap" in n for n in e.notes)
    checked(inst, e.plan)


def test_bad_hint_is_dropped_with_a_note() -> None:
    inst = one_job(False)
    c = build_config_space(inst)["job"][0]
    res = solve_cpsat(
        inst, SolveOptions(gap=0.0, start={"job": (c, (0, 1, 5, 6))})
    )  # not contiguous
    assert any("hint dropped" in n for n in res.notes)
    assert res.objective == pytest.approx(46.20, abs=1e-6)


# ----------------------------------------------------------------------------- symmetry


def test_identical_phases_are_ordered_and_share_the_capacity() -> None:
    # Three identical 4-hour jobs on one 10-GPU pool, 12 hours, prices rising by hour:
    # they must run back to back, 0-3, 4-7, 8-11 in some order. Energy per hour = price/100:
    # prices t = 0..11 -> 10 + 10 t; all 12 hours are used: sum = 120 + 10 x 66 = 780 ->
    # $7.80; rental 3 x 4 x $10 = $120; total $127.80.
    inst = one_job(False)
    d = dict(inst.raw)
    d["horizon"] = {"start": "2023-06-05T00:00:00Z", "hours": 12}
    d["regions"]["r"]["electricity"] = {"values": [10 + 10 * t for t in range(12)]}
    d["phases"] = [dict(d["phases"][0], name=f"job{i}") for i in range(3)]
    inst = instance_from(d, "<three>")
    cp = solve_cpsat(inst, SolveOptions(gap=0.0, threads=2))
    st = solve_starttime(inst, SolveOptions(gap=0.0))
    assert cp.stats["symmetry_rows"] == 2
    assert cp.objective == pytest.approx(127.80, abs=1e-6)
    assert st.objective == pytest.approx(127.80, abs=1e-6)
    assert [plan_of(cp).phase(f"job{i}").start_hour for i in range(3)] == [0, 4, 8]
    checked(inst, cp.plan)
    checked(inst, st.plan)


def test_identical_configurations_are_kept_once() -> None:
    # Two free storage tiers make two configurations that differ only in the tier's name:
    # same pool, hours, GPUs and cost at every start. Without dominance pruning both reach
    # the start data once; a schedule on the dropped one maps to the kept one.
    inst = one_job(False)
    d = dict(inst.raw)
    d["regions"]["r"]["storage"] = {
        "hot": {"usd_per_gb_month": 0.0},
        "cold": {"usd_per_gb_month": 0.0},
    }
    inst = instance_from(d, "<tiers>")
    space = build_config_space(inst, prune=False)
    assert len(space["job"]) == 2
    data = build_data(inst, space)
    assert data.duplicates == 1 and len(data.tables["job"]) == 1
    dropped = space["job"][1]
    assert choice_of(data, {"job": (dropped, (4, 5, 6, 7))}) == {"job": (0, 4)}
    res = solve_cpsat(inst, SolveOptions(gap=0.0, threads=2), space=space)
    assert res.stats["duplicate_configs"] == 1
    assert res.objective == pytest.approx(46.20, abs=1e-6)  # as in the contiguity test


# ----------------------------------------------------------------------------- limits


def test_infeasible_capacity_is_reported() -> None:
    # Two 4-hour jobs needing all 10 GPUs of the only pool within 6 hours: impossible.
    inst = one_job(False)
    d = dict(inst.raw)
    d["phases"] = [dict(d["phases"][0], name=f"job{i}", deadline=6) for i in range(2)]
    inst = instance_from(d, "<crowded>")
    for res in (solve_cpsat(inst, SolveOptions(threads=2)), solve_starttime(inst)):
        assert res.termination == Termination.INFEASIBLE, res.summary()
        assert res.plan is None and "infeasible" in res.message


def big() -> Instance:
    """Ten independent prep -> finetune chains over a week with contended A100s."""
    d = tiny_dict()
    T = 168
    rng = random.Random(7)
    d["horizon"]["hours"] = T
    for r in ("east", "west"):
        d["regions"][r]["electricity"] = {
            "values": [round(rng.uniform(10, 160), 1) for _ in range(T)]
        }
    prep, ft = d["phases"]
    phases = []
    for i in range(10):
        phases.append(dict(prep, name=f"prep{i}", preemptible=False))
        phases.append(dict(ft, name=f"ft{i}", predecessors=[f"prep{i}"], deadline=T))
    d["phases"] = phases
    return instance_from(d, "<big>")


def _stops_in_time(res: Result, limit: float, inst: Instance) -> None:
    assert res.runtime_s <= limit + 2.5, res.summary()
    if res.termination == Termination.OPTIMAL:  # solved within the limit: nothing to stop
        assert res.plan is not None
        checked(inst, res.plan)
        return
    assert res.termination == Termination.TIME_LIMIT, res.summary()
    if res.plan is not None:
        assert res.status == SolutionStatus.FEASIBLE
        assert res.bound is None or res.bound <= obj(res) + 1e-6
        checked(inst, res.plan)
    else:
        assert "time limit" in res.message


def test_cpsat_time_limit_is_honoured() -> None:
    # A week-long instance CP-SAT cannot solve to optimality in 2 s: it stops near the limit
    # (building included), says so, and any plan it returns is valid.
    inst = big()
    _stops_in_time(solve_cpsat(inst, SolveOptions(time_limit=2.0, gap=0.0, threads=2)), 2.0, inst)


def test_starttime_time_limit_is_honoured() -> None:
    from formulations.exact.starttime.solve import HIGHS_OPTIONS

    assert HIGHS_OPTIONS["presolve"] == "off"  # HiGHS presolve ignores the time limit
    inst = big()
    _stops_in_time(
        solve_starttime(inst, SolveOptions(time_limit=2.0, gap=0.0, threads=2)), 2.0, inst
    )
