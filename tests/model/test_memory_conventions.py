"""Memory conventions and layouts against DeepSpeed's and Megatron-LM's own estimators,
Korthikanti et al.'s plain-TP activations, uneven pipeline stages and GPU capacity units.

DeepSpeed's printed figures are from its documentation page "Memory Requirements"
(docs/code-docs/source/memory.rst, the "cold" examples with total_params=2851e6,
largest_layer_params=32e6 on 1 node x 8 GPUs) and the Hugging Face transformers DeepSpeed
guide (bigscience/T0_3B: "2783M total params, 65M largest layer params"). DeepSpeed prints
bytes / 2^30 with the suffix "GB".
"""

from __future__ import annotations

import pytest

from planner.physics import layout
from planner.physics.memory import (
    GIB,
    MemoryAllowances,
    activation_bytes,
    activation_bytes_per_layer,
    capacity_bytes,
    deepspeed_zero2_estimate,
    deepspeed_zero3_estimate,
    megatron_weight_and_optimizer_bytes,
    memory_per_gpu,
    model_state_breakdown,
    model_state_bytes,
    offload_seconds_per_step,
    state_bytes_per_param,
)
from planner.physics.transformer import ModelDims, dims

P, LARGEST = 2851e6, 32e6


def gib(x: float) -> float:
    return round(x / GIB, 2)


def test_deepspeed_zero2_current_estimator_and_documented_cold_example() -> None:
    # DeepSpeed docs ("Memory Requirements"), ZeRO-2 cold, 2851M params, 1 node x 8 GPUs:
    #   127.45GB | 5.31GB | offload_optimizer=cpu ; 127.45GB | 15.93GB | offload_optimizer=none
    # GPU offloaded 2P = 5.702e9 B = 5.31 GiB; CPU P x max(32, 16) x 1.5 = 136.848e9 = 127.45;
    # the documented no-offload figure 4P + 16P/8 = 6P = 17.106e9 = 15.93 GiB.
    cpu, gpu = deepspeed_zero2_estimate(P, 8, 1, cpu_offload=True)
    assert (gib(cpu), gib(gpu)) == (127.45, 5.31)
    _, old = deepspeed_zero2_estimate(P, 8, 1, cpu_offload=False, documented=True)
    assert gib(old) == 15.93
    # The current estimator (deepspeed/runtime/zero/stage_1_and_2.py,
    # estimate_zero2_model_states_mem_needs: gpu_mem = 2 * total_params
    # + int(18 * total_params / total_gpus), "18 = 2_grads_16bit + 4_grads_32bit
    # + 4_params_32bit + 8_optimizer_states_32bit"): 2P + 18P/8 = 4.25P = 12.117e9 B
    # = 11.28 GiB.
    _, gpu = deepspeed_zero2_estimate(P, 8, 1, cpu_offload=False)
    assert gib(gpu) == 11.28
    # Our convention "deepspeed" gives the current estimator's GPU bytes: 2 P + (2 + 12 + 4) P / 8.
    ours = model_state_bytes(P, "bf16", "adam", 2, dp=8, convention="deepspeed")
    assert ours == pytest.approx(gpu, rel=1e-9)
    off = model_state_breakdown(
        P, "bf16", "adam", 2, 8, convention="deepspeed", offload_optimizer=True
    )
    assert gib(off.gpu_bytes) == 5.31


@pytest.mark.parametrize(
    ("offload_opt", "offload_par", "zero_init", "cpu_gib", "gpu_gib"),
    [
        # DeepSpeed docs, ZeRO-3 cold, 2851M total / 32M largest layer, 1 node x 8 GPUs:
        # gather 4 x 32e6 = 128e6 B = 0.12 GiB; CPU 18 P x 1.5 = 76.977e9 = 71.69 GiB.
        (True, True, True, 71.69, 0.12),
        # zero_init=0: P x max(4 x 8, 18) x 1.5 = 136.848e9 = 127.45 GiB.
        (True, True, False, 127.45, 0.12),
        # optimizer only: GPU 128e6 + 2P/8 = 840.75e6 = 0.78; CPU 16 P x 1.5 = 63.72 GiB.
        (True, False, True, 63.72, 0.78),
        (True, False, False, 127.45, 0.78),
        # no offload: GPU 128e6 + 18P/8 = 6,542.75e6 = 6.09; CPU 32e6 x 4 x 8 x 1.5 = 1.43.
        (False, False, True, 1.43, 6.09),
        (False, False, False, 127.45, 6.09),
    ],
)
def test_deepspeed_zero3_documented_cold_example(
    offload_opt: bool, offload_par: bool, zero_init: bool, cpu_gib: float, gpu_gib: float
) -> None:
    cpu, gpu = deepspeed_zero3_estimate(P, LARGEST, 8, 1, offload_opt, offload_par, zero_init)
    assert (gib(cpu), gib(gpu)) == (cpu_gib, gpu_gib)
    # Our "deepspeed" convention with the gathered layer gives DeepSpeed's GPU figure.
    ours = model_state_breakdown(
        P,
        "bf16",
        "adam",
        3,
        8,
        convention="deepspeed",
        largest_layer_params=LARGEST,
        offload_optimizer=offload_opt,
        offload_params=offload_par,
    )
    assert gib(ours.gpu_bytes) == gpu_gib


