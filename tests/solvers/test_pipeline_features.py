"""The solver's pipeline (DP and Lagrangian bounds, their plans, fixing, neighbourhoods) on
the cost model's other features: reserved terms, hourly rental and block prices, phases in
segments, two phases sharing a pool under a term. On each, the pipeline's plan must cost what
the plain hourly MILP (no bound, no start, no fixing) proves optimal, its bound may not exceed
that optimum (a bound above it would be invalid), and the independent checker accepts it."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from builders import assert_valid, elastic, instance_from, one_phase, region, two_nights

from formulations.bounds.lagrange import Relaxation
from formulations.pipeline import solve_milp
from planner.model.configs import build_config_space
from planner.model.options import SolveOptions
from planner.model.windows import time_windows

FREE = {"constant": 0}
NIGHT = {"tou": {"default": 100, "bands": [{"start_hour": 0, "end_hour": 6, "price": 20}]}}

TERM_DAY: dict[str, Any] = {
    "on_demand": {"usd_per_gpu_hour": 2.0},
    "reserved": {"usd_per_gpu_hour": 1.2, "terms": [{"name": "day", "start": 6, "hours": 8}]},
}
TWO_TERMS: dict[str, Any] = {
    "on_demand": {"usd_per_gpu_hour": 2.0},
    "reserved": {
        "usd_per_gpu_hour": 1.2,
        "terms": [
            {"name": "day", "start": 6, "hours": 8},
            {"name": "long", "start": 0, "hours": 24, "usd_per_gpu_hour": 0.9},
        ],
    },
}
TOU_RENT = {
    "on_demand": {
        "usd_per_gpu_hour": {
            "tou": {"default": 3.0, "bands": [{"start_hour": 2, "end_hour": 6, "price": 1.0}]}
        }
    }
}
BLOCKS = {
    "on_demand": {
        "usd_per_gpu_hour": {"values": [1.0] * 4 + [3.0] * 8 + [1.5] * 12},
        "billing_granularity_hours": 4,
    }
}


def _two_phases_one_pool(offers: dict[str, Any], preemptible: bool) -> dict[str, Any]:
    """Two independent jobs of 40 GPU-hours on one 10-GPU pool (capacity binds: they cannot
    overlap), night power cheap, under ``offers``."""
    d = one_phase({"r": region("UTC", NIGHT, offers)}, 40, deadline=24, preemptible=preemptible)
    second = copy.deepcopy(d["phases"][0])
    second["name"] = "job2"
    d["phases"].append(second)
    return d


def _transfer_chain(preemptible: bool) -> dict[str, Any]:
    """Two chained jobs (the first hands on 500 GB) in two regions, Berlin cheap at night,
    Tokyo cheap in its own night, transfers priced both ways; the second job runs in Tokyo
    only, so the first either runs in Tokyo or pays 500 GB x $0.09 = $45 to send its output:
    where it runs decides what the transfer costs."""
    night_tokyo = {"tou": {"default": 100, "bands": [{"start_hour": 0, "end_hour": 6, "price": 5}]}}
    berlin = region("Europe/Berlin", NIGHT, {"on_demand": {"usd_per_gpu_hour": 1.0}})
    tokyo = region("Asia/Tokyo", night_tokyo, {"on_demand": {"usd_per_gpu_hour": 1.05}})
    berlin["transfer_usd_per_gb"] = {"tokyo": 0.09}
    tokyo["transfer_usd_per_gb"] = {"berlin": 0.12}
    d = one_phase({"berlin": berlin, "tokyo": tokyo}, 40, deadline=40, hours=48)
    first = d["phases"][0]
    first["preemptible"] = preemptible
    first["output_gb"] = 500
    second = copy.deepcopy(first)
    second.update(name="job2", predecessors=["job"], deadline=48, regions=["tokyo"])
    d["phases"].append(second)
    return d


CASES: dict[str, Any] = {
    "transfer-chain": lambda: _transfer_chain(False),
    "transfer-chain-preemptible": lambda: _transfer_chain(True),
    "term-day": lambda: one_phase({"r": region("UTC", FREE, TERM_DAY)}, 60, deadline=24),
    "term-day-preemptible": lambda: one_phase(
        {"r": region("UTC", NIGHT, TERM_DAY)}, 60, deadline=24, preemptible=True
    ),
    "two-terms": lambda: one_phase({"r": region("UTC", FREE, TWO_TERMS)}, 120, deadline=24),
    "tou-rental": lambda: one_phase({"r": region("UTC", NIGHT, TOU_RENT)}, 40, deadline=24),
    "block-prices-preemptible": lambda: one_phase(
        {"r": region("UTC", NIGHT, BLOCKS)}, 60, deadline=24, preemptible=True
    ),
    "shared-pool-term": lambda: _two_phases_one_pool(TERM_DAY, False),
    "shared-pool-term-preemptible": lambda: _two_phases_one_pool(TERM_DAY, True),
    "segments-two-nights": two_nights,
    "segments-elastic": elastic,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pipeline_agrees_with_the_plain_milp(case: str) -> None:
    inst = instance_from(CASES[case]())
    ref = solve_milp(inst, SolveOptions(time_limit=60, gap=0.0), prune=False, warm_start=False)
    assert ref.plan is not None and ref.status.value == "optimal", ref.message
    res = solve_milp(inst, SolveOptions(time_limit=60, gap=1e-9))
    assert res.plan is not None, res.message
    assert_valid(inst, res.plan)
    opt = ref.plan.objective
    tol = 1e-6 * max(1.0, abs(opt))
    assert res.plan.objective == pytest.approx(opt, abs=tol), (case, res.notes)
    assert res.bound is not None and res.bound <= opt + tol, (case, res.bound, opt)


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if not c.startswith("segments")])
def test_dp_and_lagrangian_bounds_stay_below_the_optimum(case: str) -> None:
    """Every price vector gives a valid bound: the first iterate (zero capacity prices,
    reserved prices spread over the term) and the best of the ascent."""
    inst = instance_from(CASES[case]())
    ref = solve_milp(inst, SolveOptions(time_limit=60, gap=0.0), prune=False, warm_start=False)
    assert ref.plan is not None
    opt = ref.plan.objective
    space = build_config_space(inst)
    rel = Relaxation(inst, space, time_windows(inst, space.fewest_hours()))
    lam, mu = rel.zero_prices()
    assert rel.evaluate(lam, mu).bound <= opt + 1e-6 * max(1.0, opt)
    out = rel.solve(opt, iterations=30)
    assert out.bound <= opt + 1e-6 * max(1.0, opt)
    assert rel.transfer_bound(lam, mu) <= opt + 1e-6 * max(1.0, opt)
    if case.startswith("transfer"):
        # the transfers put back: exact on a chain without binding capacity
        assert rel.has_transfers
        assert rel.transfer_bound(lam, mu) == pytest.approx(opt, rel=1e-9)
        assert rel.evaluate(lam, mu).bound < opt - 1.0
    # random prices are valid too (weak duality), within the caps of the reserved pools
    rng = np.random.default_rng(7)
    for _ in range(5):
        lam_r = rng.uniform(0, 2, lam.shape)
        mu_r = rng.uniform(0, 1, mu.shape)
        if len(mu_r):
            scale = np.minimum(1.0, rel.rprice_arr / np.maximum(mu_r.sum(axis=1), 1e-12))
            mu_r = mu_r * scale[:, None]
        assert rel.evaluate(lam_r, mu_r).bound <= opt + 1e-6 * max(1.0, opt)
        assert rel.transfer_bound(lam_r, mu_r) <= opt + 1e-6 * max(1.0, opt)
