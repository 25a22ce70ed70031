"""The independent plan checker (planner.checker) and ``trainplan verify``.

Valid plans for tests/data/tiny.yaml are built from hand-written schedules: each names the
configuration of every phase and its running hours; planner.model.configs finds the configuration
and planner.model.costs states the plan's costs. The checker must accept every such plan and
its recomputation must equal the cost model's figure by figure (two implementations of
docs/cost-model.md cross-checked). Some figures are also checked against hand arithmetic.
Then one violation of each kind is planted and the checker must report exactly that kind.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from builders import command_app
from typer.testing import CliRunner

from planner.checker import KINDS, Verification, Violation, plan_from_dict, read_plan, verify
from planner.checker.planfile import PlanFileError
from planner.instance import Instance, read
from planner.model.configs import Config, ConfigSpace, build_config_space
from planner.model.costs import cost_plan
from planner.model.plan import COST_KEYS, Plan
from planner.model.schedule import schedule_of

DATA = Path(__file__).parents[1] / "data"
TINY = DATA / "tiny.yaml"

# Variants of tiny.yaml (dotted paths for Instance.replace).

#: Reserved A100 capacity in east: 1.20 USD per GPU-hour, commitments of 4 to 16 GPUs.
RESERVED = {
    "regions.east.offers.A100.reserved": {"usd_per_gpu_hour": 1.2, "min_gpus": 4, "max_gpus": 16},
    "phases.finetune.licence_usd_per_gpu_hour": 0.1,
}

#: A carbon price and east's grid at 400 gCO2/kWh.
CARBON = {
    "regions.east.carbon_intensity": {"constant": 400.0},
    "objective.carbon_usd_per_tonne": 50.0,
}

#: Every remaining lever at once: SLA credits, two storage tiers, transfers between regions,
#: spot billing in 2-hour blocks with a 4-hour minimum, spare nodes, compression, porting,
#: objective weights and carbon on both grids.
RICH: dict[str, Any] = {
    "regions.east.carbon_intensity": {"constant": 380.0},
    "regions.west.carbon_intensity": {
        "tou": {"default": 300.0, "bands": [{"start_hour": 10, "end_hour": 16, "price": 150.0}]}
    },
    "regions.west.sla": {"provider_fault_share": 0.6, "credit_multiplier": 2.0},
    "regions.east.sla": {"provider_fault_share": 0.5, "credit_multiplier": 2.0},
    "regions.east.storage": {
        "hot": {"usd_per_gb_month": 0.10, "write_gb_per_s": 5.0},
        "cold": {"usd_per_gb_month": 0.01, "read_gb_per_s": 0.2, "retrieval_usd_per_gb": 0.01},
    },
    "regions.west.transfer_usd_per_gb": {"east": 0.05},
    "regions.west.offers.A100.spot": {
        "usd_per_gpu_hour": 0.9,
        "preemptions_per_hour": 0.02,
        "billing_granularity_hours": 2,
        "min_rental_hours": 4,
    },
    "phases.prep.data": {"size_gb": 800.0, "home_region": "east"},
    "phases.prep.options": {"gpu_counts": [1, 2, 4], "fractions": [0.5]},
    "phases.finetune.mfu": {"A100": 0.45},
    "phases.finetune.options.pipeline_parallel": [1, 2],
    "phases.finetune.data": {"size_gb": 500.0, "home_region": "west", "read_passes": 2.0},
    "phases.finetune.redundancy": {"spare_nodes": 1},
    "families": {"nvidia": {"porting_usd": 1000.0}},
    "storage": {"retention": 3, "compression_ratio": 2.0},
    "failure": {"restart_hours": 1.0, "spare_swap_hours": 0.2},
    "objective": {
        "weights": {"energy": 2.0, "failure": 0.5, "carbon": 1.5},
        "carbon_usd_per_tonne": 80.0,
    },
}


# ----------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def tiny() -> Instance:
    return read(TINY)


@pytest.fixture(scope="module")
def space(tiny: Instance) -> ConfigSpace:
    return build_config_space(tiny, prune=False)


def pick(space: ConfigSpace, phase: str, **want: Any) -> Config:
    """The one configuration of ``phase`` with the given fields (Config or Layout fields)."""

    def fields(c: Config) -> dict[str, Any]:
        return {
            "gpu": c.gpu,
            "region": c.region,
            "contract": c.contract,
            "gpus": c.gpus,
            "spare_gpus": c.spare_gpus,
            "tier": c.tier,
            **dataclasses.asdict(c.layout),
        }

    found = [c for c in space[phase] if all(fields(c)[k] == v for k, v in want.items())]
    assert len(found) == 1, f"{phase} {want}: {[c.label for c in found]}"
    return found[0]


def costed(
    inst: Instance,
    space: ConfigSpace,
    schedule: dict[str, tuple[Config, tuple[int, ...]]],
    reserved: dict[tuple[str, str], int] | None = None,
) -> Plan:
    return cost_plan(inst, schedule_of(schedule, reserved))


def prep_east(space: ConfigSpace) -> Config:
    return pick(
        space, "prep", gpu="A100", region="east", contract="on_demand", gpus=4.0, spare_gpus=0
    )


def finetune_a100(space: ConfigSpace, contract: str = "on_demand", gpus: float = 8.0) -> Config:
    return pick(
        space,
        "finetune",
        gpu="A100",
        region="east",
        contract=contract,
        gpus=gpus,
        spare_gpus=0,
        precision="bf16",
        zero=1,
        recompute="none",
        tp=1,
        pp=1,
    )


def east_plan(inst: Instance, space: ConfigSpace) -> Plan:
    """Schedule A: prep on 4 on-demand A100 in east, hours 0-2; the fine-tune on 8 on-demand
    A100 in east (ZeRO-1) straight after, hours 3-7."""
    ft = finetune_a100(space)
    return costed(
        inst,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(3, 3 + ft.hours)))},
    )


def only(v: Verification, kind: str, count: int | None = 1) -> tuple[Violation, ...]:
    """Assert that every violation is of ``kind`` (and how many there are); return them."""
    assert {x.kind for x in v.violations} == {kind}, [str(x) for x in v.violations]
    if count is not None:
        assert len(v.violations) == count, [str(x) for x in v.violations]
    return v.violations


def assert_same_costs(v: Verification, plan: Plan) -> None:
    """The checker's recomputation equals costing's figures (which make_plan rounds to 1e-6)."""
    assert v.ok, [str(x) for x in v.violations]
    for k in (*COST_KEYS, "total"):
        assert v.costs[k] == pytest.approx(plan.costs[k], rel=1e-9, abs=2e-6), k
    assert plan.objective is not None
    assert v.objective == pytest.approx(plan.objective, rel=1e-9, abs=2e-6)
    assert v.energy_kwh == pytest.approx(plan.energy_kwh, rel=1e-9)
    assert v.emissions_t == pytest.approx(plan.emissions_t, rel=1e-9, abs=1e-12)
    for e in plan.phases:
        for k in COST_KEYS:
            assert v.phase_costs[e.name][k] == pytest.approx(e.costs[k], rel=1e-9, abs=2e-6)


# ----------------------------------------------------------------------------- valid plans


def test_east_plan_is_valid_and_costs_agree(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    v = verify(tiny, plan)
    assert_same_costs(v, plan)
    assert v.costed and v.kinds == frozenset()


def test_east_plan_against_hand_arithmetic(tiny: Instance, space: ConfigSpace) -> None:
    v = verify(tiny, east_plan(tiny, space))
    prep, ft = v.phase_costs["prep"], v.phase_costs["finetune"]
    # prep: 4 A100 x 2.00 USD x 3 h = 24 USD.
    assert prep["rental"] == pytest.approx(24.0, rel=1e-12)
    # kW = [4 x (50 + (400 - 50) x 0.9) + 1 node x 1600] / 1000 x PUE 1.2
    #    = (1460 + 1600) / 1000 x 1.2 = 3.672 kW; energy 3.672 x 3 h x 60 USD/MWh / 1000
    #    = 0.66096 USD.
    assert v.facts["prep"].facility_kw == pytest.approx(3.672, rel=1e-12)
    assert prep["energy"] == pytest.approx(0.66096, rel=1e-12)
    # λ = 4 x 419 / (16384 x 54 x 24) = 4 x 419 / 21,233,664 = 7.893127e-5 per hour; prep has
    # no checkpoint, so L = D = detect 0.05 + restart 0.10 = 0.15 h; failures per running hour
    # f = λ / (1 - λ L) = 7.893127e-5 / (1 - 1.18397e-5) = 7.893220e-5; per hour
    # f x 0.15 x (8 + 3.672 x 60 / 1000) = 7.893220e-5 x 0.15 x 8.22032 = 9.732717e-5; over
    # 3 h 2.919815e-4 USD.
    assert v.facts["prep"].failure_rate == pytest.approx(7.893220e-5, rel=1e-6)
    assert prep["failure"] == pytest.approx(2.919815e-4, rel=1e-6)
    # fine-tune: P = 12 x 24 x 2048^2 x (1 + 13/(12 x 2048) + (32000 + 2048)/(12 x 24 x 2048))
    # = 1,278,328,832; W = 6 P D = 6 x 1,278,328,832 x 2e9 = 1.5339946e19 FLOPs (6ND, the
    # default convention) at 8 x 312e12 x 0.4 = 9.984e14 FLOP/s: 4.268 h -> 5 hours.
    assert v.facts["finetune"].work_flops == pytest.approx(1.5339945984e19, rel=1e-9)
    assert v.facts["finetune"].hours == 5
    assert ft["rental"] == pytest.approx(8 * 2.0 * 5, rel=1e-12)
    # kW = (8 x 365 + 1600) / 1000 x 1.2 = 5.424; energy 5.424 x 5 x 60 / 1000 = 1.6272 USD.
    assert ft["energy"] == pytest.approx(1.6272, rel=1e-12)
    # storage: checkpoint (2 + 12) x P / 1e9 = 17.896604 GB, 2 retained, 5 running hours at
    # 0.10 / 730 per GB-hour: 35.793207 x 0.1 / 730 x 5 = 0.0245159; then the 16-bit weights,
    # 2 P / 1e9 = 2.556658 GB, archived from hour 8 to 48: 2.556658 x 0.1 / 730 x 40
    # = 0.0140091. Sum 0.0385250 USD.
    assert ft["storage"] == pytest.approx(0.0245159 + 0.0140091, rel=1e-5)
    assert v.costs["rental"] == pytest.approx(24.0 + 80.0, rel=1e-12)
    assert v.energy_kwh == pytest.approx(3.672 * 3 + 5.424 * 5, rel=1e-12)


def test_paused_spot_prep_and_l4_finetune(tiny: Instance, space: ConfigSpace) -> None:
    """Schedule B: prep on 2 spot A100 in west, paused between hours 2 and 20 (off-peak at
    both ends); fine-tune on 8 L4 in east with ZeRO-3 from hour 23."""
    prep = pick(space, "prep", gpu="A100", region="west", contract="spot", gpus=2.0)
    ft = pick(
        space,
        "finetune",
        gpu="L4",
        region="east",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=0,
        zero=3,
        recompute="none",
        tp=1,
        pp=1,
    )
    plan = costed(
        tiny,
        space,
        {"prep": (prep, (0, 1, 2, 20, 21, 22)), "finetune": (ft, tuple(range(23, 23 + ft.hours)))},
    )
    v = verify(tiny, plan)
    assert_same_costs(v, plan)
    # West's tariff: 40 USD/MWh from 22:00 to 06:00 Berlin time (UTC+2 in June), so UTC hours
    # 0-2 and 20-22 are all at 40. kW = (2 x 365 + 1600) / 1000 x PUE 1.58 (air) = 3.6814;
    # energy 3.6814 x 6 h x 40 / 1000 = 0.883536 USD.
    assert v.phase_costs["prep"]["energy"] == pytest.approx(0.883536, rel=1e-12)
    # Two segments: one resume, 0.25 h x (2 x 0.9 + 3.6814 x mean west price / 1000).
    mean_west = float(tiny.price["west"].mean())
    lam = 2 * 419 / (16384 * 54 * 24) + 0.02
    f = lam / (1 - lam * 0.15)  # L = detect 0.05 + restart 0.10 h, no checkpoint
    running = f * 0.15 * (1.8 + 3.6814 * 40 / 1000) * 6
    assert v.phase_costs["prep"]["failure"] == pytest.approx(
        running + 0.25 * (1.8 + 3.6814 * mean_west / 1000), rel=1e-9
    )


def test_reserved_pool(tiny: Instance) -> None:
    inst = tiny.replace(RESERVED)
    space = build_config_space(inst, prune=False)
    ft = finetune_a100(space, contract="reserved")
    plan = costed(
        inst,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(3, 8)))},
        {("east", "A100"): 8},
    )
    v = verify(inst, plan)
    assert_same_costs(v, plan)
    # prep 4 x 2.00 x 3 = 24; fine-tune pays only the licence, 5 h x 8 x 0.10 = 4; the pool
    # R = 8 x 1.20 x 48 h = 460.8 whether used or not. 24 + 4 + 460.8 = 488.8 USD.
    assert v.costs["rental"] == pytest.approx(488.8, rel=1e-12)


def test_carbon_price(tiny: Instance, space: ConfigSpace) -> None:
    inst = tiny.replace(CARBON)
    plan = east_plan(inst, space)
    v = verify(inst, plan)
    assert_same_costs(v, plan)
    # 3.672 x 3 + 5.424 x 5 = 38.136 kWh at 400 g/kWh = 0.0152544 t; x 50 USD/t = 0.76272.
    assert v.emissions_t == pytest.approx(0.0152544, rel=1e-12)
    assert v.costs["carbon"] == pytest.approx(0.76272, rel=1e-12)


def test_every_lever_at_once(tiny: Instance) -> None:
    inst = tiny.replace(RICH)
    space = build_config_space(inst, prune=False)
    prep = pick(space, "prep", gpu="A100", region="west", contract="spot", gpus=2.0)
    ft = pick(
        space,
        "finetune",
        gpu="A100",
        region="east",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=8,
        precision="bf16",
        zero=2,
        recompute="selective",
        tp=2,
        pp=1,
        tier="cold",
    )
    plan = costed(
        inst,
        space,
        {"prep": (prep, (1, 2, 3, 20, 21, 22)), "finetune": (ft, tuple(range(23, 23 + ft.hours)))},
    )
    v = verify(inst, plan)
    assert_same_costs(v, plan)
    # transfer: prep reads 800 GB from east into west, 800 x 0.02 (east's default) = 16, and
    # hands its 800 GB output to the fine-tune in east, 800 x 0.05 = 40; the fine-tune reads
    # 500 GB twice from cold storage, 1000 x 0.01 = 10, after moving it from west, 500 x 0.05
    # = 25. 16 + 40 + 10 + 25 = 91 USD.
    assert v.costs["transfer"] == pytest.approx(91.0, rel=1e-12)
    assert v.costs["porting"] == pytest.approx(1000.0)
    # spot billed in 2-hour blocks: hours 1,2,3,20,21,22 fall in blocks 0,1,10,11 = 8 h billed
    # (above the 4 h minimum) x 2 GPUs x 0.90 = 14.4 USD.
    assert v.phase_costs["prep"]["rental"] == pytest.approx(14.4, rel=1e-12)
    # pause parking, 16 hours (4..19) of 800 GB on the cheapest tier of any region (east cold,
    # 0.01 USD/GB-month): 16 x 800 x 0.01 / 730 = 0.175342 USD within prep's storage cost.
    assert v.facts["prep"].pause_per_h * 16 == pytest.approx(16 * 800 * 0.01 / 730, rel=1e-12)


#: A fixed checkpoint write time and coarse L4 billing.
SLOW_CHECKPOINTS = {
    "failure.checkpoint_write_s": 600.0,
    "regions.east.offers.L4.on_demand": {
        "usd_per_gpu_hour": 0.8,
        "billing_granularity_hours": 3,
        "min_rental_hours": 6,
    },
}


@pytest.mark.parametrize(
    "variant",
    [{}, RESERVED, CARBON, RICH, SLOW_CHECKPOINTS],
    ids=["tiny", "reserved", "carbon", "rich", "slow_checkpoints"],
)
def test_every_configuration_agrees_with_costing(tiny: Instance, variant: dict[str, Any]) -> None:
    """Every configuration planner.model.configs finds (none pruned), each in a schedule: prep split
    in two runs two hours apart, the fine-tune right after it. The checker must accept each
    plan and recompute costing's figures."""
    inst = tiny.replace(variant) if variant else tiny
    space = build_config_space(inst, prune=False)
    preps, fts = space["prep"], space["finetune"]
    assert len(preps) >= 3 and len(fts) >= 50
    checked = 0
    for i, ft in enumerate(fts):
        prep = preps[i % len(preps)]
        first = prep.hours // 2
        prep_hours = (*range(first), *range(first + 2, prep.hours + 2))
        start = prep_hours[-1] + 1
        if start + ft.hours > inst.hours:
            continue
        reserved: dict[tuple[str, str], int] = {}
        for c in (prep, ft):
            offer = inst.region(c.region).offers[c.gpu].reserved
            if c.contract == "reserved" and offer is not None:
                reserved[(c.region, c.gpu)] = max(
                    reserved.get((c.region, c.gpu), 0), math.ceil(c.total_gpus), offer.min_gpus
                )
        plan = costed(
            inst,
            space,
            {"prep": (prep, prep_hours), "finetune": (ft, tuple(range(start, start + ft.hours)))},
            reserved,
        )
        assert_same_costs(verify(inst, plan), plan)
        checked += 1
    assert checked >= 50


