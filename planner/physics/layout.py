"""Parallel layouts: uneven pipeline stages, the pipeline bubble with micro-batches and
interleaving, what each model-parallel rank holds, and the communication of expert and data
parallelism.

Pure functions; the memory formulas that take these (sequence and context parallelism in the
activations, uneven stages in the model states) are in :mod:`planner.physics.memory`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Micro-batches per optimiser step assumed for the pipeline bubble (gradient accumulation),
#: the default of ``options.microbatches``.
PIPELINE_MICROBATCHES = 16


@dataclass(frozen=True)
class LayoutChoice:
    """The layout a plan entry states: precision, ZeRO stage, recomputation, tensor and
    pipeline parallel degrees, and the choices with defaults: ``sp`` sequence parallelism
    (with tp > 1), ``cp`` context and ``ep`` expert parallel ranks, ``microbatches`` per step
    and ``virtual`` interleaved chunks per device in the pipeline, ``offload`` of states to
    CPU memory."""

    precision: str
    zero: int
    recompute: str
    tp: int
    pp: int
    sp: bool = True
    cp: int = 1
    ep: int = 1
    microbatches: int = PIPELINE_MICROBATCHES
    virtual: int = 1
    offload: str = "none"


@dataclass(frozen=True)
class Layout(LayoutChoice):
    """How a phase's model is split over its GPUs: GPUs = tp x cp x pp x dp, with ``ep``
    expert-parallel ranks inside them (a :class:`LayoutChoice` with its ``dp`` replicas)."""

    dp: int = 1

    def extras(self) -> str:
        """The choices beyond the basic layout that differ from their defaults, for labels."""
        bits = [f"cp{self.cp}" if self.cp > 1 else "", f"ep{self.ep}" if self.ep > 1 else ""]
        if self.pp > 1:
            bits.append(f"m{self.microbatches}")
        bits += [f"v{self.virtual}" if self.virtual > 1 else "", "" if self.sp else "no-sp"]
        bits.append(f"offload={self.offload}" if self.offload != "none" else "")
        return " ".join(b for b in bits if b)


def stage_layers(layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage when ``pp`` does not divide ``layers``, placed to balance
    memory: the first ``pp - layers mod pp`` stages take floor(L/p) layers, the last
    ``layers mod pp`` take ceil(L/p). Under 1F1B the first stage holds the most micro-batches
    in flight (stage i holds p - i), so the short stages go first (Llama Team 2024, §3.3.2,
    balances the pipeline's memory by removing a layer from the first stage, and one from
    the last for its output layer). Llama 3 405B's 126 layers on PP16: two stages of 7, then
    14 of 8. The most loaded stage in time holds ceil(L/p) layers (:func:`max_stage_layers`);
    the most loaded in activations :func:`held_layers`."""
    if pp < 1 or layers < 1:
        raise ValueError("layers and pp must be positive")
    if pp > layers:
        raise ValueError(f"pp ({pp}) exceeds the layers ({layers}): a stage would be empty")
    q, r = divmod(layers, pp)
    return tuple(q if i < pp - r else q + 1 for i in range(pp))


def held_layers(layers: int, pp: int) -> int:
    """Layers' worth of activations the most loaded stage keeps under 1F1B: stage i holds
    p - i micro-batches of its l_i layers (Narayanan et al. 2021 §2.2.1: the first stage p
    in flight), so ``max_i (p - i) l_i`` over :func:`stage_layers`: L when p divides L, else
    ``max(p floor(L/p), (L mod p) ceil(L/p))`` (126 layers on PP16: max(16 x 7, 14 x 8)
    = 112, not 16 x 8 = 128)."""
    return max((pp - i) * n for i, n in enumerate(stage_layers(layers, pp)))


def max_stage_layers(layers: int, pp: int) -> int:
    """Layers on the most loaded stage: ceil(L / p); memory and time follow this stage."""
    return max(stage_layers(layers, pp))


def stage_imbalance(layers: int, pp: int) -> float:
    """Throughput factor of uneven stages: a pipeline runs at the pace of its slowest stage,
    so the useful share is (L / p) / ceil(L / p) (126 on 16: 7.875 / 8 = 0.984)."""
    return (layers / pp) / max_stage_layers(layers, pp)


