"""``trainplan estimate``: the physics of a run on its own, for sizing it.

Two modes. With an INSTANCE and ``--phase``: the phase's cheapest feasible configurations
(``planner.model.configs``) at its region's mean electricity price, or why it has none. With flags
alone: one row per combination of ``--gpus`` x ``--precision`` x ``--zero`` x ``--recompute``.
All numbers come from :mod:`planner.analysis.estimate`; this module parses flags and prints.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
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


#: The mode options of ``trainplan estimate``, one alias each.
_InstanceOpt = Annotated[
    Path | None,
    typer.Argument(help="Instance file; with --phase, list that phase's feasible configurations."),
]
_PhaseOpt = Annotated[str | None, typer.Option(help="Phase of INSTANCE to estimate.")]
_TopOpt = Annotated[int, typer.Option(help="Configurations to list in instance mode.")]
_AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


@dataclass(frozen=True)
class _Flag:
    """A flag of the flag mode: its parameter ``name`` (the flag ``--name``, unless
    ``decls`` spell it), the type of its value, its help, and its value when not given
    (None: the estimate's own default)."""

    name: str
    kind: Any
    help: str
    decls: tuple[str, ...] = ()
    default: Any = None

    def parameter(self) -> inspect.Parameter:
        """The keyword parameter typer reads the flag from (``None``: not given)."""
        kind = self.kind if self.default is not None else self.kind | None
        option = typer.Option(*self.decls, help=self.help)
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=self.default,
            annotation=Annotated[kind, option],
        )


