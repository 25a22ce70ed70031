"""What a phase is, from the instance alone: its model, its work in FLOPs, the MFU and peak
throughput it runs at, and the sizes of what it writes (checkpoints) and hands on (output).

These facts feed the configuration space (:mod:`planner.model.configs`) and the cost model
(:mod:`planner.model.costs`). The independent checker has its own twins of them, under the same
names, in :mod:`planner.checker.recompute` (docs/cost-model.md, "Per configuration").
"""

from __future__ import annotations

from planner.instance.model import Instance
from planner.instance.schema import DEFAULT_MFU, GpuType, Phase
from planner.physics import storage
from planner.physics.transformer import ModelDims, flops_per_token


def phase_model(inst: Instance, p: Phase) -> ModelDims | None:
    """The phase's model dimensions, or None for a phase without a model."""
    return inst.models[p.model] if p.model is not None else None


def is_training(p: Phase) -> bool:
    """A training phase has a model and ``work.passes: train`` (whatever unit its work is in):
    it keeps optimizer states, checkpoints, and hands its weights on."""
    return p.model is not None and p.work.passes == "train"


def mfu_of(p: Phase, gpu: str) -> float:
    """The phase's model FLOPs utilisation on a GPU type: the phase's number, or its entry for
    the GPU type in a per-GPU mapping; a GPU type the mapping leaves out runs at the schema's
    default :data:`planner.instance.schema.DEFAULT_MFU` (a key is always a GPU type's name,
    never a fallback, even when a GPU type is called ``default``)."""
    if isinstance(p.mfu, dict):
        return float(p.mfu.get(gpu, DEFAULT_MFU))
    return float(p.mfu)


def peak_tflops(g: GpuType, precision: str) -> float | None:
    """Dense peak TFLOP/s of a GPU type at a precision, None when it has none."""
    v = g.peak_tflops.get(precision)  # type: ignore[call-overload]
    return float(v) if v else None


def work_flops(inst: Instance, p: Phase) -> float:
    """FLOPs of a phase: tokens x FLOPs per token under ``work.flops_convention``
    (planner.physics.transformer.flops_per_token: 6N per training token and 2N per forward
    token by default, N the active parameters), given FLOPs, or GPU-hours x 3600 x peak(ref
    GPU, precision) x MFU(ref GPU)."""
    w = p.work
    if w.flops is not None:
        return w.flops
    if w.gpu_hours is not None:
        assert w.gpu is not None
        peak = peak_tflops(inst.gpu(w.gpu), w.precision) or 0.0
        return w.gpu_hours * 3600.0 * peak * 1e12 * mfu_of(p, w.gpu)
    m = phase_model(inst, p)
    assert m is not None and w.tokens is not None
    return w.tokens * flops_per_token(m, w.flops_convention, w.passes == "train")


def remaining_share(inst: Instance, p: Phase) -> float:
    """The share of the phase's work still to do: 1, or ``1 - progress`` for a phase
    re-planned part-way (``progress`` as a fraction, tokens done against ``work.tokens``, or
    FLOPs done against :func:`work_flops`), at least 1e-9."""
    pr = p.progress
    if pr is None:
        return 1.0
    if pr.fraction is not None:
        done = pr.fraction
    elif pr.tokens is not None:
        assert p.work.tokens is not None
        done = pr.tokens / p.work.tokens
    else:
        assert pr.flops is not None
        done = pr.flops / work_flops(inst, p)
    return max(1e-9, 1.0 - done)


def checkpoint_gb_of(inst: Instance, p: Phase, precision: str) -> float:
    """Compressed size of one resumable checkpoint of the phase, GB."""
    if p.checkpoint_gb is not None:
        raw = p.checkpoint_gb
    else:
        m = phase_model(inst, p)
        raw = (
            0.0
            if m is None
            else storage.checkpoint_gb(m.params, precision, m.optimizer, is_training(p))
        )
    return raw / inst.spec.storage.compression_ratio


def output_gb_of(inst: Instance, p: Phase) -> float:
    """The artifact a phase hands on: given, else the trained weights (16-bit), else its data."""
    if p.output_gb is not None:
        return p.output_gb
    m = phase_model(inst, p)
    if m is not None and is_training(p):
        return storage.weights_gb(m.params) / inst.spec.storage.compression_ratio
    return 0.0 if m is not None else p.data.size_gb