def test_verification_is_frozen(tiny: Instance, space: ConfigSpace) -> None:
    v = verify(tiny, east_plan(tiny, space))
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.objective = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown violation kind"):
        Violation("nonsense", None, "x")  # type: ignore[arg-type]


# ------------------------------------------------------------------- planted: one kind each


def _with_phase(plan: Plan, name: str, **changes: Any) -> Plan:
    """The plan with entry ``name`` edited; its ``info`` (the figures of the configuration
    before the edit) is dropped, so the edit is judged by the rules alone."""
    phases = tuple(
        dataclasses.replace(e, info={}, **changes) if e.name == name else e for e in plan.phases
    )
    return dataclasses.replace(plan, phases=phases)


def test_cost_changed(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    bad = dataclasses.replace(plan, costs={**plan.costs, "energy": plan.costs["energy"] + 1.0})
    (x,) = only(verify(tiny, bad), "cost")
    assert x.phase is None and "energy" in x.message and "+1.000000" in x.message


def test_cost_within_tolerance_passes_and_beyond_fails(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    # rental 104: tolerance 0.01 + 1e-6 x 104 = 0.010104
    near = dataclasses.replace(plan, costs={**plan.costs, "rental": 104.0 + 0.0100})
    far = dataclasses.replace(plan, costs={**plan.costs, "rental": 104.0 + 0.0102})
    assert verify(tiny, near).ok
    only(verify(tiny, far), "cost")


def test_phase_cost_changed(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    prep = plan.phase("prep")
    bad = _with_phase(plan, "prep", costs={**prep.costs, "failure": prep.costs["failure"] + 0.5})
    (x,) = only(verify(tiny, bad), "cost")
    assert x.phase == "prep" and "failure" in x.message


def test_objective_not_the_weighted_total(tiny: Instance, space: ConfigSpace) -> None:
    inst = tiny.replace({"objective.weights": {"rental": 0.5}})
    plan = east_plan(inst, space)
    assert plan.objective is not None
    # weighted: 0.5 x 104 + the other components at weight 1 = total - 52
    assert verify(inst, plan).objective == pytest.approx(plan.costs["total"] - 52.0, abs=1e-5)
    bad = dataclasses.replace(plan, objective=plan.costs["total"])
    (x,) = only(verify(inst, bad), "cost")
    assert "objective" in x.message


def test_stated_energy_kwh_wrong(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    (x,) = only(verify(tiny, dataclasses.replace(plan, energy_kwh=plan.energy_kwh * 1.1)), "cost")
    assert "energy_kwh" in x.message


def test_missing_phase(tiny: Instance, space: ConfigSpace) -> None:
    plan = costed(tiny, space, {"prep": (prep_east(space), (0, 1, 2))})
    (x,) = only(verify(tiny, plan), "missing_phase")
    assert x.phase == "finetune"


def test_unknown_phase(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    ghost = dataclasses.replace(plan.phase("prep"), name="ghost")
    (x,) = only(
        verify(tiny, dataclasses.replace(plan, phases=(*plan.phases, ghost))), "unknown_phase"
    )
    assert x.phase == "ghost"


def test_phase_listed_twice(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    twice = dataclasses.replace(plan, phases=(*plan.phases, plan.phase("prep")))
    only(verify(tiny, twice), "unknown_phase")


def test_done_phase_must_not_run(tiny: Instance, space: ConfigSpace) -> None:
    inst = tiny.replace({"phases.prep.done": True})
    v = verify(inst, east_plan(tiny, space))
    assert [x.kind for x in v.violations if x.phase == "prep"] == ["unknown_phase"]
    # the stated costs include prep's, which the checker does not count
    assert v.kinds == {"unknown_phase", "cost"}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("phases.finetune.gpu_types", ["L4"]),
        ("phases.finetune.regions", ["west"]),
        ("phases.finetune.options.contracts", ["spot"]),
        ("phases.finetune.options.precision", ["fp16"]),
        ("phases.finetune.options.gpu_counts", [16]),
        ("phases.finetune.options.zero", [2, 3]),
        ("phases.finetune.options.tensor_parallel", [2, 4]),
        ("phases.finetune.redundancy", {"spare_nodes": 1}),
        ("phases.finetune.redundancy", {"zones": 2}),
    ],
)
def test_configuration_not_allowed(
    tiny: Instance, space: ConfigSpace, path: str, value: Any
) -> None:
    """The plan is fine for tiny.yaml; a variant that forbids part of its configuration
    (without changing any cost) must reject exactly that."""
    (x,) = only(verify(tiny.replace({path: value}), east_plan(tiny, space)), "configuration")
    assert x.phase == "finetune"


@pytest.mark.parametrize(
    ("phase", "changes", "costable"),
    [
        ("finetune", {"gpu": "H100"}, False),  # no such GPU type
        ("finetune", {"contract": "spot"}, False),  # not preemptible, and east sells no spot A100
        ("finetune", {"tier": "cold"}, False),  # east has no cold tier
        ("prep", {"tp": 2}, True),  # a phase without a model has no tensor parallelism
        ("finetune", {"tp": 16}, True),  # more than a node and not among the options
        ("finetune", {"recompute": "partial"}, False),  # no such recomputation
        ("prep", {"precision": "fp16"}, True),  # not allowed (same peak as bf16 on an A100)
    ],
)
def test_configuration_edits(
    tiny: Instance, space: ConfigSpace, phase: str, changes: dict[str, Any], costable: bool
) -> None:
    v = verify(tiny, _with_phase(east_plan(tiny, space), phase, **changes))
    only(v, "configuration", count=None)
    assert {x.phase for x in v.violations} == {phase}
    assert v.costed is costable


def test_memory_does_not_fit(tiny: Instance, space: ConfigSpace) -> None:
    """8 L4 (24 GB) fit the 1.28B-parameter fine-tune with ZeRO-3 (16 x 1.278e9 / 8 = 2.6 GB
    of states per GPU) but not with ZeRO-0: 16 bytes x 1.278e9 = 20.45 GB of states plus
    3.7 GB of activations, x 1.05 + 1.5 = 26.9 GB > 24 GiB x 0.95 = 25.77 x 0.95 = 24.48 GB
    usable. On one node the ZeRO stage changes neither throughput nor any cost."""
    ft = pick(
        space,
        "finetune",
        gpu="L4",
        region="east",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=0,
        zero=3,
        recompute="none",
        tp=1,
        pp=1,
    )
    plan = costed(
        tiny,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(3, 3 + ft.hours)))},
    )
    assert verify(tiny, plan).ok
    (x,) = only(verify(tiny, _with_phase(plan, "finetune", zero=0)), "memory")
    # 24 GiB x (1 - 0.10 headroom) = 23.19 GB usable
    assert x.phase == "finetune" and "23.19 GB is usable" in x.message


@pytest.mark.parametrize("hours", [(3, 4, 5, 6), (3, 4, 5, 6, 7, 8)])
def test_wrong_number_of_hours(tiny: Instance, space: ConfigSpace, hours: tuple[int, ...]) -> None:
    plan = costed(
        tiny,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (finetune_a100(space), hours)},
    )
    (x,) = only(verify(tiny, plan), "work")
    assert x.phase == "finetune" and "the work needs 5 h" in x.message


