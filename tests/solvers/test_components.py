"""One pipeline placed anew at a time (formulations/heuristics/components.py and the
pipeline's component descent): hand-computed placements on two pipelines that share one
pool, every plan through the independent checker."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from builders import ROUND_GPU, assert_valid, instance_from, region

import formulations.pipeline as pipeline
from formulations.heuristics.components import eject_component, ejections, replace_component
from formulations.incumbent import Incumbent
from planner.instance.model import Instance
from planner.model.configs import config_space
from planner.model.costs import cost_plan
from planner.model.progress import Tracker
from planner.model.schedule import Assignment, Schedule, with_reservations
from planner.model.windows import precedence_components, time_windows
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[2]

#: $/MWh by hour: hours 0-3 cheap, the rest dear.
CHEAP, DEAR = 10.0, 200.0


def two_pipelines() -> dict[str, Any]:
    """One UTC region with 10 GPUs (1 kW each, no idle draw) at $1/GPU-h, electricity
    $10/MWh in hours 0-3 and $200/MWh after, a 16-hour horizon. Pipeline a: a1 then a2;
    pipeline b: b1. Every phase 40 GPU-hours on all 10 GPUs (4 hours), not preemptible: the
    pool holds one phase at a time."""

    def phase(name: str, preds: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "data_preparation",
            "work": {"gpu_hours": 40, "gpu": "G"},
            "predecessors": preds,
            "power_load": 1.0,
            "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
        }

    return {
        "name": "two-pipelines",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 16},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {
            "r": region(
                "UTC",
                {"values": [CHEAP] * 4 + [DEAR] * 12},
                {"on_demand": {"usd_per_gpu_hour": 1.0}},
            )
        },
        "phases": [phase("a1", []), phase("a2", ["a1"]), phase("b1", [])],
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def placed(inst: Instance, starts: dict[str, int]) -> Schedule:
    space = config_space(inst)
    out = {}
    for name, s in starts.items():
        (c,) = space.by_phase[name]
        out[name] = Assignment(c, tuple(range(s, s + c.hours)))
    sched = with_reservations(inst, out)
    assert sched is not None
    return sched


def descend(inst: Instance, start: Schedule) -> Incumbent:
    """The incumbent after the component descent (stage 7b) from ``start``."""
    space = config_space(inst)
    st = Incumbent(inst, 0.0, 1, Tracker(None), time.perf_counter() + 30)
    st.offer(start, "start")
    chain = SimpleNamespace(space=space, windows=time_windows(inst, space.fewest_hours()))
    pipeline.component_descent(chain, st)  # type: ignore[arg-type]
    return st


def descends_to_the_optimum(inst: Instance, start: Schedule) -> Incumbent:
    """The incumbent after the descent from ``start``, asserted to be the optimum HiGHS
    proves for ``inst`` and to pass the checker."""
    optimum = solve(inst, solver="milp", gap=0.0, time_limit=30)
    assert optimum.plan is not None and optimum.termination.value == "optimal"
    st = descend(inst, start)
    assert st.plan is not None
    assert st.plan.objective == pytest.approx(optimum.objective, rel=1e-9)
    assert_valid(inst, st.plan)
    return st


def test_precedence_components_are_the_pipelines_in_order() -> None:
    inst = instance_from(two_pipelines())
    assert precedence_components(inst, ["b1", "a2", "a1"]) == [["a1", "a2"], ["b1"]]
    # without a1, a2 is a component of its own
    assert precedence_components(inst, ["a2", "b1"]) == [["a2"], ["b1"]]


def test_a_pipeline_moves_into_the_cheap_hours_the_other_leaves() -> None:
    d = two_pipelines()
    d["phases"] = [p for p in d["phases"] if p["name"] != "a2"]
    inst = instance_from(d)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    # a1 in dear hours 4-7, b1 in 8-11: hours 0-3 are free, and a1 moves there
    start = placed(inst, {"a1": 4, "b1": 8})
    found = replace_component(inst, space, windows, start, ["a1"])
    assert found is not None
    assert found["a1"].hours == (0, 1, 2, 3) and found["b1"] == start["b1"]
    before, after = cost_plan(inst, start), cost_plan(inst, found)
    # 10 kW x 4 h x (200 - 10) $/MWh, the rest alike
    assert before.objective - after.objective == pytest.approx(10 * 4 * (DEAR - CHEAP) / 1000)
    assert_valid(inst, after)
    # with b1 in the cheap hours, a1 cannot take them: it keeps to what b1 leaves
    held = placed(inst, {"a1": 8, "b1": 0})
    again = replace_component(inst, space, windows, held, ["a1"])
    assert again is not None and not set(again["a1"].hours) & {0, 1, 2, 3}
    assert_valid(inst, cost_plan(inst, again))


def test_the_descent_reaches_the_optimum_from_a_poor_plan() -> None:
    # every phase in the dear hours (a1 4-7, a2 8-11, b1 12-15), the cheap ones empty: the
    # first round moves pipeline a so that a1 takes hours 0-3, and b1 cannot gain after it;
    # one phase in the cheap hours is the optimum (the pool holds one phase at a time)
    inst = instance_from(two_pipelines())
    poor = placed(inst, {"a1": 4, "a2": 8, "b1": 12})
    st = descends_to_the_optimum(inst, poor)
    assert st.plan is not None
    assert st.stats["components_improved"] == 1
    assert cost_plan(inst, poor).objective - st.plan.objective == pytest.approx(
        10 * 4 * (DEAR - CHEAP) / 1000
    )


def test_where_no_milp_fits_the_solve_places_each_pipeline_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # with the reduced MILP out of reach (its size guard 0) the descent runs before the
    # neighbourhood search, over every pipeline of the instance, and the solve's plan passes
    # the checker; on one pipeline it does not run
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import load

    monkeypatch.setattr(pipeline, "FULL_MILP_MAX_NONZEROS", 0)
    inst = load("medium-compete")
    res = solve(inst, solver="milp", time_limit=8, gap=0.0)
    assert res.plan is not None
    comps = precedence_components(inst, [p.name for p in inst.active_phases])
    assert len(comps) >= 2
    assert res.stats["components_tried"] >= len(comps)
    assert_valid(inst, res.plan)
    d = two_pipelines()
    d["phases"] = [p for p in d["phases"] if p["name"] != "b1"]
    one = instance_from(d)
    st = descend(one, placed(one, {"a1": 4, "a2": 8}))
    assert "components_tried" not in st.stats


def held_pipelines(reserved_usd: float) -> Instance:
    """:func:`two_pipelines` without a2, 20 GPUs in the pool, and a commitment of exactly 10
    GPUs for the whole horizon at ``reserved_usd`` per GPU-hour (0: a re-plan's free term)
    beside on demand at $1."""
    d = two_pipelines()
    d["phases"] = [p for p in d["phases"] if p["name"] != "a2"]
    r = d["regions"]["r"]
    r["capacity"] = {"G": 20}
    r["offers"]["G"]["reserved"] = {
        "usd_per_gpu_hour": reserved_usd,
        "min_gpus": 10,
        "max_gpus": 10,
    }
    return instance_from(d)


def on(inst: Instance, runs: dict[str, tuple[str, int]], by: str = "contract") -> Schedule:
    """Every phase on its one configuration whose ``by`` (a configuration field: its
    contract, its region) is the one given, from the hour given, 4 hours."""
    space = config_space(inst)
    out = {}
    for name, (value, s) in runs.items():
        (c,) = [c for c in space.by_phase[name] if getattr(c, by) == value]
        out[name] = Assignment(c, tuple(range(s, s + c.hours)))
    sched = with_reservations(inst, out)
    assert sched is not None
    return sched


def test_a_pipeline_moves_onto_the_idle_hours_of_a_commitment_the_plan_holds() -> None:
    # a1 on the 10 committed GPUs in hours 0-3, b1 on demand beside it: the commitment is
    # paid for every hour, so b1 moves onto it in the first hours a1 leaves (4-7, dear):
    # $1 x 10 GPUs x 4 h of rental saved, 10 kW x 4 h x (200 - 10) $/MWh of energy paid
    inst = held_pipelines(0.25)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    start = on(inst, {"a1": ("reserved", 0), "b1": ("on_demand", 0)})
    found = replace_component(inst, space, windows, start, ["b1"])
    assert found is not None
    assert found["b1"].config.contract == "reserved" and found["b1"].hours == (4, 5, 6, 7)
    assert found["a1"] == start["a1"] and dict(found.reserved) == dict(start.reserved)
    before, after = cost_plan(inst, start), cost_plan(inst, found)
    assert before.objective - after.objective == pytest.approx(
        40.0 - 10 * 4 * (DEAR - CHEAP) / 1000
    )
    assert_valid(inst, after)
    # the descent ends at the exact MILP's optimum: both on the commitment
    descends_to_the_optimum(inst, start)


def test_a_component_leaves_a_priced_commitment_so_that_it_is_not_bought() -> None:
    # at $0.5 the 10 GPUs cost $80 for the horizon, more than both phases on demand in the
    # cheap hours ($80.80): from a1 on the commitment, the descent moves it off (the free
    # terms alone) and the plan buys none
    inst = held_pipelines(0.5)
    start = on(inst, {"a1": ("reserved", 0), "b1": ("on_demand", 0)})
    st = descend(inst, start)
    assert st.schedule is not None and not st.schedule.reserved
    assert st.plan is not None
    assert cost_plan(inst, start).objective - st.plan.objective == pytest.approx(80.0 - 40.0)
    assert_valid(inst, st.plan)


def test_a_free_term_takes_a_pipeline_within_its_size() -> None:
    # a re-plan's free term (price 0, exactly 10 GPUs) that the plan does not use: a1 moves
    # onto it and saves its rental; b1, with a1 on the term in hours 0-3, can take it only
    # after them
    inst = held_pipelines(0.0)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    start = on(inst, {"a1": ("on_demand", 0), "b1": ("on_demand", 0)})
    found = replace_component(inst, space, windows, start, ["a1"])
    assert found is not None and found["a1"].config.contract == "reserved"
    assert found["a1"].hours == (0, 1, 2, 3)
    assert cost_plan(inst, start).objective - cost_plan(inst, found).objective == pytest.approx(
        40.0
    )
    again = replace_component(inst, space, windows, found, ["b1"])
    assert again is not None and again["b1"].config.contract == "reserved"
    assert not set(again["b1"].hours) & {0, 1, 2, 3}
    assert_valid(inst, cost_plan(inst, again))


def blocked_pipelines_dict() -> dict[str, Any]:
    """:func:`two_pipelines` without a2, b1 drawing a tenth of a1's power (load 0.1): the
    cheap hours are worth 10 x 4 x 190 / 1000 = $7.60 to a1 and $0.76 to b1."""
    d = two_pipelines()
    d["phases"] = [p for p in d["phases"] if p["name"] != "a2"]
    for p in d["phases"]:
        if p["name"] == "b1":
            p["power_load"] = 0.1
    return d


def blocked_pipelines() -> Instance:
    """:func:`blocked_pipelines_dict` as an instance."""
    return instance_from(blocked_pipelines_dict())


def test_an_ejection_gives_the_cheap_hours_to_the_pipeline_that_gains_most() -> None:
    # b1 holds the cheap hours 0-3 and a1 runs in 4-7: a1 cannot move (the pool holds one
    # phase at a time) and b1 is at its own best, so no single pipeline gains; a1 placed as
    # if b1 did not run, then b1 after it, saves (1 - 0.1) x 10 kW x 4 h x $190/MWh = $6.84,
    # the optimum HiGHS proves
    inst = blocked_pipelines()
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    start = placed(inst, {"a1": 4, "b1": 0})
    comps = precedence_components(inst, list(start))
    assert comps == [["a1"], ["b1"]]
    for comp in comps:  # no single placement gains
        alone = replace_component(inst, space, windows, start, comp)
        assert alone is not None
        assert cost_plan(inst, alone).objective >= cost_plan(inst, start).objective - 1e-9
    # a1 gains $7.60 from its wish and only b1 blocks it; b1 has no excess
    assert ejections(inst, space, windows, start, comps) == [(0, 1)]
    found = eject_component(inst, space, windows, start, ["a1"], ["b1"])
    assert found is not None
    assert found["a1"].hours == (0, 1, 2, 3) and found["b1"].hours[0] >= 4
    saving = (1 - 0.1) * 10 * 4 * (DEAR - CHEAP) / 1000
    before, after = cost_plan(inst, start), cost_plan(inst, found)
    assert before.objective - after.objective == pytest.approx(saving)
    assert_valid(inst, after)
    st = descends_to_the_optimum(inst, start)
    assert st.stats["ejections_improved"] == 1 and st.stats["components_improved"] == 0
    # once per plan: from the plan it ended on, the descent does not run again
    tried = st.stats["components_tried"]
    chain = SimpleNamespace(space=space, windows=windows)
    pipeline.component_descent(chain, st)  # type: ignore[arg-type]
    assert st.stats["components_tried"] == tried
    # cut short by its share of the clock, the descent has proved nothing about its plan: a
    # later call goes on from it (and reaches the same optimum)
    cut = Incumbent(inst, 0.0, 1, Tracker(None), time.perf_counter() + 30)
    cut.offer(start, "start")
    pipeline.component_descent(chain, cut, 0.0)  # type: ignore[arg-type]
    assert cut.descended is None and cut.plan is not None
    assert cut.plan.objective == pytest.approx(before.objective)
    pipeline.component_descent(chain, cut)  # type: ignore[arg-type]
    assert cut.plan.objective == pytest.approx(st.plan.objective, rel=1e-9)
    assert cut.descended is cut.plan


def test_a_pipeline_on_a_held_commitment_is_ranked_for_an_ejection() -> None:
    # the same two pipelines with a commitment of 10 GPUs at $0.25 that the plan holds, a1 on
    # it in the dear hours 4-7 and b1 on demand in the cheap ones: a1's wish (the cheap hours,
    # on the commitment) is weighed by its phase's costs as a1 is in the plan, the pool's $40
    # of rental in neither, so the pair (a1, b1) is ranked; the ejection puts both on the
    # commitment, a1 in the cheap hours ($46.84 less: b1's $40 of rental and $6.84 of energy)
    d = blocked_pipelines_dict()
    d["regions"]["r"]["offers"]["G"]["reserved"] = {
        "usd_per_gpu_hour": 0.25,
        "min_gpus": 10,
        "max_gpus": 10,
    }
    inst = instance_from(d)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    start = on(inst, {"a1": ("reserved", 4), "b1": ("on_demand", 0)})
    assert dict(start.reserved) == {("r", "G", ""): 10}
    assert ejections(inst, space, windows, start, [["a1"], ["b1"]]) == [(0, 1)]
    found = eject_component(inst, space, windows, start, ["a1"], ["b1"])
    assert found is not None and found["a1"].hours == (0, 1, 2, 3)
    assert {found[n].config.contract for n in ("a1", "b1")} == {"reserved"}
    before, after = cost_plan(inst, start), cost_plan(inst, found)
    saving = 40.0 + (1 - 0.1) * 10 * 4 * (DEAR - CHEAP) / 1000
    assert before.objective - after.objective == pytest.approx(saving)
    assert_valid(inst, after)


def test_on_models_only_the_ascent_bounds_the_descent_runs_before_the_longer_ascent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as if medium-compete were over ASCENT_ONLY_NONZEROS, like the lab's quarter (and not
    # a small model, nor one the reduced MILP takes): the pipelines are placed anew (and
    # ejected) before the longer ascent starts, whose steps aim at the plan, and once only
    # while the plan stays; the plan passes the checker
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import load

    monkeypatch.setattr(pipeline, "ASCENT_ONLY_NONZEROS", 0)
    monkeypatch.setattr(pipeline, "SMALL_MODEL_NONZEROS", 0)
    monkeypatch.setattr(pipeline, "FULL_MILP_MAX_NONZEROS", 0)
    stages: list[str] = []
    inst = load("medium-compete")
    res = solve(
        inst,
        solver="milp",
        time_limit=6,
        gap=0.0,
        on_progress=lambda ev: stages.append(ev.message),
    )
    assert res.plan is not None
    assert "longer ascent" in stages
    assert stages.index("one pipeline at a time") < stages.index("longer ascent")
    # the look-ahead at the longer ascent's prices finds no cheaper plan here, so the
    # descent does not run again on the plan it ended on when the reduced MILP is refused
    assert stages.count("one pipeline at a time") == 1
    assert res.stats["components_tried"] >= len(precedence_components(inst, list(inst.order)))
    assert "ejections_tried" in res.stats
    assert_valid(inst, res.plan)


def test_a_wish_in_a_pool_no_pipeline_uses_blocks_nobody() -> None:
    # a second region s, $0.5 a GPU-hour cheaper and empty in the plan: both pipelines'
    # wishes go there, where nothing runs, so no pair is worth an ejection, and the single
    # placements move them (saving $0.5 x 10 GPUs x 4 h each)
    d = blocked_pipelines_dict()
    d["regions"]["s"] = region(
        "UTC", {"values": [DEAR] * 16}, {"on_demand": {"usd_per_gpu_hour": 0.5}}, capacity=20
    )
    inst = instance_from(d)
    space = config_space(inst)
    windows = time_windows(inst, space.fewest_hours())
    start = on(inst, {"a1": ("r", 4), "b1": ("r", 0)}, by="region")
    comps = precedence_components(inst, list(start))
    assert ejections(inst, space, windows, start, comps) == []
    st = descend(inst, start)
    assert st.plan is not None and st.schedule is not None
    assert {a.config.region for a in st.schedule.assignments.values()} == {"s"}
    assert_valid(inst, st.plan)
