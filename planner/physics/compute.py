"""Compute: the throughput of a configuration against its MFU and the time FLOPs take.

FLOPs per token are :func:`planner.physics.transformer.flops_per_token`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.physics.layout import PIPELINE_MICROBATCHES, pipeline_efficiency, stage_imbalance

#: Throughput factor of activation recomputation on model FLOPs utilisation.
#: Full recomputation repeats the forward pass: hardware FLOPs 8ND instead of 6ND, so model
#: FLOPs per second fall by 6/8 (Narayanan et al. 2021 §3.5; Chowdhery et al. 2022 App. B).
#: Selective recomputation costs about 4% more time for GPT-3 175B (Korthikanti et al. 2022,
#: Table 4: 2.7%-4% overhead): factor 1/1.04.
RECOMPUTE_THROUGHPUT: dict[str, float] = {"none": 1.0, "selective": 1 / 1.04, "full": 0.75}


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


def layout_efficiency(
    tp: int,
    pp: int,
    zero: int,
    dp: int,
    multi_node: bool,
    *,
    microbatches: int = PIPELINE_MICROBATCHES,
    virtual: int = 1,
    layers: int = 0,
) -> float:
    """Throughput factor of a parallel layout against the user's MFU (measured at tp = pp = 1):

    - tensor parallel: 0.98 per doubling of t (two all-reduces per layer over NVLink;
      Narayanan et al. 2021 Fig. 13 shows per-GPU throughput falling slowly up to t = 8);
    - pipeline: 1 / (1 + bubble), bubble = (p - 1) / (v m) for m micro-batches per step and
      v interleaved chunks per device (Narayanan et al. 2021 §2.2.1-2.2.2,
      :func:`planner.physics.layout.pipeline_efficiency`); with ``layers`` given and p not
      dividing them, times the stage imbalance (L/p) / ceil(L/p) (the slowest stage sets the
      pace, :func:`planner.physics.layout.stage_imbalance`);
    - ZeRO-3 across nodes: 0.95, for 1.5x the data-parallel communication volume of DDP
      (Rajbhandari et al. 2020 §7.2.2); stages 1-2 move the same volume as DDP (§7.2.1)."""
    eff = 0.98 ** math.log2(tp) if tp > 1 else 1.0
    if pp > 1:
        eff *= pipeline_efficiency(pp, microbatches, virtual)
        if layers:
            eff *= stage_imbalance(layers, pp)
    if zero == 3 and dp > 1 and multi_node:
        eff *= 0.95
    return float(eff)


def serial_efficiency(compute_s: float, extra_s: float, overlap: float = 0.0) -> float:
    """Throughput factor of work that adds ``extra_s`` to a step of ``compute_s``, of which
    the share ``overlap`` hides behind compute: t_c / (t_c + (1 - overlap) t_extra). The form
    of the data-parallel all-reduce (:func:`interconnect_efficiency`), the expert all-to-all
    (:func:`all_to_all_efficiency`) and CPU offload's PCIe transfers
    (:func:`planner.physics.memory.offload_seconds_per_step`)."""
    if compute_s <= 0:
        return 1.0
    return compute_s / (compute_s + (1.0 - overlap) * extra_s)


def all_to_all_efficiency(
    bytes_per_token: float, flops_per_token: float, flops_per_s_per_gpu: float, gb_per_s: float
) -> float:
    """Throughput factor of the expert-parallel all-to-alls, not overlapped with compute
    (Megatron-Core's default schedule; DeepSeek-V3's DualPipe hides them, a stated
    simplification): per token, compute F / X seconds against bytes / bandwidth, both spread
    over the same GPUs of a model replica, so the factor is independent of tp and pp.
    ``bytes_per_token``: :func:`planner.physics.layout.moe_all_to_all_bytes_per_token`;
    ``flops_per_s_per_gpu``: peak x MFU; ``gb_per_s``: one direction per GPU (NVLink when the
    expert group fits in a node, else the scale-out network)."""
    if bytes_per_token <= 0:
        return 1.0
    return serial_efficiency(
        flops_per_token / flops_per_s_per_gpu, bytes_per_token / (gb_per_s * 1e9)
    )


# ----------------------------------------------------------------------------- MFU semantics

#: Scaling models (see :class:`ScalingModel`).
SCALING_KINDS: tuple[str, ...] = ("none", "per_doubling", "interconnect")


@dataclass(frozen=True)
class ScalingModel:
    """How throughput per GPU changes away from the scale at which an MFU was measured.

    A published MFU is valid at the scale of its run (Llama 2 70B: 43.5% on its cluster;
    Llama 3 405B: 38-43% on 8-16K GPUs). ``reference_gpus`` is that scale (None: the scale the
    MFU is used at, so no correction); the efficiency applied is relative to it:
    eff(n) / eff(reference).

    - ``"none"``: 1 at every scale;
    - ``"per_doubling"``: eff(n) = per_doubling ** log2(nodes(n)) (the planner's former model,
      :func:`scaling_efficiency`), applied relative to the reference;
    - ``"interconnect"``: eff(n) = t_compute / (t_compute + (1 - overlap) t_allreduce(n)) from
      the GPU type's inter-node bandwidth (:func:`interconnect_efficiency`)."""

    kind: str = "none"
    per_doubling: float = 0.98
    reference_gpus: float | None = None
    overlap: float = 0.9

    def __post_init__(self) -> None:
        if self.kind not in SCALING_KINDS:
            raise ValueError(f"scaling model must be one of {', '.join(SCALING_KINDS)}")
        if not 0 < self.per_doubling <= 1 or not 0 <= self.overlap <= 1:
            raise ValueError("per_doubling in (0, 1] and overlap in [0, 1]")


