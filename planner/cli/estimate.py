"""``trainplan estimate``: the physics of a run on its own, for sizing it.

Two modes. With an INSTANCE and ``--phase``: the phase's cheapest feasible configurations
(``planner.configs``) at its region's mean electricity price, or why it has none. With flags
alone: one row per combination of ``--gpus`` x ``--precision`` x ``--zero`` x ``--recompute``.
All numbers come from :mod:`planner.estimate`; this module parses flags and prints.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from planner.cli.app import EXIT_INFEASIBLE, app, console, fail, guarded, load_instance
from planner.estimate import (
    EstimateError,
    EstimateRow,
    PhaseEstimate,
    estimate,
    estimate_inputs,
    gpu_spec,
    parse_quantity,
    phase_estimates,
)
from planner.terminal import styled

_FLAG_HELP = "Flag mode (no INSTANCE)."


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
    console.print(t)


# ----------------------------------------------------------------------------- flag mode


def _detail(r: EstimateRow) -> Table:
    m, mem = r.model, r.memory
    t = Table(title=r.label, title_justify="left", show_header=False)
    t.add_column("quantity")
    t.add_column("value")
    arch = f"L={m.layers}, h={m.hidden}, heads={m.heads}, s={m.seq_len}"
    t.add_row(
        "model",
        f"{m.params:.3g} parameters ({arch}"
        f"{', inferred' if m.inferred else ''}), micro-batch {r.micro_batch}",
    )
    t.add_row("work", f"{r.flops:.3g} FLOPs for {r.tokens:.3g} tokens (6ND + 6LshD)")
    fit = styled("fits", "green") if mem.fits else styled("does not fit", "bold red")
    t.add_row(
        "memory per GPU",
        Text.assemble(
            f"model states {mem.model_states_gb:.2f} GB + activations "
            f"{mem.activations_gb:.2f} GB (+fragmentation) + buffers {mem.buffers_gb:.2f} GB "
            f"= {mem.total_gb:.2f} GB of {mem.capacity_gb:.2f} GB usable: ",
            fit,
        ),
    )
    t.add_row(
        "throughput",
        f"{r.flops_per_s / 1e15:.3g} PFLOP/s sustained "
        f"({r.flops_per_s / r.gpus / 1e12:.0f} TFLOP/s per GPU), dp {r.dp}",
    )
    t.add_row("time", f"{_fmt(r.hours)} h ({r.hours / 24:.2f} days), {_fmt(r.gpu_hours)} GPU-hours")
    emis = "" if r.emissions_t is None else f", {r.emissions_t:.3g} tCO2"
    t.add_row(
        "energy",
        f"{r.facility_kw:.3g} kW at the facility, {_fmt(r.energy_kwh)} kWh, "
        f"{_fmt(r.tokens_per_kwh)} tokens/kWh{emis}",
    )
    t.add_row(
        "checkpoints",
        f"{r.checkpoint_gb:.3g} GB written in {r.checkpoint_write_s:.3g} s "
        f"every {_duration_s(r.checkpoint_interval_s)} "
        f"({r.checkpoint_overhead:.2%} of wall time)",
    )
    mtbf = 1 / r.failure_rate_per_h if r.failure_rate_per_h > 0 else math.inf
    t.add_row(
        "failures",
        f"{r.failure_rate_per_h:.3g}/h (job MTBF {_fmt(mtbf)} h), "
        f"{r.expected_failures:.3g} expected, "
        f"{r.loss_h_per_failure:.3g} h lost each",
    )
    price = "" if r.usd_per_gpu_hour is None else f" at ${r.usd_per_gpu_hour:g}/GPU-h"
    t.add_row(
        "cost",
        f"rental {_usd(r.costs.rental)}{price}, energy {_usd(r.costs.energy)}, "
        f"failures {_usd(r.costs.failure)}: total {_usd(r.costs.total)}",
    )
    for note in r.notes:
        t.add_row("note", note)
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
        "cost",
    ):
        left = col in ("prec.", "recompute", "fits")
        t.add_column(col, justify="left" if left else "right")
    for r in rows:
        mem = r.memory
        t.add_row(
            str(r.gpus),
            r.precision,
            str(r.zero),
            r.recompute,
            f"{mem.total_gb:.1f} of {mem.capacity_gb:.1f}",
            "yes" if mem.fits else styled("no", "red"),
            _fmt(r.hours),
            _fmt(r.gpu_hours),
            _fmt(r.energy_kwh),
            _duration_s(r.checkpoint_interval_s),
            f"{r.expected_failures:.3g}",
            _usd(r.costs.total),
        )
    return t


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, allow_nan=False)


@app.command("estimate")
@guarded
def estimate_command(
    instance: Annotated[
        Path | None,
        typer.Argument(
            help="Instance file; with --phase, list that phase's feasible configurations."
        ),
    ] = None,
    phase: Annotated[str | None, typer.Option(help="Phase of INSTANCE to estimate.")] = None,
    top: Annotated[int, typer.Option(help="Configurations to list in instance mode.")] = 15,
    params: Annotated[
        str | None, typer.Option(help="Parameters: 7e9, 7B, 70B, 1.5T (k, M, B, T suffixes).")
    ] = None,
    tokens: Annotated[str | None, typer.Option(help="Training tokens: 1e9, 300B, 2T.")] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Catalog GPU name (case-insensitive), e.g. H100-SXM; explicit --gpu-* figures "
            "override its values."
        ),
    ] = None,
    gpu_memory_gb: Annotated[float | None, typer.Option(help="GPU memory, GB.")] = None,
    gpu_tflops: Annotated[
        float | None, typer.Option(help="Dense peak TFLOPS at the precision(s) run.")
    ] = None,
    gpu_power_w: Annotated[float | None, typer.Option(help="GPU board power (TDP), W.")] = None,
    gpu_idle_w: Annotated[
        float | None,
        typer.Option(help="GPU idle power, W (default: 10% of board power for an explicit GPU)."),
    ] = None,
    gpus_per_node: Annotated[int | None, typer.Option(help="GPUs per node (default: 8).")] = None,
    node_overhead_w: Annotated[
        float | None,
        typer.Option(
            help="Host power per node excluding GPUs, W (default: 0 for an explicit GPU)."
        ),
    ] = None,
    gpus: Annotated[
        list[int] | None, typer.Option(help="GPU count; repeat for several (default: one node).")
    ] = None,
    precision: Annotated[
        list[str] | None,
        typer.Option(
            help="fp32, tf32, bf16, fp16 or fp8; repeat for several (default: bf16 if the GPU "
            "has it)."
        ),
    ] = None,
    zero: Annotated[
        list[int] | None, typer.Option(help="ZeRO stage 0-3; repeat for several (default: 1).")
    ] = None,
    recompute: Annotated[
        list[str] | None,
        typer.Option(
            help="Activation recomputation none, selective or full; repeat for several "
            "(default: none)."
        ),
    ] = None,
    seq_len: Annotated[int | None, typer.Option(help="Sequence length (default: 2048).")] = None,
    layers: Annotated[int | None, typer.Option(help="Transformer layers L.")] = None,
    hidden: Annotated[int | None, typer.Option(help="Hidden size h.")] = None,
    heads: Annotated[int | None, typer.Option(help="Attention heads a.")] = None,
    vocab: Annotated[int | None, typer.Option(help="Vocabulary V (default: 32000).")] = None,
    optimizer: Annotated[
        str | None,
        typer.Option(help="adamw, adam, sgd, sgd_momentum, adafactor or lion (default: adamw)."),
    ] = None,
    flash: Annotated[
        bool | None, typer.Option("--flash/--no-flash", help="FlashAttention (default: on).")
    ] = None,
    micro_batch: Annotated[
        int | None, typer.Option(help="Micro-batch size per GPU (default: 1).")
    ] = None,
    tp: Annotated[int | None, typer.Option(help="Tensor-parallel degree (default: 1).")] = None,
    pp: Annotated[int | None, typer.Option(help="Pipeline-parallel degree (default: 1).")] = None,
    mfu: Annotated[
        float | None, typer.Option(help="Model FLOPs utilisation at tp = pp = 1 (default: 0.4).")
    ] = None,
    power_load: Annotated[
        float | None,
        typer.Option(help="GPU power as a share between idle and board power (default: 0.9)."),
    ] = None,
    pue: Annotated[
        float | None,
        typer.Option(help="Facility PUE (default: 1.58, Uptime Institute 2023 average)."),
    ] = None,
    price_usd_per_mwh: Annotated[
        float | None, typer.Option(help="Electricity price, USD/MWh (default: 100).")
    ] = None,
    carbon_g_per_kwh: Annotated[
        float | None, typer.Option(help="Grid carbon intensity, gCO2/kWh, for emissions.")
    ] = None,
    mtbf_hours: Annotated[
        float | None,
        typer.Option(
            help="Mean time between failures, hours, of one GPU (--mtbf-scope gpu) or of the whole "
            "job (--mtbf-scope job) (default: Llama 3's 419 failures per 16,384 GPUs x 54 "
            "days, MTBF 50,700 h per GPU)."
        ),
    ] = None,
    mtbf_scope: Annotated[
        str,
        typer.Option(
            help="What --mtbf-hours is the MTBF of: 'gpu' (job rate = GPUs / MTBF) or 'job'."
        ),
    ] = "gpu",
    checkpoint_write_s: Annotated[
        float | None,
        typer.Option(help="Seconds to write a checkpoint (default: size / --write-gb-per-s)."),
    ] = None,
    write_gb_per_s: Annotated[
        float | None, typer.Option(help="Checkpoint write bandwidth, GB/s (default: 5).")
    ] = None,
    restart_hours: Annotated[
        float | None,
        typer.Option(help="Hours to restart after a failure, before reloading (default: 0.5)."),
    ] = None,
    gpu_hour_usd: Annotated[
        float | None,
        typer.Option(
            help="Rental price per GPU-hour, USD (default: the catalog's on-demand price)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Estimate memory, time, energy, failures and cost of a training run.

    With INSTANCE --phase NAME: the phase's cheapest feasible configurations. With flags
    alone: one row per combination of the repeated --gpus/--precision/--zero/--recompute."""
    flags = dict(
        params=params,
        tokens=tokens,
        gpu=gpu,
        gpu_memory_gb=gpu_memory_gb,
        gpu_tflops=gpu_tflops,
        gpu_power_w=gpu_power_w,
        gpu_idle_w=gpu_idle_w,
        gpus_per_node=gpus_per_node,
        node_overhead_w=node_overhead_w,
        gpus=gpus,
        precision=precision,
        zero=zero,
        recompute=recompute,
        seq_len=seq_len,
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        optimizer=optimizer,
        flash=flash,
        micro_batch=micro_batch,
        tp=tp,
        pp=pp,
        mfu=mfu,
        power_load=power_load,
        pue=pue,
        price_usd_per_mwh=price_usd_per_mwh,
        carbon_g_per_kwh=carbon_g_per_kwh,
        mtbf_hours=mtbf_hours,
        checkpoint_write_s=checkpoint_write_s,
        write_gb_per_s=write_gb_per_s,
        restart_hours=restart_hours,
        gpu_hour_usd=gpu_hour_usd,
    )
    if instance is not None:
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
        return
    if phase is not None:
        fail("--phase needs an INSTANCE file")
    if tokens is None:
        fail(
            "give --tokens (and --params or --layers/--hidden, and --gpu), or an INSTANCE "
            "with --phase"
        )
    if mtbf_scope not in ("gpu", "job"):
        fail(f"--mtbf-scope: expected 'gpu' or 'job', got {mtbf_scope!r}")
    try:
        spec = gpu_spec(
            gpu,
            gpu_memory_gb,
            gpu_tflops,
            gpu_power_w,
            gpu_idle_w,
            gpus_per_node,
            node_overhead_w,
            gpu_hour_usd,
        )
        inp = estimate_inputs(
            tokens=parse_quantity(tokens, "--tokens"),
            gpu=spec,
            params=None if params is None else parse_quantity(params, "--params"),
            gpus=gpus,
            precision=[p.lower() for p in precision or []] or None,
            zero=zero,
            recompute=[r.lower() for r in recompute or []] or None,
            seq_len=seq_len,
            layers=layers,
            hidden=hidden,
            heads=heads,
            vocab=vocab,
            optimizer=optimizer,
            flash_attention=flash,
            micro_batch=micro_batch,
            tp=tp,
            pp=pp,
            mfu=mfu,
            power_load=power_load,
            pue=pue,
            price_usd_per_mwh=price_usd_per_mwh,
            carbon_g_per_kwh=carbon_g_per_kwh,
            mtbf_hours=mtbf_hours,
            mtbf_scope=mtbf_scope,
            checkpoint_write_s=checkpoint_write_s,
            write_gb_per_s=write_gb_per_s,
            restart_hours=restart_hours,
        )
        rows = estimate(inp)
    except EstimateError as e:
        fail(str(e))
    if as_json:
        typer.echo(_json([r.to_dict() for r in rows]))
        return
    for r in rows:
        console.print(_detail(r))
    if len(rows) > 1:
        console.print(_summary(rows))