def test_hour_past_deadline(tiny: Instance, space: ConfigSpace) -> None:
    # the fine-tune runs hours 3-7; a deadline of 7 leaves hour 7 outside [0, 7)
    (x,) = only(
        verify(tiny.replace({"phases.finetune.deadline": 7}), east_plan(tiny, space)), "window"
    )
    assert x.phase == "finetune"
    assert "outside its window [0, 7) from release to deadline, in hours 7" in x.message


def test_hour_before_release(tiny: Instance, space: ConfigSpace) -> None:
    (x,) = only(verify(tiny.replace({"phases.prep.release": 1}), east_plan(tiny, space)), "window")
    assert x.phase == "prep"


def test_other_horizon(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny, space)
    moved = dataclasses.replace(plan, horizon_start=plan.horizon_start.replace(day=6))
    only(verify(tiny, moved), "window")


def test_gap_in_non_preemptible_phase(tiny: Instance, space: ConfigSpace) -> None:
    plan = costed(
        tiny,
        space,
        {
            "prep": (prep_east(space), (0, 1, 2)),
            "finetune": (finetune_a100(space), (3, 4, 6, 7, 8)),
        },
    )
    (x,) = only(verify(tiny, plan), "contiguity")
    assert x.phase == "finetune" and "pauses in hours 5" in x.message


