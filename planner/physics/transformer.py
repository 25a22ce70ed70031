"""Transformer dimensions: parameter count from architecture and architecture from parameters."""

from __future__ import annotations

from dataclasses import dataclass

from planner.physics.architecture import Architecture, infer_dims, param_counts


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