def test_deepspeed_t0_3b_live_example_within_rounding() -> None:
    # HF transformers DeepSpeed guide: T0_3B, "2783M total params, 65M largest layer params",
    # 1 GPU: 0.25 / 5.43 / 46.91 GB per GPU (both offloaded / optimizer only / none); 2 GPUs:
    # 2.84 / 23.58 (optimizer only / none). The printed M are truncated: with P in
    # [2783e6, 2784e6) and the largest layer T5's embedding 32128 x 2048 = 65,798,144,
    # P = 2783.5e6 reproduces every figure to 0.01 GiB (18 x 0.5e6 / 2^30 = 0.008 GiB).
    p, big = 2783.5e6, 32128 * 2048
    rows = [
        ((1, True, True), 0.25),
        ((1, True, False), 5.43),
        ((1, False, False), 46.91),
        ((2, True, False), 2.84),
        ((2, False, False), 23.58),
    ]
    for (n, oo, op), published in rows:
        _, gpu = deepspeed_zero3_estimate(p, big, n, 1, oo, op, True)
        assert gpu / GIB == pytest.approx(published, abs=0.01)


def test_deepspeed_convention_is_12_to_15_percent_above_zero_for_stage3() -> None:
    # ZeRO paper 16 B/param vs DeepSpeed's 18 B/param + the gathered largest layer, for
    # P = 8.03e9 on 64 GPUs with an MLP matrix 4096 x 14336 = 58,720,256 as the largest module:
    # ZeRO 16 x 8.03e9 / 64 = 2.0075e9; DeepSpeed 18 x 8.03e9 / 64 + 4 x 58,720,256
    # = 2.2584e9 + 0.2349e9 = 2.4933e9, i.e. 12.5% (states) to 24% (with the gather) more.
    zero = model_state_bytes(8.03e9, "bf16", "adam", 3, dp=64)
    ds = model_state_bytes(
        8.03e9, "bf16", "adam", 3, dp=64, convention="deepspeed", largest_layer_params=4096 * 14336
    )
    assert zero == pytest.approx(2.0075e9)
    assert 1.12 <= ds / zero <= 1.25
    # Without the gather term, exactly 18 / 16 = 1.125.
    ds0 = model_state_breakdown(8.03e9, "bf16", "adam", 3, 64, convention="deepspeed")
    assert ds0.gpu_bytes / zero == pytest.approx(1.125)


def test_megatron_18_bytes_and_distributed_optimizer() -> None:
    # Megatron-LM theoretical_memory_usage: 18 B/param without the distributed optimizer,
    # 6 + 12/dp with it (issue #654: 2 + 4 main params... = 2 bf16 + 4 fp32 grads + 12 Adam).
    b = state_bytes_per_param("adam", "bf16", "megatron")
    assert (b.weights, b.grads, b.optimizer, b.total) == (2.0, 4.0, 12.0, 18.0)
    assert model_state_bytes(1e9, "bf16", "adam", 0, dp=1, convention="megatron") == 18e9
    # ZeRO-1 = the distributed optimizer: (6 + 12/16) x 1e9 = 6.75e9.
    assert model_state_bytes(1e9, "bf16", "adam", 1, dp=16, convention="megatron") == 6.75e9
    # Megatron's own function for GPT-3 175B on t = 8, p = 8, dp = 16 with the distributed
    # optimizer: transformer params 10 L h^2 (1 + 1/5 + 2/(5h) + 1/(5Lh)) = 12 L h^2 + 4 L h
    # + 2h = 173,946,175,488 + 4,718,592 + 24,576 = 173,950,918,656; most loaded shard
    # (173,950,918,656 / 8 + 12288 x 51200) / 8 = (21,743,864,832 + 629,145,600) / 8
    # = 2,796,626,304 params x (6 + 12/16) = 18,877,227,552 bytes.
    got = megatron_weight_and_optimizer_bytes(
        96, 12288, 49152, 96, 96, 51200, tp=8, pp=8, dp=16, distributed_optimizer=True
    )
    assert got == pytest.approx(18_877_227_552, rel=1e-9)
    # Our convention on the same shard parameter count gives the same bytes.
    ours = model_state_bytes(2_796_626_304, "bf16", "adam", 1, dp=16, convention="megatron")
    assert ours == pytest.approx(got, rel=1e-9)


