"""Compute: FLOPs of a phase and the time they take on a configuration."""

from __future__ import annotations

import math

#: Throughput factor of activation recomputation on model FLOPs utilisation.
#: Full recomputation repeats the forward pass: hardware FLOPs 8ND instead of 6ND, so model
#: FLOPs per second fall by 6/8 (Narayanan et al. 2021 §3.5; Chowdhery et al. 2022 App. B).
#: Selective recomputation costs about 4% more time for GPT-3 175B (Korthikanti et al. 2022,
#: Table 4: 2.7%-4% overhead): factor 1/1.04.
RECOMPUTE_THROUGHPUT: dict[str, float] = {"none": 1.0, "selective": 1 / 1.04, "full": 0.75}


def training_flops(
    params: float, tokens: float, layers: int = 0, seq_len: int = 0, hidden: int = 0
) -> float:
    """Model FLOPs of training: 6 N D plus the attention term 6 L s h D.

    Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Table 1: forward cost per
    token C_f = 2N + 2 n_layer n_ctx d_attn, backward twice the forward, so training costs
    3 C_f = 6N + 6 L s h per token. Pass layers = 0 to get the plain 6ND (e.g. GPT-3 175B on
    300B tokens: 6 x 175e9 x 300e9 = 3.15e23, the paper's 3.14e23 FLOPs)."""
    return 6.0 * params * tokens + 6.0 * layers * seq_len * hidden * tokens


def forward_flops(
    params: float, tokens: float, layers: int = 0, seq_len: int = 0, hidden: int = 0
) -> float:
    """Model FLOPs of a forward pass (evaluation, inference): 2 N D + 2 L s h D (Kaplan et al.)."""
    return 2.0 * params * tokens + 2.0 * layers * seq_len * hidden * tokens


def scaling_efficiency(gpus: float, gpus_per_node: int, per_doubling: float) -> float:
    """eff(n) = per_doubling ** log2(n_nodes) for n_nodes = ceil(gpus / gpus_per_node) > 1, else 1.

    A stated empirical model: data-parallel all-reduce over a fat tree keeps ~95-98% of
    per-GPU throughput per doubling of nodes (e.g. Megatron-LM weak scaling, Narayanan et al.
    2021 Fig. 15: 52% of peak at 3072 GPUs vs 44% at 384, near-linear)."""
    nodes = math.ceil(gpus / gpus_per_node)
    if nodes <= 1:
        return 1.0
    return float(per_doubling ** math.log2(nodes))


def effective_flops_per_s(
    gpus: float, peak_tflops: float, mfu: float, recompute: str, scaling: float
) -> float:
    """Sustained model FLOP/s = GPUs x peak x MFU x recompute factor x scaling efficiency."""
    return gpus * peak_tflops * 1e12 * mfu * RECOMPUTE_THROUGHPUT[recompute] * scaling


def hours_for(flops: float, flops_per_s: float) -> float:
    """time = FLOPs / sustained FLOP/s, in hours."""
    return flops / flops_per_s / 3600.0


#: Micro-batches per optimiser step assumed for the pipeline bubble (gradient accumulation).
PIPELINE_MICROBATCHES = 16


def layout_efficiency(tp: int, pp: int, zero: int, dp: int, multi_node: bool) -> float:
    """Throughput factor of a parallel layout against the user's MFU (measured at tp = pp = 1):

    - tensor parallel: 0.98 per doubling of t (two all-reduces per layer over NVLink;
      Narayanan et al. 2021 Fig. 13 shows per-GPU throughput falling slowly up to t = 8);
    - pipeline: 1 - bubble, bubble = (p - 1) / (m + p - 1) for m micro-batches per step
      (Narayanan et al. 2021 §2.2.1, 1F1B schedule), m = PIPELINE_MICROBATCHES;
    - ZeRO-3 across nodes: 0.95, for 1.5x the data-parallel communication volume of DDP
      (Rajbhandari et al. 2020 §7.2.2); stages 1-2 move the same volume as DDP (§7.2.1)."""
    eff = 0.98 ** math.log2(tp) if tp > 1 else 1.0
    if pp > 1:
        eff *= 1 - (pp - 1) / (PIPELINE_MICROBATCHES + pp - 1)
    if zero == 3 and dp > 1 and multi_node:
        eff *= 0.95
    return float(eff)
