"""A plan is never wrong (issue 22): ``planner.solve`` verifies every plan it returns, bound
and plan are consistent or flagged, and the four defects found by hand-worked cases.

Every case is solved with every solver; the arithmetic is in the comments.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from builders import assert_valid, instance_from, two_regions
from typer.testing import CliRunner

import formulations.heuristics.earliest
import planner.interfaces.cli.solve  # noqa: F401  (registers the command)
from planner.interfaces.cli.app import app
from planner.interfaces.cli.exits import EXIT_INTERNAL
from planner.model.costs import cost_plan
from planner.model.plan import Plan
from planner.model.result import Result, SolutionStatus, Termination, inconsistency
from planner.model.schedule import Assignment, Schedule
from planner.solve import solve


def carbon_cap_case() -> dict[str, Any]:
    """Issue 22's carbon cap: one region, 24 hours; hours 0-11 cost 0 USD/MWh at 500
    gCO2/kWh, hours 12-23 cost 500 USD/MWh at 100 gCO2/kWh; 4 GPUs of 1 kW at 1 USD/GPU-h,
    PUE 1, no failures; one non-preemptible phase of 16 GPU-hours (4 h on 4 GPUs); a cap of
    0.002 t."""
    return {
        "name": "cap",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 24},
        "gpu_types": {
            "G": {
                "memory_gb": 80,
                "peak_tflops": {"bf16": 100},
                "board_power_w": 1000,
                "idle_power_w": 0,
                "gpus_per_node": 4,
                "node_overhead_w": 0,
                "failures_per_gpu_hour": 0.0,
            }
        },
        "regions": {
            "r": {
                "timezone": "UTC",
                "pue": 1.0,
                "electricity": {
                    "tou": {
                        "default": 0,
                        "bands": [{"start_hour": 12, "end_hour": 24, "price": 500}],
                    }
                },
                "carbon_intensity": {
                    "tou": {
                        "default": 500,
                        "bands": [{"start_hour": 12, "end_hour": 24, "price": 100}],
                    }
                },
                "capacity": {"G": 4},
                "offers": {"G": {"on_demand": {"usd_per_gpu_hour": 1.0}}},
                "storage": {"hot": {"usd_per_gb_month": 0.0}},
            }
        },
        "objective": {"carbon_cap_tonnes": 0.002},
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "work": {"gpu_hours": 16, "gpu": "G"},
                "power_load": 1.0,
                "deadline": 24,
                "preemptible": False,
                "options": {"gpu_counts": [4]},
            }
        ],
    }


def test_the_carbon_cap_holds_in_every_solver(solver: str) -> None:
    # Draw: 4 GPUs x 1 kW = 4 kW, 4 h = 16 kWh whatever the hours.
    # Hours 0-3 (the cheapest): rental 16 x $1 = $16, energy $0, emissions 16 x 500 g =
    #   0.008 t > cap 0.002 t: not allowed.
    # Any run inside hours 12-23: rental $16 + energy 16 kWh x $0.5/kWh = $8 = $24.00,
    #   emissions 16 x 100 g = 0.0016 t <= 0.002 t. A run straddling hour 12 emits at least
    #   one hour at 500 g: 4 kWh x 500 g + 12 kWh x 100 g = 0.0032 t > cap.
    inst = instance_from(carbon_cap_case())
    res = solve(inst, solver=solver, time_limit=30)
    assert res.plan is not None and res.status == SolutionStatus.OPTIMAL, res.summary()
    assert res.objective == pytest.approx(24.00, abs=1e-6)
    assert res.plan.emissions_t == pytest.approx(0.0016, abs=1e-12)
    assert min(res.plan.phase("job").hours) >= 12
    assert res.bound is not None and res.bound <= res.objective + 1e-6
    assert_valid(inst, res.plan)


def test_the_earliest_pass_never_breaks_the_cap() -> None:
    # the pass that moves runs earlier at equal or lower cost: hours 12-15 may move to 0-3
    # (cheaper: $16 < $24), which breaks the cap, so the run stays
    from planner.model.configs import build_config_space
    from planner.model.windows import time_windows

    inst = instance_from(carbon_cap_case())
    space = build_config_space(inst)
    (c,) = space["job"]
    sched = Schedule({"job": Assignment(c, tuple(range(12, 16)))}, {})
    early = formulations.heuristics.earliest.earliest(
        inst, sched, time_windows(inst, space.fewest_hours())
    )
    assert early.assignments["job"].hours == tuple(range(12, 16))
    # without the cap the same pass moves it to hour 0
    free = inst.replace({"objective.carbon_cap_tonnes": None})
    moved = formulations.heuristics.earliest.earliest(
        free, sched, time_windows(free, space.fewest_hours())
    )
    assert moved.assignments["job"].hours == (0, 1, 2, 3)


# ----------------------------------------------------------------------------- the net


def _broken_earliest(
    inst: Any, schedule: Schedule, windows: Any, budget: float = 0.0, pauses: bool = True
) -> Schedule:
    """A pass that moves every contiguous run to hour 0 (ignoring the cap): the kind of bug
    the verification net exists for."""
    out = {}
    for name, (c, hours) in schedule.assignments.items():
        out[name] = Assignment(c, tuple(range(len(hours))))
    return Schedule(out, schedule.reserved, schedule.segments)


def test_a_plan_the_checker_rejects_is_never_returned(
    solver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the broken pass, every solver's own plan runs hours 0-3 (0.008 t > 0.002 t); the
    # net rejects it and returns the plan before the pass (hours 12-23, $24.00), never
    # called optimal, with a note naming the rejected plan and the broken rule.
    monkeypatch.setattr(formulations.heuristics.earliest, "earliest", _broken_earliest)
    import formulations.pipeline as pipeline

    monkeypatch.setattr(pipeline, "earliest", _broken_earliest)
    inst = instance_from(carbon_cap_case())
    res = solve(inst, solver=solver, time_limit=30)
    assert res.plan is not None, res.message
    assert_valid(inst, res.plan)
    assert res.objective == pytest.approx(24.00, abs=1e-6)
    assert res.status != SolutionStatus.OPTIMAL and res.termination != Termination.OPTIMAL
    assert any("failed the independent checker" in n and "carbon_cap" in n for n in res.notes)
    assert any(n.startswith("returned instead") for n in res.notes)
    assert res.stats["rejected_plans"] >= 1


def _tampered(plan: Plan) -> Plan:
    """The plan with its rental figure off by $1 (a cost the checker recomputes)."""
    costs = {**plan.costs, "rental": plan.costs["rental"] + 1.0}
    return replace(plan, costs=costs)


def test_no_plan_that_verifies_is_a_check_failed_result(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Every plan the solver returns has a wrong rental figure: no plan is returned, the
    # termination is check_failed (a bug), the message lists the violation, and the CLI
    # exits 4 without writing a plan file.
    import sys

    ps = sys.modules["planner.solve"]  # the module (planner.solve is also the function)
    real = ps._dispatch

    def dispatch(*args: Any, **kwargs: Any) -> Result:
        res = real(*args, **kwargs)
        assert res.plan is not None
        alts = tuple((s, _tampered(p)) for s, p in res.alternatives)
        return replace(res, plan=_tampered(res.plan), alternatives=alts)

    monkeypatch.setattr(ps, "_dispatch", dispatch)
    inst = instance_from(carbon_cap_case())
    res = solve(inst, solver="milp", time_limit=30)
    assert res.plan is None and res.termination == Termination.CHECK_FAILED
    assert "rental" in res.message and "failed the independent checker" in res.message
    f = tmp_path / "cap.json"
    f.write_text(json.dumps(carbon_cap_case()))
    out = tmp_path / "plan.json"
    cli = CliRunner().invoke(app, ["solve", str(f), "--solver", "milp", "-o", str(out)])
    assert cli.exit_code == EXIT_INTERNAL, cli.output
    assert not out.exists()


def test_a_bound_above_the_plan_is_flagged_not_optimal() -> None:
    # A plan of $24.00 with a "bound" of $30.00: impossible (a bound is below every plan);
    # the result drops the bound, is not optimal and says so.
    inst = instance_from(carbon_cap_case())
    res = solve(inst, solver="milp", time_limit=30)
    assert res.plan is not None
    bad = Result.solved("test", res.plan, Termination.OPTIMAL, bound=30.0, gap=1e-4, runtime_s=0.0)
    assert bad.status == SolutionStatus.FEASIBLE and bad.termination == Termination.UNKNOWN
    assert bad.bound is None and bad.stats["inconsistent_bound"] == 30.0
    assert bad.message.startswith("internal inconsistency")
    assert inconsistency(24.0, 24.0 * (1 + 1e-6)) is None  # within the tolerance
    assert inconsistency(24.0, 24.01) is not None
    # a bound within the gap but above the plan by rounding only is kept and proves it
    ok = Result.solved(
        "test", res.plan, Termination.OPTIMAL, bound=24.0 + 1e-7, gap=1e-4, runtime_s=0.0
    )
    assert ok.status == SolutionStatus.OPTIMAL and ok.bound is not None


# ----------------------------------------------------------------------------- re-plans


def _running_on_a(**running: Any) -> dict[str, Any]:
    """two_regions re-planned at hour 3 with 3/8 of the work done on 10 GPUs in region a,
    whose capacity is 0 from hour 3 (lost): the rest, 5 h, must run in region b."""
    d = two_regions([10, 10, 10] + [0] * 9)
    ph = d["phases"][0]
    ph["release"] = 3
    ph["progress"] = {"fraction": 0.375}
    ph["running"] = {
        "gpu": "G",
        "region": "a",
        "contract": "on_demand",
        "gpus": 10,
        "tier": "hot",
        **running,
    }
    return d


@pytest.mark.parametrize("solver", ["auto", "milp"])
def test_a_migration_of_zero_cost_is_in_the_plan(solver: str) -> None:
    # Checkpoint 0 GB, restarts instant, no input data: leaving a costs nothing (write 0 s),
    # moving 0 GB costs nothing, entering b costs nothing (restart 0 h, read 0 s). The rest
    # runs on b, hours 3-7: rental 5 x 10 x $1 = $50, energy 5 x 10 kW x $50/MWh = $2.50,
    # total $52.50; the plan states the migration from the running configuration at $0.
    d = _running_on_a()
    d["phases"][0]["checkpoint_gb"] = 0
    inst = instance_from(d)
    res = solve(inst, solver=solver, time_limit=30, gap=0.0)
    assert res.plan is not None, res.message
    p = res.plan.phase("job")
    assert (p.region, p.hours) == ("b", (3, 4, 5, 6, 7))
    (seg,) = p.segments
    assert seg.migration["from"] == "running" and seg.migration["total"] == 0.0
    assert res.objective == pytest.approx(52.50, abs=1e-9)
    assert_valid(inst, res.plan)


@pytest.mark.parametrize("solver", ["auto", "milp"])
def test_running_without_checkpoint_is_the_phases_default_scheme(solver: str) -> None:
    # README's own `running:` omits `checkpoint`: it is the phase's default (failure.checkpoint
    # "sync" here). Nothing lost (capacity 10 throughout): the job goes on on a in hours 3-7
    # at no migration cost, 5 x ($10 + 10 kW x $20/MWh) = 5 x $10.20 = $51.00, and the
    # checker agrees that nothing migrates.
    d = _running_on_a()
    d["regions"]["a"]["capacity"]["G"] = 10
    inst = instance_from(d)
    running = inst.phase("job").running
    assert running is not None and running.checkpoint == "sync"
    res = solve(inst, solver=solver, time_limit=30, gap=0.0)
    assert res.plan is not None, res.message
    p = res.plan.phase("job")
    assert (p.region, p.hours, p.segments) == ("a", (3, 4, 5, 6, 7), ())
    assert res.objective == pytest.approx(51.0, abs=1e-9)
    assert_valid(inst, res.plan)
    # an explicit scheme other than the phase's is another configuration: going on from it
    # is a migration (write, restart), which the checker and the planner price the same
    other = copy.deepcopy(d)
    other["phases"][0]["options"]["checkpoint"] = ["sync", "async"]
    other["phases"][0]["running"]["checkpoint"] = "async"
    inst2 = instance_from(other)
    res2 = solve(inst2, solver=solver, time_limit=30, gap=0.0)
    assert res2.plan is not None
    assert_valid(inst2, res2.plan)


def _leave_case(scheme: str) -> dict[str, Any]:
    """_running_on_a with a 36 GB checkpoint under ``scheme``: G has 10 GPUs per node (one
    node), host link 25 GB/s (the default), inter-node 10 GB/s."""
    d = _running_on_a(checkpoint=scheme)
    d["gpu_types"]["G"] = {**d["gpu_types"]["G"], "inter_node_gb_per_s": 10.0}
    d["phases"][0]["options"]["checkpoint"] = [scheme]
    d["failure"]["checkpoint"] = scheme
    return d


@pytest.mark.parametrize("scheme", ["sync", "async", "in_memory"])
def test_leaving_waits_until_the_checkpoint_is_in_the_tier(scheme: str) -> None:
    # 36 GB on one node; tier write and read 1 GB/s, link 1 GB/s; a held hour costs $10.20 on
    # a (10 GPUs x $1 + 10 kW x $20/MWh) and $10.50 on b.
    #   write W = 36 GB / 1 GB/s = 36 s = 0.01 h; snapshot s = 3.6 GB shard / 25 GB/s = 0.144 s
    #   leave (stored): sync W = 0.01 h; async and in_memory s + W = 0.01004 h
    #   move 36 GB x $0.02 = $0.72 and wait 36 s = 0.01 h of b = $0.105
    #   enter: read 36 s on b (sync, async: from the tier) = $0.105; in_memory reads the shard
    #     over the network for a failure, but a migration reads from b's tier too: $0.105
    held = 0.01 if scheme == "sync" else 0.01 + 0.144 / 3600
    leave = held * 10.20
    expected = leave + 0.72 + 0.105 + 0.105
    inst = instance_from(_leave_case(scheme))
    res = solve(inst, solver="milp", time_limit=30, gap=0.0)
    assert res.plan is not None, res.message
    (seg,) = res.plan.phase("job").segments
    assert seg.migration["total"] == pytest.approx(expected, abs=1e-6)
    assert_valid(inst, res.plan)


def test_the_milp_charges_the_migration_off_the_running_configuration_once() -> None:
    # found by the property run: the hourly MILP added the entry from the running
    # configuration to z twice (once inside fixed_cost, once on its own), so its bound on a
    # re-plan that migrates was above the plan's true cost. The model's objective of the
    # lost-region plan must equal the cost model's: $53.532 (test_replan's arithmetic).
    from formulations.exact.milp.model import build
    from formulations.exact.milp.solution import point_from_schedule
    from planner.model.configs import config_space
    from planner.model.windows import time_windows

    inst = instance_from(_running_on_a(checkpoint="sync"))
    inst = inst.replace({"phases.job.checkpoint_gb": 36})
    space = config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "b"]
    sched = Schedule({"job": Assignment(b, (3, 4, 5, 6, 7))}, {})
    mm = build(inst, space, time_windows(inst, space.fewest_hours()))
    x = point_from_schedule(mm, sched)
    assert x is not None
    assert mm.lp.objective_of(x) == pytest.approx(cost_plan(inst, sched).objective, abs=1e-9)
    assert cost_plan(inst, sched).objective == pytest.approx(53.532, abs=1e-6)
