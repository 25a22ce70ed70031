"""The cost model at the edges the schema allows (issue 16):

- an SLA credit is capped at the loss it compensates: with provider share 1.0 and the
  article's 200% credit a failure earned money (``F_t < 0``); now the credit refunds at most
  the rental a failure lost, in the cost model and in the checker's twin;
- a negative resume cost (negative power prices) keeps the lower bound valid: the bound
  counts the resumes and parking a preemptible run can gain from, and the hourly MILP counts
  resumes exactly, so no plan is "proved" while a cheaper one verifies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import assert_valid, instance_from, tiny_dict

from formulations.bounds.separable import lower_bound, pause_floor, phase_bounds
from planner.checker import verify
from planner.instance.model import Instance
from planner.model import costs
from planner.model.configs import Config, config_space
from planner.model.costs import (
    cost_plan,
    failure_usd,
    hourly_terms,
    phase_costs,
    sla_credit_h,
    weights,
)
from planner.model.schedule import Assignment, Schedule
from planner.model.windows import time_windows
from planner.solve import solve

# ----------------------------------------------------------------------------- SLA


def _sla_instance(share: float, multiplier: float) -> Instance:
    """tiny with a failure rate of 0.01 per GPU-hour and east's SLA (prep runs in east)."""
    d = tiny_dict()
    d["regions"]["east"]["sla"] = {"provider_fault_share": share, "credit_multiplier": multiplier}
    d["failure"] = {"failures_per_gpu_hour": 0.01}
    d["phases"][0]["regions"] = ["east"]
    return instance_from(d)


def _prep_on_4(inst: Instance) -> Config:
    (c,) = [
        c
        for c in config_space(inst)["prep"]
        if c.gpus == 4 and c.region == "east" and c.gpu == "A100"
    ]
    return c


def test_the_credit_refunds_at_most_the_rental_lost() -> None:
    # prep writes no checkpoint: its loss per failure is the downtime, L = D = 0.15 h
    # (detect 0.05 + restart 0.05 + reload 0.05, tiny's restart model). 4 A100s in east:
    # lambda = 4 x 0.01 = 0.04/h, f = lambda / (1 - lambda L) = 0.04 / 0.994 = 0.0402414 per
    # running hour, rho = 4 x 2 = 8 USD/h, 3.672 kW, 60 USD/MWh -> E = 0.22032 USD/h.
    inst = _sla_instance(1.0, 2.0)
    c = _prep_on_4(inst)
    f_run = 0.04 / (1 - 0.04 * 0.15)
    assert (c.loss_h, c.downtime_h, c.failure_rate, c.rental_per_h) == pytest.approx(
        (0.15, 0.15, f_run, 8.0)
    )
    assert c.facility_kw == pytest.approx(3.672)
    # uncapped: f x (0.15 x 8.22032 - 2 x 0.15 x 8) = f x (1.233048 - 2.4) = -0.04696 USD/h,
    # a failure earning money. Capped: the credit is min(2 x 0.15, 0.15) = 0.15 h of rental,
    # and F = f x (1.233048 - 1.2) = f x L x E = 0.0013299 USD/h.
    assert sla_credit_h(c) == pytest.approx(0.15)
    f = failure_usd(c, np.array([60.0]))
    assert f[0] == pytest.approx(f_run * 0.15 * 0.22032, rel=1e-12)
    assert f[0] == pytest.approx(0.0013298994, rel=1e-8)
    t = hourly_terms(inst, c, weights(inst))
    # the hour's split: fixed part f (L - credit) rho = 0, the rest proportional to price
    assert t.fixed - 8.0 - c.storage_per_h == pytest.approx(0.0, abs=1e-12)
    assert t.per_mwh * 60 == pytest.approx(0.22032 + 0.0013298994, rel=1e-8)
    pc = phase_costs(inst, c, (0, 1, 2), {})
    assert pc.costs["failure"] == pytest.approx(3 * 0.0013298994, rel=1e-8)


