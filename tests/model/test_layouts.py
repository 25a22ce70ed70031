"""Layouts, memory conventions, offload and checkpointing schemes as choices of the planner
(issue 12): each option changes what the physics says it should, the planner chooses among
them, and the independent checker accepts the plan and catches a planted violation.

Hand arithmetic in the comments; the physics formulas themselves are tested in
tests/model/test_memory_conventions.py and tests/model/test_scaling.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from builders import assert_valid, instance_from, tiny_dict

from planner.checker import verify
from planner.instance.model import Instance
from planner.model.configs import Config, build_config_space, enumerate_phase
from planner.model.costs import cost_plan
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.model.schedule import schedule_of
from planner.physics.memory import activation_bytes_per_layer
from planner.solve import solve

#: m1b of tests/data/tiny.yaml: L = 24, h = 2048, 16 heads, s = 2048, V = 32000,
#: P = 1,278,328,832 (Narayanan eq. 2).
P_M1B = 1_278_328_832


def finetune(**options: Any) -> dict[str, Any]:
    """tiny.yaml with the fine-tune on 8 east A100 and the given options."""
    d = tiny_dict()
    ft = d["phases"][1]
    ft["regions"] = ["east"]
    ft["gpu_types"] = ["A100"]
    ft["options"] = {
        "gpu_counts": [8],
        "zero": [1],
        "recompute": ["none"],
        "tensor_parallel": [1],
        **options,
    }
    return d


def configs(d: dict[str, Any], phase: str = "finetune") -> tuple[Instance, tuple[Config, ...]]:
    """Every configuration of the phase that fits in memory (window and capacity aside)."""
    inst = instance_from(d)
    cs, _ = enumerate_phase(inst, inst.phase(phase), every=True)
    return inst, tuple(c for c in cs if c.memory.fits)


def one(cs: tuple[Config, ...], **want: Any) -> Config:
    found = [
        c
        for c in cs
        if all(getattr(c.layout, k, getattr(c, k, None)) == v for k, v in want.items())
    ]
    assert found, want
    return min(found, key=lambda c: (c.spare_gpus, c.tier))


def plan_of(inst: Instance, c: Config) -> Plan:
    """prep on its cheapest configuration in hours 0..n-1, then ``c`` right after."""
    space = build_config_space(inst)
    prep = min(space["prep"], key=lambda x: (x.hours, x.rental_per_h))
    return cost_plan(
        inst,
        schedule_of(
            {
                "prep": (prep, tuple(range(prep.hours))),
                c.phase: (c, tuple(range(prep.hours, prep.hours + c.hours))),
            }
        ),
    )


def edited(plan: Plan, name: str, **changes: Any) -> Plan:
    phases = tuple(dataclasses.replace(e, **changes) if e.name == name else e for e in plan.phases)
    return dataclasses.replace(plan, phases=phases)


# ----------------------------------------------------------------------------- pipelines


def test_uneven_pipeline_stages_are_allowed_and_charged() -> None:
    # 24 layers on pp 5: stages of 5, 5, 5, 5, 4 (pp need not divide the layers). The slowest
    # stage sets the pace, (24 / 5) / 5 = 0.96, and the 1F1B bubble with 16 micro-batches
    # costs 16 / (16 + 4) = 0.8: eff_layout = 0.768 on 10 GPUs (tp 1, pp 5, dp 2).
    inst, cs = configs(finetune(pipeline_parallel=[5], gpu_counts=[10]))
    c = one(cs, pp=5)
    assert c.layout.dp == 2
    assert c.throughput.eff_layout == pytest.approx(0.96 * 0.8)
    # memory follows the most loaded stage: 5/24 of the layers, so states 16 x P x 5/24 / ...
    # ZeRO-1 over dp 2: (2 + 2) x P 5/24 + 12 x P 5/24 / 2 = 10 x P x 5/24 bytes.
    assert c.memory.model_states_gb == pytest.approx(10 * P_M1B * 5 / 24 / 1e9)
    plan = plan_of(inst, c)
    assert_valid(inst, plan)
    # pp beyond the layers is refused by the planner and by the checker
    inst25, cs25 = configs(finetune(pipeline_parallel=[25], gpu_counts=[25]))
    assert cs25 == ()
    v = verify(inst25, edited(plan, "finetune", pp=25, gpus=25.0, info={}))
    assert any("exceeds the model's 24 layers" in x.message for x in v.violations)
    assert not v.costed


def test_microbatches_and_interleaving_are_the_planners_choice() -> None:
    # pp 4 on 8 GPUs: the bubble is (p - 1) / (v m). m = 16, v = 1: 16 / 19 = 0.842;
    # m = 64, v = 2: 128 / 131 = 0.977, at 1 + 3/8 = 1.375x the activations of the first
    # stage. The planner picks the faster one when it fits: 1.5e10 tokens, 6ND = 1.1505e20
    # FLOPs at 8 x 312e12 x 0.4 = 9.984e14 FLOP/s = 32.0 h ideal; 38.0 h at m = 16, 33.5 h
    # at m = 64, 32.8 h -> 33 h interleaved.
    d = finetune(pipeline_parallel=[4], microbatches=[16, 64], interleave=[1, 2])
    d["phases"][1]["work"] = {"tokens": 1.5e10}
    inst, cs = configs(d)
    slow, fast = one(cs, microbatches=16, virtual=1), one(cs, microbatches=64, virtual=2)
    assert slow.throughput.eff_layout == pytest.approx(16 / 19)
    assert fast.throughput.eff_layout == pytest.approx(128 / 131)
    assert fast.memory.activations_gb == pytest.approx(1.375 * slow.memory.activations_gb)
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    p = res.plan.phase("finetune")
    assert (p.pp, p.microbatches, p.virtual) == (4, 64, 2)
    assert p.info["layout_efficiency"] == pytest.approx(128 / 131, abs=1e-6)
    assert_valid(inst, res.plan)
    # interleaving needs micro-batches a multiple of pp: m = 6 on pp 4 is refused
    _, bad = configs(finetune(pipeline_parallel=[4], microbatches=[6], interleave=[2]))
    assert bad == ()


# ----------------------------------------------------------------------------- parallelism


def test_sequence_parallelism_is_an_explicit_choice() -> None:
    # tp 2, no recompute, FlashAttention: with sequence parallelism 34 s b h / t per layer;
    # plain tensor parallelism keeps 10 s b h whole: s b h (10 + 24 / t) = 22 s b h, 1.29x
    # (Korthikanti et al. 2022 Table 2). s b h = 2048 x 1 x 2048.
    _, on = configs(finetune(tensor_parallel=[2], sequence_parallel=[True]))
    _, off = configs(finetune(tensor_parallel=[2], sequence_parallel=[False]))
    a, b = one(on, tp=2), one(off, tp=2)
    assert (a.layout.sp, b.layout.sp) == (True, False)
    per_on = activation_bytes_per_layer(2048, 1, 2048, 16, 2, "none", True, 2.0)
    per_off = activation_bytes_per_layer(
        2048, 1, 2048, 16, 2, "none", True, 2.0, sequence_parallel=False
    )
    assert per_on == pytest.approx(17 * 2048 * 2048) and per_off == pytest.approx(22 * 2048**2)
    # 24 layers, plus (sequence-parallel only) the output terms 4 s b h / t (1 + V / h)
    assert b.memory.activations_gb - a.memory.activations_gb == pytest.approx(
        (24 * (per_off - per_on) + 4 * 2048 * 2048 * (1 + 32000 / 2048) * (1 - 1 / 2)) / 1e9
    )
    # both run at the same speed: sequence parallelism moves the same bytes
    assert a.throughput.eff_layout == b.throughput.eff_layout == pytest.approx(0.98)


def test_context_parallelism_splits_the_sequence() -> None:
    # cp 2 on 8 GPUs: dp 4, every rank holds s / 2 of each sequence: half the activations;
    # states sharded over dp x cp = 8 ranks as without it.
    _, cs = configs(finetune(context_parallel=[1, 2]))
    one_cp, two_cp = one(cs, cp=1), one(cs, cp=2)
    assert (one_cp.layout.dp, two_cp.layout.dp) == (8, 4)
    assert two_cp.memory.activations_gb == pytest.approx(one_cp.memory.activations_gb / 2)
    assert two_cp.memory.model_states_gb == pytest.approx(one_cp.memory.model_states_gb)
    # 2 cp must divide the sequence: cp 3 on 2048 tokens is refused
    _, none = configs(finetune(context_parallel=[3], gpu_counts=[9]))
    assert none == ()


def mixtral(**options: Any) -> dict[str, Any]:
    """Mixtral 8x7B (preset) fine-tuned on 16 east H100-like GPUs (80 GiB, 8 per node)."""
    d = finetune(**options)
    d["models"]["m1b"] = {"preset": "mixtral-8x7b", "seq_len": 2048}
    d["gpu_types"]["A100"]["peak_tflops"]["bf16"] = 989.4
    d["regions"]["east"]["capacity"]["A100"] = 16
    d["phases"][1]["work"] = {"tokens": 1e8}
    d["phases"][1]["options"]["gpu_counts"] = [16]
    d["phases"][1]["options"]["recompute"] = ["full"]
    return d


def test_expert_parallelism_makes_mixtral_fit_and_the_checker_knows() -> None:
    # Mixtral: 46.70e9 parameters, 45.10e9 of them routed experts (tests/model/test_presets.py).
    # 16 GPUs, ZeRO-1, ep 1: every GPU holds 46.7e9 x 4 bytes = 187 GB: no fit. ep 8: dense
    # 1.61e9 x (4 + 12 / 16) = 7.65 GB, experts 45.10e9 / 8 x (4 + 12 / (16 / 8)) = 56.37 GB:
    # 64.0 GB of states, fits in 80 GiB x 0.95 = 81.6 GB with full recompute.
    inst, cs = configs(mixtral(expert_parallel=[1, 8]))
    assert {c.layout.ep for c in cs if c.memory.fits} == {8}
    c = one(cs, ep=8)
    dense, experts = 46_702_792_704 - 32 * 8 * 176_160_768, 32 * 8 * 176_160_768
    assert c.memory.model_states_gb == pytest.approx(
        (dense * (4 + 12 / 16) + experts / 8 * (4 + 12 / 2)) / 1e9
    )
    # FLOPs on the active parameters: 6 x (12.88e9 - 0.13e9 input table) per token
    assert c.compute_hours * c.flops_per_s * 3600 == pytest.approx(6 * 12_748_853_248 * 1e8)
    # the all-to-all over NVLink (ep 8 in one node, 600/2 GB/s) costs a little throughput
    assert 0.9 < c.throughput.eff_layout < 1.0
    res = solve(instance_from(mixtral(expert_parallel=[1, 8])), time_limit=30)
    assert res.plan is not None and res.plan.phase("finetune").ep == 8
    assert_valid(inst, res.plan)
    # planted: the same plan claiming ep 1 does not fit (memory), and ep 3 does not divide
    # the 8 experts (configuration)
    v = verify(inst, edited(res.plan, "finetune", ep=1, info={}))
    assert "memory" in v.kinds
    v = verify(inst, edited(res.plan, "finetune", ep=3, info={}))
    assert any("does not divide the model's 8 experts" in x.message for x in v.violations)


def test_cpu_offload_fits_a_model_at_the_cost_of_pcie_time() -> None:
    # 13B-class model (P = 13e9, L = 40, h = 5120) on 8 A100 with ZeRO-3: 16 x 13e9 / 8
    # = 26 GB of states; with the optimizer offloaded the GPU keeps its 2-byte weight shard
    # 2 x 13e9 / 8 = 3.25 GB (+ the gathered layer); the CPU takes 14 x 13e9 / 8 = 22.75 GB.
    d = finetune(zero=[3], offload=["none", "optimizer"], recompute=["full"])
    d["models"]["m1b"] = {"params": 13e9, "layers": 40, "hidden": 5120, "heads": 40}
    d["gpu_types"]["A100"]["memory_gb"] = 24
    d["phases"][1]["work"] = {"tokens": 5e8}
    inst, cs = configs(d)
    assert {c.layout.offload for c in cs} == {"optimizer"}  # without offload: no fit
    off = one(cs, offload="optimizer")
    assert off.memory.cpu_gb == pytest.approx(14 * 13e9 / 8 / 1e9)
    assert off.memory.model_states_gb - off.memory.gather_gb == pytest.approx(2 * 13e9 / 8 / 1e9)
    # PCIe per step: gradients out and weights back for the owned 13e9 / 8 parameters,
    # 4 bytes x 1.625e9 = 6.5e9 B at 25 GB/s = 0.26 s, against the step's compute 6 x 13e9 x
    # 2048 x 16 / (312e12 x 0.4 x 0.75) = 27.3 s (one replica per GPU, ZeRO-3): 0.9906.
    step = 6 * 13e9 * 2048 * 16 / (312e12 * 0.4 * 0.75)
    assert off.throughput.eff_layout == pytest.approx(step / (step + 0.26), rel=1e-6)
    res = solve(inst, time_limit=30)
    assert res.plan is not None and res.plan.phase("finetune").offload == "optimizer"
    assert_valid(inst, res.plan)
    assert res.plan.phase("finetune").info["cpu_offload_gb"] == pytest.approx(22.75, abs=1e-3)


# ----------------------------------------------------------------------------- memory


def test_memory_convention_is_the_instances_choice_and_the_checker_follows_it() -> None:
    # ZeRO-1 over 8 with the ZeRO paper's 16 bytes: 4 P + 12 P / 8 = 5.5 P; Megatron keeps
    # fp32 gradients: 2 + 4 + 12 / 8 = 7.5 P; DeepSpeed's extra fp32 gradient copy is sharded
    # with the optimizer: 4 + 16 / 8 = 6 P.
    for conv, per in (("zero", 5.5), ("megatron", 7.5), ("deepspeed", 6.0)):
        d = finetune()
        d["memory"] = {"convention": conv}
        inst, cs = configs(d)
        c = one(cs, zero=1)
        assert c.memory.model_states_gb == pytest.approx(per * P_M1B / 1e9), conv
        assert_valid(inst, plan_of(inst, c))
    # a plan made under one convention, judged under a stricter one on a small GPU: the
    # checker recomputes the memory its instance states and finds it does not fit.
    # 13.7 GiB = 14.71 GB, 13.97 GB usable: ZeRO's 5.5 P = 7.03 GB of states + 3.72 GB of
    # activations, x 1.05 + 1.5 = 12.79 GB fits; Megatron's 7.5 P = 9.59 GB: 15.47 GB does not.
    d = finetune()
    d["gpu_types"]["A100"]["memory_gb"] = 13.7
    inst, cs = configs(d)
    plan = plan_of(inst, one(cs, zero=1))
    assert verify(inst, plan).ok
    d["memory"] = {"convention": "megatron"}
    v = verify(instance_from(d), plan)
    assert "memory" in v.kinds and "figure" in v.kinds  # and the info it stated differs


# ----------------------------------------------------------------------------- checkpoints


def test_checkpointing_schemes_are_the_planners_choice() -> None:
    # A slow tier (0.2 GB/s per node): the fine-tune's 17.9 GB checkpoint takes 89.5 s to
    # write. Synchronous: training stalls for all of it; asynchronous: for the 2.24 GB shard
    # to host at 25 GB/s (0.089 s), the write behind; in memory: the same stall, the reload
    # from a peer. The planner picks a background scheme, and it costs less.
    d = finetune(checkpoint=["sync", "async", "in_memory"])
    d["regions"]["east"]["storage"] = {
        "slow": {"usd_per_gb_month": 0.02, "write_gb_per_s": 0.2, "read_gb_per_s": 0.2}
    }
    d["gpu_types"]["A100"]["failures_per_gpu_hour"] = 1e-3  # a rate that makes it matter
    inst, cs = configs(d)
    ck_gb = 14 * P_M1B / 1e9
    sync, asy, mem = (
        one(cs, checkpoint="sync"),
        one(cs, checkpoint="async"),
        one(cs, checkpoint="in_memory"),
    )
    assert sync.checkpoint_write_s == pytest.approx(ck_gb / 0.2)
    assert asy.checkpoint_write_s == pytest.approx(ck_gb / 8 / 25)
    assert asy.checkpoint_persist_s == pytest.approx(ck_gb / 8 / 25 + ck_gb / 0.2)
    assert mem.checkpoint_reload_s == pytest.approx(ck_gb / 8 / 25)  # one shard from a peer
    assert sync.loss_h > asy.loss_h > mem.loss_h
    res = solve(inst, time_limit=30)
    assert res.plan is not None and res.plan.phase("finetune").checkpoint != "sync"
    assert_valid(inst, res.plan)
    only_sync = solve(
        instance_from(
            finetune(checkpoint=["sync"]) | {"regions": d["regions"], "gpu_types": d["gpu_types"]}
        ),
        time_limit=30,
    )
    assert only_sync.plan is not None and only_sync.objective > res.objective
    # planted: a scheme the phase does not allow
    v = verify(
        instance_from(
            finetune(checkpoint=["sync"]) | {"regions": d["regions"], "gpu_types": d["gpu_types"]}
        ),
        res.plan,
    )
    assert any("checkpointing" in x.message and "not among" in x.message for x in v.violations)


def test_planted_failure_figures_are_caught() -> None:
    inst = instance_from(finetune())
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    assert_valid(inst, res.plan)
    e = res.plan.phase("finetune")
    for key in ("expected_failures", "lost_hours", "lost_kwh", "effective_training_time",
                "checkpoint_interval_s", "memory_gb", "gather_gb"):  # fmt: skip
        bad = edited(res.plan, "finetune", info={**e.info, key: (e.info[key] or 0) * 1.5 + 1})
        v = verify(inst, bad)
        assert v.kinds == {"figure"}, (key, [str(x) for x in v.violations])
        assert f"info.{key}" in v.violations[0].message


# ----------------------------------------------------------------------------- dominance


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_price_range_dominance_keeps_the_optimum(seed: int) -> None:
    """Configurations are pruned when another is cheaper at both ends of the prices the phase
    may meet (the hour cost is linear in the price): the optimum with and without pruning is
    the same."""
    from formulations.pipeline import solve_milp

    d = tiny_dict()
    d["regions"]["east"]["electricity"] = {
        "values": [40 + (17 * t + 11 * seed) % 90 for t in range(48)]
    }
    d["regions"]["east"]["storage"] = {
        "hot": {"usd_per_gb_month": 0.3, "write_gb_per_s": 5.0, "read_gb_per_s": 5.0},
        "cold": {
            "usd_per_gb_month": 0.02,
            "write_gb_per_s": 0.1 * (seed + 1),
            "read_gb_per_s": 0.1,
        },
    }
    d["gpu_types"]["A100"]["failures_per_gpu_hour"] = 1e-3 * (seed + 1)
    d["phases"][1]["options"]["checkpoint"] = ["sync", "async"]
    inst = instance_from(d)
    full = build_config_space(inst, prune=False)
    pruned = build_config_space(inst)
    assert pruned.size < full.size
    a = solve_milp(inst, SolveOptions(gap=0.0, backend="highs"), space=full)
    b = solve_milp(inst, SolveOptions(gap=0.0, backend="highs"), space=pruned)
    assert a.termination.value == b.termination.value == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert_valid(inst, b.plan)
