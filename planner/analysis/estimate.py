"""Estimates for people sizing a run: the physics of one training job, without a plan.

Two entry points, both used by ``trainplan estimate``:

- :func:`estimate` takes a model (a preset, a size, or an architecture), a token budget (or
  none: memory only), a GPU (catalog name or explicit figures) and any number of GPU counts,
  precisions, ZeRO stages and recomputation choices, and returns one :class:`EstimateRow` per
  combination: memory per GPU, time, GPU-hours, energy, checkpoints, failures in hours,
  GPU-hours, kWh and dollars, the effective training time, and cost. The flags become a
  one-phase instance (:func:`one_phase_instance`) whose configurations the planner's own
  configuration space builds and whose costs the cost model computes, so an estimate and a
  plan cannot disagree (docs/cost-model.md, "Per configuration"):

  - work ``W = tokens x FLOPs per token`` under the FLOPs convention (6N by default, N the
    active parameters);
  - sustained FLOP/s ``= gpus x peak x MFU x R x eff_scale x eff_layout``, the MFU valid at
    its reference scale (``reference_gpus``; none: the GPUs estimated, eff_scale 1);
  - ``hours = W / FLOP/s / 3600``: the hours of the work at that MFU, so ``gpu_hours`` is what
    a published GPU-hours figure and its MFU relate; ``work_hours`` adds the checkpoint stalls,
    ``wall_hours`` the expected failure losses (``lost_hours``);
  - sharded checkpoints (per-node bandwidth up to the tier's aggregate), the scheme's stall,
    Daly's interval, detection + restart + reload per failure, failures per running hour
    ``lambda / (1 - lambda L)``;
  - costs at the given electricity price for the work hours: rental, energy, failures.

- :func:`phase_estimates` ranks the feasible configurations of one phase of an instance
  (from :mod:`planner.model.configs`) by what the phase would cost if run at its region's mean
  electricity price, or gives the reason the phase has none.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from planner.instance.catalog import CatalogError, catalog_price, gpu_by_name, resolve_name
from planner.instance.errors import InstanceError
from planner.instance.model import Instance
from planner.instance.read import from_dict
from planner.instance.schema import (
    DEFAULT_PUE,
    FailureModel,
    GpuType,
    MemoryPolicy,
    ModelSpec,
    Phase,
    Scaling,
    StorageTier,
)
from planner.model.configs import Config, Layout, build_config_space, enumerate_phase, kv_heads
from planner.model.costs import mean_price_costs
from planner.model.workload import checkpoint_gb_of, work_flops
from planner.physics import compute, energy
from planner.physics.architecture import FLOPS_CONVENTIONS
from planner.physics.memory import (
    MEMORY_CONVENTIONS,
    OFFLOAD_CHOICES,
    OPTIMIZER_K_MIXED,
    MemoryBreakdown,
)
from planner.physics.presets import PresetError, resolve_preset
from planner.physics.reliability import FAILURE_PRESETS
from planner.physics.storage import CHECKPOINT_SCHEMES
from planner.physics.transformer import ModelDims, active_params, dims

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
RECOMPUTES = ("none", "selective", "full")
MtbfScope = Literal["gpu", "job"]

#: Defaults shared with the instance schema, so an estimate and a plan agree by default.
_MEMORY = MemoryPolicy()
_FAILURE = FailureModel()
_TIER = StorageTier(usd_per_gb_month=0.0)
_SCALING = Scaling()

#: Write bandwidth per node of the schema's default ("hot") storage tier, GB/s.
DEFAULT_WRITE_GB_PER_S = 5.0
#: Electricity price when none is given, USD/MWh (a stated round figure; pass your own).
DEFAULT_PRICE_USD_PER_MWH = 100.0
#: Idle draw of an explicitly specified GPU as a share of its board power when not given
#: (the catalog's idle estimates are 8-20% of TDP; GPU_SOURCES.md).
DEFAULT_IDLE_SHARE = 0.10


class EstimateError(ValueError):
    """Bad input to an estimate; the message names the flag and what was expected."""


# ----------------------------------------------------------------------------- parsing

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtTpP]?)\s*$")


def parse_quantity(text: str, flag: str) -> float:
    """A positive count written as ``7e9``, ``7000000000``, ``7B``, ``70b``, ``1.5T`` or ``300M``
    (k = 10^3, M = 10^6, B or G = 10^9, T = 10^12, P = 10^15)."""
    m = _QUANTITY.match(text)
    if m is None:
        raise EstimateError(
            f"{flag}: expected a positive number such as 7e9, 7B, 70B or 1.5T, got {text!r}"
        )
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise EstimateError(f"{flag}: expected a positive, finite number, got {text!r}")
    return value


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class GpuSpec:
    """The GPU of an estimate: its figures, its name and its rental price (None: unknown)."""

    name: str
    gpu: GpuType
    usd_per_gpu_hour: float | None


def gpu_spec(
    name: str | None = None,
    memory_gb: float | None = None,
    tflops: float | None = None,
    power_w: float | None = None,
    idle_w: float | None = None,
    gpus_per_node: int | None = None,
    node_overhead_w: float | None = None,
    usd_per_gpu_hour: float | None = None,
) -> GpuSpec:
    """A catalog GPU (``name``, case-insensitive) with any figure overridden, or, without a
    name, an explicit GPU from ``memory_gb``, ``tflops`` (dense peak at every precision) and
    ``power_w`` (board power); idle defaults to 10% of board power, 8 GPUs per node, no node
    overhead. The price is ``usd_per_gpu_hour``, else the catalog's on-demand price."""
    for flag, v in (
        ("--gpu-memory-gb", memory_gb),
        ("--gpu-tflops", tflops),
        ("--gpu-power-w", power_w),
    ):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise EstimateError(f"{flag}: expected a positive number, got {v:g}")
    for flag, v in (
        ("--gpu-idle-w", idle_w),
        ("--node-overhead-w", node_overhead_w),
        ("--gpu-hour-usd", usd_per_gpu_hour),
    ):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise EstimateError(f"{flag}: expected a non-negative number, got {v:g}")
    if gpus_per_node is not None and gpus_per_node < 1:
        raise EstimateError(f"--gpus-per-node: expected at least 1, got {gpus_per_node}")
    if name is not None:
        try:
            canonical = resolve_name(name)
        except CatalogError as e:
            raise EstimateError(f"--gpu: {e.errors[0].message}") from None
        base = gpu_by_name(canonical)
        price = usd_per_gpu_hour if usd_per_gpu_hour is not None else catalog_price(canonical)
        fields: dict[str, Any] = dict(base.model_dump())
        label = canonical
    else:
        missing = [
            f
            for f, v in (
                ("--gpu-memory-gb", memory_gb),
                ("--gpu-tflops", tflops),
                ("--gpu-power-w", power_w),
            )
            if v is None
        ]
        if missing:
            raise EstimateError(
                "give --gpu NAME (a catalog GPU) or the explicit figures "
                "--gpu-memory-gb, --gpu-tflops and --gpu-power-w; missing " + ", ".join(missing)
            )
        assert power_w is not None
        fields = {
            "memory_gb": memory_gb,
            "peak_tflops": dict.fromkeys(PRECISIONS, tflops),
            "board_power_w": power_w,
            "idle_power_w": DEFAULT_IDLE_SHARE * power_w,
            "gpus_per_node": 8,
            "node_overhead_w": 0.0,
            "source": "command line",
        }
        price = usd_per_gpu_hour
        label = "custom"
    if memory_gb is not None:
        fields["memory_gb"] = memory_gb
    if tflops is not None:
        fields["peak_tflops"] = dict.fromkeys(PRECISIONS, tflops)
    if power_w is not None:
        fields["board_power_w"] = power_w
        if idle_w is None and fields["idle_power_w"] > power_w:
            fields["idle_power_w"] = DEFAULT_IDLE_SHARE * power_w
    if idle_w is not None:
        fields["idle_power_w"] = idle_w
    if gpus_per_node is not None:
        fields["gpus_per_node"] = gpus_per_node
    if node_overhead_w is not None:
        fields["node_overhead_w"] = node_overhead_w
    if fields["idle_power_w"] > fields["board_power_w"]:
        raise EstimateError(
            f"--gpu-idle-w: idle power {fields['idle_power_w']:g} W exceeds the "
            f"board power {fields['board_power_w']:g} W"
        )
    return GpuSpec(label, GpuType.model_validate(fields), price)


