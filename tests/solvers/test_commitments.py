"""Reservation-first plans (formulations/heuristics/commitments.py), on a trap worked by hand.

Two regions, energy free, 10 GPUs at $10 per GPU-hour on demand; each region offers a
reserved pool of exactly 10 GPUs for the whole 20-hour horizon: $6 per GPU-hour in a, $5.90
in b, whose capacity is gone after hour 10. Two independent jobs of 100 GPU-hours (10 h on 10
GPUs) each:

- both on demand: 2 x 100 x 10 = 2,000;
- priced per reserved GPU-hour used (the ``allow_reserved`` look-ahead), each job takes the
  cheapest pool-hours: the first b's hours 0-10, the second a's (b is gone), and both pools
  are bought: 10 x 20 x 6 + 10 x 20 x 5.90 = 2,380, worse than on demand;
- buying a first, both jobs fill it back to back: 10 x 20 x 6 = 1,200, the optimum. Buying b
  first is 1,180 + 1,000 on demand = 2,180, so b (tried first: the larger promise, 820 against
  800) is not kept.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from formulations.heuristics.commitments import levels, promise, reservation_first
from formulations.heuristics.lookahead import LookAhead, lookahead_schedule
from planner.model.configs import config_space
from planner.model.costs import cost_plan
from planner.model.windows import time_windows
from tests.builders import FREE_STORAGE, ROUND_GPU, assert_valid, instance_from, solved


def trap(capacity_a: int = 10) -> dict[str, Any]:
    def region(reserved: float, capacity: int | list[int]) -> dict[str, Any]:
        return {
            "timezone": "UTC",
            "pue": 1.0,
            "electricity": {"constant": 0.0},
            "capacity": {"G": capacity},
            "offers": {
                "G": {
                    "on_demand": {"usd_per_gpu_hour": 10.0},
                    "reserved": {"usd_per_gpu_hour": reserved, "min_gpus": 10, "max_gpus": 10},
                }
            },
            "storage": FREE_STORAGE,
        }

    def job(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "data_preparation",
            "work": {"gpu_hours": 100, "gpu": "G"},
            "power_load": 1.0,
            "options": {
                "gpu_counts": [10],
                "extra_spare_nodes": [0],
                "contracts": ["on_demand", "reserved"],
            },
        }

    return {
        "name": "trap",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 20},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"a": region(6.0, capacity_a), "b": region(5.9, [10] * 10 + [0] * 10)},
        "phases": [job("j1"), job("j2")],
    }


@pytest.fixture
def lookahead() -> LookAhead:
    inst = instance_from(trap())
    space = config_space(inst)
    return LookAhead(inst, space, time_windows(inst, space.fewest_hours()))


def test_the_trap_as_worked_by_hand(lookahead: LookAhead) -> None:
    inst = lookahead.inst
    plain = lookahead.schedule()
    assert plain is not None
    assert cost_plan(inst, plain).objective == pytest.approx(2000.0)
    per_hour = lookahead_schedule(inst, lookahead.space, lookahead.win, allow_reserved=True)
    assert per_hour is not None
    assert cost_plan(inst, per_hour).objective == pytest.approx(2380.0)
    assert list(promise(lookahead).items()) == [
        (("b", "G", ""), pytest.approx(820.0)),
        (("a", "G", ""), pytest.approx(800.0)),
    ]
    assert levels(inst, ("a", "G", "")) == [10]


def test_buying_first_finds_the_optimum(lookahead: LookAhead) -> None:
    inst = lookahead.inst
    offered: list[float] = []
    found = reservation_first(lookahead, 2000.0, lambda s, p: offered.append(p.objective))
    assert found is not None
    sched, plan = found
    assert plan.objective == pytest.approx(1200.0)
    assert offered == [pytest.approx(1200.0)]  # b alone (2,180) was no better than 2,000
    assert dict(sched.reserved) == {("a", "G", ""): 10}
    hours = sorted(h for name in ("j1", "j2") for h in sched[name].hours)
    assert hours == list(range(20))  # back to back in the one pool bought
    assert_valid(inst, plan)


def committed(d: dict[str, Any], pool: tuple[str, str, str], gpus: int) -> Any:
    inst = instance_from(d)
    space = config_space(inst)
    return LookAhead(inst, space, time_windows(inst, space.fewest_hours())).schedule({pool: gpus})


def test_a_bought_pool_holds_no_more_than_it_was_bought_for() -> None:
    # a holds 20 GPUs but 10 are bought: the jobs share the reserved 10 back to back (both
    # at hour 0 would be as cheap: the commitment is paid either way)
    sched = committed(trap(capacity_a=20), ("a", "G", ""), 10)
    assert sched is not None
    use = np.zeros(20)
    for name in ("j1", "j2"):
        a = sched[name]
        assert a.config.contract == "reserved"
        use[list(a.hours)] += a.config.total_gpus
    assert use.max() == 10


def test_a_bought_pool_is_paid_for_already() -> None:
    # spot at $4 beats the reserved $6 per GPU-hour used, but not a pool bought already (the
    # pausable phase's placement: the cheapest hours of its window)
    d = trap()
    d["regions"]["a"]["offers"]["G"]["spot"] = {"usd_per_gpu_hour": 4.0}
    del d["regions"]["b"]
    d["phases"] = d["phases"][:1]
    d["phases"][0]["options"]["contracts"] = ["spot", "reserved"]
    d["phases"][0]["preemptible"] = True  # spot is for phases that may pause
    sched = committed(d, ("a", "G", ""), 10)
    assert sched is not None and sched["j1"].config.contract == "reserved"
    inst = instance_from(d)
    plain = lookahead_schedule(inst, config_space(inst), allow_reserved=True)
    assert plain is not None and plain["j1"].config.contract == "spot"


def test_the_search_ends_after_pools_not_kept(
    lookahead: LookAhead, monkeypatch: pytest.MonkeyPatch
) -> None:
    # b (tried first) is not kept: with one miss allowed, a is never tried
    import formulations.heuristics.commitments as commitments

    monkeypatch.setattr(commitments, "MAX_MISSES", 1)
    assert reservation_first(lookahead, 2000.0) is None
    monkeypatch.setattr(commitments, "MAX_MISSES", 2)
    found = reservation_first(lookahead, 2000.0)
    assert found is not None and found[1].objective == pytest.approx(1200.0)


def test_nothing_better_is_nothing_offered(lookahead: LookAhead) -> None:
    assert reservation_first(lookahead, 1200.0) is None


def test_the_solver_returns_the_optimum() -> None:
    _, res = solved(trap())
    assert res.objective == pytest.approx(1200.0)


# ----------------------------------------------------------------------------- the note


def chain_and_incumbent(d: dict[str, Any], committed: dict[Any, int] | None) -> Any:
    import time

    import formulations.pipeline as pipeline
    from formulations.incumbent import Incumbent
    from planner.model.progress import Tracker

    inst = instance_from(d)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    t0 = time.perf_counter()
    chain = pipeline.Chain(inst, space, windows, t0, 30.0, "auto", True, False)
    st = Incumbent(inst, 1e-4, None, Tracker(None, t0), t0 + 30.0, windows)
    st.stats["dp_eval_s"] = 0.0
    st.offer(LookAhead(inst, space, windows).schedule(committed), "test")
    st.prove(1000.0, "test")  # a bound that leaves the gap open
    return pipeline, chain, st


def test_a_plan_without_commitments_is_told_how_far_it_is_from_any_such_plan() -> None:
    # the on-demand plan (2,000) is the best that buys no pool: 0.00% from it; the gap to the
    # bound of 1,000 is what a commitment might save (the optimum buys a and costs 1,200)
    pipeline, chain, st = chain_and_incumbent(trap(), None)
    assert st.upper == pytest.approx(2000.0)
    pipeline.without_reserved(chain, st)
    assert st.stats["bound_without_reserved"] == pytest.approx(2000.0)
    assert st.bound == 1000.0  # a bound of those plans only, never the instance's
    pipeline.commitment_note(st)  # told at the end, against the plan returned
    assert any("no plan that buys none costs less than 2,000.00 (0.00%" in n for n in st.notes)


def test_a_plan_with_a_commitment_is_told_what_it_saves_at_least() -> None:
    # the plan that buys pool a (1,200) against every plan that buys none: at least 2,000
    # (the DP bound over the configurations without a reserved contract), so the
    # commitment saves at least 800, 66.67% of this plan
    pipeline, chain, st = chain_and_incumbent(trap(), {("a", "G", ""): 10})
    assert st.upper == pytest.approx(1200.0)
    pipeline.without_reserved(chain, st)
    assert st.stats["bound_without_reserved"] == pytest.approx(2000.0)
    assert st.bound == 1000.0  # never the instance's bound
    assert not st.notes
    pipeline.commitment_note(st)
    assert any(
        "commitments save at least 800.00: every plan that buys none costs at least "
        "2,000.00 (66.67% more" in n
        for n in st.notes
    )


def test_a_commitment_worth_nothing_proved_gets_no_note() -> None:
    # with the bound over plans without commitments under the plan, nothing is said
    pipeline, chain, st = chain_and_incumbent(trap(), {("a", "G", ""): 10})
    st.stats["bound_without_reserved"] = 1100.0
    pipeline.commitment_note(st)
    assert not st.notes
    # nor where the space has a free term (a re-plan's commitment, already paid): pool a's
    # 10 GPUs at no price
    free = trap()
    free["regions"]["a"]["offers"]["G"]["reserved"]["usd_per_gpu_hour"] = 0.0
    pipeline, chain, st = chain_and_incumbent(free, {("a", "G", ""): 10})
    st.bound = -math.inf  # the plan on the free term costs nothing: keep the gap open
    pipeline.without_reserved(chain, st)
    assert "bound_without_reserved" not in st.stats


def test_the_reserved_heuristics_share_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # reservation-first and the look-ahead pricing reserved GPU-hours as used take
    # COMMIT_SHARE of the time left together: with time to spare both run; when the share
    # is spent (here: none left) the second look-ahead is not started
    import time

    import formulations.pipeline as pipeline

    inst = instance_from(trap())
    space = config_space(inst)
    win = time_windows(inst, space.fewest_hours())
    calls: list[bool] = []
    real = pipeline.lookahead_schedule

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(bool(k.get("allow_reserved")))
        return real(*a, **k)

    monkeypatch.setattr(pipeline, "lookahead_schedule", spy)
    pipeline.best_heuristic(inst, space, win, [], deadline=time.perf_counter() + 600)
    assert calls == [True]
    monkeypatch.setattr(pipeline, "COMMIT_SHARE", 0.0)
    calls.clear()
    found = pipeline.best_heuristic(inst, space, win, [], deadline=time.perf_counter() + 600)
    assert calls == [] and found is not None
    assert_valid(inst, cost_plan(inst, found[0]))


@pytest.mark.parametrize("seed", [24, 32, 38])
def test_where_only_the_ascent_proves_the_plans_without_commitments_get_their_own(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hard_dict(seed) offers a reserved pool that its look-ahead plan does not buy; as if it
    # were a model only the ascent can bound, the no-commitment bound gets an ascent: above
    # its zero-price DP bound, never above the optimum HiGHS proves with the reserved offer
    # deleted (every plan that buys none is a plan of that instance); and on seed 38 the
    # plans at its iterates and the look-ahead at its prices give a better plan (59.10 ->
    # 58.27; 58.49 from the look-ahead alone), never under that optimum
    import copy

    from hard_instances import hard_dict

    from formulations.bounds.lagrange import Relaxation
    from formulations.pipeline import solve_milp
    from planner.model.options import SolveOptions

    d = hard_dict(seed)
    pipeline, chain, st = chain_and_incumbent(d, None)
    assert not st.plan.reserved and not st.plan.reserved_terms
    upper = st.upper
    st.bound = -math.inf
    st.prove(0.5 * upper, "test")
    own = {
        n: tuple(c for c in cs if c.contract != "reserved")
        for n, cs in chain.space.by_phase.items()
    }
    sub = Relaxation(chain.inst, chain.space.restricted(own), chain.windows)
    zero = sub.evaluate(*sub.zero_prices()).bound
    monkeypatch.setattr(pipeline, "ASCENT_ONLY_NONZEROS", 0)
    pipeline.without_reserved(chain, st)
    d2 = copy.deepcopy(d)
    del d2["regions"]["east"]["offers"]["A100"]["reserved"]
    opt = solve_milp(
        instance_from(d2), SolveOptions(backend="highs", gap=0.0, time_limit=60), prune=False
    )
    assert opt.termination.value == "optimal"
    assert st.stats["without_reserved_iterations"] > 1
    assert zero + 0.01 < st.stats["bound_without_reserved"] <= opt.objective + 1e-6
    assert st.bound == 0.5 * upper  # a bound of those plans only, never the instance's
    assert not st.plan.reserved and not st.plan.reserved_terms  # the note's premise holds
    if seed == 38:
        assert st.upper < upper and st.upper == pytest.approx(58.27, abs=0.01)
        assert st.upper >= opt.objective - 1e-6
        assert st.source == "priced plan (ascent)"  # at an iterate of its own ascent


@pytest.mark.parametrize("seed", [35, 49])
def test_the_ascents_capacity_prices_bound_the_plans_without_commitments(seed: int) -> None:
    # hard_dict(seed): the ascent over the whole space (reserved offer included) prices the
    # binding pools; at those prices the relaxation over the configurations without a
    # reserved contract proves more than at zero prices, and never more than the optimum
    # HiGHS proves with the reserved offer deleted (every plan that buys none is a plan of
    # that instance); a lower figure never replaces a higher one
    import copy

    import numpy as np
    from hard_instances import hard_dict

    from formulations.bounds.lagrange import Relaxation
    from formulations.pipeline import solve_milp
    from planner.model.options import SolveOptions

    d = hard_dict(seed)
    pipeline, chain, st = chain_and_incumbent(d, None)
    st.bound = -math.inf
    st.prove(0.5 * st.upper, "test")  # the gap open
    rel = Relaxation(chain.inst, chain.space, chain.windows)
    res = rel.solve(st.upper, iterations=60)
    own = {
        n: tuple(c for c in cs if c.contract != "reserved")
        for n, cs in chain.space.by_phase.items()
    }
    sub = Relaxation(chain.inst, chain.space.restricted(own), chain.windows)
    zero = sub.evaluate(*sub.zero_prices()).bound
    pipeline.without_reserved_at(chain, rel, res, st)
    found = st.stats["bound_without_reserved"]
    d2 = copy.deepcopy(d)
    del d2["regions"]["east"]["offers"]["A100"]["reserved"]
    opt = solve_milp(
        instance_from(d2), SolveOptions(backend="highs", gap=0.0, time_limit=60), prune=False
    )
    assert opt.termination.value == "optimal"
    assert zero + 0.01 < found <= opt.objective + 1e-6
    assert st.bound == 0.5 * st.upper  # a bound of those plans only, never the instance's
    st.stats["bound_without_reserved"] = found + 1.0
    pipeline.without_reserved_at(chain, rel, res, st)
    assert st.stats["bound_without_reserved"] == found + 1.0
    # at zero capacity prices it is the zero prices' bound
    zero_res = copy.copy(res)
    zero_res.lam = np.zeros_like(res.lam)
    del st.stats["bound_without_reserved"]
    pipeline.without_reserved_at(chain, rel, zero_res, st)
    assert st.stats["bound_without_reserved"] == pytest.approx(zero)
    # once the gap is closed it is not computed
    del st.stats["bound_without_reserved"]
    st.prove(st.upper, "test")
    pipeline.without_reserved_at(chain, rel, res, st)
    assert "bound_without_reserved" not in st.stats


def test_prices_carry_to_a_subspace_row_by_row() -> None:
    # hard_dict(24) has three pools (east A100, east L4, west A100) and a count row on east
    # A100; without the L4 configurations the relaxation has two pools and that count row,
    # each of its rows at a position other than the whole space's: every row takes the
    # price of the same pool (or the same pool's count row of the same size), by key
    import numpy as np
    from hard_instances import hard_dict

    from formulations.bounds.lagrange import Relaxation

    inst = instance_from(hard_dict(24))
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    rel = Relaxation(inst, space, windows)
    lam = np.arange(rel.rhs.size, dtype=float).reshape(rel.rhs.shape) + 1.0
    assert np.array_equal(rel.carried(rel, lam), lam)
    own = {n: tuple(c for c in cs if c.gpu != "L4") for n, cs in space.by_phase.items()}
    sub = Relaxation(inst, space.restricted({n: cs for n, cs in own.items() if cs}), windows)
    assert rel.pools == [("east", "A100"), ("east", "L4"), ("west", "A100")]
    assert sub.pools == [("east", "A100"), ("west", "A100")]
    assert rel.counts == sub.counts == [(0, 8.0)]
    carried = sub.carried(rel, lam)
    assert carried.shape == sub.rhs.shape
    assert np.array_equal(carried[0], lam[0])
    assert np.array_equal(carried[1], lam[2])  # west A100: third in the whole space
    assert np.array_equal(carried[2], lam[3])  # east A100's count row, after three pools


def test_below_the_ascent_only_size_the_no_commitment_bound_is_the_dp_bound() -> None:
    from hard_instances import hard_dict

    pipeline, chain, st = chain_and_incumbent(hard_dict(24), None)
    st.bound = -math.inf
    st.prove(0.5 * st.upper, "test")
    pipeline.without_reserved(chain, st)
    assert "without_reserved_iterations" not in st.stats
    assert "bound_without_reserved" in st.stats