@dataclass(frozen=True)
class ScalingReport:
    """The scaling factor applied and why, for printing beside an estimate."""

    kind: str
    gpus: float
    reference_gpus: float
    efficiency: float
    detail: str


def dp_allreduce_seconds(grad_bytes: float, dp: int, gb_per_s: float) -> float:
    """Data-parallel gradient all-reduce per step: 2 (n - 1) / n x gradient bytes / bandwidth
    (ring all-reduce; bandwidth per GPU and direction, 10^9 bytes/s). ZeRO-1/2 move the same
    volume as reduce-scatter + all-gather (Rajbhandari et al. 2020 §7.2.1)."""
    if dp <= 1:
        return 0.0
    return 2.0 * (dp - 1) / dp * grad_bytes / (gb_per_s * 1e9)


def interconnect_efficiency(
    step_compute_s: float, grad_bytes: float, dp: int, gb_per_s: float, overlap: float = 0.9
) -> float:
    """Throughput factor of the data-parallel all-reduce: t_c / (t_c + (1 - overlap) t_ar).

    ``overlap`` is the share of the all-reduce hidden behind the backward pass (bucketed
    gradient reduction in PyTorch DDP / Megatron overlap-grad-reduce); 0.9 is a stated
    assumption, not a measurement. Bandwidth: the GPU type's ``inter_node_gb_per_s`` (one
    direction per GPU) when the data-parallel group spans nodes."""
    return serial_efficiency(
        step_compute_s, dp_allreduce_seconds(grad_bytes, dp, gb_per_s), overlap
    )


def relative_scaling(
    model: ScalingModel,
    gpus: float,
    gpus_per_node: int,
    *,
    step_compute_s: float = 0.0,
    grad_bytes: float = 0.0,
    dp_of: float | None = None,
    gb_per_s: float = 0.0,
) -> ScalingReport:
    """Efficiency at ``gpus`` relative to the model's reference scale (default: ``gpus``
    itself, giving 1), with a one-line account of it.

    For ``"interconnect"``: step compute time and gradient bytes per GPU are the caller's;
    the data-parallel degree is ``dp_of`` at ``gpus`` (default ``gpus``) and scales with the
    GPU count at the reference. Within one node the all-reduce runs over NVLink and is not
    charged here."""
    ref = gpus if model.reference_gpus is None else model.reference_gpus
    if model.kind == "none" or ref == gpus:
        return ScalingReport(model.kind, gpus, ref, 1.0, "MFU used at its reference scale")
    if model.kind == "per_doubling":
        e = scaling_efficiency(gpus, gpus_per_node, model.per_doubling)
        e0 = scaling_efficiency(ref, gpus_per_node, model.per_doubling)
        return ScalingReport(
            model.kind,
            gpus,
            ref,
            e / e0,
            f"{model.per_doubling} per doubling of nodes, relative to {ref:g} GPUs",
        )
    dp = dp_of if dp_of is not None else gpus

    def eff(n: float, d: float) -> float:
        if n <= gpus_per_node:
            return 1.0
        return interconnect_efficiency(step_compute_s, grad_bytes, int(d), gb_per_s, model.overlap)

    e = eff(gpus, dp)
    e0 = eff(ref, dp * ref / gpus)
    return ScalingReport(
        model.kind,
        gpus,
        ref,
        e / e0,
        f"all-reduce at {gb_per_s:g} GB/s, {model.overlap:.0%} overlapped, "
        f"relative to {ref:g} GPUs",
    )


def gpu_hours(flops: float, peak_tflops: float, mfu: float, scaling: float = 1.0) -> float:
    """GPU-hours = FLOPs / (peak x MFU x scaling x 3600): at the reference scale of the MFU
    (scaling 1) independent of the GPU count."""
    return flops / (peak_tflops * 1e12 * mfu * scaling) / 3600.0


def implied_mfu(flops: float, gpu_hours_: float, peak_tflops: float) -> float:
    """The MFU a published GPU-hours figure implies: FLOPs / (GPU-hours x 3600 x peak)."""
    return flops / (gpu_hours_ * 3600.0 * peak_tflops * 1e12)