@dataclass(frozen=True)
class EstimateLayout:
    """An estimate's parallel layout, one value each (the flags of the same names): tensor,
    pipeline, context and expert parallel degrees, sequence parallelism, micro-batches per
    optimiser step and interleaved chunks per device in the pipeline, offload of states to CPU
    memory, and the micro-batch size in sequences. :meth:`options` states it as the phase
    options of the estimate's instance."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    sequence_parallel: bool = True
    microbatches: int = compute.PIPELINE_MICROBATCHES
    interleave: int = 1
    offload: str = "none"
    micro_batch: int = 1

    def options(self) -> dict[str, Any]:
        """The ``phases.<p>.options`` that allow this layout alone."""
        return {
            "tensor_parallel": [self.tp],
            "pipeline_parallel": [self.pp],
            "context_parallel": [self.cp],
            "expert_parallel": [self.ep],
            "sequence_parallel": [self.sequence_parallel],
            "microbatches": [self.microbatches],
            "interleave": [self.interleave],
            "offload": [self.offload],
            "micro_batch": self.micro_batch,
        }


@dataclass(frozen=True)
class EstimateInput:
    """One job to estimate. ``gpus``, ``precision``, ``zero`` and ``recompute`` may hold several
    values: :func:`estimate` returns one row per combination. Empty ``gpus`` means one node;
    empty ``precision`` the first of bf16, fp16, fp32 the GPU supports. ``tokens`` None: a
    memory-only estimate (no time, energy, failure or cost figures). ``model`` names a preset
    (planner/data/models.yaml) whose fields the other model figures override. ``layout``: the
    one parallel layout every row takes (:class:`EstimateLayout`)."""

    tokens: float | None
    gpu: GpuSpec
    params: float | None = None
    model: str | None = None
    gpus: tuple[int, ...] = ()
    precision: tuple[str, ...] = ()
    zero: tuple[int, ...] = (1,)
    recompute: tuple[str, ...] = ("none",)
    seq_len: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    vocab: int | None = None
    optimizer: str = "adamw"
    flash_attention: bool = True
    layout: EstimateLayout = field(default_factory=EstimateLayout)
    mfu: float = 0.4
    flops_convention: str = "6nd"
    scaling: str = _SCALING.kind
    per_doubling: float = _SCALING.per_doubling
    reference_gpus: float | None = None
    overlap: float = _SCALING.overlap
    mfu_layout: str = _SCALING.layout
    power_load: float = 0.9
    pue: float = DEFAULT_PUE
    price_usd_per_mwh: float = DEFAULT_PRICE_USD_PER_MWH
    carbon_g_per_kwh: float | None = None
    mtbf_hours: float | None = None
    mtbf_scope: MtbfScope = "gpu"
    failure_preset: str | None = None
    checkpoint: str = _FAILURE.checkpoint
    checkpoint_write_s: float | None = None
    write_gb_per_s: float = DEFAULT_WRITE_GB_PER_S
    read_gb_per_s: float = _TIER.read_gb_per_s
    aggregate_gb_per_s: float | None = None
    detect_hours: float = _FAILURE.detect_hours
    restart_hours: float = _FAILURE.restart_hours
    memory_convention: str = _MEMORY.convention
    buffer_gb: float = _MEMORY.buffer_gb
    fragmentation: float = _MEMORY.fragmentation
    headroom: float = _MEMORY.headroom


@dataclass(frozen=True)
class Costs:
    """USD; ``rental`` and ``total`` are None when the GPU has no price."""

    rental: float | None
    energy: float
    failure: float

    @property
    def total(self) -> float | None:
        """Rental + energy + expected failure cost, None when there is no rental price (memory-only
        estimates)."""
        return None if self.rental is None else self.rental + self.energy + self.failure


@dataclass(frozen=True)
class RunFigures:
    """What a run of the estimate's tokens takes (hours are wall-clock, not rounded up):
    ``hours`` of work at the MFU, ``work_hours`` with checkpoint stalls, ``wall_hours`` with
    the expected failure losses; failures in hours, GPU-hours, kWh and dollars."""

    flops: float
    hours: float
    work_hours: float
    wall_hours: float
    expected_failures: float
    lost_hours: float
    lost_gpu_hours: float
    lost_kwh: float
    costs: Costs
    emissions_t: float | None


@dataclass(frozen=True)
class EstimateRow:
    """One configuration of an estimate. Memory in GB (10^9 bytes), time in hours. ``run``
    is None for a memory-only estimate."""

    gpu: str
    gpus: int
    layout: Layout
    micro_batch: int
    model: ModelDims
    tokens: float | None
    memory: MemoryBreakdown
    config: Config
    flops_convention: str
    memory_convention: str
    checkpoint_gb: float
    usd_per_gpu_hour: float | None
    run: RunFigures | None
    notes: tuple[str, ...] = field(default=())

    @property
    def flops_per_s(self) -> float:
        """Sustained model FLOP/s of the estimated configuration."""
        return self.config.flops_per_s

    @property
    def hours(self) -> float | None:
        """Wall hours of the run, None for a memory-only estimate (no tokens given)."""
        return None if self.run is None else self.run.hours

    @property
    def gpu_hours(self) -> float | None:
        """Wall hours x GPUs, None for a memory-only estimate."""
        return None if self.run is None else self.run.hours * self.gpus

    @property
    def energy_kwh(self) -> float | None:
        """Facility energy of the run's work hours (kWh), None for a memory-only estimate."""
        return None if self.run is None else self.config.facility_kw * self.run.work_hours

    @property
    def tokens_per_kwh(self) -> float | None:
        """Tokens trained per facility kWh, None without tokens or energy."""
        kwh = self.energy_kwh
        return (
            None if kwh is None or self.tokens is None else energy.tokens_per_kwh(self.tokens, kwh)
        )

    @property
    def label(self) -> str:
        """The row's setting in one line: GPUs, precision, ZeRO, recomputation, tp/pp and any
        extras."""
        lay = self.layout
        extras = lay.extras()
        return (
            f"{self.gpus} x {self.gpu} {lay.precision} ZeRO-{lay.zero} "
            f"recompute={lay.recompute} tp{lay.tp} pp{lay.pp}" + (f" {extras}" if extras else "")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; infinities (no failures: no checkpoint interval) become null, and so
        do the run's figures of a memory-only estimate."""
        m, mem, c, run = self.model, self.memory, self.config, self.run
        th = c.throughput
        out: dict[str, Any] = {
            "gpu": self.gpu,
            "gpus": self.gpus,
            **{k: v for k, v in asdict(self.layout).items()},
            "micro_batch": self.micro_batch,
            "params": m.params,
            "active_params": active_params(m),
            "layers": m.layers,
            "hidden": m.hidden,
            "heads": m.heads,
            "seq_len": m.seq_len,
            "architecture_inferred": m.inferred,
            "tokens": self.tokens,
            **mem.to_dict(),
            "memory_convention": self.memory_convention,
            "flops_convention": self.flops_convention,
            "flops_per_s": self.flops_per_s,
            "scaling": {
                "kind": th.scaling.kind,
                "reference_gpus": th.scaling.reference_gpus,
                "efficiency": th.eff_scale,
                "detail": th.scaling.detail,
            },
            "layout_efficiency": th.eff_layout,
            "recompute_factor": th.recompute,
            "facility_kw": c.facility_kw,
            "checkpoint": c.checkpoint,
            "checkpoint_gb": self.checkpoint_gb,
            "checkpoint_write_s": c.checkpoint_write_s,
            "checkpoint_persist_s": c.checkpoint_persist_s,
            "checkpoint_reload_s": c.checkpoint_reload_s,
            "checkpoint_interval_s": _finite(c.checkpoint_interval_s),
            "checkpoint_overhead": c.checkpoint_overhead,
            "failure_rate_per_h": c.job_failure_rate,
            "failures_per_running_hour": c.failure_rate,
            "downtime_h": c.downtime_h,
            "loss_h_per_failure": c.loss_h,
            "effective_training_time": c.effective_training_time,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "notes": list(self.notes),
        }
        keys = (
            "flops",
            "hours",
            "gpu_hours",
            "work_hours",
            "wall_hours",
            "wall_gpu_hours",
            "checkpoint_hours",
            "energy_kwh",
            "tokens_per_kwh",
            "emissions_t",
            "expected_failures",
            "lost_hours",
            "lost_gpu_hours",
            "lost_kwh",
        )
        if run is None:
            out.update(dict.fromkeys(keys))
            out["cost_usd"] = None
            return out
        out.update(
            flops=run.flops,
            hours=run.hours,
            gpu_hours=self.gpu_hours,
            work_hours=run.work_hours,
            wall_hours=run.wall_hours,
            wall_gpu_hours=run.wall_hours * self.gpus,
            checkpoint_hours=run.work_hours - run.hours,
            energy_kwh=self.energy_kwh,
            tokens_per_kwh=_finite(self.tokens_per_kwh or math.inf),
            emissions_t=run.emissions_t,
            expected_failures=run.expected_failures,
            lost_hours=run.lost_hours,
            lost_gpu_hours=run.lost_gpu_hours,
            lost_kwh=run.lost_kwh,
            cost_usd={
                "rental": run.costs.rental,
                "energy": run.costs.energy,
                "failure": run.costs.failure,
                "total": run.costs.total,
            },
        )
        return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


#: EstimateInput fields that must be positive numbers, and whole numbers of at least 1 (the
#: flag is the field's name with dashes).
_POSITIVE = (
    "tokens",
    "params",
    "mtbf_hours",
    "checkpoint_write_s",
    "write_gb_per_s",
    "read_gb_per_s",
    "aggregate_gb_per_s",
    "reference_gpus",
)
_AT_LEAST_ONE = (
    "seq_len",
    "layers",
    "hidden",
    "heads",
    "vocab",
)
#: The same for the :class:`EstimateLayout` fields.
_LAYOUT_AT_LEAST_ONE = ("micro_batch", "tp", "pp", "cp", "ep", "microbatches", "interleave")


def _check(inp: EstimateInput) -> None:
    def positive(flag: str, v: float | None) -> None:
        if v is not None and not (math.isfinite(v) and v > 0):
            raise EstimateError(f"{flag}: expected a positive number, got {v:g}")

    def at_least_one(flag: str, v: int | None) -> None:
        if v is not None and v < 1:
            raise EstimateError(f"{flag}: expected a whole number of at least 1, got {v}")

    def one_of(flag: str, v: str, choices: tuple[str, ...]) -> None:
        if v not in choices:
            raise EstimateError(f"{flag}: expected one of {', '.join(choices)}, got {v!r}")

    for name in _POSITIVE:
        positive("--" + name.replace("_", "-"), getattr(inp, name))
    for record, names in ((inp, _AT_LEAST_ONE), (inp.layout, _LAYOUT_AT_LEAST_ONE)):
        for name in names:
            at_least_one("--" + name.replace("_", "-"), getattr(record, name))
    for g in inp.gpus:
        if g < 1:
            raise EstimateError(f"--gpus: expected a whole number of at least 1, got {g}")
    if not (math.isfinite(inp.mfu) and 0 < inp.mfu <= 1):
        raise EstimateError(f"--mfu: expected a model FLOPs utilisation in (0, 1], got {inp.mfu:g}")
    if not (math.isfinite(inp.per_doubling) and 0 < inp.per_doubling <= 1):
        raise EstimateError(
            f"--per-doubling: expected a factor in (0, 1], got {inp.per_doubling:g}"
        )
    if not (math.isfinite(inp.overlap) and 0 <= inp.overlap <= 1):
        raise EstimateError(f"--overlap: expected a fraction in [0, 1], got {inp.overlap:g}")
    if not (math.isfinite(inp.power_load) and 0 <= inp.power_load <= 1):
        raise EstimateError(f"--power-load: expected a fraction in [0, 1], got {inp.power_load:g}")
    if not (math.isfinite(inp.pue) and 1 <= inp.pue <= 5):
        raise EstimateError(
            f"--pue: expected a power usage effectiveness in [1, 5], got {inp.pue:g}"
        )
    if not math.isfinite(inp.price_usd_per_mwh):
        raise EstimateError("--price-usd-per-mwh: expected a finite number")
    if inp.carbon_g_per_kwh is not None and not (
        math.isfinite(inp.carbon_g_per_kwh) and inp.carbon_g_per_kwh >= 0
    ):
        raise EstimateError(
            f"--carbon-g-per-kwh: expected a non-negative number, got {inp.carbon_g_per_kwh:g}"
        )
    for flag, hv in (("--restart-hours", inp.restart_hours), ("--detect-hours", inp.detect_hours)):
        if not (0 <= hv < math.inf):
            raise EstimateError(f"{flag}: expected a non-negative number, got {hv:g}")
    if inp.mtbf_scope not in ("gpu", "job"):
        raise EstimateError(f"--mtbf-scope: expected 'gpu' or 'job', got {inp.mtbf_scope!r}")
    one_of("--flops-convention", inp.flops_convention, FLOPS_CONVENTIONS)
    one_of("--scaling", inp.scaling, compute.SCALING_KINDS)
    one_of("--mfu-layout", inp.mfu_layout, ("modeled", "in_mfu"))
    one_of("--memory-convention", inp.memory_convention, MEMORY_CONVENTIONS)
    one_of("--checkpoint", inp.checkpoint, CHECKPOINT_SCHEMES)
    one_of("--offload", inp.layout.offload, OFFLOAD_CHOICES)
    if inp.failure_preset is not None:
        one_of("--failure-preset", inp.failure_preset, tuple(FAILURE_PRESETS))
        if inp.mtbf_hours is not None:
            raise EstimateError("--failure-preset: give a preset or --mtbf-hours, not both")
    if inp.model is not None:
        try:
            resolve_preset(inp.model)
        except PresetError as e:
            raise EstimateError(f"--model: {e}") from None
    elif inp.params is None and (inp.layers is None or inp.hidden is None):
        raise EstimateError("give --model NAME (a preset), --params, or --layers and --hidden")
    if inp.hidden is not None and inp.heads is not None and inp.hidden % inp.heads:
        raise EstimateError(f"--heads: {inp.heads} does not divide --hidden {inp.hidden}")
    if inp.optimizer not in OPTIMIZER_K_MIXED:
        raise EstimateError(
            f"--optimizer: expected one of {', '.join(OPTIMIZER_K_MIXED)}, got {inp.optimizer!r}"
        )
    for p in inp.precision:
        if p not in PRECISIONS:
            raise EstimateError(f"--precision: expected one of {', '.join(PRECISIONS)}, got {p!r}")
    for z in inp.zero:
        if z not in (0, 1, 2, 3):
            raise EstimateError(f"--zero: expected a ZeRO stage 0, 1, 2 or 3, got {z}")
    for r in inp.recompute:
        if r not in RECOMPUTES:
            raise EstimateError(f"--recompute: expected one of {', '.join(RECOMPUTES)}, got {r!r}")
    if not (0 <= inp.fragmentation <= 1 and 0 <= inp.headroom < 1 and inp.buffer_gb >= 0):
        raise EstimateError(
            "memory allowances: expected buffer >= 0, fragmentation in [0, 1] "
            "and headroom in [0, 1)"
        )


def _model_fields(inp: EstimateInput) -> dict[str, Any]:
    """The instance's model: the preset (if any) with the given figures over it."""
    given = {
        "params": inp.params,
        "layers": inp.layers,
        "hidden": inp.hidden,
        "heads": inp.heads,
        "seq_len": inp.seq_len,
        "vocab": inp.vocab,
        "optimizer": inp.optimizer,
        "flash_attention": inp.flash_attention,
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if inp.model is not None:
        fields["preset"] = inp.model
    return fields


def model_of(inp: EstimateInput) -> ModelDims:
    """Complete the model: a preset's exact architecture, P from the architecture, or the
    architecture inferred from P (GPT-3 aspect ratio h = 128 L, head size 128, heads a
    multiple of 8)."""
    try:
        spec = ModelSpec.model_validate(_model_fields(inp))
    except ValidationError as e:
        raise EstimateError("; ".join(str(x["msg"]) for x in e.errors())) from None
    return dims(
        spec.params,
        spec.layers,
        spec.hidden,
        spec.heads,
        spec.seq_len,
        spec.vocab,
        spec.optimizer,
        spec.flash_attention,
        arch=spec.architecture() if spec.uses_full_architecture else None,
    )


def _default_precision(g: GpuType) -> str:
    for p in ("bf16", "fp16", "fp32"):
        if g.peak_tflops.get(p):
            return p
    return next(p for p, v in g.peak_tflops.items() if v)


#: Tokens of the nominal run behind a memory-only estimate (its time figures are dropped).
_NOMINAL_TOKENS = 1e9


def one_phase_instance(inp: EstimateInput, gpus: int, precisions: tuple[str, ...]) -> Instance:
    """The estimate as an instance: one region (constant price and carbon intensity, the
    given PUE, capacity for the GPUs), one GPU type (with the failure rate the flags give),
    one storage tier with the given per-node and aggregate bandwidths, and one training phase
    whose options are the flags' (``gpus`` GPUs, the precisions, ZeRO stages and
    recomputations, the layout, the checkpointing scheme), on demand at the GPU's price (0
    when unknown). Its configurations are the estimate's rows, built by the planner's own
    configuration space (:func:`planner.model.configs.enumerate_phase`)."""
    g = inp.gpu.gpu
    gpu = {k: v for k, v in g.model_dump().items() if v is not None}
    for k in ("failures_per_gpu_hour", "failures_per_1000_node_days", "failure_preset"):
        gpu.pop(k, None)
    if inp.failure_preset is not None:
        gpu["failure_preset"] = inp.failure_preset
    elif inp.mtbf_hours is None:
        gpu["failures_per_gpu_hour"] = FailureModel().failures_per_gpu_hour
    elif inp.mtbf_scope == "gpu":
        gpu["failures_per_gpu_hour"] = 1.0 / inp.mtbf_hours
    else:
        gpu["failures_per_gpu_hour"] = 1.0 / inp.mtbf_hours / gpus
    tier: dict[str, Any] = {
        "usd_per_gb_month": 0.0,
        "write_gb_per_s": inp.write_gb_per_s,
        "read_gb_per_s": inp.read_gb_per_s,
    }
    if inp.aggregate_gb_per_s is not None:
        tier["aggregate_gb_per_s"] = inp.aggregate_gb_per_s
    region: dict[str, Any] = {
        "timezone": "UTC",
        "pue": inp.pue,
        "electricity": {"constant": inp.price_usd_per_mwh},
        "capacity": {GPU_KEY: gpus},
        "offers": {GPU_KEY: {"on_demand": {"usd_per_gpu_hour": inp.gpu.usd_per_gpu_hour or 0.0}}},
        "storage": {"checkpoints": tier},
    }
    if inp.carbon_g_per_kwh is not None:
        region["carbon_intensity"] = {"constant": inp.carbon_g_per_kwh}
    scaling: dict[str, Any] = {
        "kind": inp.scaling,
        "overlap": inp.overlap,
        "layout": inp.mfu_layout,
    }
    if inp.reference_gpus is not None:  # per_doubling means something away from a reference
        scaling["reference_gpus"] = inp.reference_gpus
        if inp.scaling == "per_doubling":
            scaling["per_doubling"] = inp.per_doubling
    failure: dict[str, Any] = {
        "restart_hours": inp.restart_hours,
        "detect_hours": inp.detect_hours,
        "checkpoint": inp.checkpoint,
    }
    if inp.checkpoint_write_s is not None:
        failure["checkpoint_write_s"] = inp.checkpoint_write_s
    doc = {
        "name": "estimate",
        "horizon": {"start": "2026-01-05T00:00:00Z", "hours": 1},
        "gpu_types": {GPU_KEY: gpu},
        "regions": {REGION_KEY: region},
        "models": {"model": _model_fields(inp)},
        "failure": failure,
        "memory": {
            "convention": inp.memory_convention,
            "buffer_gb": inp.buffer_gb,
            "fragmentation": inp.fragmentation,
            "headroom": inp.headroom,
        },
        "phases": [
            {
                "name": PHASE_KEY,
                "model": "model",
                "work": {
                    "tokens": inp.tokens if inp.tokens is not None else _NOMINAL_TOKENS,
                    "flops_convention": inp.flops_convention,
                },
                "mfu": inp.mfu,
                "power_load": inp.power_load,
                "scaling": scaling,
                "options": {
                    "precision": list(precisions),
                    "zero": list(inp.zero),
                    "recompute": list(inp.recompute),
                    **inp.layout.options(),
                    "gpu_counts": [gpus],
                    "max_gpus": max(gpus, 1),
                    "contracts": ["on_demand"],
                    "extra_spare_nodes": [0],
                },
            }
        ],
    }
    try:
        return from_dict(doc, "<estimate>", Path("."))
    except InstanceError as e:
        raise EstimateError("; ".join(str(x) for x in e.errors)) from None


#: Names of the estimate's one GPU type, region and phase inside its instance.
GPU_KEY, REGION_KEY, PHASE_KEY = "gpu", "region", "train"


def estimate(inp: EstimateInput) -> list[EstimateRow]:
    """One row per combination of GPU count x precision x ZeRO stage x recomputation, in that
    order. Rows that do not fit in memory are returned too, with ``memory.fits`` False.
    Every figure is the planner's own: each row is a configuration of
    :func:`one_phase_instance`, costed by :func:`planner.model.costs.mean_price_costs` for its
    wall-clock work hours (not rounded up to whole billed hours). Raises
    :class:`EstimateError` for input no configuration can be built from."""
    _check(inp)
    g = inp.gpu.gpu
    m = model_of(inp)
    gpus_list = inp.gpus or (g.gpus_per_node,)
    precisions = inp.precision or (_default_precision(g),)
    tp, pp, cp = inp.layout.tp, inp.layout.pp, inp.layout.cp
    for n in gpus_list:
        if n % (tp * cp * pp):
            raise EstimateError(
                f"--gpus: {n} GPUs is not a multiple of tp x pp = {tp} x {pp} = {tp * pp}"
                if cp == 1
                else f"--gpus: {n} GPUs is not a multiple of tp x cp x pp = {tp * cp * pp}"
            )
    hint = " (inferred from --params; pass --layers/--hidden/--heads)" if m.inferred else ""
    if tp > g.gpus_per_node:
        raise EstimateError(
            f"--tp: tensor parallelism {tp} exceeds the {g.gpus_per_node} GPUs "
            f"of a {inp.gpu.name} node (it runs within a node)"
        )
    if m.heads % tp:
        raise EstimateError(f"--tp: {tp} does not divide the {m.heads} attention heads{hint}")
    if kv_heads(m) % tp:
        raise EstimateError(f"--tp: {tp} does not divide the {kv_heads(m)} key/value heads")
    if pp > m.layers:
        raise EstimateError(f"--pp: {pp} exceeds the {m.layers} layers{hint}")
    if inp.layout.ep > 1 and (m.arch is None or m.arch.moe is None):
        raise EstimateError("--ep: expert parallelism needs a mixture-of-experts model (--model)")
    for prec in precisions:
        if not g.peak_tflops.get(prec):  # type: ignore[call-overload]
            have = [p for p, v in g.peak_tflops.items() if v]
            raise EstimateError(
                f"--precision: {inp.gpu.name} has no {prec} peak; it supports {', '.join(have)}"
            )
    notes: list[str] = []
    if m.inferred:
        notes.append(
            f"architecture inferred from params: L={m.layers}, h={m.hidden}, "
            f"heads={m.heads}; pass --layers/--hidden/--heads (or --model) for accuracy"
        )
    if inp.tokens is None:
        notes.append("memory only: give --tokens for time, energy, failures and cost")
    elif inp.gpu.usd_per_gpu_hour is None:
        notes.append(
            "no GPU price: pass --gpu-hour-usd for rental and total cost; "
            "the failure cost counts energy only"
        )
    rows: list[EstimateRow] = []
    for n in gpus_list:
        inst = one_phase_instance(inp, n, tuple(precisions))
        configs, why = enumerate_phase(inst, inst.phase(PHASE_KEY), every=True)
        order = {(c.layout.precision, c.layout.zero, c.layout.recompute): c for c in configs}
        for prec, zero, rc in itertools.product(precisions, inp.zero, inp.recompute):
            c = order.get((prec, zero, rc))
            if c is None:
                raise EstimateError(
                    f"no configuration for {n} GPUs at {prec}, ZeRO-{zero}, recompute {rc}"
                    + (f": {why.reason}" if why is not None else "")
                )
            rows.append(_row(inp, inst, m, c, tuple(notes)))
    return rows


def _row(
    inp: EstimateInput, inst: Instance, m: ModelDims, c: Config, notes: tuple[str, ...]
) -> EstimateRow:
    """One configuration of the estimate's instance as a row."""
    p = inst.phase(PHASE_KEY)
    price = inp.gpu.usd_per_gpu_hour
    run = None
    if inp.tokens is not None:
        work = c.work_hours
        costs = mean_price_costs(inst, c, hours=work)
        failures = c.failure_rate * work
        lost = failures * c.loss_h
        ci = inst.carbon[REGION_KEY]
        run = RunFigures(
            flops=work_flops(inst, p),
            hours=c.compute_hours,
            work_hours=work,
            wall_hours=work + lost,
            expected_failures=failures,
            lost_hours=lost,
            lost_gpu_hours=lost * c.total_gpus,
            lost_kwh=lost * c.facility_kw,
            costs=Costs(
                rental=None if price is None else costs["rental"],
                energy=costs["energy"],
                failure=costs["failure"],
            ),
            emissions_t=(
                None if ci is None else energy.emissions_tonnes(c.facility_kw * work, float(ci[0]))
            ),
        )
    return EstimateRow(
        gpu=inp.gpu.name,
        gpus=int(c.gpus),
        layout=c.layout,
        micro_batch=inp.layout.micro_batch,
        model=m,
        tokens=inp.tokens,
        memory=c.memory,
        config=c,
        flops_convention=p.work.flops_convention,
        memory_convention=inst.spec.memory.convention,
        checkpoint_gb=checkpoint_gb_of(inst, p, c.layout.precision),
        usd_per_gpu_hour=price,
        run=run,
        notes=notes,
    )


# ----------------------------------------------------------------------------- instance mode


@dataclass(frozen=True)
class ConfigEstimate:
    """A feasible configuration of a phase and what it would cost run at its region's mean
    electricity price (and mean carbon intensity), unweighted USD. ``gpu_hours`` counts the
    GPUs held (working and spare) for the phase's whole hours."""

    config: Config
    costs: dict[str, float]
    gpu_hours: float
    energy_kwh: float
    expected_failures: float
    tokens_per_kwh: float | None

    @property
    def total(self) -> float:
        """The configuration's total cost (USD) over its run at the mean prices."""
        return self.costs["total"]

    def to_dict(self) -> dict[str, Any]:
        """The row as ``estimate --json`` prints it: plan fields, layout, memory, hours, failures
        and costs."""
        c = self.config
        lay = c.layout
        mem = c.memory
        return {
            "phase": c.phase,
            **c.plan_fields(),
            "dp": lay.dp,
            **mem.to_dict(),
            "hours": c.hours,
            "work_hours": c.work_hours,
            "gpu_hours": self.gpu_hours,
            "facility_kw": c.facility_kw,
            "energy_kwh": self.energy_kwh,
            "tokens_per_kwh": (
                None if self.tokens_per_kwh is None else _finite(self.tokens_per_kwh)
            ),
            "checkpoint_interval_s": _finite(c.checkpoint_interval_s),
            "expected_failures": self.expected_failures,
            "cost_usd": dict(self.costs),
        }


@dataclass(frozen=True)
class PhaseEstimate:
    phase: str
    rows: tuple[ConfigEstimate, ...]
    feasible: int
    reason: str | None


def phase_estimates(inst: Instance, phase: str, top: int = 15) -> PhaseEstimate:
    """The ``top`` cheapest feasible configurations of ``phase`` by
    :func:`planner.model.costs.mean_price_costs` (dominated configurations dropped, as the planner
    does), or the reason it has none. Raises :class:`EstimateError` for an unknown or
    finished phase."""
    names = [p.name for p in inst.phases]
    if phase not in names:
        raise EstimateError(f"--phase: unknown phase {phase!r}; phases are {', '.join(names)}")
    p: Phase = inst.phase(phase)
    if p.done:
        raise EstimateError(f"--phase: phase {phase!r} is marked done; nothing to run")
    if top < 1:
        raise EstimateError(f"--top: expected at least 1, got {top}")
    space = build_config_space(inst)
    reason = next((i.reason for i in space.infeasible if i.phase == phase), None)
    configs = space.by_phase.get(phase, ())
    tokens = p.work.tokens
    rows = []
    for c in configs:
        costs = mean_price_costs(inst, c)
        kwh = c.hours * c.facility_kw
        rows.append(
            ConfigEstimate(
                config=c,
                costs=costs,
                gpu_hours=c.hours * c.total_gpus,
                energy_kwh=kwh,
                expected_failures=c.failure_rate * c.hours,
                tokens_per_kwh=(energy.tokens_per_kwh(tokens, kwh) if tokens is not None else None),
            )
        )
    rows.sort(key=lambda r: (r.total, r.config.label))
    return PhaseEstimate(phase, tuple(rows[:top]), len(rows), reason)


def estimate_inputs(**kwargs: Any) -> EstimateInput:
    """An :class:`EstimateInput` from keyword arguments, ignoring those that are None (so a
    caller can pass every flag and let the defaults stand; the :class:`EstimateLayout` fields
    go into ``layout``); ``tokens`` None (or left out) asks for memory only."""
    kwargs.setdefault("tokens", None)
    given = {k: v for k, v in kwargs.items() if v is not None or k == "tokens"}
    for k in ("gpus", "precision", "zero", "recompute"):
        if k in given:
            given[k] = tuple(given[k])
            if not given[k]:
                del given[k]
    layout = {
        f.name: given.pop(f.name) for f in dataclasses.fields(EstimateLayout) if f.name in given
    }
    return EstimateInput(**given, layout=EstimateLayout(**layout))


__all__ = [
    "ConfigEstimate",
    "Costs",
    "EstimateError",
    "EstimateInput",
    "EstimateLayout",
    "EstimateRow",
    "GpuSpec",
    "PhaseEstimate",
    "estimate",
    "estimate_inputs",
    "gpu_spec",
    "parse_quantity",
    "phase_estimates",
]