def test_conventions_reject_unknown_and_fp32_is_shared() -> None:
    with pytest.raises(ValueError, match="memory convention"):
        state_bytes_per_param("adam", "bf16", "fsdp")
    for c in ("zero", "megatron", "deepspeed"):
        assert state_bytes_per_param("adam", "fp32", c).total == 16.0


# ----------------------------------------------------------------------------- activations

SBH = 2048 * 12288  # GPT-3: s = 2048, h = 12288, a = 96 -> 5as/h = 80; b = 1, t = 8


def test_plain_tensor_parallel_activations_korthikanti_table2() -> None:
    # Korthikanti et al. 2022 Table 2, tensor parallel without SP: sbh (10 + 24/t + 5as/(ht))
    # = 25,165,824 x (10 + 3 + 10) = 578,813,952 B; with SP sbh (34 + 80)/8 = 358,612,992:
    # SP-assumed activations are 38% lower (1 - 14.25 / 23).
    plain = activation_bytes_per_layer(
        2048, 1, 12288, 96, 8, "none", False, sequence_parallel=False
    )
    sp = activation_bytes_per_layer(2048, 1, 12288, 96, 8, "none", False)
    assert plain == pytest.approx(23 * SBH)
    assert sp == pytest.approx(14.25 * SBH)
    assert 1 - sp / plain == pytest.approx(0.38, abs=0.005)
    # Selective without SP: sbh (10 + 24/8) = 13 sbh; full without SP: 2 sbh (input whole).
    sel = activation_bytes_per_layer(
        2048, 1, 12288, 96, 8, "selective", False, sequence_parallel=False
    )
    assert sel == pytest.approx(13 * SBH)
    full = activation_bytes_per_layer(2048, 1, 12288, 96, 8, "full", False, sequence_parallel=False)
    assert full == pytest.approx(2 * SBH)


def test_context_parallel_divides_the_sequence() -> None:
    # cp = 2 with flash attention: 34 s/2 b h / t -> half of the cp = 1 figure.
    one = activation_bytes_per_layer(8192, 1, 16384, 128, 8, "none", True)
    two = activation_bytes_per_layer(8192, 1, 16384, 128, 8, "none", True, cp=2)
    assert two == pytest.approx(one / 2)


def test_llama3_405b_uneven_stages_and_interleaving() -> None:
    # 126 layers on PP16: 2 stages of 7, then 14 of 8 (the short stages first, where 1F1B
    # keeps the most micro-batches in flight; Llama 3 §3.3.2 removes a layer from its first
    # stage for memory). Stage i holds 16 - i micro-batches: max(16 x 7, 15 x 7, 14 x 8, ...)
    # = 112 layers' worth on the most loaded stage, against 16 x 8 = 128 with the long
    # stages first (and 126 for an even split).
    assert layout.stage_layers(126, 16) == (7,) * 2 + (8,) * 14
    assert layout.held_layers(126, 16) == 112
    assert layout.held_layers(128, 16) == 128  # p divides L: the first stage, L layers
    assert layout.held_layers(10, 4) == max(4 * 2, 3 * 2, 2 * 3, 1 * 3)  # (2, 2, 3, 3): 8
    assert layout.max_stage_layers(126, 16) == 8
    assert layout.stage_imbalance(126, 16) == pytest.approx(126 / 128)
    m = ModelDims(405.9e9, 126, 16384, 128, 8192, 128256)
    even = activation_bytes(m, 1, 8, 16, "selective", "bf16")
    uneven = activation_bytes(m, 1, 8, 16, "selective", "bf16", uneven_stages=True)
    assert uneven / even == pytest.approx(112 / 126)
    # Interleaving v = 2: x (1 + 15 / 32) = 1.46875 (Megatron's memory penalty).
    inter = activation_bytes(m, 1, 8, 16, "selective", "bf16", virtual=2)
    assert inter / even == pytest.approx(1.46875)
    # Model states on the most loaded stage: 405.9e9 x 8/126 / 8 = 3.2214e9 params.
    assert layout.params_per_rank(405.9e9, 8, 16, layers=126) == pytest.approx(3.2214e9, rel=1e-4)
    with pytest.raises(ValueError, match="exceeds the layers"):
        layout.stage_layers(4, 8)