def test_successor_starts_before_predecessor_ends(tiny: Instance, space: ConfigSpace) -> None:
    plan = costed(
        tiny,
        space,
        {
            "prep": (prep_east(space), (0, 1, 2)),
            "finetune": (finetune_a100(space), (2, 3, 4, 5, 6)),
        },
    )
    (x,) = only(verify(tiny, plan), "precedence")
    assert x.phase == "finetune" and "ends at hour 3" in x.message


def test_two_phases_over_capacity(tiny: Instance) -> None:
    # without precedence both phases may run at once: 4 + 16 A100 > 16 in east, hours 0-2
    inst = tiny.replace({"phases.finetune.predecessors": []})
    space = build_config_space(inst, prune=False)
    ft = finetune_a100(space, gpus=16.0)
    plan = costed(
        inst,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(ft.hours)))},
    )
    (x,) = only(verify(inst, plan), "capacity")
    assert x.phase is None and "hours 0-2" in x.message and "20 GPUs" in x.message


def test_capacity_hour_by_hour(tiny: Instance, space: ConfigSpace) -> None:
    # east sells 16 A100 until hour 5, then 4: the fine-tune's 8 GPUs break hours 5-7
    inst = tiny.replace({"regions.east.capacity.A100": [16] * 5 + [4] * 43})
    (x,) = only(verify(inst, east_plan(tiny, space)), "capacity")
    assert x.phase == "finetune" and "hours 5-7" in x.message


