"""Transformer dimensions: parameter count from architecture and architecture from parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from planner.physics.architecture import (
    FLOPS_CONVENTIONS,
    Architecture,
    ParamCounts,
    infer_dims,
    largest_layer_params,
    param_counts,
    training_flops_per_token,
)


@dataclass(frozen=True)
class ModelDims:
    """A decoder-only transformer: P parameters, L layers, hidden h, a heads, sequence s,
    vocabulary V. ``inferred`` is True when (L, h, a) were inferred from P alone.

    ``arch`` (optional, default None) is the full :class:`Architecture` when one is known
    (FFN size, gated MLP, kv heads, MoE, ...); the fields above stay the GPT-block summary that
    the memory and FLOPs formulas of Korthikanti et al. and Kaplan et al. take."""

    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    optimizer: str = "adamw"
    flash_attention: bool = True
    inferred: bool = False
    arch: Architecture | None = None


def params_from_architecture(layers: int, hidden: int, vocab: int, seq_len: int) -> float:
    """P = 12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h)).

    Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
    Clusters Using Megatron-LM", eq. (2) (weights, biases, layer norms, embeddings)."""
    L, h = layers, hidden
    return 12 * L * h * h * (1 + 13 / (12 * h) + (vocab + seq_len) / (12 * L * h))


def infer_architecture(params: float) -> tuple[int, int, int]:
    """(L, h, a) for a model known only by size: :func:`planner.physics.architecture.infer_dims`
    (aspect ratio h = 128 L of GPT-3 and Llama, head size 128, heads a multiple of 8 so that
    tensor parallelism of 1, 2, 4, 8 divides them; GPT-3 175B -> (96, 12288, 96), 70B ->
    (71, 9216, 72))."""
    return infer_dims(params)


def dims(
    params: float | None,
    layers: int | None,
    hidden: int | None,
    heads: int | None,
    seq_len: int,
    vocab: int,
    optimizer: str = "adamw",
    flash_attention: bool = True,
    arch: Architecture | None = None,
) -> ModelDims:
    """Complete a model description: derive P from the architecture, or the architecture from P.

    With ``arch`` (the full architecture, e.g. ``ModelSpec.architecture()``), P defaults to its
    exact total count and L, h, a to its dimensions."""
    if arch is not None:
        layers = layers if layers is not None else arch.layers
        hidden = hidden if hidden is not None else arch.hidden
        heads = heads if heads is not None else arch.heads
        if params is None:
            params = float(param_counts(arch).total)
    inferred = False
    if layers is None or hidden is None:
        assert params is not None
        layers, hidden, inferred_heads = infer_architecture(params)
        heads = heads or inferred_heads
        inferred = True
    if params is None:
        params = params_from_architecture(layers, hidden, vocab, seq_len)
    if heads is None:
        heads = max(1, hidden // 128)
    return ModelDims(
        params, layers, hidden, heads, seq_len, vocab, optimizer, flash_attention, inferred, arch
    )


# ----------------------------------------------------------------------------- derived facts


@cache
def counts(a: Architecture) -> ParamCounts:
    """:func:`planner.physics.architecture.param_counts`, computed once per architecture."""
    return param_counts(a)


def expert_params(m: ModelDims) -> float:
    """Weights of the routed experts (what expert parallelism shards); 0 for a dense model."""
    return float(counts(m.arch).expert_params) if m.arch is not None else 0.0


def active_params(m: ModelDims) -> float:
    """Parameters a token uses: top-k and shared experts of an MoE, else all of them."""
    return float(counts(m.arch).active) if m.arch is not None and m.arch.moe else m.params


def largest_layer(m: ModelDims, tp: int = 1) -> float:
    """Parameters of the largest single module / tp, which ZeRO-3 gathers whole: with an
    architecture :func:`planner.physics.architecture.largest_layer_params`; for a GPT block
    known by (L, h, V) the larger of the embedding table V h and an MLP matrix 4 h^2."""
    if m.arch is not None:
        return float(largest_layer_params(m.arch, tp))
    return float(math.ceil(max(m.vocab * m.hidden, 4 * m.hidden * m.hidden) / tp))


def flops_per_token(m: ModelDims, convention: str = "6nd", train: bool = True) -> float:
    """Model FLOPs of one token under a convention, forward and backward (``train``) or the
    forward alone (a third of it in every convention: the backward pass costs twice the
    forward, Kaplan et al. 2020 §2.1).

    With an architecture: :func:`planner.physics.architecture.training_flops_per_token`
    (N = active parameters without the input lookup). Known by size (and L, s, h) alone, N is
    the stated P and the attention terms use d_attn = h: ``6nd`` 6N; ``kaplan`` 6N + 6 L s h;
    ``palm`` and ``megatron`` 6N + 12 L s h (Megatron's 6 V h logit term is part of 6N when P
    includes the embedding table)."""
    if convention not in FLOPS_CONVENTIONS:
        raise ValueError(f"FLOPs convention must be one of {', '.join(FLOPS_CONVENTIONS)}")
    if m.arch is not None:
        per = training_flops_per_token(m.arch, m.seq_len, convention)
    else:
        attn = m.layers * m.seq_len * m.hidden
        per = (
            6.0 * m.params
            + {"6nd": 0.0, "kaplan": 6.0, "palm": 12.0, "megatron": 12.0}[convention] * attn
        )
    return per if train else per / 3.0
