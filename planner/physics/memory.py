"""Memory per GPU: model states (ZeRO accounting) and activations (Korthikanti et al.).

Bytes throughout; callers convert to GB (10^9 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def model_state_bytes(
    params: float,
    precision: str,
    optimizer: str,
    zero: int,
    dp: int,
    tp: int = 1,
    pp: int = 1,
    train: bool = True,
) -> float:
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
    stage 3 only)."""
    psi = params / (tp * pp)
    if not train:
        w = INFERENCE_WEIGHT_BYTES[precision] * psi
        return w / dp if zero == 3 else w
    w = WEIGHT_BYTES[precision]
    g = WEIGHT_BYTES[precision]
    k = optimizer_k(optimizer, precision)
    if zero == 0:
        return (w + g + k) * psi
    if zero == 1:
        return (w + g) * psi + k * psi / dp
    if zero == 2:
        return w * psi + (g + k) * psi / dp
    if zero == 3:
        return (w + g + k) * psi / dp
    raise ValueError(f"ZeRO stage must be 0-3, got {zero}")


def activation_bytes_per_layer(
    s: int, b: int, h: int, a: int, tp: int, recompute: str, flash: bool, elem_bytes: float = 2.0
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
    ``elem_bytes`` scales the paper's 2-byte accounting for 32-bit activations."""
    scale = elem_bytes / 2.0
    if recompute == "full":
        return scale * 2.0 * s * b * h / tp
    attn = 0.0 if (flash or recompute == "selective") else 5.0 * a * s / h
    return scale * s * b * h * (34.0 / tp + attn / tp)


def activation_bytes(
    m: ModelDims,
    micro_batch: int,
    tp: int,
    pp: int,
    recompute: str,
    precision: str,
    train: bool = True,
) -> float:
    """Activation bytes on the most loaded GPU: the first pipeline stage under 1F1B holds p
    micro-batches of L/p layers each, i.e. L layers' worth (Korthikanti et al. 2022, §4.2.3),
    plus the embedding/output terms 4 s b h / t (1 + V / h) (their eq. 6, last stage).

    Forward-only phases keep one layer's activations at a time (working set)."""
    per_layer = activation_bytes_per_layer(
        m.seq_len,
        micro_batch,
        m.hidden,
        m.heads,
        tp,
        recompute,
        m.flash_attention,
        ACTIVATION_BYTES[precision],
    )
    if not train:
        return per_layer
    scale = ACTIVATION_BYTES[precision] / 2.0
    extra = scale * 4.0 * m.seq_len * micro_batch * m.hidden / tp * (1 + m.vocab / m.hidden)
    return per_layer * m.layers + (extra if pp == 1 else 0.0)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory of one GPU in GB (10^9 bytes)."""

    model_states_gb: float
    activations_gb: float
    buffers_gb: float
    total_gb: float
    capacity_gb: float

    @property
    def fits(self) -> bool:
        return self.total_gb <= self.capacity_gb + 1e-9

    @property
    def headroom_gb(self) -> float:
        return self.capacity_gb - self.total_gb

    def to_dict(self) -> dict[str, float | bool]:
        return {
            "model_states_gb": self.model_states_gb,
            "activations_gb": self.activations_gb,
            "buffers_gb": self.buffers_gb,
            "total_gb": self.total_gb,
            "capacity_gb": self.capacity_gb,
            "fits": self.fits,
        }


def memory_per_gpu(
    m: ModelDims | None,
    gpu_memory_gb: float,
    precision: str,
    zero: int,
    dp: int,
    tp: int,
    pp: int,
    recompute: str,
    micro_batch: int,
    train: bool,
    buffer_gb: float,
    fragmentation: float,
    headroom: float,
    fixed_gb: float = 0.0,
    fraction: float = 1.0,
) -> MemoryBreakdown:
    """Total = (states + activations) (1 + fragmentation) + buffers + fixed need, against the
    usable capacity = GPU memory x fraction x (1 - headroom).

    The buffer allowance (CUDA context ~0.5 GB, NCCL and cuBLAS workspaces ~1 GB) is a stated
    assumption, as is fragmentation (PyTorch's caching allocator typically wastes 3-10%)."""
    states = acts = 0.0
    if m is not None:
        states = model_state_bytes(m.params, precision, m.optimizer, zero, dp, tp, pp, train) / 1e9
        acts = activation_bytes(m, micro_batch, tp, pp, recompute, precision, train) / 1e9
    total = (states + acts) * (1 + fragmentation) + buffer_gb + fixed_gb
    return MemoryBreakdown(
        states, acts, buffer_gb, total, gpu_memory_gb * fraction * (1 - headroom)
    )