#: The flags of the flag mode, in the order ``--help`` lists them; the command receives
#: them as one mapping by name (:func:`_with_flags`).
_FLAGS = (
    _Flag(
        "model",
        str,
        "A model preset (llama-2-70b, llama-3.1-405b, mixtral-8x7b, deepseek-v3, qwen2.5-72b, "
        "gpt-3-175b, ...): its exact architecture; other model flags override it.",
    ),
    _Flag(
        "params",
        str,
        "Parameters: 7e9, 7B, 70B, 1.5T (k, M, B, T suffixes).",
    ),
    _Flag(
        "tokens",
        str,
        "Training tokens: 1e9, 300B, 2T (none: a memory-only estimate).",
    ),
    _Flag(
        "gpu",
        str,
        "Catalog GPU name (case-insensitive), e.g. H100-SXM; explicit --gpu-* figures override "
        "its values.",
    ),
    _Flag(
        "gpu_memory_gb",
        float,
        "GPU memory as the vendor states it (GiB for HBM).",
    ),
    _Flag(
        "gpu_tflops",
        float,
        "Dense peak TFLOPS at the precision(s) run.",
    ),
    _Flag(
        "gpu_power_w",
        float,
        "GPU board power (TDP), W.",
    ),
    _Flag(
        "gpu_idle_w",
        float,
        "GPU idle power, W (default: 10% of board power for an explicit GPU).",
    ),
    _Flag(
        "gpus_per_node",
        int,
        "GPUs per node (default: 8).",
    ),
    _Flag(
        "node_overhead_w",
        float,
        "Host power per node excluding GPUs, W (default: 0 for an explicit GPU).",
    ),
    _Flag(
        "gpus",
        list[int],
        "GPU count; repeat for several (default: one node).",
    ),
    _Flag(
        "precision",
        list[str],
        "fp32, tf32, bf16, fp16 or fp8; repeat for several (default: bf16 if the GPU has it).",
    ),
    _Flag(
        "zero",
        list[int],
        "ZeRO stage 0-3; repeat for several (default: 1).",
    ),
    _Flag(
        "recompute",
        list[str],
        "Activation recomputation none, selective or full; repeat for several (default: none).",
    ),
    _Flag(
        "seq_len",
        int,
        "Sequence length (default: 2048).",
    ),
    _Flag(
        "layers",
        int,
        "Transformer layers L.",
    ),
    _Flag(
        "hidden",
        int,
        "Hidden size h.",
    ),
    _Flag(
        "heads",
        int,
        "Attention heads a.",
    ),
    _Flag(
        "vocab",
        int,
        "Vocabulary V (default: 32000).",
    ),
    _Flag(
        "optimizer",
        str,
        "adamw, adam, sgd, sgd_momentum, adafactor or lion (default: adamw).",
    ),
    _Flag(
        "flash",
        bool,
        "FlashAttention (default: on).",
        ("--flash/--no-flash",),
    ),
    _Flag(
        "micro_batch",
        int,
        "Micro-batch size per GPU (default: 1).",
    ),
    _Flag(
        "tp",
        int,
        "Tensor-parallel degree (default: 1).",
    ),
    _Flag(
        "pp",
        int,
        "Pipeline-parallel degree, up to the layers (default: 1).",
    ),
    _Flag(
        "cp",
        int,
        "Context-parallel degree (default: 1).",
    ),
    _Flag(
        "ep",
        int,
        "Expert-parallel degree of an MoE model (default: 1).",
    ),
    _Flag(
        "sp",
        bool,
        "Sequence parallelism with tp > 1 (default: on).",
        ("--sp/--no-sp",),
    ),
    _Flag(
        "microbatches",
        int,
        "Micro-batches per step in the pipeline (default: 16).",
    ),
    _Flag(
        "interleave",
        int,
        "Interleaved model chunks per device (default: 1).",
    ),
    _Flag(
        "offload",
        str,
        "CPU offload: none, optimizer or params (ZeRO-3) (default: none).",
    ),
    _Flag(
        "mfu",
        float,
        "Model FLOPs utilisation, valid at --reference-gpus (default: 0.4 at the GPUs estimated).",
    ),
    _Flag(
        "flops_convention",
        str,
        "FLOPs per token: 6nd, kaplan, palm or megatron (default: 6nd).",
    ),
    _Flag(
        "scaling",
        str,
        "Scaling model away from --reference-gpus: per_doubling, interconnect or none (default: "
        "per_doubling).",
    ),
    _Flag(
        "per_doubling",
        float,
        "Throughput kept per doubling of nodes (default: 0.98).",
    ),
    _Flag(
        "reference_gpus",
        float,
        "GPUs the MFU was measured at (default: the GPUs estimated).",
    ),
    _Flag(
        "overlap",
        float,
        "Share of the gradient all-reduce hidden (interconnect; default 0.9).",
    ),
    _Flag(
        "mfu_layout",
        str,
        "modeled: charge tp, pipeline bubble, ZeRO-3 and recomputation against the MFU; in_mfu: "
        "the MFU was measured with this layout (default: modeled).",
    ),
    _Flag(
        "memory_convention",
        str,
        "Model-state accounting: zero, megatron or deepspeed (default: zero).",
    ),
    _Flag(
        "headroom",
        float,
        "Share of GPU memory kept free: plans fill at most 1 - headroom (default: 0.10; "
        "memory.headroom in docs/instance-format.md says why).",
    ),
    _Flag(
        "power_load",
        float,
        "GPU power as a share between idle and board power (default: 0.9).",
    ),
    _Flag(
        "pue",
        float,
        "Facility PUE (default: 1.58, Uptime Institute 2023 average).",
    ),
    _Flag(
        "price_usd_per_mwh",
        float,
        "Electricity price, USD/MWh (default: 100).",
    ),
    _Flag(
        "carbon_g_per_kwh",
        float,
        "Grid carbon intensity, gCO2/kWh, for emissions.",
    ),
    _Flag(
        "mtbf_hours",
        float,
        "Mean time between failures, hours, of one GPU (--mtbf-scope gpu) or of the whole job "
        "(--mtbf-scope job) (default: Llama 3's 419 failures per 16,384 GPUs x 54 days, MTBF "
        "50,700 h per GPU).",
    ),
    _Flag(
        "mtbf_scope",
        str,
        "What --mtbf-hours is the MTBF of: 'gpu' (job rate = GPUs / MTBF) or 'job'.",
        default="gpu",
    ),
    _Flag(
        "failure_preset",
        str,
        "A published fleet's failure rate: llama3, rsc1 or rsc2 (instead of --mtbf-hours).",
    ),
    _Flag(
        "checkpoint",
        str,
        "Checkpointing: sync, async or in_memory (default: async).",
    ),
    _Flag(
        "checkpoint_write_s",
        float,
        "Seconds to write a checkpoint (default: size / sharded bandwidth).",
    ),
    _Flag(
        "write_gb_per_s",
        float,
        "Checkpoint write bandwidth per node, GB/s (default: 5).",
    ),
    _Flag(
        "read_gb_per_s",
        float,
        "Checkpoint read bandwidth per node, GB/s (default: 1).",
    ),
    _Flag(
        "aggregate_gb_per_s",
        float,
        "Storage bandwidth of the whole job, GB/s (default: no limit).",
    ),
    _Flag(
        "detect_hours",
        float,
        "Hours until a failure is noticed (default: 0.05).",
    ),
    _Flag(
        "restart_hours",
        float,
        "Hours to restart after a failure, before reloading (default: 0.1).",
    ),
    _Flag(
        "gpu_hour_usd",
        float,
        "Rental price per GPU-hour, USD (default: the catalog's on-demand price).",
    ),
)


def _with_flags(fn: Callable[..., None]) -> Callable[..., None]:
    """Give ``fn`` (``(instance, phase, top, *, as_json, **flags)``) the signature typer reads:
    its own parameters with the :data:`_FLAGS` before ``as_json``, all passed to ``**flags``."""
    own = list(inspect.signature(fn, eval_str=True).parameters.values())
    head = [p for p in own if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    tail = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*head, *(f.parameter() for f in _FLAGS), *tail]
    )
    return fn


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
@_with_flags
def estimate_command(
    instance: _InstanceOpt = None,
    phase: _PhaseOpt = None,
    top: _TopOpt = 15,
    *,
    as_json: _AsJsonOpt = False,
    **flags: Any,
) -> None:
    """Estimate memory, time, energy, failures and cost of a training run.

    With INSTANCE --phase NAME: the phase's cheapest feasible configurations. With flags
    alone: one row per combination of the repeated --gpus/--precision/--zero/--recompute;
    without --tokens, memory only."""
    mtbf_scope = flags.pop("mtbf_scope")  # a flag of the flag mode that is never None
    if instance is not None:
        _instance_mode(instance, phase, top, as_json, flags)
        return
    if phase is not None:
        fail("--phase needs an INSTANCE file")
    _flag_mode(flags, mtbf_scope, as_json)
