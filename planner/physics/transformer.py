"""Transformer dimensions: parameter count from architecture and architecture from parameters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelDims:
    """A decoder-only transformer: P parameters, L layers, hidden h, a heads, sequence s,
    vocabulary V. ``inferred`` is True when (L, h, a) were inferred from P alone."""

    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    optimizer: str = "adamw"
    flash_attention: bool = True
    inferred: bool = False


def params_from_architecture(layers: int, hidden: int, vocab: int, seq_len: int) -> float:
    """P = 12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h)).

    Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
    Clusters Using Megatron-LM", eq. (2) (weights, biases, layer norms, embeddings)."""
    L, h = layers, hidden
    return 12 * L * h * h * (1 + 13 / (12 * h) + (vocab + seq_len) / (12 * L * h))


def infer_architecture(params: float) -> tuple[int, int, int]:
    """(L, h, a) for a model known only by size, with the aspect ratio h = 128 L and head
    size 128 of GPT-3 (Brown et al. 2020, Table 2.1: 175B has L=96, h=12288) and Llama
    (7B: L=32, h=4096): 12 L h^2 = P  =>  L = (P / (12 * 128^2))^(1/3)."""
    layers = max(1, round((params / (12 * 128 * 128)) ** (1 / 3)))
    hidden = max(128, round(((params / (12 * layers)) ** 0.5) / 128) * 128)
    return layers, hidden, hidden // 128


def dims(
    params: float | None,
    layers: int | None,
    hidden: int | None,
    heads: int | None,
    seq_len: int,
    vocab: int,
    optimizer: str = "adamw",
    flash_attention: bool = True,
) -> ModelDims:
    """Complete a model description: derive P from the architecture, or the architecture from P."""
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
        params, layers, hidden, heads, seq_len, vocab, optimizer, flash_attention, inferred
    )