def pipeline_bubble(pp: int, microbatches: int, virtual: int = 1) -> float:
    """Bubble time relative to the ideal compute time of a step: (p - 1) / (v m).

    Narayanan et al. 2021 §2.2.1 (1F1B: (p - 1) / m) and §2.2.2 (interleaved schedule with
    v model chunks per device: the bubble shrinks by v, at v times the pipeline
    communication)."""
    if pp < 1 or microbatches < 1 or virtual < 1:
        raise ValueError("pp, microbatches and virtual must be positive")
    return (pp - 1) / (virtual * microbatches)


def pipeline_efficiency(pp: int, microbatches: int, virtual: int = 1) -> float:
    """Useful share of a step: 1 / (1 + bubble) = v m / (v m + p - 1)."""
    return 1.0 / (1.0 + pipeline_bubble(pp, microbatches, virtual))


def interleaved_activation_factor(pp: int, virtual: int) -> float:
    """Activation memory of the first stage under the interleaved schedule relative to 1F1B:
    1 + (p - 1) / (p v) (Megatron-LM ``theoretical_memory_usage``:
    ``interleaved_schedule_memory_penalty``); 1 without interleaving."""
    if virtual <= 1 or pp <= 1:
        return 1.0
    return 1.0 + (pp - 1) / (pp * virtual)


def params_per_rank(
    params: float,
    tp: int = 1,
    pp: int = 1,
    layers: int = 0,
    expert_params: float = 0.0,
    ep: int = 1,
) -> float:
    """Parameters held by the most loaded model-parallel rank.

    Dense weights are split by tensor parallelism and the pipeline; the routed-expert weights
    of an MoE model by expert parallelism instead of tensor parallelism (Megatron-Core /
    DeepSpeed-MoE: expert tensor parallelism 1). With ``layers`` given and p not dividing L,
    the most loaded stage holds ceil(L/p) / L of the layers (embeddings are not placed
    separately: a stated simplification). ``layers = 0`` keeps the even split P / p."""
    share = max_stage_layers(layers, pp) / layers if (layers and pp > 1) else 1.0 / pp
    dense = params - expert_params
    return dense * share / tp + expert_params * share / ep


def moe_all_to_all_bytes_per_token(
    hidden: int, top_k: int, moe_layers: int, ep: int, elem_bytes: float = 2.0
) -> float:
    """Bytes one token sends off its GPU through the expert all-to-alls of one training step.

    Each MoE layer dispatches the token's hidden vector to its top-k experts and combines the
    results back, in the forward pass and again (gradients) in the backward pass: 4 transfers
    of k h bytes per layer, of which the share (ep - 1) / ep leaves the GPU when the experts
    are spread evenly over ep ranks (Lepikhin et al. 2021, GShard §3; Rajbhandari et al. 2022,
    DeepSpeed-MoE §5)."""
    if ep <= 1:
        return 0.0
    return 4.0 * top_k * hidden * elem_bytes * moe_layers * (ep - 1) / ep


def ring_allreduce_seconds(nbytes: float, n: int, gb_per_s: float) -> float:
    """Ring all-reduce of ``nbytes`` over n ranks at ``gb_per_s`` (10^9 bytes/s) per rank and
    direction: 2 (n - 1) / n x bytes / bandwidth (Patarasuk & Yuan 2009; the NCCL bus-bandwidth
    convention). 0 for one rank."""
    if n <= 1:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / (gb_per_s * 1e9)


def context_parallel_kv_bytes_per_layer(
    seq_len: int, micro_batch: int, kv_heads: int, head_dim: int, cp: int, elem_bytes: float = 2.0
) -> float:
    """Bytes of keys and values a context-parallel rank receives per layer and forward pass in
    ring attention: the other cp - 1 chunks of K and V, 2 x (s / cp) b kv_heads d each
    (Liu et al. 2023, Ring Attention; Megatron-Core context parallelism)."""
    if cp <= 1:
        return 0.0
    chunk = 2.0 * (seq_len / cp) * micro_batch * kv_heads * head_dim * elem_bytes
    return chunk * (cp - 1)


def nodes_for(gpus: float, gpus_per_node: int) -> int:
    """Whole nodes ``gpus`` GPUs occupy (at least one, a fractional GPU too)."""
    return max(1, math.ceil(gpus / gpus_per_node))