def test_a_credit_below_the_loss_is_unchanged() -> None:
    # multiplier 0.5: credit 0.5 x 0.15 = 0.075 h < L = 0.15 h, F = f x (0.15 x 8.22032 -
    # 0.075 x 8) = 0.0402414 x 0.633048 = 0.0254748 USD/h, as before the cap
    inst = _sla_instance(1.0, 0.5)
    c = _prep_on_4(inst)
    assert sla_credit_h(c) == pytest.approx(0.075)
    assert failure_usd(c, np.array([60.0]))[0] == pytest.approx(0.0254747686, rel=1e-9)


@pytest.mark.parametrize(("share", "multiplier"), [(1.0, 2.0), (1.0, 10.0), (0.5, 3.0)])
def test_failures_never_earn_money_at_nonnegative_prices(share: float, multiplier: float) -> None:
    inst = _sla_instance(share, multiplier)
    space = config_space(inst)
    for configs in space.by_phase.values():
        for c in configs:
            f = failure_usd(c, inst.price[c.region])
            assert np.all(f >= -1e-12), c.label
    res = solve(inst, solver="milp", time_limit=20)
    assert res.plan is not None
    assert res.plan.costs["failure"] >= 0
    assert_valid(inst, res.plan)  # the checker's twin caps the credit the same way


def test_the_checker_charges_the_capped_credit() -> None:
    # a plan that states the uncapped (negative) failure cost is refused
    inst = _sla_instance(1.0, 2.0)
    res = solve(inst, solver="milp", time_limit=20)
    assert res.plan is not None
    import dataclasses

    prep = next(p for p in res.plan.phases if p.name == "prep")
    c = next(c for c in config_space(inst)["prep"] if c.label == prep.info["config"])
    uncapped = float(
        np.sum(
            c.failure_rate
            * (
                c.loss_h
                * (c.rental_per_h + c.facility_kw * inst.price[c.region][list(prep.hours)] / 1000)
                - c.sla_share * c.sla_multiplier * c.downtime_h * c.rental_per_h
            )
        )
    )
    assert uncapped < prep.costs["failure"] - 1e-6
    forged = dataclasses.replace(prep, costs={**prep.costs, "failure": uncapped})
    plan = dataclasses.replace(
        res.plan, phases=tuple(forged if p.name == "prep" else p for p in res.plan.phases)
    )
    v = verify(inst, plan)
    assert not v.ok
    assert any(x.phase == "prep" and "failure" in x.message for x in v.violations), v.violations


# ----------------------------------------------------------------------------- resumes


def _negative_resume() -> dict[str, Any]:
    """prep alone on 4 A100s in east (3 h), power at -500 USD/MWh, rental 0.01 USD/GPU-h,
    parking free, a resume of 1 h: resume = 1 x (0.04 + 3.672 x -500 / 1000) = -1.796 USD.
    Every hour costs the same, so a plan gains 1.796 USD with each extra segment: 3 hours in
    a 48-hour window make at most min(3, 48 - 3 + 1) = 3 segments, 2 x -1.796 = -3.592 USD."""
    d = tiny_dict()
    d["phases"] = [d["phases"][0]]
    d["phases"][0]["options"] = {"gpu_counts": [4]}
    d["phases"][0]["resume_overhead_hours"] = 1.0
    east = d["regions"]["east"]
    east["electricity"] = {"constant": -500}
    east["capacity"] = {"A100": 16}
    east["offers"] = {"A100": {"on_demand": {"usd_per_gpu_hour": 0.01}}}
    east["storage"] = {"free": {"usd_per_gb_month": 0.0}}
    d["regions"] = {"east": east}
    return d


