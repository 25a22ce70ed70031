"""Memory per GPU: model states (ZeRO accounting) and activations (Korthikanti et al.).

Bytes throughout; :func:`memory_per_gpu` reports GB (10^9 bytes) against the GPU's capacity
in its vendor's unit (GiB for HBM, :func:`capacity_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from planner.physics.layout import (
    LayoutChoice,
    held_layers,
    interleaved_activation_factor,
    params_per_rank,
)
from planner.physics.transformer import ModelDims

#: Bytes of optimizer state per parameter, K in the ZeRO paper (Rajbhandari et al. 2020, §3.1):
#: mixed-precision Adam keeps an fp32 copy of the parameters, momentum and variance: K = 12.
#: SGD with momentum: fp32 master + momentum = 8; plain SGD: fp32 master = 4; Adafactor's
#: factored second moment is negligible: fp32 master + O(rows+cols) = 4; Lion: master +
#: momentum = 8.
OPTIMIZER_K_MIXED: dict[str, float] = {
    "adam": 12.0,
    "adamw": 12.0,
    "sgd_momentum": 8.0,
    "sgd": 4.0,
    "adafactor": 4.0,
    "lion": 8.0,
}

#: Bytes per parameter of the working weights and gradients by training precision.
#: bf16/fp16/fp8 training keeps 16-bit weights and gradients next to fp32 master states
#: (fp8 GEMMs cast on the fly, Transformer Engine keeps bf16 weights). fp32/tf32 training keeps
#: 4-byte weights and gradients and no separate master copy.
WEIGHT_BYTES: dict[str, float] = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 2.0}

#: Bytes per activation element: 16-bit for bf16/fp16/fp8 training, 32-bit for fp32/tf32.
ACTIVATION_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 2.0,
}

#: Forward-only inference weights by precision.
INFERENCE_WEIGHT_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
}


def optimizer_k(optimizer: str, precision: str) -> float:
    """K: bytes of optimizer state per parameter. In fp32 training the master copy is the
    weights themselves, so K drops by 4 (Adam: momentum + variance = 8)."""
    k = OPTIMIZER_K_MIXED[optimizer]
    return k - 4.0 if precision in ("fp32", "tf32") else k


def model_state_bytes(*args: Any, **options: Any) -> float:
    """Model-state bytes per GPU: weights, gradients and optimizer states.

    With Psi = P / (tp * pp) parameters on each model-parallel rank, w = weight bytes,
    g = gradient bytes, K = optimizer bytes, N_d = data-parallel degree (ZeRO paper,
    Rajbhandari et al. 2020, §5.1 and Figure 1):

    - stage 0 (DDP):        (w + g + K) Psi
    - stage 1 (P_os):       (w + g) Psi + K Psi / N_d
    - stage 2 (P_os+g):     w Psi + (g + K) Psi / N_d
    - stage 3 (P_os+g+p):   (w + g + K) Psi / N_d

    Check: Psi = 7.5e9, N_d = 64, K = 12, w = g = 2 gives 120, 31.4, 16.6 and 1.9 GB, the
    figures of the paper's Figure 1. Forward-only phases hold the weights alone (sharded by
    stage 3 only).

    The GPU part of :func:`model_state_breakdown` (same arguments: ``params, precision,
    optimizer, zero, dp, tp=1, pp=1, train=True`` and its keyword options for the convention,
    uneven stages, expert parallelism, ZeRO-3's gathered layer and CPU offload); without
    options it is the formula above."""
    return model_state_breakdown(*args, **options).gpu_bytes


@dataclass(frozen=True)
class ActivationTerms:
    """Activation bytes one layer stores per token for the backward pass, 16-bit elements
    (Korthikanti et al. 2022 §4.1 count them tensor by tensor; the GPT block's are
    :data:`GPT_BLOCK`):

    - ``whole``: what plain tensor parallelism keeps whole on every rank (the two norms'
      inputs, the inputs of the QKV and first MLP projections, the dropout masks) and
      sequence parallelism splits by t;
    - ``split``: what tensor parallelism splits by t (queries, keys, values, the output
      projection's input, the MLP's inner activations, an MoE layer's dispatched tokens);
    - ``scores``: bytes per head and key position of the attention scores when they are
      materialised (no FlashAttention): softmax output 2, with dropout also its mask 1 and
      output 2 (Korthikanti's 5 a s);
    - ``layer_input``: what full recomputation keeps (the layer's input, 2 h).

    Multiplied by the layer's hidden size factor in :func:`activation_terms`; bytes per token,
    so a layer stores ``s b x terms`` per micro-batch."""

    whole: float
    split: float
    scores: float
    layer_input: float


def _gpt_terms(h: float) -> ActivationTerms:
    """Korthikanti et al. 2022 §4.1, the GPT block: attention 11 s b h + 5 a s^2 b (QKV input
    2, Q and K 4, V 2, output projection input 2, dropout mask 1), MLP 19 s b h (input 2,
    GeLU input 8, GeLU output 8, dropout mask 1), the two LayerNorms' inputs 4: 34 s b h, of
    which 10 s b h stay whole under plain tensor parallelism (their Table 2)."""
    return ActivationTerms(whole=10.0 * h, split=24.0 * h, scores=5.0, layer_input=2.0 * h)


def activation_terms(m: ModelDims) -> ActivationTerms:
    """The activation bytes per token of one layer from the architecture's own terms, counted
    tensor by tensor as Korthikanti et al. 2022 §4.1 count the GPT block (which they
    reproduce for a GPT architecture: 34 h and 5 a s):

    - norms: their two inputs, 2 h each (whole);
    - attention: the QKV projection's input 2 h (whole); Q 2 a d_qk, K 2 k d_qk, V 2 k d_v
      with k the key/value heads (grouped-query attention keeps k < a of them: Ainslie et al.
      2023), the output projection's input 2 a d_v (split); under multi-head latent attention
      (DeepSeek-V2 §2.1) keys and values are expanded per head (k = a) and the compressed
      latents are kept too, 4 (q_lora + kv_lora) + 2 d_rope (whole: the down-projections are
      not split by tensor parallelism);
    - MLP: its input 2 h (whole); a plain MLP stores its activation's input and output, 2 f
      each (Korthikanti's GeLU 8 h + 8 h with f = 4 h); a gated MLP (SwiGLU, Shazeer 2020)
      the gate and up projections and their product, 6 f (Megatron-LM's fused SwiGLU keeps
      its input, 4 f, and the down projection its input, 2 f);
    - mixture of experts: each of the top-k experts receives a copy of the token, 2 h, and
      stores its inner activations; the weighted combine keeps each expert's output, 2 h; the
      router's fp32 scores 4 x experts (whole); shared experts as dense MLPs of their size;
    - dropout (``Architecture.dropout``; the GPT block's 0.1, none in Llama, Mistral, Qwen and
      DeepSeek): a 1-byte mask after attention and after the MLP, h each (whole), and the
      scores' mask and output.

    A model with MoE and dense layers takes the larger of the two layers' terms (the most
    loaded stage may hold either). A model known only by (L, h, a) is the GPT block."""
    a = m.arch
    if a is None:
        return _gpt_terms(float(m.hidden))
    h = float(a.hidden)
    drop = 1.0 if a.dropout else 0.0
    whole = 4.0 * h + 2.0 * h + 2.0 * h + 2.0 * drop * h  # norms, QKV and MLP inputs, masks
    if a.mla is not None:
        ml = a.mla
        qk = float(ml.qk_nope_head_dim + ml.qk_rope_head_dim)
        attn = 2.0 * a.heads * (2.0 * qk + 2.0 * ml.v_head_dim)  # Q, K, V, output input
        whole += 4.0 * (ml.q_lora_rank + ml.kv_lora_rank) + 2.0 * ml.qk_rope_head_dim
    else:
        attn = 2.0 * a.hd * (2.0 * a.heads + 2.0 * a.kv)  # Q, K, V at d, output input

    def inner(f: float) -> float:
        return (6.0 if a.gated_mlp else 4.0) * f

    dense = inner(float(a.ffn))
    mlp = dense if a.dense_layers else 0.0
    if a.moe is not None and a.moe_layers:
        mo = a.moe
        routed = mo.top_k * (2.0 * h + inner(float(mo.expert_ffn)) + 2.0 * h)
        shared = mo.shared_experts * inner(float(mo.shared_ffn or mo.expert_ffn))
        whole_moe = 4.0 * mo.experts
        if routed + shared + whole_moe > mlp:
            mlp = routed + shared
            whole += whole_moe
    return ActivationTerms(
        whole=whole, split=attn + mlp, scores=5.0 if a.dropout else 2.0, layer_input=2.0 * h
    )


#: The GPT block's terms at h = 1 (Korthikanti's 10 + 24 = 34 and 5 a s).
GPT_BLOCK = _gpt_terms(1.0)


def activation_bytes_per_layer(
    s: int,
    b: int,
    h: int,
    a: int,
    tp: int,
    recompute: str,
    flash: bool,
    elem_bytes: float = 2.0,
    *,
    sequence_parallel: bool | None = None,
    cp: int = 1,
    terms: ActivationTerms | None = None,
) -> float:
    """Activation bytes stored per transformer layer per micro-batch on one GPU.

    Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    §4 (16-bit activations): with tensor parallelism t and sequence parallelism (assumed
    whenever t > 1, as in Megatron-LM),

    - no recompute:         s b h (34 / t + 5 a s / (h t))            (eq. 5 / Table 2)
    - selective recompute:  s b h (34 / t)                            (Table 2)
    - full recompute:       2 s b h / t                                (only the layer input)

    FlashAttention (Dao et al. 2022) never materialises the a s^2 attention scores, so the
    5 a s / h term vanishes with it: selective recomputation then saves nothing more.
    ``elem_bytes`` scales the paper's 2-byte accounting for 32-bit activations.

    ``sequence_parallel`` (default None: on whenever t > 1, as above) set to False gives plain
    tensor parallelism, Korthikanti Table 2: the 10 sbh of layer-norm inputs, dropout masks and
    sub-layer inputs stay whole on every rank:

    - no recompute:         s b h (10 + 24 / t + 5 a s / (h t))
    - selective recompute:  s b h (10 + 24 / t)
    - full recompute:       2 s b h                                    (input not split)

    Context parallelism ``cp`` splits the sequence: s -> s / cp in every term (Megatron-Core
    context parallelism; the attention-score term, quadratic in s, shrinks by cp^2 per rank
    only for the local block and is counted here as (s / cp)^2).

    ``terms`` replaces the GPT block's 10 h / 24 h / 5 a s / 2 h with an architecture's own
    (:func:`activation_terms`; ``h`` then only scales nothing)."""
    scale = elem_bytes / 2.0
    s_loc = s / cp
    sp = (tp > 1) if sequence_parallel is None else (sequence_parallel or tp == 1)
    t = terms if terms is not None else _gpt_terms(float(h))
    attn = 0.0 if (flash or recompute == "selective") else t.scores * a * s_loc
    if recompute == "full":
        return scale * s_loc * b * t.layer_input / (tp if sp else 1)
    if sp:
        return scale * s_loc * b * (t.whole + t.split + attn) / tp
    return scale * s_loc * b * (t.whole + (t.split + attn) / tp)


def activation_bytes(
    m: ModelDims,
    micro_batch: int,
    tp: int,
    pp: int,
    recompute: str,
    precision: str,
    train: bool = True,
    *,
    sequence_parallel: bool | None = None,
    cp: int = 1,
    virtual: int = 1,
    uneven_stages: bool = False,
) -> float:
    """Activation bytes on the most loaded GPU: the first pipeline stage under 1F1B holds p
    micro-batches of L/p layers each, i.e. L layers' worth (Korthikanti et al. 2022, §4.2.3),
    plus the embedding/output terms 4 s b h / t (1 + V / h) (their eq. 6, last stage).
    Per layer the architecture's own terms (:func:`activation_terms`: grouped-query
    attention's fewer keys and values, gated MLPs, MoE dispatch, MLA latents, dropout or not).

    Forward-only phases keep one layer's activations at a time (working set).

    Options (defaults reproduce the above): ``sequence_parallel`` and ``cp`` as in
    :func:`activation_bytes_per_layer`; ``virtual`` interleaved chunks multiply the first
    stage's activations by 1 + (p - 1)/(p v) (:func:`layout.interleaved_activation_factor`);
    ``uneven_stages`` counts the most loaded stage's layers' worth when p does not divide L,
    with the short stages first (:func:`layout.held_layers`: 126 layers on PP16 hold 112
    layers' worth on their most loaded stage)."""
    per_layer = activation_bytes_per_layer(
        m.seq_len,
        micro_batch,
        m.hidden,
        m.heads,
        tp,
        recompute,
        m.flash_attention,
        ACTIVATION_BYTES[precision],
        sequence_parallel=sequence_parallel,
        cp=cp,
        terms=activation_terms(m),
    )
    if not train:
        return per_layer
    scale = ACTIVATION_BYTES[precision] / 2.0
    sp = (tp > 1) if sequence_parallel is None else (sequence_parallel or tp == 1)
    out_div = tp if sp else 1
    s_loc = m.seq_len / cp
    extra = scale * 4.0 * s_loc * micro_batch * m.hidden / out_div * (1 + m.vocab / m.hidden)
    held = held_layers(m.layers, pp) if uneven_stages and pp > 1 else m.layers
    factor = interleaved_activation_factor(pp, virtual)
    return per_layer * held * factor + (extra if pp == 1 else 0.0)


#: CPU offload choices: nothing, the optimizer states and gradients (ZeRO-Offload), or the
#: parameters too (ZeRO-Infinity, stage 3 only).
Offload = Literal["none", "optimizer", "params"]
OFFLOAD_CHOICES: tuple[str, ...] = get_args(Offload)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory of one GPU in GB (10^9 bytes); the capacity is converted from the vendor's unit
    (:func:`capacity_bytes`). ``model_states_gb`` includes ``gather_gb`` (ZeRO-3's gathered
    layer); ``cpu_gb`` is what CPU offload moved to the host (not counted on the GPU)."""

    model_states_gb: float
    activations_gb: float
    buffers_gb: float
    total_gb: float
    capacity_gb: float
    gather_gb: float = 0.0
    cpu_gb: float = 0.0

    @property
    def fits(self) -> bool:
        """Whether the layout fits: total GB within the usable capacity (1e-9 GB tolerance)."""
        return self.total_gb <= self.capacity_gb + 1e-9

    @property
    def headroom_gb(self) -> float:
        """Usable GB left free (negative when the layout does not fit)."""
        return self.capacity_gb - self.total_gb

    def to_dict(self) -> dict[str, float | bool]:
        """The breakdown as plans and ``estimate --json`` state it."""
        return {
            "model_states_gb": self.model_states_gb,
            "activations_gb": self.activations_gb,
            "buffers_gb": self.buffers_gb,
            "gather_gb": self.gather_gb,
            "cpu_offload_gb": self.cpu_gb,
            "total_gb": self.total_gb,
            "capacity_gb": self.capacity_gb,
            "fits": self.fits,
        }


@dataclass(frozen=True)
class MemoryAllowances:
    """An instance's memory policy (``memory:``): the accounting convention of the model
    states and the allowances on top of them (buffers GB, fragmentation and headroom
    fractions)."""

    convention: str = "zero"
    buffer_gb: float = 1.5
    fragmentation: float = 0.05
    headroom: float = 0.10


def memory_per_gpu(
    m: ModelDims | None,
    gpu: tuple[float, str],
    lay: LayoutChoice,
    dp: int,
    run: tuple[int, bool, float, float],
    pol: MemoryAllowances,
) -> MemoryBreakdown:
    """Memory of one GPU of ``(memory, unit)`` in layout ``lay`` on ``dp`` replicas, for a
    run ``(micro-batch, training?, fixed need GB, fraction of the GPU)`` under the memory
    policy ``pol`` (the configuration space and the checker alike).

    Total = (states + activations) (1 + fragmentation) + buffers + fixed need, against the
    usable capacity = capacity_bytes(GPU memory, unit) x fraction x (1 - headroom).

    States (:func:`model_state_breakdown`) on the most loaded rank of the layout: ``pp``
    stages of ceil(L/p) layers (uneven stages), dense weights split by ``tp``, routed experts
    by ``ep`` (the model's ``expert_params``); dense states sharded over the dp x cp ranks
    that hold the same weights, expert states over tp x cp x dp / ep; under ZeRO-3 the
    gathered largest layer (:func:`planner.physics.transformer.largest_layer`) in every
    convention; ``offload`` moves states to the host. Activations
    (:func:`activation_bytes`) with sequence parallelism (``sp``), ``cp`` and ``virtual``.

    The buffer allowance (CUDA context ~0.5 GB, NCCL and cuBLAS workspaces ~1 GB) is a stated
    assumption, as is fragmentation (PyTorch's caching allocator typically wastes 3-10%)."""
    from planner.physics.transformer import expert_params, largest_layer

    micro_batch, train, fixed_gb, fraction = run
    if lay.offload not in OFFLOAD_CHOICES:
        raise ValueError(f"offload must be one of {', '.join(OFFLOAD_CHOICES)}")
    states = acts = gather = cpu = 0.0
    if m is not None:
        ms = model_state_breakdown(
            m.params,
            lay.precision,
            m.optimizer,
            lay.zero,
            dp * lay.cp,
            lay.tp,
            lay.pp,
            train,
            convention=pol.convention,
            layers=m.layers,
            expert_params=expert_params(m),
            ep=lay.ep,
            expert_dp=max(1, lay.tp * lay.cp * dp // lay.ep),
            largest_layer_params=largest_layer(m, lay.tp) if lay.zero == 3 and train else 0.0,
            offload_optimizer=lay.offload != "none",
            offload_params=lay.offload == "params",
        )
        states, gather, cpu = ms.gpu_bytes / 1e9, ms.gather_bytes / 1e9, ms.cpu_bytes / 1e9
        acts = (
            activation_bytes(
                m,
                micro_batch,
                lay.tp,
                lay.pp,
                lay.recompute,
                lay.precision,
                train,
                sequence_parallel=lay.sp,
                cp=lay.cp,
                virtual=lay.virtual,
                uneven_stages=True,
            )
            / 1e9
        )
    total = (states + acts) * (1 + pol.fragmentation) + pol.buffer_gb + fixed_gb
    usable = capacity_bytes(gpu[0], gpu[1]) / 1e9 * fraction * (1 - pol.headroom)
    return MemoryBreakdown(states, acts, pol.buffer_gb, total, usable, gather, cpu)


# ----------------------------------------------------------------------------- conventions

#: Memory accounting conventions for mixed-precision training (see state_bytes_per_param).
MemoryConvention = Literal["zero", "megatron", "deepspeed"]
MEMORY_CONVENTIONS: tuple[str, ...] = get_args(MemoryConvention)
#: GiB: HBM capacities are binary (an "80 GB" A100 has 81,920 MiB = 80 x 2^30 bytes).
GIB = 2**30


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of the model states, split by how ZeRO shards them.

    ``weights``: working weights; ``grads``: gradients as accumulated; ``optimizer``: optimizer
    states with the fp32 master copy (K); ``fp32_grads``: an extra fp32 gradient copy made for
    the optimizer step (DeepSpeed)."""

    weights: float
    grads: float
    optimizer: float
    fp32_grads: float = 0.0

    @property
    def total(self) -> float:
        """Bytes of model state per parameter: weights, gradients, optimizer states and fp32
        gradients."""
        return self.weights + self.grads + self.optimizer + self.fp32_grads


def state_bytes_per_param(optimizer: str, precision: str, convention: str = "zero") -> StateBytes:
    """Bytes per parameter under an accounting convention (mixed-precision Adam in brackets).

    - ``"zero"``: Rajbhandari et al. 2020 §3.1: 16-bit weights and gradients, K = 12
      [2 + 2 + 12 = 16].
    - ``"megatron"``: Megatron-LM keeps gradients in an fp32 ``main_grad`` buffer for
      accumulation [2 + 4 + 12 = 18]; ``theoretical_memory_usage.py``:
      ``num_bytes_per_parameter = 18`` without the distributed optimizer, 6 + 12 / dp with it
      (maintainer's reply in Megatron-LM issue #654: "2 bytes for model parameters ..., 4 bytes
      for main parameters, 4 bytes for gradients, 8 bytes for Adam states").
    - ``"deepspeed"``: DeepSpeed's estimators (``estimate_zero2_model_states_mem_needs``,
      ``estimate_zero3_model_states_mem_needs``): 16-bit weights and gradients plus fp32
      master, momentum, variance *and an fp32 gradient copy* for the step [2 + 2 + 12 + 4 =
      20; ZeRO-2 per GPU 2 + 18 / N, the current estimator in
      deepspeed/runtime/zero/stage_1_and_2.py: "2 = params_16bit, 18 = 2_grads_16bit +
      4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"; ZeRO-3 18 / N: the 16-bit
      gradients live in the gathered-layer buffer].

    In fp32/tf32 training every convention is the ZeRO one (no master copy, no extra grads)."""
    if convention not in MEMORY_CONVENTIONS:
        raise ValueError(f"memory convention must be one of {', '.join(MEMORY_CONVENTIONS)}")
    w = WEIGHT_BYTES[precision]
    k = optimizer_k(optimizer, precision)
    mixed = precision not in ("fp32", "tf32")
    if not mixed or convention == "zero":
        return StateBytes(w, w, k)
    if convention == "megatron":
        return StateBytes(w, 4.0, k)
    return StateBytes(w, w, k, 4.0)


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes of one GPU, and what was offloaded to its host's CPU memory."""

    gpu_bytes: float
    cpu_bytes: float
    gather_bytes: float


def model_state_breakdown(
    params: float,
    precision: str,
    optimizer: str,
    zero: int,
    dp: int,
    tp: int = 1,
    pp: int = 1,
    train: bool = True,
    *,
    convention: str = "zero",
    layers: int = 0,
    expert_params: float = 0.0,
    ep: int = 1,
    expert_dp: int | None = None,
    largest_layer_params: float = 0.0,
    offload_optimizer: bool = False,
    offload_params: bool = False,
) -> ModelStates:
    """Model states per GPU under a convention, with uneven stages, expert parallelism,
    ZeRO-3's gathered layer and CPU offload.

    The rank holds Psi_d dense and Psi_e routed-expert parameters
    (:func:`layout.params_per_rank`: dense / tp, experts / ep, ceil(L/p) / L of the layers).
    With per-parameter bytes w, g, K, f (:func:`state_bytes_per_param`), each group is sharded
    over the ranks holding the same weights, N = ``dp`` for the dense group and N_e =
    ``expert_dp`` (default dp; with expert parallelism folded over the tp x cp x dp grid,
    tp x cp x dp / ep) for the experts:

    - stage 0:  (w + g + K + f) Psi
    - stage 1:  (w + g) Psi + (K + f) Psi / N
    - stage 2:  w Psi + (g + K + f) Psi / N      ("deepspeed": 2 + 18 / N, DeepSpeed's current
      ZeRO-2 estimator; its older documented formula kept the 16-bit gradients whole,
      4 + 16 / N)
    - stage 3:  (w + g + K + f) Psi / N + gather ("deepspeed": (w + K + f) Psi / N = 18 / N)

    gather = 2 w x largest layer (16-bit parameters gathered and 16-bit gradients computed for
    the largest module, DeepSpeed docs: ``largest_layer_memory = 4 * largest_layer_params``),
    counted for stage 3 when ``largest_layer_params`` is given ("deepspeed" requires it).

    Offload (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021): the
    optimizer states (K + f) move to CPU memory; with ``offload_params`` (stage 3 only) the
    sharded 16-bit weights too, so the GPU keeps the gathered layer (DeepSpeed estimator:
    GPU = largest_layer_memory with both offloaded, largest_layer_memory + 2 Psi / N with the
    optimizer only)."""
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0-3, got {zero}")
    if offload_params and zero != 3:
        raise ValueError("parameter offload needs ZeRO stage 3")
    dense = params_per_rank(params - expert_params, tp, pp, layers)
    experts = params_per_rank(expert_params, ep, pp, layers)
    n_e = dp if expert_dp is None else expert_dp
    gather = 0.0
    if zero == 3 and largest_layer_params:
        gather = 2.0 * WEIGHT_BYTES[precision] * largest_layer_params
    if not train:
        w = INFERENCE_WEIGHT_BYTES[precision]
        if zero == 3:
            return ModelStates(w * (dense / dp + experts / n_e), 0.0, 0.0)
        return ModelStates(w * (dense + experts), 0.0, 0.0)
    b = state_bytes_per_param(optimizer, precision, convention)
    gpu = cpu = 0.0
    for psi, n in ((dense, dp), (experts, n_e)):
        on_gpu, on_cpu = _group_states(b, psi, n, zero, convention, offload_optimizer)
        if offload_params:
            on_cpu, on_gpu = on_cpu + on_gpu, 0.0
        gpu += on_gpu
        cpu += on_cpu
    return ModelStates(gpu + gather, cpu, gather)


def _group_states(
    b: StateBytes, psi: float, n: int, zero: int, convention: str, offload_optimizer: bool
) -> tuple[float, float]:
    """(GPU, CPU) bytes of Psi parameters sharded over n ranks (see
    :func:`model_state_breakdown`). ZeRO-Offload streams the (partitioned) gradients to the
    CPU with the optimizer states: the GPU keeps its 16-bit weights (DeepSpeed ZeRO-2 offload:
    2P)."""
    opt = (b.optimizer + b.fp32_grads) * psi / (1 if zero == 0 else n)
    weights = b.weights * psi / (n if zero == 3 else 1)
    if zero in (0, 1):
        grads = b.grads * psi
    elif zero == 2 or convention != "deepspeed":
        grads = b.grads * psi / n
    else:
        grads = 0.0  # DeepSpeed ZeRO-3: the 16-bit gradients live in the gathered-layer buffer
    if offload_optimizer:
        return weights, opt + grads
    return weights + grads + opt, 0.0


def offload_seconds_per_step(
    params_per_gpu: float,
    pcie_gb_per_s: float,
    precision: str = "bf16",
    offload_params: bool = False,
    cpu_adam_params_per_s: float = 0.0,
) -> float:
    """PCIe time per optimizer step added by CPU offload, for the parameters this GPU owns
    (Psi / N under ZeRO-2/3).

    ZeRO-Offload (Ren et al. 2021, §4.1) moves the 16-bit gradients to the CPU and the
    updated 16-bit parameters back each step: (g + w) Psi bytes, "4M" for 16-bit M. With
    parameter offload (ZeRO-Infinity) the owned 16-bit shard is also fetched for the forward
    and the backward pass: + 2 w Psi. Time = bytes / one-way PCIe bandwidth (x16 Gen4 ~32,
    Gen5 ~64 GB/s; the catalog's PCIe figures are both directions summed), not overlapped
    with compute (a stated, conservative assumption; DeepSpeed overlaps part of it). The CPU
    Adam update adds Psi / ``cpu_adam_params_per_s`` when given (0: not counted)."""
    w = WEIGHT_BYTES[precision]
    nbytes = 2.0 * w * params_per_gpu
    if offload_params:
        nbytes += 2.0 * w * params_per_gpu
    t = nbytes / (pcie_gb_per_s * 1e9)
    if cpu_adam_params_per_s > 0:
        t += params_per_gpu / cpu_adam_params_per_s
    return t


def deepspeed_zero2_estimate(
    total_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    buffer_factor: float = 1.5,
    *,
    documented: bool = False,
) -> tuple[int, int]:
    """(CPU bytes, GPU bytes) as DeepSpeed's ``estimate_zero2_model_states_mem_needs``
    (deepspeed/runtime/zero/stage_1_and_2.py) computes them: GPU 2P with the optimizer
    offloaded, else 2P + 18P / N (16-bit parameters whole; 16-bit and fp32 gradients, fp32
    parameters, momentum and variance partitioned); CPU P max(4N, 16) x buffer offloaded,
    else 4 P x GPUs per node x buffer (initialisation). N = all GPUs. ``documented``: the
    older formula its documentation page "Memory Requirements" prints, 4P + 16P / N (15.93 GB
    for its 2,851M-parameter example on 8 GPUs, where the current estimator gives 11.28). A
    reimplementation of the formulas, reproduced against the printed outputs in tests."""
    n = gpus_per_node * nodes
    if cpu_offload:
        gpu = 2 * total_params
        cpu = total_params * max(4 * n, 16) * buffer_factor
    else:
        if documented:
            gpu = 4 * total_params + int(16 * total_params / n)
        else:
            gpu = 2 * total_params + int(18 * total_params / n)
        cpu = total_params * 4 * gpus_per_node * buffer_factor
    return int(cpu), int(gpu)


def deepspeed_zero3_estimate(
    total_params: float,
    largest_layer_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    offload_optimizer: bool = True,
    offload_params: bool = True,
    zero_init: bool = True,
    buffer_factor: float = 1.5,
) -> tuple[int, int]:
    """(CPU bytes, GPU bytes) as DeepSpeed's ``estimate_zero3_model_states_mem_needs``
    (deepspeed/runtime/zero/stage3.py): gathered layer 4 x largest layer; GPU = that + 18P/N
    without offload, + 2P/N with the optimizer offloaded, alone with both offloaded; CPU with
    both offloaded 18P / nodes x buffer (zero.Init) or P max(4 x GPUs per node, 18 / nodes)
    x buffer; optimizer only 16 instead of 18; no offload: 4 x largest layer x GPUs per node x
    buffer (zero.Init) or 4P x GPUs per node x buffer."""
    n = gpus_per_node * nodes
    per_node = 1 / nodes
    gather = 4 * largest_layer_params
    if offload_optimizer:
        k = 18 if offload_params else 16
        gpu = gather if offload_params else gather + int(2 * total_params / n)
        if zero_init:
            cpu = total_params * k * per_node * buffer_factor
        else:
            cpu = total_params * max(4 * gpus_per_node, k * per_node) * buffer_factor
    else:
        gpu = gather + int(18 * total_params / n)
        if zero_init:
            cpu = largest_layer_params * 4 * gpus_per_node * buffer_factor
        else:
            cpu = total_params * 4 * gpus_per_node * buffer_factor
    return int(cpu), int(gpu)


def megatron_weight_and_optimizer_bytes(
    layers: int,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    distributed_optimizer: bool = False,
    untied: bool = False,
) -> float:
    """Megatron-LM's ``compute_weight_and_optimizer_memory``
    (megatron/training/theoretical_memory_usage.py), reimplemented: transformer parameters
    10 L h^2 ((1 + ffn/h) / 5 + kv/(5 heads) + 2/(5h) + 1/(5 L h)) (a non-gated MLP), the most
    loaded shard (L/p layers + the embedding) / t, times 18 bytes, or 6 + 12 / dp with the
    distributed optimizer. Bytes."""
    L, h = layers, hidden
    transformer = (
        10
        * L
        * h
        * h
        * ((1 + ffn_hidden / h) / 5 + kv_heads / (5 * heads) + 2 / (5 * h) + 1 / (5 * L * h))
    )
    emb = h * vocab
    shard = (transformer / pp + emb) / tp
    if untied and pp == 1:
        shard += emb / tp
    per_param = 6 + 12 / dp if distributed_optimizer else 18
    return shard * per_param


def capacity_bytes(memory_gb: float, unit: str = "GiB") -> float:
    """GPU memory capacity in bytes in the vendor's unit. HBM is built in binary sizes: an
    "80 GB" A100/H100 has 80 GiB = 81,920 MiB (nvidia-smi), so bytes = memory_gb x 2^30;
    ``unit="GB"`` keeps 10^9 (the old convention)."""
    if unit == "GiB":
        return memory_gb * GIB
    if unit == "GB":
        return memory_gb * 1e9
    raise ValueError("memory unit must be 'GiB' or 'GB'")