def test_reserved_usage_above_pool(tiny: Instance) -> None:
    inst = tiny.replace(RESERVED)
    space = build_config_space(inst, prune=False)
    ft = finetune_a100(space, contract="reserved")
    plan = costed(
        inst,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(3, 8)))},
        {("east", "A100"): 4},
    )
    (x,) = only(verify(inst, plan), "reserved")
    assert x.phase == "finetune" and "R = 4" in x.message


def test_reserved_commitment_out_of_range(tiny: Instance) -> None:
    inst = tiny.replace(RESERVED)
    space = build_config_space(inst, prune=False)
    ft = finetune_a100(space)
    plan = costed(
        inst,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (ft, tuple(range(3, 8)))},
        {("east", "A100"): 2},
    )
    (x,) = only(verify(inst, plan), "reserved")
    assert "[4, 16]" in x.message


def test_carbon_cap_exceeded(tiny: Instance, space: ConfigSpace) -> None:
    plan = east_plan(tiny.replace(CARBON), space)
    assert verify(tiny.replace({**CARBON, "objective.carbon_cap_tonnes": 0.016}), plan).ok
    # 0.0152544 t emitted against a 0.015 t cap
    capped = tiny.replace({**CARBON, "objective.carbon_cap_tonnes": 0.015})
    (x,) = only(verify(capped, plan), "carbon_cap")
    assert "0.0152544" in x.message


