"""Reserved terms filled by a packing (formulations/heuristics/packing.py and the pipeline's
stage 5a): hand-computed packings where a commitment pays only when several pipelines fill
it together, which no move of one phase finds; every plan through the independent checker
and against the optimum HiGHS proves."""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from builders import ROUND_GPU, assert_valid, instance_from, region

import formulations.pipeline as pipeline
from formulations.heuristics.components import replace_component
from formulations.heuristics.packing import ALTERNATIVES, anchors, candidates, levels, pack, place
from formulations.incumbent import Incumbent
from planner.instance.model import Instance
from planner.model.configs import config_space
from planner.model.costs import cost_plan
from planner.model.progress import Tracker
from planner.model.schedule import Assignment, Schedule, with_reservations
from planner.model.windows import time_windows
from planner.solve import solve

#: $/MWh, every hour: the hours differ in nothing but the capacity.
PRICE = 50.0
KEY = ("r", "G", "")


def three_teams(
    reserved_usd: float,
    capacity: int | list[int] = 10,
    chain: bool = False,
    hours: int = 16,
    more: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One UTC region, a ``hours``-hour horizon (16), a pool of 10 GPUs (1 kW each) at
    $1/GPU-h on demand or a commitment of exactly 10 GPUs for the whole horizon at
    ``reserved_usd`` per GPU-hour (10 x ``hours`` x ``reserved_usd``). Three phases of 40
    GPU-hours on all 10 GPUs (4 hours), not preemptible, each its own pipeline (``chain``: b1
    after a1 instead); ``more``: further phases of their own (name -> GPU-hours)."""

    def phase(name: str, preds: list[str], gpu_hours: int = 40) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "data_preparation",
            "work": {"gpu_hours": gpu_hours, "gpu": "G"},
            "predecessors": preds,
            "power_load": 1.0,
            "options": {
                "gpu_counts": [10],
                "extra_spare_nodes": [0],
                "contracts": ["on_demand", "reserved"],
            },
        }

    return {
        "name": "three-teams",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": hours},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {
            "r": region(
                "UTC",
                {"constant": PRICE},
                {
                    "on_demand": {"usd_per_gpu_hour": 1.0},
                    "reserved": {
                        "usd_per_gpu_hour": reserved_usd,
                        "min_gpus": 10,
                        "max_gpus": 10,
                    },
                },
                capacity,  # type: ignore[arg-type]
            )
        },
        "phases": [
            phase("a1", []),
            phase("b1", ["a1"] if chain else []),
            phase("c1", []),
            *(phase(name, [], n) for name, n in (more or {}).items()),
        ],
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def on_demand(inst: Instance, starts: dict[str, int]) -> Schedule:
    """Every phase on demand from the hour given."""
    space = config_space(inst)
    out = {}
    for name, s in starts.items():
        (c,) = [c for c in space.by_phase[name] if c.contract == "on_demand"]
        out[name] = Assignment(c, tuple(range(s, s + c.hours)))
    sched = with_reservations(inst, out)
    assert sched is not None
    return sched


def setting(d: dict[str, Any]) -> tuple[Instance, Any, Any]:
    inst = instance_from(d)
    space = config_space(inst)
    return inst, space, time_windows(inst, space.fewest_hours())


def test_levels_are_the_multiples_of_the_smallest_run_within_the_term() -> None:
    inst, _, _ = setting(three_teams(0.7))
    assert levels(inst, KEY, [10.0]) == [0, 10]
    assert levels(inst, KEY, [5.0, 10.0]) == [0, 10]  # the term's minimum is 10
    assert levels(inst, KEY, []) == [0]


def test_three_pipelines_fill_a_term_that_no_single_move_pays_for() -> None:
    # on demand: 3 x 40 GPU-h x $1 = $120 of rental; the term: 10 GPUs x 16 h x $0.70 = $112,
    # paid whatever runs, so all three on it save $8 (the energy is the same either way), and
    # any one phase alone on it costs $112 - $40 = $72 more
    inst, space, windows = setting(three_teams(0.7))
    start = on_demand(inst, {"a1": 0, "b1": 4, "c1": 8})
    cands = candidates(inst, space, windows, start, KEY, set())
    assert {cd.phase for cd in cands} == {"a1", "b1", "c1"}
    # each run's gain is its on-demand rental: the term's hours cost only the energy
    for cd in cands:
        assert cd.gains == pytest.approx(np.full(len(cd.starts), 40.0))
    found = pack(inst, cands, KEY, levels(inst, KEY, [10.0]), seconds=5)
    assert found is not None
    size, pins, value = found
    assert size == 10 and set(pins) == {"a1", "b1", "c1"}
    assert value == pytest.approx(120 - 112)
    runs = sorted(a.hours for a in pins.values())
    assert all(x[-1] < y[0] for x, y in itertools.pairwise(runs))  # never two at once
    sched = place(inst, space, windows, start, pins, {KEY: size})
    assert sched is not None and dict(sched.reserved) == {KEY: 10}
    before, after = cost_plan(inst, start), cost_plan(inst, sched)
    assert before.objective - after.objective == pytest.approx(8.0)
    assert_valid(inst, after)
    optimum = solve(inst, solver="milp", gap=0.0, time_limit=30)
    assert optimum.plan is not None and optimum.termination.value == "optimal"
    assert after.objective == pytest.approx(optimum.objective, rel=1e-9)
    # one phase at a time does not find it: with the term held, the descent fills it, but
    # nothing moves onto a term no plan holds
    alone = replace_component(inst, space, windows, start, ["a1"])
    assert alone is not None and alone["a1"].config.contract == "on_demand"


def test_a_term_that_cannot_pay_is_not_packed() -> None:
    # at $0.80 the term costs $128, more than the $120 all three save on it
    inst, space, windows = setting(three_teams(0.8))
    start = on_demand(inst, {"a1": 0, "b1": 4, "c1": 8})
    cands = candidates(inst, space, windows, start, KEY, set())
    assert pack(inst, cands, KEY, levels(inst, KEY, [10.0]), seconds=5) is None


def test_the_packing_keeps_to_the_pools_capacity_and_the_precedence() -> None:
    # the pool holds 5 GPUs in hours 5 and 10 (another tenant): a 10-GPU run never covers
    # them, so the three runs go in [0, 4), [6, 10) and [11, 15), and b1 after a1
    cap = [10] * 16
    cap[5] = cap[10] = 5
    inst, space, windows = setting(three_teams(0.7, capacity=cap, chain=True))
    start = on_demand(inst, {"a1": 0, "b1": 6, "c1": 11})
    cands = candidates(inst, space, windows, start, KEY, set())
    for cd in cands:
        assert not any(s <= h < s + 4 for s in cd.starts for h in (5, 10))
    found = pack(inst, cands, KEY, levels(inst, KEY, [10.0]), seconds=5)
    assert found is not None
    _, pins, _ = found
    assert set(pins) == {"a1", "b1", "c1"}
    assert pins["b1"].start >= pins["a1"].end
    sched = place(inst, space, windows, start, pins, {KEY: 10})
    assert sched is not None
    assert {sched[n].hours for n in pins} == {a.hours for a in pins.values()}
    assert_valid(inst, cost_plan(inst, sched))
    # b1 packed without a1 would be left to a placement that might not meet its start:
    # with a1 kept off the term (its run skipped), b1 is no candidate either
    assert {cd.phase for cd in candidates(inst, space, windows, start, KEY, {"a1"})} == {"c1"}


def test_the_pipeline_stage_buys_and_fills_the_term(monkeypatch: pytest.MonkeyPatch) -> None:
    # stage 5a from the plan on demand: the incumbent keeps the plan with the term, $8 less,
    # and records what it did
    monkeypatch.setattr(pipeline, "PACKING_MIN_LEFT", 0.0)
    inst, space, windows = setting(three_teams(0.7))
    st = Incumbent(inst, 0.0, 1, Tracker(None), time.perf_counter() + 30)
    st.offer(on_demand(inst, {"a1": 0, "b1": 4, "c1": 8}), "start")
    assert st.plan is not None
    first = st.plan.objective
    chain = SimpleNamespace(inst=inst, space=space, windows=windows)
    pipeline.packed_commitments(chain, st)  # type: ignore[arg-type]
    assert st.plan.objective == pytest.approx(first - 8.0)
    assert st.stats["packings_kept"] == 1 and st.stats["packings"] >= 1
    assert st.plan.reserved == (("r", "G", 10),)
    assert_valid(inst, st.plan)


def four_teams() -> dict[str, Any]:
    """:func:`three_teams` over 12 hours at $0.70 (the term: 10 GPUs x 12 h x $0.70 = $84)
    in a pool of 20 GPUs, with a fourth pipeline, d1, of 20 GPU-hours (2 hours): the term
    holds three of the 4-hour runs, or d1 and two of them (14 hours do not fit in 12)."""
    return three_teams(0.7, capacity=20, hours=12, more={"d1": 20})


def test_each_alternative_packing_puts_other_pipelines_on_the_term() -> None:
    # on the term each run saves its on-demand rental: 40 for a1, b1 and c1, 20 for d1. The
    # best packing holds a1, b1 and c1 (120 - 84 = 36); packings that avoid it hold d1 and
    # two of the others (100 - 84 = 16), one pair each; with all four avoided none pays (a
    # pair saves at most 80 < 84)
    inst, space, windows = setting(four_teams())
    start = on_demand(inst, {"a1": 0, "b1": 4, "c1": 8, "d1": 0})
    cands = candidates(inst, space, windows, start, KEY, set())
    assert anchors(inst, cands) == {"a1", "b1", "c1", "d1"}
    sizes = levels(inst, KEY, [10.0])
    tried: list[frozenset[str]] = []
    values = []
    while (found := pack(inst, cands, KEY, sizes, 5, tried)) is not None:
        _, pins, value = found
        assert frozenset(pins) not in tried
        tried.append(frozenset(pins))
        values.append(value)
    assert values == pytest.approx([36.0, 16.0, 16.0, 16.0])
    assert tried[0] == {"a1", "b1", "c1"}
    assert {p - {"d1"} for p in tried[1:]} == {
        frozenset(x) for x in itertools.combinations(["a1", "b1", "c1"], 2)
    }


def test_a_pipelines_anchor_is_its_largest_run_on_the_term() -> None:
    # b1 follows a1 (one pipeline): its anchor is a1 (both take 40 GPU-hours, a1 comes
    # first); with b1 of 80 GPU-hours (8 hours on the 10 GPUs), b1
    inst, space, windows = setting(three_teams(0.7, chain=True))
    start = on_demand(inst, {"a1": 0, "b1": 4, "c1": 8})
    assert anchors(inst, candidates(inst, space, windows, start, KEY, set())) == {"a1", "c1"}
    longer = three_teams(0.7, chain=True)
    longer["phases"][1]["work"]["gpu_hours"] = 80
    inst, space, windows = setting(longer)
    start = on_demand(inst, {"a1": 0, "b1": 4, "c1": 12})
    assert anchors(inst, candidates(inst, space, windows, start, KEY, set())) == {"b1", "c1"}


def test_the_stage_tries_the_alternatives_of_a_term_it_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the best packing is kept (36 less); the three alternatives cost 20 more than it and
    # are not; the fifth packing, after all four, finds none
    assert ALTERNATIVES >= 3
    monkeypatch.setattr(pipeline, "PACKING_MIN_LEFT", 0.0)
    inst, space, windows = setting(four_teams())
    st = Incumbent(inst, 0.0, 1, Tracker(None), time.perf_counter() + 60)
    st.offer(on_demand(inst, {"a1": 0, "b1": 4, "c1": 8, "d1": 0}), "start")
    assert st.plan is not None
    first = st.plan.objective
    chain = SimpleNamespace(inst=inst, space=space, windows=windows)
    pipeline.packed_commitments(chain, st)  # type: ignore[arg-type]
    assert st.plan.objective == pytest.approx(first - 36.0)
    assert st.stats["packings"] == 5 and st.stats["packings_kept"] == 1
    assert "packing_alternatives_kept" not in st.stats
    assert {p.name for p in st.plan.phases if p.contract == "reserved"} == {"a1", "b1", "c1"}
    assert_valid(inst, st.plan)
