"""Prices by the hour and reserved terms: hand-computed optima (the arithmetic in comments),
every plan verified by the independent checker, and the checker catching a reserved GPU used
outside its term."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from builders import assert_valid, instance_from, one_phase, region, solved

from planner.checker import verify
from planner.checker.planfile import plan_from_dict
from planner.instance.errors import InstanceError
from planner.model.configs import build_config_space
from planner.model.costs import cost_plan, hourly_cost, weights
from planner.model.schedule import schedule_of
from planner.solve import solve

FREE = {"constant": 0}


def test_hourly_rental_price_moves_the_run_into_cheap_hours() -> None:
    # Free electricity; on-demand $3/GPU-h except $1 from 02:00 to 06:00 UTC (a time-of-use
    # series on the rental). 10 GPUs x 4 h (40 GPU-hours), deadline 24: the run takes hours
    # 2-5 at 10 x $1 = $10/h -> rental $40 (a constant $3 would give $120).
    od = {
        "on_demand": {
            "usd_per_gpu_hour": {
                "tou": {"default": 3.0, "bands": [{"start_hour": 2, "end_hour": 6, "price": 1.0}]}
            }
        }
    }
    d = one_phase({"r": region("UTC", FREE, od)}, 40, deadline=24)
    _inst, res = solved(d)
    p = res.plan.phase("job")
    assert p.hours == (2, 3, 4, 5)
    assert res.plan.costs["rental"] == pytest.approx(40.0, abs=1e-9)
    assert res.plan.costs["total"] == pytest.approx(40.0, abs=1e-9)


def test_hourly_rental_billed_in_blocks_at_the_rate_when_each_begins() -> None:
    # Billing in 4-hour blocks, each at the rate in force when it begins: $1 in hours 0-3,
    # $3 from hour 4. 10 GPUs x 2 h fit in block 0: 4 h x 10 x $1 = $40; a run in hours 3-4
    # touches blocks 0 and 1: 4 x 10 x 1 + 4 x 10 x 3 = $160. The optimum pays $40.
    prices = [1.0] * 4 + [3.0] * 20
    od = {"on_demand": {"usd_per_gpu_hour": {"values": prices}, "billing_granularity_hours": 4}}
    d = one_phase({"r": region("UTC", FREE, od)}, 20, deadline=24)
    inst, res = solved(d)
    assert set(res.plan.phase("job").hours) <= {0, 1, 2, 3}
    assert res.plan.costs["rental"] == pytest.approx(40.0, abs=1e-9)
    space = build_config_space(inst)
    (c,) = space["job"]
    straddle = cost_plan(inst, schedule_of({"job": (c, (3, 4))}))
    assert straddle.costs["rental"] == pytest.approx(160.0, abs=1e-9)
    assert_valid(inst, straddle)


def test_hourly_spot_price_and_preemption_rate() -> None:
    # A preemptible job on spot, 10 GPUs x 2 h, free energy and storage, no checkpoint (data
    # preparation: loss per failure L = downtime D = restart 0.5 h, no detection time), no
    # resume overhead. Spot price per hour [2.0, 0.5, 2.0, 0.6, 0.4, 2.0] and preemptions per
    # hour [0, 0, 0, 0, 1.5, 0]. An hour costs rho_t + f_t L rho_t with rho_t = 10 x price_t
    # and the expected failures per running hour f_t = lambda_t / (1 - lambda_t L):
    #   hour 1: $5, hour 3: $6, hour 4: f = 1.5 / (1 - 0.75) = 6, $4 + 6 x 0.5 x $4 = $16,
    #   the others $20.
    # The cheapest two hours are 1 and 3: rental $11, failure $0. (At the cheapest price
    # alone, hours 1 and 4, it would cost $5 + $16 = $21: rental $9, failure $12.)
    spot = {
        "spot": {
            "usd_per_gpu_hour": {"values": [2.0, 0.5, 2.0, 0.6, 0.4, 2.0]},
            "preemptions_per_hour": {"values": [0, 0, 0, 0, 1.5, 0]},
        }
    }
    d = one_phase({"r": region("UTC", FREE, spot)}, 20, deadline=6, hours=6, preemptible=True)
    d["phases"][0]["resume_overhead_hours"] = 0
    d["failure"] = {**d.get("failure", {}), "restart_hours": 0.5, "detect_hours": 0.0}
    inst, res = solved(d)
    p = res.plan.phase("job")
    assert p.hours == (1, 3) and p.contract == "spot"
    assert res.plan.costs["rental"] == pytest.approx(11.0, abs=1e-9)
    assert res.plan.costs["failure"] == pytest.approx(0.0, abs=1e-9)
    (c,) = build_config_space(inst)["job"]
    alt = cost_plan(inst, schedule_of({"job": (c, (1, 4))}))
    assert alt.costs["rental"] == pytest.approx(9.0) and alt.costs["failure"] == pytest.approx(12.0)
    assert_valid(inst, alt)


def test_a_constant_series_gives_exactly_the_figures_of_a_number(tiny_d: dict[str, Any]) -> None:
    a = instance_from(tiny_d)
    east = tiny_d["regions"]["east"]["offers"]["A100"]
    east["on_demand"]["usd_per_gpu_hour"] = {"constant": east["on_demand"]["usd_per_gpu_hour"]}
    b = instance_from(tiny_d)
    ra, rb = solve(a, solver="milp", time_limit=30), solve(b, solver="milp", time_limit=30)
    assert ra.plan is not None and rb.plan is not None
    assert ra.plan.costs == rb.plan.costs and ra.objective == rb.objective
    sa, sb = build_config_space(a), build_config_space(b)
    w = weights(a)
    for name in sa.by_phase:
        for ca, cb in zip(sa[name], sb[name], strict=True):
            assert np.array_equal(hourly_cost(a, ca, w), hourly_cost(b, cb, w))


@pytest.fixture
def tiny_d() -> dict[str, Any]:
    from builders import tiny_dict

    return tiny_dict()


def test_negative_or_unreadable_price_series_are_refused() -> None:
    od = {"on_demand": {"usd_per_gpu_hour": {"values": [1.0] * 10 + [-1.0] * 14}}}
    d = one_phase({"r": region("UTC", FREE, od)}, 40, deadline=24)
    with pytest.raises(InstanceError) as e:
        instance_from(d)
    assert "regions.r.offers.G.on_demand.usd_per_gpu_hour" in str(e.value)
    assert "at hour 10" in str(e.value)
    od = {"on_demand": {"usd_per_gpu_hour": {"values": [1.0] * 5}}}
    with pytest.raises(InstanceError) as e:
        instance_from(one_phase({"r": region("UTC", FREE, od)}, 40, deadline=24))
    assert "expected at least 24 hourly values" in str(e.value)


# ----------------------------------------------------------------------------- reserved terms

#: On demand $2/GPU-h; reserved under terms only.
TERMS: dict[str, Any] = {
    "on_demand": {"usd_per_gpu_hour": 2.0},
    "reserved": {
        "usd_per_gpu_hour": 1.2,
        "terms": [{"name": "day", "start": 6, "hours": 8}],
    },
}


def _terms_instance(gpu_hours: float, terms: dict[str, Any] | None = None) -> dict[str, Any]:
    return one_phase({"r": region("UTC", FREE, terms or TERMS)}, gpu_hours, deadline=24)


@pytest.mark.parametrize(("gpu_hours", "term_gpus"), [(60, 10), (40, 0)])
def test_a_term_shorter_than_the_horizon(gpu_hours: float, term_gpus: int) -> None:
    # A term of 8 h (hours 6-13) at $1.20/GPU-h is paid whole: 10 GPUs x 8 h x 1.2 = $96.
    # 6 h of work (60 GPU-hours): on demand 6 x 10 x $2 = $120 > $96: reserve 10 GPUs for the
    # term and run inside it (hours 6-11 ... 8-13). 4 h (40 GPU-hours): on demand $80 < $96:
    # the term does not pay. Break-even at 4.8 h.
    inst, res = solved(_terms_instance(gpu_hours))
    p = res.plan.phase("job")
    if term_gpus:
        assert res.plan.reserved_terms == (("r", "G", "day", 10),)
        assert p.contract == "reserved" and p.term == "day"
        assert p.start_hour >= 6 and p.end_hour <= 14
        assert res.plan.costs["rental"] == pytest.approx(96.0, abs=1e-9)
        assert res.plan.to_dict()["format"] == "trainplan-plan/3"
        again = plan_from_dict(json.loads(res.plan.to_json()))
        assert again.reserved_terms == res.plan.reserved_terms
        assert verify(inst, again).ok
    else:
        assert res.plan.reserved_terms == () and p.contract == "on_demand"
        assert res.plan.costs["rental"] == pytest.approx(80.0, abs=1e-9)


def test_terms_side_by_side_and_sizes() -> None:
    # Two terms: "day" (hours 6-13, $1.20: $96 for 10 GPUs) and "long" (the whole day,
    # $0.90 x 24 h = $216 for 10 GPUs, at least 10 GPUs). 12 h of work do not fit the 8-hour
    # term: on demand 12 x 10 x $2 = $240 > $216: the long term, rental $216.
    terms = {
        "on_demand": {"usd_per_gpu_hour": 2.0},
        "reserved": {
            "usd_per_gpu_hour": 1.2,
            "terms": [
                {"name": "day", "start": 6, "hours": 8},
                {
                    "name": "long",
                    "start": "2023-06-05T00:00:00Z",
                    "hours": 24,
                    "usd_per_gpu_hour": 0.9,
                    "min_gpus": 10,
                },
            ],
        },
    }
    _, res = solved(_terms_instance(120, terms))
    assert res.plan.reserved_terms == (("r", "G", "long", 10),)
    assert res.plan.costs["rental"] == pytest.approx(216.0, abs=1e-9)
    # 6 h of work: "day" at $96 beats "long" at $216 and on demand at $120
    _, res = solved(_terms_instance(60, terms))
    assert res.plan.reserved_terms == (("r", "G", "day", 10),)
    assert res.plan.costs["rental"] == pytest.approx(96.0, abs=1e-9)


@pytest.mark.parametrize(("prorate", "rental"), [(True, 240.0), (False, 400.0)])
def test_a_term_longer_than_the_horizon_is_prorated(prorate: bool, rental: float) -> None:
    # A three-day term from a day before the horizon (start -24, 72 h) at $1.00/GPU-h. Prorated,
    # the plan pays its 24 hours inside the horizon: 10 x 24 x $1 = $240 < on demand
    # 20 h x 10 x $2 = $400, so it reserves. Charged whole (prorate: false): 10 x 72 x $1 =
    # $720 > $400: on demand.
    terms = {
        "on_demand": {"usd_per_gpu_hour": 2.0},
        "reserved": {
            "usd_per_gpu_hour": 1.0,
            "terms": [{"name": "3d", "start": -24, "hours": 72, "prorate": prorate}],
        },
    }
    _inst, res = solved(_terms_instance(200, terms))
    assert res.plan.costs["rental"] == pytest.approx(rental, abs=1e-9)
    assert bool(res.plan.reserved_terms) == prorate


def test_checker_catches_a_reserved_gpu_outside_its_term() -> None:
    inst, _res = solved(_terms_instance(60))
    space = build_config_space(inst)
    (c,) = [c for c in space["job"] if c.term == "day"]
    # the same reserved configuration run in hours 0-5, before the term begins at hour 6
    bad = cost_plan(inst, schedule_of({"job": (c, range(0, 6))}, {("r", "G", "day"): 10}))
    v = verify(inst, bad)
    assert [x.kind for x in v.violations] == ["reserved"]
    assert "outside their term day" in v.violations[0].message
    assert "hours 0-5" in v.violations[0].message
    # and the planner never prices such hours: they are blocked
    assert np.isinf(hourly_cost(inst, c, weights(inst))[:6]).all()


def test_a_term_outside_the_horizon_is_refused() -> None:
    terms = {
        "on_demand": {"usd_per_gpu_hour": 2.0},
        "reserved": {"usd_per_gpu_hour": 1.0, "terms": [{"start": 30, "hours": 5}]},
    }
    with pytest.raises(InstanceError) as e:
        instance_from(_terms_instance(60, terms))
    assert "regions.r.offers.G.reserved.terms[0]" in str(e.value)
    assert "no hour inside the horizon" in str(e.value)


@pytest.mark.parametrize("preemptible", [False, True])
def test_only_a_term_to_run_in(preemptible: bool) -> None:
    # Reserved capacity under an 8-hour term (hours 6-13) is the only offer: every solver path
    # (look-ahead, greedy, MILP) must place the 4-hour job inside the term. Rental: the term,
    # 10 GPUs x 8 h x $1.20 = $96.
    only = {
        "reserved": {"usd_per_gpu_hour": 1.2, "terms": [{"name": "day", "start": 6, "hours": 8}]}
    }
    d = one_phase({"r": region("UTC", FREE, only)}, 40, deadline=24, preemptible=preemptible)
    d["phases"][0]["resume_overhead_hours"] = 0
    inst, res = solved(d)
    assert set(res.plan.phase("job").hours) <= set(range(6, 14))
    assert res.plan.costs["rental"] == pytest.approx(96.0, abs=1e-9)
    from formulations.heuristics.greedy import greedy
    from formulations.heuristics.lookahead import lookahead_schedule

    space = build_config_space(inst)
    candidates = (
        greedy(inst, space, allow=lambda c: True),
        greedy(inst, space, allow=lambda c: True, first_start_only=True),
        lookahead_schedule(inst, space, allow_reserved=True),
    )
    for sched in candidates:
        assert sched is not None
        assert_valid(inst, cost_plan(inst, sched))