def test_kinds_are_the_fourteen_planted() -> None:
    """Guard: a new kind must get its own planted test (above; segments and migrations in
    tests/solvers/test_segments.py, reserved terms in tests/instance/test_prices.py)."""
    assert set(KINDS) == {
        "missing_phase",
        "unknown_phase",
        "configuration",
        "memory",
        "work",
        "window",
        "contiguity",
        "precedence",
        "capacity",
        "reserved",
        "carbon_cap",
        "cost",
        "figure",
        "segments",
        "migration",
    }


# ------------------------------------------------------------------- bugs in the planner


def test_a_configuration_bug_shows_as_cost_disagreement(tiny: Instance, space: ConfigSpace) -> None:
    """A planner that got facility power 10% wrong states wrong energy, failure and totals."""
    ft = finetune_a100(space)
    wrong = dataclasses.replace(ft, facility_kw=ft.facility_kw * 1.1)
    plan = costed(
        tiny,
        space,
        {"prep": (prep_east(space), (0, 1, 2)), "finetune": (wrong, tuple(range(3, 8)))},
    )
    v = verify(tiny, plan)
    assert v.kinds == {"cost", "figure"}
    text = " ".join(x.message for x in v.violations)
    assert "energy cost:" in text and "energy_kwh" in text and "objective" in text
    # the kWh lost to failures (info) follow the same wrong power
    assert "info.lost_kwh" in text
    assert any(x.phase == "finetune" for x in v.violations)


