"""Decoder-only transformer architectures: exact parameter counts and FLOPs per token.

A :class:`Architecture` names every dimension that changes the parameter count of a modern
decoder: FFN size and gated MLPs (SwiGLU: three matrices), grouped-query attention (kv heads),
vocabulary and tied embeddings, biases and norms, mixture of experts (:class:`MoE`) and
DeepSeek's multi-head latent attention (:class:`MLA`). Counts are exact sums of the weight
matrices, biases and norm gains as the released checkpoints hold them (Hugging Face
``transformers`` module layout), so they can be checked against the published totals
(tests/model/test_presets.py).

Everything here is a pure function of frozen dataclasses; nothing reads files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

#: FLOPs-per-token conventions (see :func:`training_flops_per_token`).
FlopsConvention = Literal["6nd", "kaplan", "palm", "megatron"]
FLOPS_CONVENTIONS: tuple[str, ...] = get_args(FlopsConvention)


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts MLP.

    ``experts`` routed experts of FFN size ``expert_ffn`` (each a gated or plain MLP like the
    dense one), ``top_k`` of them active per token, plus ``shared_experts`` always-active
    experts of size ``shared_ffn`` (default ``expert_ffn``; DeepSeekMoE, Dai et al. 2024).
    The first ``first_dense_layers`` layers keep a dense MLP (DeepSeek-V3: 3), after which every
    ``every``-th layer is MoE (1 = all). The router is a ``hidden x experts`` matrix, plus one
    bias per expert when ``router_bias`` (DeepSeek-V3's auxiliary-loss-free balancing bias,
    ``e_score_correction_bias``)."""

    experts: int
    top_k: int
    expert_ffn: int
    shared_experts: int = 0
    shared_ffn: int | None = None
    first_dense_layers: int = 0
    every: int = 1
    router_bias: bool = False

    def __post_init__(self) -> None:
        if self.experts < 1 or not 1 <= self.top_k <= self.experts:
            raise ValueError(
                f"MoE: top_k must not exceed experts (need 1 <= top_k <= experts, got "
                f"{self.top_k}/{self.experts})"
            )
        if self.expert_ffn < 1 or self.every < 1 or self.first_dense_layers < 0:
            raise ValueError("MoE: expert_ffn and every must be positive, first_dense_layers >= 0")
        if self.shared_experts < 0 or (self.shared_ffn is not None and self.shared_ffn < 1):
            raise ValueError("MoE: shared_experts must be >= 0 and shared_ffn positive")


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1; DeepSeek-V3 config).

    Queries are compressed to ``q_lora_rank`` (0: no query compression), keys and values to
    ``kv_lora_rank`` plus a shared rotary key of ``qk_rope_head_dim``; per head the query/key
    has ``qk_nope_head_dim + qk_rope_head_dim`` dimensions and the value ``v_head_dim``."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    def __post_init__(self) -> None:
        if (
            self.q_lora_rank < 0
            or min(self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim)
            < 1
        ):
            raise ValueError("MLA: q_lora_rank must be >= 0 and the other dimensions positive")


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer, every dimension that counts.

    Defaults describe a GPT-2/3 block (Radford et al. 2019; Brown et al. 2020): MLP 4h with two
    matrices, multi-head attention, learned positions, LayerNorm with bias, biases on every
    linear, tied input/output embeddings. Llama-style models set ``gated_mlp`` (SwiGLU, Shazeer
    2020: gate, up and down matrices), ``kv_heads`` (grouped-query attention, Ainslie et al.
    2023), ``position="rope"``, ``norm="rmsnorm"``, ``linear_bias=False`` and
    ``tied_embeddings=False`` and train without ``dropout``."""

    layers: int
    hidden: int
    heads: int
    vocab: int
    ffn_hidden: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool = True
    position: Literal["learned", "rope"] = "learned"
    seq_len: int = 2048
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    linear_bias: bool = True
    qkv_bias: bool | None = None
    #: Dropout in training (the GPT block's; Llama, Mistral, Qwen and DeepSeek train without):
    #: it changes the activations stored, not the parameters.
    dropout: bool = True
    moe: MoE | None = None
    mla: MLA | None = None

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "vocab", "seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"Architecture.{name} must be positive")
        if self.heads % self.kv:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv})")
        if self.moe is not None and self.moe.first_dense_layers > self.layers:
            raise ValueError("MoE.first_dense_layers exceeds layers")

    # ---------------------------------------------------------------- resolved dimensions

    @property
    def ffn(self) -> int:
        """Dense MLP hidden size (default 4h, Vaswani et al. 2017)."""
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def kv(self) -> int:
        """Key/value heads (default: one per query head, i.e. multi-head attention)."""
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def hd(self) -> int:
        """Head dimension (default hidden / heads)."""
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def has_qkv_bias(self) -> bool:
        """Whether the attention projections have a bias (their own flag, else the linear
        layers')."""
        return self.linear_bias if self.qkv_bias is None else self.qkv_bias

    def moe_layer(self, i: int) -> bool:
        """Whether layer ``i`` (0-based) has an MoE MLP."""
        if self.moe is None or i < self.moe.first_dense_layers:
            return False
        return (i - self.moe.first_dense_layers) % self.moe.every == 0

    @property
    def moe_layers(self) -> int:
        """Layers with an MoE MLP."""
        return sum(self.moe_layer(i) for i in range(self.layers))

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.layers - self.moe_layers


#: The :class:`Architecture` fields a description may leave out (the GPT defaults apply),
#: besides ``moe`` and ``mla``: what an instance's model may set beside layers and hidden.
OPTIONAL_ARCHITECTURE_FIELDS: tuple[str, ...] = (
    "ffn_hidden",
    "kv_heads",
    "head_dim",
    "gated_mlp",
    "tied_embeddings",
    "position",
    "norm",
    "linear_bias",
    "qkv_bias",
    "dropout",
)


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of an :class:`Architecture`, exact.

    ``total`` counts every stored weight once (a tied embedding once); ``active`` counts what one
    token uses (top-k routed plus shared experts). ``embedding`` is the input table and
    ``output`` the LM head (0 when tied)."""

    total: int
    active: int
    embedding: int
    output: int
    attention_per_layer: int
    dense_mlp_per_layer: int
    moe_mlp_per_layer: int
    moe_active_mlp_per_layer: int
    norms_per_layer: int
    expert: int
    final_norm: int
    moe_layers_count: int = 0
    routed_per_layer: int = 0

    @property
    def non_embedding(self) -> int:
        """Parameters outside the embedding tables (Kaplan et al. 2020's N)."""
        return self.total - self.embedding - self.output

    @property
    def expert_params(self) -> int:
        """Weights of all routed experts (what expert parallelism shards)."""
        return self.moe_layers_count * self.routed_per_layer

    def active_params(self, count_input_embedding: bool = True) -> int:
        """Active parameters per token. Model cards differ: Mixtral's 12.9B counts both
        embedding tables; DeepSeek-V3's 37B (36.6B) leaves out the input embedding, a table
        lookup (DeepSeek-V3 README_WEIGHTS: "36.6B (including 0.9B for the output Head)")."""
        return self.active if count_input_embedding else self.active - self.embedding


def _mlp(hidden: int, ffn: int, gated: bool, bias: bool) -> int:
    """One MLP: 2 or 3 (gated) matrices h x ffn, with biases ffn (+ ffn) + h when biased."""
    mats = (3 if gated else 2) * hidden * ffn
    biases = ((2 if gated else 1) * ffn + hidden) if bias else 0
    return mats + biases


def _attention(a: Architecture) -> int:
    h, nq, nkv, hd = a.hidden, a.heads, a.kv, a.hd
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nq * qk  # down, norm, up
        else:
            q = h * nq * qk
        kv = (
            h * (m.kv_lora_rank + m.qk_rope_head_dim)  # kv_a_proj_with_mqa
            + m.kv_lora_rank  # kv_a_layernorm
            + m.kv_lora_rank * nq * (m.qk_nope_head_dim + m.v_head_dim)  # kv_b_proj
        )
        o = nq * m.v_head_dim * h
        return q + kv + o
    q = h * nq * hd
    kv = 2 * h * nkv * hd
    o = nq * hd * h
    bias = (nq * hd + 2 * nkv * hd) if a.has_qkv_bias else 0
    if a.linear_bias:
        bias += h  # output projection bias
    return q + kv + o + bias


def _norm(a: Architecture, size: int) -> int:
    return 2 * size if a.norm == "layernorm" else size


def param_counts(a: Architecture) -> ParamCounts:
    """Exact parameter counts from dimensions.

    Per layer: attention (q, k, v, o projections; GQA shares k/v over ``heads / kv_heads``
    query heads; MLA as DeepSeek-V2 eq. 9-14) + MLP (dense, or router + routed + shared experts)
    + two norms (LayerNorm: gain and bias, RMSNorm: gain). Plus the input embedding V h, the
    output head V h unless tied, learned positions s h, and the final norm.

    Check (GPT-3, Narayanan et al. 2021 eq. 2 and Brown et al. Table D.1): L = 96,
    h = 12288, V = 51200, s = 2048 gives 12 L h^2 + 13 L h + (V + s) h + 2h = 174.6e9."""
    h = a.hidden
    attn = _attention(a)
    norms = 2 * _norm(a, h)
    dense = _mlp(h, a.ffn, a.gated_mlp, a.linear_bias)
    moe_total = moe_active = expert = routed = 0
    if a.moe is not None:
        m = a.moe
        expert = _mlp(h, m.expert_ffn, a.gated_mlp, a.linear_bias)
        shared = m.shared_experts * _mlp(
            h, m.shared_ffn or m.expert_ffn, a.gated_mlp, a.linear_bias
        )
        router = h * m.experts + (m.experts if m.router_bias else 0)
        routed = m.experts * expert
        moe_total = router + routed + shared
        moe_active = router + m.top_k * expert + shared
    n_moe, n_dense = a.moe_layers, a.dense_layers
    emb = a.vocab * h
    out = 0 if a.tied_embeddings else a.vocab * h
    pos = a.seq_len * h if a.position == "learned" else 0
    final = _norm(a, h)
    layers_total = a.layers * (attn + norms) + n_dense * dense + n_moe * moe_total
    layers_active = a.layers * (attn + norms) + n_dense * dense + n_moe * moe_active
    fixed = emb + out + pos + final
    return ParamCounts(
        total=layers_total + fixed,
        active=layers_active + fixed,
        embedding=emb + pos,
        output=out,
        attention_per_layer=attn,
        dense_mlp_per_layer=dense,
        moe_mlp_per_layer=moe_total,
        moe_active_mlp_per_layer=moe_active,
        norms_per_layer=norms,
        expert=expert,
        final_norm=final,
        moe_layers_count=n_moe,
        routed_per_layer=routed,
    )


def largest_layer_params(a: Architecture, tp: int = 1) -> int:
    """Parameters of the largest single module (one weight matrix with its bias, or the
    embedding table), divided by tensor parallelism: DeepSpeed's ``largest_layer_params``
    (``model_to_params`` in its memory estimator: the most parameters held by one
    ``nn.Module`` without recursion), which ZeRO-3 gathers whole on each GPU."""
    h = a.hidden
    cands = [a.vocab * h, h * a.ffn, a.heads * a.hd * h]
    if a.gated_mlp:
        cands.append(h * a.ffn)
    if a.moe is not None:
        cands.append(h * a.moe.expert_ffn)
    if a.mla is not None:
        m = a.mla
        cands.append(m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim))
        cands.append(a.heads * m.v_head_dim * h)
    return math.ceil(max(cands) / tp)


# ----------------------------------------------------------------------------- FLOPs


def attention_width(a: Architecture) -> float:
    """Width of the attention products per token, d_attn: the mean of the query-key width
    and the value width, heads x (d_qk + d_v) / 2. The scores Q K^T take d_qk per head and
    the weighted sum of the values d_v per head; they are equal (heads x head dim) except
    under multi-head latent attention, whose queries and keys carry qk_nope + qk_rope = 192
    dimensions per head and its values v_head_dim = 128 (DeepSeek-V3). Counting the values at
    the query/key width gave DeepSeek-V3 256.6 GFLOPs per token at 4K under ``kaplan``,
    against the published 250 (Zhao et al. 2025, "Insights into DeepSeek-V3", ISCA 2025,
    arXiv:2505.09343, Table 2)."""
    if a.mla is not None:
        m = a.mla
        return a.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2.0
    return float(a.heads * a.hd)


def training_flops_per_token(
    a: Architecture, seq_len: int | None = None, convention: str = "6nd"
) -> float:
    """Model FLOPs of one training token (forward + backward, no recomputation).

    N is the *active* parameter count (MoE: top-k plus shared experts) without the input
    embedding lookup, which performs no multiply-adds, but with the output projection V h
    whether or not it is tied to the input table (so for tied models such as GPT-3 and PaLM N
    is the published total). Conventions:

    - ``"6nd"`` (default): 6 N. Kaplan et al. 2020 §2.1 and Hoffmann et al. 2022 use it; it
      is what published MFU figures are most often computed against (e.g. Llama 2's
      1.72M GPU-hours at 43.5% of A100 bf16 peak, tests/model/test_physics_published.py), so an MFU
      read from a paper reproduces that paper's time only under the same convention.
    - ``"kaplan"``: 6 N + 6 L s d_attn (Kaplan et al. 2020 Table 1: forward
      2N + 2 n_layer n_ctx d_attn, backward twice the forward; d_attn the mean of the
      query-key and value widths, :func:`attention_width`).
    - ``"palm"``: 6 N + 12 L H Q T (Chowdhery et al. 2022, PaLM, Appendix B: H heads of size
      Q, sequence T; the QK^T and AV products counted in full).
    - ``"megatron"``: Narayanan et al. 2021 eq. (3) per token without recomputation:
      72 L h^2 (1 + s/(6h)) + 6 V h for their GPT block; generalised here to 6 N_layers +
      12 L s d_attn + 6 V h (N_layers: the matmul weights of the blocks, so GQA, SwiGLU and
      MoE enter through N), which equals eq. (3)'s 3/4 (their 96 includes one recomputed
      forward) for the GPT block.

    ``seq_len`` defaults to the architecture's."""
    s = a.seq_len if seq_len is None else seq_len
    pc = param_counts(a)
    head = a.vocab * a.hidden  # the output projection, tied or not
    blocks = pc.active - pc.embedding - pc.output - pc.final_norm
    n = blocks + head + pc.final_norm
    attn = a.layers * s * attention_width(a)
    if convention == "6nd":
        return 6.0 * n
    if convention == "kaplan":
        return 6.0 * n + 6.0 * attn
    if convention == "palm":
        return 6.0 * n + 12.0 * attn
    if convention == "megatron":
        return 6.0 * blocks + 12.0 * attn + 6.0 * head
    raise ValueError(f"FLOPs convention must be one of {', '.join(FLOPS_CONVENTIONS)}")


def narayanan_flops_per_iteration(
    batch: int, seq_len: int, layers: int, hidden: int, vocab: int, recompute: bool = True
) -> float:
    """Narayanan et al. 2021 eq. (3): F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration
    with full activation recomputation (one extra forward of the transformer layers); without
    recomputation the transformer part is 3/4 of it: 72 B s l h^2 (1 + s/(6h)) + 6 B s V h."""
    B, s, L, h, V = batch, seq_len, layers, hidden, vocab
    if recompute:
        return 96.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    return 72.0 * B * s * L * h * h * (1 + s / (6 * h)) + 6.0 * B * s * V * h


def narayanan_training_days(
    tokens: float, params: float, gpus: int, tflops_per_gpu: float, recompute: bool = True
) -> float:
    """Narayanan et al. 2021 eq. (4): end-to-end time ~ 8 T P / (n X) with recomputation
    (6 T P / (n X) without), X the achieved FLOP/s per GPU. In days."""
    factor = 8.0 if recompute else 6.0
    return factor * tokens * params / (gpus * tflops_per_gpu * 1e12) / 86400.0


# ----------------------------------------------------------------------------- inference


#: Head dimension assumed when only a parameter count is known (GPT-3 175B, Llama, Mistral,
#: Qwen2.5 72B all use 128).
INFERRED_HEAD_DIM = 128
#: Query heads are a multiple of this, so that tensor parallelism of 1, 2, 4 and 8 (one
#: NVLink domain of 8 GPUs) divides them.
INFERRED_HEAD_MULTIPLE = 8


def infer_dims(params: float) -> tuple[int, int, int]:
    """(L, h, a) for a model known only by its size.

    Aspect ratio h = 128 L of GPT-3 (Brown et al. 2020 Table 2.1: 175B has L = 96,
    h = 12288) and Llama (7B: L = 32, h = 4096): with 12 L h^2 = P, L = (P / (12 x 128^2))^(1/3).
    The hidden size is then rounded to a multiple of head_dim x 8 = 1024 so that the heads
    (h / 128) are a multiple of 8 and every tensor-parallel degree up to 8 divides them; models
    too small for 8 heads of 128 keep h a multiple of 128. 7B -> (33, 4096, 32),
    13B -> (40, 5120, 40), 70B -> (71, 9216, 72), 175B -> (96, 12288, 96)."""
    layers = max(1, round((params / (12 * INFERRED_HEAD_DIM**2)) ** (1 / 3)))
    raw = (params / (12 * layers)) ** 0.5
    step = INFERRED_HEAD_DIM * INFERRED_HEAD_MULTIPLE
    if raw >= step:
        hidden = max(step, round(raw / step) * step)
    else:
        hidden = max(INFERRED_HEAD_DIM, round(raw / INFERRED_HEAD_DIM) * INFERRED_HEAD_DIM)
    return layers, hidden, hidden // INFERRED_HEAD_DIM