def test_bubble_with_microbatches_and_interleaving() -> None:
    # Narayanan et al. 2021 §2.2: bubble (p - 1) / (v m). p = 16, m = 64: 15/64 = 0.234;
    # v = 4: 15/256 = 0.0586; efficiency 1 / (1 + 0.0586) = 0.9446.
    assert layout.pipeline_bubble(16, 64) == pytest.approx(15 / 64)
    assert layout.pipeline_bubble(16, 64, 4) == pytest.approx(15 / 256)
    assert layout.pipeline_efficiency(16, 64, 4) == pytest.approx(256 / 271)
    # The old layout_efficiency (m = 16, v = 1) is the same formula: 16 / 19 at p = 4.
    assert layout.pipeline_efficiency(4, 16) == pytest.approx(16 / 19)


def test_expert_parallelism_memory_and_all_to_all() -> None:
    # Mixtral: 46.70e9 total, 45.09e9 of it routed experts (32 x 8 x 176,160,768). ep = 8,
    # tp = 1: dense 1.6128e9 + experts 45.0972e9 / 8 = 5.6372e9 -> 7.2500e9 per rank.
    experts = 32 * 8 * 176_160_768
    per = layout.params_per_rank(46_702_792_704, 1, 1, 0, experts, 8)
    assert per == pytest.approx(46_702_792_704 - experts + experts / 8)
    # All-to-all per token: 4 x top-2 x 4096 x 2 B x 32 layers x 7/8 = 1,835,008 bytes.
    assert layout.moe_all_to_all_bytes_per_token(4096, 2, 32, 8) == pytest.approx(1_835_008)
    assert layout.moe_all_to_all_bytes_per_token(4096, 2, 32, 1) == 0.0


# ----------------------------------------------------------------------------- capacity, offload


def test_capacity_is_binary() -> None:
    # An "80 GB" A100 has 81,920 MiB = 85,899,345,920 bytes (nvidia-smi reports 81920MiB).
    assert capacity_bytes(80) == 81_920 * 2**20 == 85_899_345_920
    assert capacity_bytes(80, "GB") == 80e9
    with pytest.raises(ValueError, match="unit"):
        capacity_bytes(80, "TB")
    # A 7B model (params only) under ZeRO-3 on 8 x 80 GiB, 5% headroom, 1.5 GB buffers, no
    # full recompute: 16 x 7e9 / 8 = 14e9 B of states plus the gathered largest layer, the
    # embedding table V h = 32000 x 4096 (h = 4096 inferred; larger than 4 h^2), 2 x 2 bytes
    # each: 0.524 GB; against 0.95 x 85.899e9 = 81.604e9 B usable.
    m = dims(7e9, None, None, None, 2048, 32000)
    lay = layout.LayoutChoice("bf16", zero=3, recompute="full", tp=1, pp=1)
    policy = MemoryAllowances(buffer_gb=1.5, fragmentation=0.05, headroom=0.05)
    run = (1, True, 0.0, 1.0)  # micro-batch 1, training, no fixed need, the whole GPU
    mem = memory_per_gpu(m, (80, "GiB"), lay, 8, run, policy)
    assert mem.capacity_gb == pytest.approx(0.95 * 85.899345920)
    assert mem.gather_gb == pytest.approx(4 * 32000 * 4096 / 1e9)
    assert mem.model_states_gb == pytest.approx(14.0 + mem.gather_gb)
    assert mem.total_gb == pytest.approx((mem.model_states_gb + mem.activations_gb) * 1.05 + 1.5)
    assert mem.fits and mem.headroom_gb > 0
    # The old 10^9-byte reading of "80 GB" would leave 76.0 GB usable, 5.6 GB (7.4%) less.
    old = memory_per_gpu(m, (80, "GB"), lay, 8, run, policy)
    assert old.capacity_gb == pytest.approx(76.0)


def test_cpu_offload_moves_states_and_costs_pcie_time() -> None:
    # ZeRO-2 + optimizer offload, 7e9 params on 8 GPUs: GPU keeps 2 x 7e9 = 14e9 B of bf16
    # weights; CPU takes the optimizer shard 12 x 7e9 / 8 = 10.5e9 and the gradient shard
    # 2 x 7e9 / 8 = 1.75e9 -> 12.25e9 B per GPU.
    st = model_state_breakdown(7e9, "bf16", "adam", 2, 8, offload_optimizer=True)
    assert st.gpu_bytes == pytest.approx(14e9)
    assert st.cpu_bytes == pytest.approx(12.25e9)
    # PCIe per step for the owned shard 7e9 / 8 = 0.875e9 params: (2 + 2) x 0.875e9 = 3.5e9 B
    # at 32 GB/s (Gen4 x16 one way) = 0.109375 s; params offload doubles it.
    assert offload_seconds_per_step(0.875e9, 32) == pytest.approx(0.109375)
    assert offload_seconds_per_step(0.875e9, 32, offload_params=True) == pytest.approx(0.21875)
    with pytest.raises(ValueError, match="needs ZeRO stage 3"):
        model_state_breakdown(7e9, "bf16", "adam", 2, 8, offload_params=True)