def test_a_wrong_hour_count_in_the_planner_shows_as_work(
    tiny: Instance, space: ConfigSpace
) -> None:
    ft = finetune_a100(space)
    wrong = dataclasses.replace(ft, hours=ft.hours - 1)
    plan = costed(
        tiny,
        space,
        {
            "prep": (prep_east(space), (0, 1, 2)),
            "finetune": (wrong, tuple(range(3, 3 + wrong.hours))),
        },
    )
    only(verify(tiny, plan), "work")


def test_checker_does_not_import_the_planner() -> None:
    code = (
        "import sys, planner.checker; "
        "bad = [m for m in sys.modules if m in ('planner.model.configs', 'planner.model.costs') "
        "or m.startswith('formulations')]; print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


# ----------------------------------------------------------------------------- plan files


def test_plan_file_round_trip(tiny: Instance, space: ConfigSpace, tmp_path: Path) -> None:
    plan = east_plan(tiny, space)
    path = tmp_path / "plan.json"
    plan.write(path)
    again = read_plan(path)
    assert again.phases == plan.phases
    assert verify(tiny, again).ok


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["phases"][1].pop("gpu"), "phases[1] (finetune).gpu"),
        (lambda d: d["phases"][0].update(hours=[0, 1.5]), "phases[0] (prep).hours"),
        (lambda d: d["phases"][0].update(zero="one"), "phases[0] (prep).zero"),
        (lambda d: d["costs"].pop("total"), "costs.total"),
        (lambda d: d.update(horizon_start="2023-06-05T00:00:00"), "horizon_start"),
        (lambda d: d.update(phases={}), "phases"),
        (lambda d: d.update(reserved=[{"region": "east", "gpu": "A100"}]), "reserved[0].gpus"),
        (lambda d: d.update(format="other/9"), "format"),
        # found by the long fuzz run: an hour of 1e308 (a whole number to JSON) made the
        # contiguity check's message enumerate the gap before it, until memory ran out
        (lambda d: d["phases"][1]["hours"].append(1e308), "phases[1] (finetune).hours"),
        (lambda d: d["phases"][1]["hours"].append(-(10**9)), "phases[1] (finetune).hours"),
    ],
)
def test_plan_file_field_errors(tiny: Instance, space: ConfigSpace, edit: Any, field: str) -> None:
    d = east_plan(tiny, space).to_dict()
    edit(d)
    with pytest.raises(PlanFileError) as info:
        plan_from_dict(d, "p.json")
    assert info.value.file == "p.json"
    assert [e.path for e in info.value.errors] == [field]


