"""``trainplan estimate``: the physics of a run on its own, for sizing it.

Two modes. With an INSTANCE and ``--phase``: the phase's cheapest feasible configurations
(``planner.model.configs``) at its region's mean electricity price, or why it has none. With flags
alone: one row per combination of ``--gpus`` x ``--precision`` x ``--zero`` x ``--recompute``.
All numbers come from :mod:`planner.analysis.estimate`; this module parses flags and prints.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from planner.interfaces.cli.app import command, console, fail, load_instance, results
from planner.interfaces.cli.exits import EXIT_INFEASIBLE
from planner.terminal import styled

if TYPE_CHECKING:
    from planner.analysis.estimate import EstimateRow, PhaseEstimate

_FLAG_HELP = "Flag mode (no INSTANCE)."
#: The parameters of ``estimate`` that choose the mode or the output; all others are flags
#: of the flag mode (figures, checked against an INSTANCE: they do not apply with one).
_MODE_OPTIONS = frozenset({"instance", "phase", "top", "mtbf_scope", "as_json"})
#: Flags that describe the GPU (planner.analysis.estimate.gpu_spec) or are parsed before they become
#: EstimateInput fields; the others pass through under their own names.
_NOT_INPUTS = frozenset(
    {
        "gpu",
        "gpu_memory_gb",
        "gpu_tflops",
        "gpu_power_w",
        "gpu_idle_w",
        "gpus_per_node",
        "node_overhead_w",
        "gpu_hour_usd",
        "tokens",
        "params",
        "precision",
        "recompute",
        "flash",
        "sp",
    }
)


def _fmt(x: float | None, digits: int = 3) -> str:
    """Compact number: thousands separators from 1000 up, else ``digits`` significant."""
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    if abs(x) >= 1e7:
        return f"{x:.{digits}g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def _duration_s(s: float) -> str:
    if math.isinf(s):
        return "never"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _memory(states: float, acts: float, total: float, usable: float) -> str:
    return f"{states:.1f}/{acts:.1f}/{total:.1f} of {usable:.1f}"


# ----------------------------------------------------------------------------- instance mode


def _print_phase(pe: PhaseEstimate) -> None:
    t = Table(
        title=f"{pe.phase}: cheapest {len(pe.rows)} of {pe.feasible} configurations "
        "(at the region's mean electricity price)",
        title_justify="left",
    )
    for col, just in (
        ("GPU", "left"),
        ("region", "left"),
        ("contract", "left"),
        ("GPUs", "right"),
        ("prec.", "left"),
        ("ZeRO", "right"),
        ("recompute", "left"),
        ("tp/pp", "right"),
        ("memory GB\nstates/acts/total of usable", "right"),
        ("hours", "right"),
        ("GPU-h", "right"),
        ("kWh", "right"),
        ("tokens/kWh", "right"),
        ("ckpt every", "right"),
        ("E[failures]", "right"),
        ("cost", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in pe.rows:
        c, lay, mem = r.config, r.config.layout, r.config.memory
        gpus = f"{c.gpus:g}" + (f"+{c.spare_gpus}" if c.spare_gpus else "")
        t.add_row(
            c.gpu,
            c.region,
            c.contract,
            gpus,
            lay.precision,
            str(lay.zero),
            lay.recompute,
            f"{lay.tp}/{lay.pp}",
            _memory(mem.model_states_gb, mem.activations_gb, mem.total_gb, mem.capacity_gb),
            str(c.hours),
            _fmt(r.gpu_hours),
            _fmt(r.energy_kwh),
            _fmt(r.tokens_per_kwh),
            _duration_s(c.checkpoint_interval_s),
            f"{r.expected_failures:.2g}",
            _usd(r.total),
        )
    results.print(t)


# ----------------------------------------------------------------------------- flag mode


def _detail(r: EstimateRow) -> Table:
    m, mem, c, run = r.model, r.memory, r.config, r.run
    th = c.throughput
    t = Table(title=r.label, title_justify="left", show_header=False)
    t.add_column("quantity")
    t.add_column("value")
    arch = f"L={m.layers}, h={m.hidden}, heads={m.heads}, s={m.seq_len}"
    from planner.physics.transformer import active_params

    active = active_params(m)
    moe = f", {active:.3g} active" if active != m.params else ""
    t.add_row(
        "model",
        f"{m.params:.4g} parameters{moe} ({arch}"
        f"{', inferred' if m.inferred else ''}), micro-batch {r.micro_batch}",
    )
    fit = styled("fits", "green") if mem.fits else styled("does not fit", "bold red")
    extra = ""
    if mem.gather_gb:
        extra += f" (incl. ZeRO-3 gathered layer {mem.gather_gb:.2f} GB)"
    if mem.cpu_gb:
        extra += f", {mem.cpu_gb:.2f} GB offloaded to CPU"
    t.add_row(
        "memory per GPU",
        Text.assemble(
            f"model states {mem.model_states_gb:.2f} GB{extra} + activations "
            f"{mem.activations_gb:.2f} GB (+fragmentation) + buffers {mem.buffers_gb:.2f} GB "
            f"= {mem.total_gb:.2f} GB of {mem.capacity_gb:.2f} GB usable "
            f"({r.memory_convention} accounting): ",
            fit,
        ),
    )
    t.add_row(
        "throughput",
        f"{r.flops_per_s / 1e15:.3g} PFLOP/s sustained "
        f"({r.flops_per_s / r.gpus / 1e12:.0f} TFLOP/s per GPU), dp {r.layout.dp}; "
        f"scaling {th.eff_scale:.4f} ({th.scaling.kind}: {th.scaling.detail}), "
        f"layout {th.eff_layout:.4f}, recompute {th.recompute:.4f}",
    )
    for note in r.notes:
        t.add_row("note", note)
    if run is None:
        return t
    t.add_row(
        "work",
        f"{run.flops:.3g} FLOPs for {r.tokens:.3g} tokens ({r.flops_convention} convention)",
    )
    gpu_h = run.hours * r.gpus
    t.add_row(
        "time",
        f"{_fmt(run.hours)} h ({run.hours / 24:.2f} days), {_fmt(gpu_h)} GPU-hours at the MFU; "
        f"{_fmt(run.work_hours)} h with checkpoint stalls, {_fmt(run.wall_hours)} h "
        f"({_fmt(run.wall_hours * r.gpus)} GPU-hours) with failures",
    )
    emis = "" if run.emissions_t is None else f", {run.emissions_t:.3g} tCO2"
    t.add_row(
        "energy",
        f"{c.facility_kw:.3g} kW at the facility, {_fmt(r.energy_kwh)} kWh, "
        f"{_fmt(r.tokens_per_kwh)} tokens/kWh{emis}",
    )
    t.add_row(
        "checkpoints",
        f"{c.checkpoint} {r.checkpoint_gb:.3g} GB: stall {c.checkpoint_write_s:.3g} s, durable "
        f"after {c.checkpoint_persist_s:.3g} s, reload {c.checkpoint_reload_s:.3g} s, "
        f"every {_duration_s(c.checkpoint_interval_s)} "
        f"({c.checkpoint_overhead:.2%} of the work hours)",
    )
    mtbf = 1 / c.job_failure_rate if c.job_failure_rate > 0 else math.inf
    t.add_row(
        "failures",
        f"{c.job_failure_rate:.3g}/h (job MTBF {_fmt(mtbf)} h), "
        f"{run.expected_failures:.3g} expected, {c.loss_h:.3g} h lost each "
        f"({c.downtime_h:.3g} h down): {_fmt(run.lost_hours)} h, "
        f"{_fmt(run.lost_gpu_hours)} GPU-hours, {_fmt(run.lost_kwh)} kWh, "
        f"{_usd(run.costs.failure)}; effective training time {c.effective_training_time:.1%}",
    )
    price = "" if r.usd_per_gpu_hour is None else f" at ${r.usd_per_gpu_hour:g}/GPU-h"
    t.add_row(
        "cost",
        f"rental {_usd(run.costs.rental)}{price}, energy {_usd(run.costs.energy)}, "
        f"failures {_usd(run.costs.failure)}: total {_usd(run.costs.total)}",
    )
    return t


def _summary(rows: list[EstimateRow]) -> Table:
    t = Table(title="summary", title_justify="left")
    for col in (
        "GPUs",
        "prec.",
        "ZeRO",
        "recompute",
        "memory GB",
        "fits",
        "hours",
        "GPU-h",
        "kWh",
        "ckpt every",
        "E[failures]",
        "eff. time",
        "cost",
    ):
        left = col in ("prec.", "recompute", "fits")
        t.add_column(col, justify="left" if left else "right")
    for r in rows:
        mem, run = r.memory, r.run
        t.add_row(
            str(r.gpus),
            r.layout.precision,
            str(r.layout.zero),
            r.layout.recompute,
            f"{mem.total_gb:.1f} of {mem.capacity_gb:.1f}",
            "yes" if mem.fits else styled("no", "red"),
            _fmt(r.hours),
            _fmt(r.gpu_hours),
            _fmt(r.energy_kwh),
            _duration_s(r.config.checkpoint_interval_s),
            "-" if run is None else f"{run.expected_failures:.3g}",
            f"{r.config.effective_training_time:.1%}",
            "-" if run is None else _usd(run.costs.total),
        )
    return t


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, allow_nan=False)


#: The options of ``trainplan estimate``, one alias each so the command reads as a list.
_InstanceOpt = Annotated[
    Path | None,
    typer.Argument(help="Instance file; with --phase, list that phase's feasible configurations."),
]
_PhaseOpt = Annotated[str | None, typer.Option(help="Phase of INSTANCE to estimate.")]
_TopOpt = Annotated[int, typer.Option(help="Configurations to list in instance mode.")]
_ModelOpt = Annotated[
    str | None,
    typer.Option(
        help="A model preset (llama-2-70b, llama-3.1-405b, mixtral-8x7b, deepseek-v3, "
        "qwen2.5-72b, gpt-3-175b, ...): its exact architecture; other model flags override it."
    ),
]
_ParamsOpt = Annotated[
    str | None, typer.Option(help="Parameters: 7e9, 7B, 70B, 1.5T (k, M, B, T suffixes).")
]
_TokensOpt = Annotated[
    str | None,
    typer.Option(help="Training tokens: 1e9, 300B, 2T (none: a memory-only estimate)."),
]
_GpuOpt = Annotated[
    str | None,
    typer.Option(
        help="Catalog GPU name (case-insensitive), e.g. H100-SXM; explicit --gpu-* figures "
        "override its values."
    ),
]
_GpuMemoryGbOpt = Annotated[
    float | None, typer.Option(help="GPU memory as the vendor states it (GiB for HBM).")
]
_GpuTflopsOpt = Annotated[
    float | None, typer.Option(help="Dense peak TFLOPS at the precision(s) run.")
]
_GpuPowerWOpt = Annotated[float | None, typer.Option(help="GPU board power (TDP), W.")]
_GpuIdleWOpt = Annotated[
    float | None,
    typer.Option(help="GPU idle power, W (default: 10% of board power for an explicit GPU)."),
]
_GpusPerNodeOpt = Annotated[int | None, typer.Option(help="GPUs per node (default: 8).")]
_NodeOverheadWOpt = Annotated[
    float | None,
    typer.Option(help="Host power per node excluding GPUs, W (default: 0 for an explicit GPU)."),
]
_GpusOpt = Annotated[
    list[int] | None, typer.Option(help="GPU count; repeat for several (default: one node).")
]
_PrecisionOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="fp32, tf32, bf16, fp16 or fp8; repeat for several (default: bf16 if the GPU has it)."
    ),
]
_ZeroOpt = Annotated[
    list[int] | None, typer.Option(help="ZeRO stage 0-3; repeat for several (default: 1).")
]
_RecomputeOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Activation recomputation none, selective or full; repeat for several (default: none)."
    ),
]
_SeqLenOpt = Annotated[int | None, typer.Option(help="Sequence length (default: 2048).")]
_LayersOpt = Annotated[int | None, typer.Option(help="Transformer layers L.")]
_HiddenOpt = Annotated[int | None, typer.Option(help="Hidden size h.")]
_HeadsOpt = Annotated[int | None, typer.Option(help="Attention heads a.")]
_VocabOpt = Annotated[int | None, typer.Option(help="Vocabulary V (default: 32000).")]
_OptimizerOpt = Annotated[
    str | None,
    typer.Option(help="adamw, adam, sgd, sgd_momentum, adafactor or lion (default: adamw)."),
]
_FlashOpt = Annotated[
    bool | None, typer.Option("--flash/--no-flash", help="FlashAttention (default: on).")
]
_MicroBatchOpt = Annotated[int | None, typer.Option(help="Micro-batch size per GPU (default: 1).")]
_TpOpt = Annotated[int | None, typer.Option(help="Tensor-parallel degree (default: 1).")]
_PpOpt = Annotated[
    int | None,
    typer.Option(help="Pipeline-parallel degree, up to the layers (default: 1)."),
]
_CpOpt = Annotated[int | None, typer.Option(help="Context-parallel degree (default: 1).")]
_EpOpt = Annotated[
    int | None, typer.Option(help="Expert-parallel degree of an MoE model (default: 1).")
]
_SpOpt = Annotated[
    bool | None,
    typer.Option("--sp/--no-sp", help="Sequence parallelism with tp > 1 (default: on)."),
]
_MicrobatchesOpt = Annotated[
    int | None, typer.Option(help="Micro-batches per step in the pipeline (default: 16).")
]
_InterleaveOpt = Annotated[
    int | None, typer.Option(help="Interleaved model chunks per device (default: 1).")
]
_OffloadOpt = Annotated[
    str | None,
    typer.Option(help="CPU offload: none, optimizer or params (ZeRO-3) (default: none)."),
]
_MfuOpt = Annotated[
    float | None,
    typer.Option(
        help="Model FLOPs utilisation, valid at --reference-gpus (default: 0.4 at the GPUs "
        "estimated)."
    ),
]
_FlopsConventionOpt = Annotated[
    str | None,
    typer.Option(help="FLOPs per token: 6nd, kaplan, palm or megatron (default: 6nd)."),
]
_ScalingOpt = Annotated[
    str | None,
    typer.Option(
        help="Scaling model away from --reference-gpus: per_doubling, interconnect or none "
        "(default: per_doubling)."
    ),
]
_PerDoublingOpt = Annotated[
    float | None,
    typer.Option(help="Throughput kept per doubling of nodes (default: 0.98)."),
]
_ReferenceGpusOpt = Annotated[
    float | None,
    typer.Option(help="GPUs the MFU was measured at (default: the GPUs estimated)."),
]
_OverlapOpt = Annotated[
    float | None,
    typer.Option(help="Share of the gradient all-reduce hidden (interconnect; default 0.9)."),
]
_MfuLayoutOpt = Annotated[
    str | None,
    typer.Option(
        help="modeled: charge tp, pipeline bubble, ZeRO-3 and recomputation against the MFU; "
        "in_mfu: the MFU was measured with this layout (default: modeled)."
    ),
]
_MemoryConventionOpt = Annotated[
    str | None,
    typer.Option(help="Model-state accounting: zero, megatron or deepspeed (default: zero)."),
]
_HeadroomOpt = Annotated[
    float | None,
    typer.Option(
        help="Share of GPU memory kept free: plans fill at most 1 - headroom (default: "
        "0.10; memory.headroom in docs/instance-format.md says why)."
    ),
]
_PowerLoadOpt = Annotated[
    float | None,
    typer.Option(help="GPU power as a share between idle and board power (default: 0.9)."),
]
_PueOpt = Annotated[
    float | None,
    typer.Option(help="Facility PUE (default: 1.58, Uptime Institute 2023 average)."),
]
_PriceUsdPerMwhOpt = Annotated[
    float | None, typer.Option(help="Electricity price, USD/MWh (default: 100).")
]
_CarbonGPerKwhOpt = Annotated[
    float | None, typer.Option(help="Grid carbon intensity, gCO2/kWh, for emissions.")
]
_MtbfHoursOpt = Annotated[
    float | None,
    typer.Option(
        help="Mean time between failures, hours, of one GPU (--mtbf-scope gpu) or of the whole "
        "job (--mtbf-scope job) (default: Llama 3's 419 failures per 16,384 GPUs x 54 "
        "days, MTBF 50,700 h per GPU)."
    ),
]
_MtbfScopeOpt = Annotated[
    str,
    typer.Option(help="What --mtbf-hours is the MTBF of: 'gpu' (job rate = GPUs / MTBF) or 'job'."),
]
_FailurePresetOpt = Annotated[
    str | None,
    typer.Option(
        help="A published fleet's failure rate: llama3, rsc1 or rsc2 (instead of --mtbf-hours)."
    ),
]
_CheckpointOpt = Annotated[
    str | None,
    typer.Option(help="Checkpointing: sync, async or in_memory (default: async)."),
]
_CheckpointWriteSOpt = Annotated[
    float | None,
    typer.Option(help="Seconds to write a checkpoint (default: size / sharded bandwidth)."),
]
_WriteGbPerSOpt = Annotated[
    float | None, typer.Option(help="Checkpoint write bandwidth per node, GB/s (default: 5).")
]
_ReadGbPerSOpt = Annotated[
    float | None, typer.Option(help="Checkpoint read bandwidth per node, GB/s (default: 1).")
]
_AggregateGbPerSOpt = Annotated[
    float | None,
    typer.Option(help="Storage bandwidth of the whole job, GB/s (default: no limit)."),
]
_DetectHoursOpt = Annotated[
    float | None, typer.Option(help="Hours until a failure is noticed (default: 0.05).")
]
_RestartHoursOpt = Annotated[
    float | None,
    typer.Option(help="Hours to restart after a failure, before reloading (default: 0.1)."),
]
_GpuHourUsdOpt = Annotated[
    float | None,
    typer.Option(help="Rental price per GPU-hour, USD (default: the catalog's on-demand price)."),
]
_AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _instance_mode(
    instance: Path, phase: str | None, top: int, as_json: bool, flags: dict[str, Any]
) -> None:
    """``estimate INSTANCE --phase NAME``: the phase's ``top`` cheapest feasible
    configurations (the figures come from the instance, so any flag of the flag mode is
    refused); exit status 1 (infeasible) with the reason when the phase has none."""
    from planner.analysis.estimate import EstimateError, phase_estimates

    given = sorted("--" + k.replace("_", "-") for k, v in flags.items() if v is not None)
    if given:
        fail(
            f"{', '.join(given)} apply without an INSTANCE; in instance mode the figures "
            "come from the instance file"
        )
    if phase is None:
        fail("INSTANCE needs --phase NAME: the phase to estimate")
    inst = load_instance(instance)
    try:
        pe = phase_estimates(inst, phase, top)
    except EstimateError as e:
        fail(str(e))
    if as_json:
        typer.echo(
            _json(
                {
                    "phase": pe.phase,
                    "feasible": pe.feasible,
                    "reason": pe.reason,
                    "configurations": [r.to_dict() for r in pe.rows],
                }
            )
        )
    elif pe.rows:
        _print_phase(pe)
    if pe.reason is not None:
        if not as_json:
            console.print(
                styled("no feasible configuration:", "bold red"), pe.reason, soft_wrap=True
            )
        raise typer.Exit(EXIT_INFEASIBLE)


def _flag_mode(flags: dict[str, Any], mtbf_scope: str, as_json: bool) -> None:
    """``estimate`` from flags alone: one row per combination of the repeated
    --gpus/--precision/--zero/--recompute (memory only without --tokens); the flags are
    checked for the combinations that cannot mean anything first."""
    from planner.analysis.estimate import (
        EstimateError,
        estimate,
        estimate_inputs,
        gpu_spec,
        parse_quantity,
    )

    get = flags.get
    if get("model") is None and get("params") is None and None in (get("layers"), get("hidden")):
        fail(
            "give --model NAME (a preset), --params, or --layers and --hidden (and --gpu, and "
            "--tokens for time and cost), or an INSTANCE with --phase"
        )
    if mtbf_scope not in ("gpu", "job"):
        fail(f"--mtbf-scope: expected 'gpu' or 'job', got {mtbf_scope!r}")
    if get("per_doubling") is not None and get("reference_gpus") is None:
        fail(
            "--per-doubling needs --reference-gpus (the GPUs the MFU was measured at): "
            "without it every GPU count runs at the MFU"
        )
    tokens, params = get("tokens"), get("params")
    try:
        spec = gpu_spec(
            get("gpu"),
            get("gpu_memory_gb"),
            get("gpu_tflops"),
            get("gpu_power_w"),
            get("gpu_idle_w"),
            get("gpus_per_node"),
            get("node_overhead_w"),
            get("gpu_hour_usd"),
        )
        inputs = {k: v for k, v in flags.items() if k not in _NOT_INPUTS}
        inp = estimate_inputs(
            **inputs,
            tokens=None if tokens is None else parse_quantity(tokens, "--tokens"),
            gpu=spec,
            params=None if params is None else parse_quantity(params, "--params"),
            precision=[p.lower() for p in get("precision") or []] or None,
            recompute=[r.lower() for r in get("recompute") or []] or None,
            flash_attention=get("flash"),
            sequence_parallel=get("sp"),
            mtbf_scope=mtbf_scope,
        )
        rows = estimate(inp)
    except EstimateError as e:
        fail(str(e))
    if as_json:
        typer.echo(_json([r.to_dict() for r in rows]))
        return
    for r in rows:
        results.print(_detail(r))
    if len(rows) > 1:
        results.print(_summary(rows))


@command("estimate")
def estimate_command(
    instance: _InstanceOpt = None,
    phase: _PhaseOpt = None,
    top: _TopOpt = 15,
    model: _ModelOpt = None,
    params: _ParamsOpt = None,
    tokens: _TokensOpt = None,
    gpu: _GpuOpt = None,
    gpu_memory_gb: _GpuMemoryGbOpt = None,
    gpu_tflops: _GpuTflopsOpt = None,
    gpu_power_w: _GpuPowerWOpt = None,
    gpu_idle_w: _GpuIdleWOpt = None,
    gpus_per_node: _GpusPerNodeOpt = None,
    node_overhead_w: _NodeOverheadWOpt = None,
    gpus: _GpusOpt = None,
    precision: _PrecisionOpt = None,
    zero: _ZeroOpt = None,
    recompute: _RecomputeOpt = None,
    seq_len: _SeqLenOpt = None,
    layers: _LayersOpt = None,
    hidden: _HiddenOpt = None,
    heads: _HeadsOpt = None,
    vocab: _VocabOpt = None,
    optimizer: _OptimizerOpt = None,
    flash: _FlashOpt = None,
    micro_batch: _MicroBatchOpt = None,
    tp: _TpOpt = None,
    pp: _PpOpt = None,
    cp: _CpOpt = None,
    ep: _EpOpt = None,
    sp: _SpOpt = None,
    microbatches: _MicrobatchesOpt = None,
    interleave: _InterleaveOpt = None,
    offload: _OffloadOpt = None,
    mfu: _MfuOpt = None,
    flops_convention: _FlopsConventionOpt = None,
    scaling: _ScalingOpt = None,
    per_doubling: _PerDoublingOpt = None,
    reference_gpus: _ReferenceGpusOpt = None,
    overlap: _OverlapOpt = None,
    mfu_layout: _MfuLayoutOpt = None,
    memory_convention: _MemoryConventionOpt = None,
    headroom: _HeadroomOpt = None,
    power_load: _PowerLoadOpt = None,
    pue: _PueOpt = None,
    price_usd_per_mwh: _PriceUsdPerMwhOpt = None,
    carbon_g_per_kwh: _CarbonGPerKwhOpt = None,
    mtbf_hours: _MtbfHoursOpt = None,
    mtbf_scope: _MtbfScopeOpt = "gpu",
    failure_preset: _FailurePresetOpt = None,
    checkpoint: _CheckpointOpt = None,
    checkpoint_write_s: _CheckpointWriteSOpt = None,
    write_gb_per_s: _WriteGbPerSOpt = None,
    read_gb_per_s: _ReadGbPerSOpt = None,
    aggregate_gb_per_s: _AggregateGbPerSOpt = None,
    detect_hours: _DetectHoursOpt = None,
    restart_hours: _RestartHoursOpt = None,
    gpu_hour_usd: _GpuHourUsdOpt = None,
    as_json: _AsJsonOpt = False,
) -> None:
    """Estimate memory, time, energy, failures and cost of a training run.

    With INSTANCE --phase NAME: the phase's cheapest feasible configurations. With flags
    alone: one row per combination of the repeated --gpus/--precision/--zero/--recompute;
    without --tokens, memory only."""
    # every parameter but the mode options is a flag of the flag mode, by its own name
    flags = {k: v for k, v in locals().items() if k not in _MODE_OPTIONS}
    if instance is not None:
        _instance_mode(instance, phase, top, as_json, flags)
        return
    if phase is not None:
        fail("--phase needs an INSTANCE file")
    _flag_mode(flags, mtbf_scope, as_json)