def test_a_negative_resume_keeps_the_bound_below_a_verified_plan() -> None:
    inst = instance_from(_negative_resume())
    space = config_space(inst)
    (c,) = space["prep"]
    assert c.hours == 3 and c.resume_usd == pytest.approx(0.04 - 3.672 * 0.5)  # -1.796
    # three verified plans: one run, two and three segments; each segment saves 1.796
    costs = []
    for hours in [(0, 1, 2), (0, 1, 5), (0, 10, 20)]:
        plan = cost_plan(inst, Schedule({"prep": Assignment(c, hours)}, {}))
        assert_valid(inst, plan)
        costs.append(plan.objective)
    assert costs[0] - costs[1] == pytest.approx(1.796, rel=1e-9)
    assert costs[0] - costs[2] == pytest.approx(3.592, rel=1e-9)
    win = time_windows(inst, space.fewest_hours())
    bound = lower_bound(phase_bounds(inst, space, win.start, win.end))
    # without the resume floor the bound was the one-run plan's cost, 3.592 USD above the
    # three-segment plan that verifies; now it is that plan's cost (constant hours: exact)
    assert pause_floor(inst, c, 48) == pytest.approx(-3.592, rel=1e-9)
    assert bound <= costs[2] + 1e-9
    assert bound == pytest.approx(costs[2], rel=1e-9)


def test_the_milp_finds_the_most_segments_and_its_bound_holds() -> None:
    inst = instance_from(_negative_resume())
    best = cost_plan(
        inst, Schedule({"prep": Assignment(config_space(inst)["prep"][0], (0, 10, 20))}, {})
    )
    for backend in ("highs", "pyomo"):
        res = solve(inst, solver="milp", backend=backend, time_limit=20)
        assert res.plan is not None and res.bound is not None
        assert_valid(inst, res.plan)
        (p,) = res.plan.phases
        assert len(p.hours) == 3 and p.end_hour - p.start_hour >= 5  # three segments
        assert res.plan.objective == pytest.approx(best.objective, rel=1e-9)
        # the reported bound is below every verified plan, the three-segment one included
        assert res.bound <= best.objective + 1e-6 * abs(best.objective)


def test_a_positive_resume_changes_no_bound() -> None:
    # tiny's resume costs > 0: the floor is 0 and the bound is what it was
    inst = instance_from(tiny_dict())
    for c in config_space(inst)["prep"]:
        assert c.resume_usd > 0
        assert pause_floor(inst, c, 48) == 0.0


# ----------------------------------------------------------------------------- run sums


def _run_cost_instances() -> list[tuple[str, Instance]]:
    import hand_advanced  # noqa: F401  (registers its cases)
    import hand_basic  # noqa: F401
    from hand_cases import CASES

    from planner.instance import read

    root = Path(__file__).resolve().parents[2]
    out = [(n, read(root / "instances" / f"{n}.yaml")) for n in ("week-7b", "month-70b")]
    out += [("tiny", instance_from(tiny_dict()))]
    out += [(c.id, c.instance()) for c in CASES]
    return out


def test_run_sums_from_prefix_sums_equal_the_hourly_vectors() -> None:
    # run_costs sums a run's hours from the region's prefix sums when no hourly vector is
    # given (the greedy baselines try thousands of configurations); the sum of the hourly
    # vector is the definition. Every configuration of the shipped instances and of every
    # hand case (tou and hourly prices, reserved terms, hourly offer prices, carbon, re-plans),
    # every start: equal up to rounding, infinite in the same runs.
    from planner.model.costs import hourly_cost, run_costs

    checked = fast = 0
    for name, inst in _run_cost_instances():
        w = weights(inst)
        for c in (c for cs in config_space(inst).by_phase.values() for c in cs):
            starts = np.arange(0, inst.hours - c.hours + 1)
            if not len(starts):
                continue
            got = run_costs(inst, c, starts, w)
            want = run_costs(inst, c, starts, w, hourly_cost(inst, c, w))
            assert np.array_equal(np.isinf(got), np.isinf(want)), (name, c.label)
            fin = np.isfinite(want)
            np.testing.assert_allclose(got[fin], want[fin], rtol=1e-9, atol=1e-9, err_msg=name)
            checked += 1
            fast += costs._window_sums(inst, c, w, starts) is not None
    assert checked > 500 and checked > fast > checked // 2  # both paths taken