# ----------------------------------------------------------------------------- CLI


def _cli() -> typer.Typer:
    """A root app holding ``verify`` alone (:func:`builders.command_app`)."""
    return command_app("verify")


def _run(*args: str) -> Any:
    result = CliRunner().invoke(_cli(), ["verify", *args])
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def plan_file(tiny: Instance, space: ConfigSpace, tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    east_plan(tiny, space).write(path)
    return path


def test_cli_valid_plan_exits_0(plan_file: Path) -> None:
    result = _run(str(TINY), str(plan_file))
    assert result.exit_code == 0, result.output
    assert "valid" in result.output and "104.0000" in result.output


def test_cli_json(plan_file: Path) -> None:
    result = _run(str(TINY), str(plan_file), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["violations"] == []
    assert out["figures"]["rental"] == {"stated": 104.0, "recomputed": 104.0, "match": True}


def test_cli_violation_exits_1(plan_file: Path) -> None:
    d = json.loads(plan_file.read_text())
    d["costs"]["storage"] += 3.0
    plan_file.write_text(json.dumps(d))
    result = _run(str(TINY), str(plan_file), "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert [x["kind"] for x in out["violations"]] == ["cost"]
    assert out["figures"]["storage"]["match"] is False
    human = _run(str(TINY), str(plan_file))
    assert human.exit_code == 1 and "differs" in human.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "cannot parse"),
        ('{"phases": []}', "horizon_start: required field is missing"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_cli_unreadable_plan_exits_2(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(content)
    result = _run(str(TINY), str(path))
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and expected in result.output


def test_cli_plan_missing_a_field_exits_2(plan_file: Path) -> None:
    d = json.loads(plan_file.read_text())
    del d["phases"][0]["tier"]
    plan_file.write_text(json.dumps(d))
    result = _run(str(TINY), str(plan_file))
    assert result.exit_code == 2
    assert f"{plan_file}: phases[0] (prep).tier: required field is missing" in result.output


def test_cli_missing_files_exit_2(plan_file: Path, tmp_path: Path) -> None:
    result = _run(str(TINY), str(tmp_path / "absent.json"))
    assert result.exit_code == 2 and "file does not exist" in result.output
    bad_instance = tmp_path / "bad.yaml"
    bad_instance.write_text("name: x\n")
    result = _run(str(bad_instance), str(plan_file))
    assert result.exit_code == 2 and "horizon" in result.output


def test_cli_negative_tolerance_exits_2(plan_file: Path) -> None:
    result = _run(str(TINY), str(plan_file), "--abs-tol", "-1")
    assert result.exit_code == 2 and "non-negative" in result.output


def test_non_finite_json_constants_are_refused(tmp_path: Path, plan_file: Path) -> None:
    text = re.sub(r'"energy_kwh": [0-9.e+-]+', '"energy_kwh": NaN', plan_file.read_text())
    path = tmp_path / "nan.json"
    path.write_text(text)
    assert '"energy_kwh": NaN' in text
    with pytest.raises(PlanFileError, match="NaN is not a number JSON allows"):
        read_plan(path)


@pytest.mark.parametrize(
    "field", [{"offload": "[/]\x1b[31m"}, {"zero": 7}, {"recompute": "most"}], ids=str
)
def test_a_model_less_phase_with_an_unknown_layout_is_refused_not_priced(
    tiny: Instance, space: ConfigSpace, field: dict[str, Any]
) -> None:
    # found by the long fuzz run: a data-preparation phase (no model) whose plan named an
    # unknown offload reached the memory formula, which raised; it is a violation instead
    plan = east_plan(tiny, space)
    odd = dataclasses.replace(plan.phase("prep"), **field)
    bad = dataclasses.replace(plan, phases=(odd, *(p for p in plan.phases if p.name != "prep")))
    v = verify(tiny, bad)
    assert not v.ok
    assert any("a phase without a model has no parallel layout" in x.message for x in v.violations)


def test_a_long_pause_is_named_by_its_ends(tiny: Instance, space: ConfigSpace) -> None:
    # a non-preemptible phase pausing from hour 3 to hour 199,999 (within the plan file's
    # bound): the message names the gap's ends, it does not list its hours
    plan = east_plan(tiny, space)
    ft = plan.phase("finetune")
    far = dataclasses.replace(ft, hours=(*ft.hours[:1], 200_000))
    v = verify(tiny, dataclasses.replace(plan, phases=(plan.phase("prep"), far)))
    (x,) = [x for x in v.violations if x.kind == "contiguity"]
    assert f"pauses in hours {ft.hours[0] + 1}-199999 " in x.message
