"""``trainplan levers INSTANCE``: what each cost lever is worth on this instance.

Prints how the lever-free baseline (the one ``solve`` and ``report`` compare against) was
built, a table of each lever alone and all together (cost, saving in USD and %, the cost by
component), the interaction, and the attribution of the all-levers saving to the levers
(planner.analysis.attribution, the same table ``solve`` prints); optionally writes a waterfall chart
(``--png``) or prints JSON (``--json``). docs/levers.md describes every lever and quotes the
claims of the article they come from.

Exit status: 0 on success; 1 when no lever-free baseline exists (the instance is infeasible
or every lever is needed to meet it); 2 on bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from planner.interfaces.cli.app import (
    command,
    console,
    fail,
    load_instance,
    progress,
    result,
    results,
)
from planner.interfaces.cli.exits import EXIT_INFEASIBLE
from planner.interfaces.cli.options import InstanceFile, TimeLimit, png_output, write_png
from planner.model.plan import COST_KEYS

if TYPE_CHECKING:
    from planner.analysis.attribution import Attribution
    from planner.analysis.levers import LeverReport, LeverRun


def money(x: float | None) -> str:
    """USD for tables: ``$1,234.50``, a saving as ``-$12.00``, ``-`` for no figure; amounts within
    half a cent of 0 show as ``$0.00``."""
    if x is None:
        return "-"
    return f"-${-x:,.2f}" if x < -0.005 else f"${abs(x):,.2f}"


def saving_share(baseline: float, plan: float) -> str:
    """A component's saving as a share of its baseline cost, when that says something:
    `` (13.2%)`` for a saving or a rise up to the baseline's own size, `` (3.4x the
    baseline)`` for a larger rise (not "-236.2%"), nothing for a baseline of (nearly) 0."""
    if baseline < 0.005:
        return ""
    share = (baseline - plan) / baseline
    if share >= -1.0:
        return f" ({share:.1%})"
    return f" ({plan / baseline:,.1f}x the baseline)"


def _row(r: LeverRun, components: tuple[str, ...]) -> list[str]:
    pct = "-" if r.saving_pct is None else f"{r.saving_pct:.1%}"
    return [
        r.label,
        r.method,
        money(r.cost),
        money(r.saving_usd),
        pct,
        *(money(r.components.get(k)) for k in components),
        "-" if r.cycle_h is None else f"{r.cycle_h}",
        r.note,
    ]


def attribution_table(a: Attribution) -> Table:
    """The saving per lever (one at a time, in the attribution's order); shared with solve."""
    t = Table(
        title="saving by lever (switched on one at a time from the baseline; they add up)",
        title_justify="left",
    )
    for col in ("lever", "saving", "share", "cost after", "note"):
        t.add_column(col, justify="right" if col in ("saving", "share", "cost after") else "left")
    for s in a.levers:
        share = f"{s.saving / a.saving:.1%}" if abs(a.saving) > 1e-9 else "-"
        t.add_row(s.label, money(s.saving), share, money(s.cost), s.note)
    t.add_row("total", money(a.saving), "100.0%" if abs(a.saving) > 1e-9 else "-", "", "")
    return t


def render(report: LeverReport) -> None:
    """Print the lever tables and headline."""
    console.print(f"levers for {report.instance}")
    console.print("lever-free baseline:")
    for rule in report.rules:
        console.print(f"  {rule}", markup=False)
    for n in report.notes:
        console.print(f"  note: {n}", markup=False)
    runs = [report.baseline, *report.levers, report.all_levers]
    components = tuple(
        k for k in COST_KEYS if any(abs(r.components.get(k, 0.0)) > 1e-9 for r in runs)
    )
    t = Table(
        title="cost by lever (USD; each lever alone, then all together)", title_justify="left"
    )
    for col in ("lever", "method", "cost", "saving", "saving %", *components, "cycle h", "note"):
        t.add_column(
            col, justify="left" if col in ("lever", "method", "note") else "right", overflow="fold"
        )
    for r in runs:
        t.add_row(*_row(r, components))
    results.print(t)  # the answer: kept by --quiet
    inter = report.interaction_usd
    if inter is not None:
        console.print(f"interaction (all levers minus the sum of single savings): {money(inter)}")
    if report.attribution is not None:
        console.print(attribution_table(report.attribution))
    result(report.headline())
    cycle = report.cycle_headline()
    if cycle:
        console.print(cycle, markup=False)
    console.print(
        "what each lever is and the article's claims for it: docs/levers.md", markup=False
    )


@command("levers")
def levers_cmd(
    instance: InstanceFile,
    time_limit: TimeLimit = 60.0,
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    png: Path | None = typer.Option(None, "--png", help="write a waterfall chart (PNG) here"),
    only: str | None = typer.Option(
        None,
        "--only",
        help="comma-separated levers (time_shifting, precision, gpu_type, ...; a wrong name "
        "lists them all)",
    ),
) -> None:
    """What each cost lever is worth on INSTANCE: the lever-free baseline (as soon as
    possible, on demand, the price sheet's GPU type per phase, one region, bf16 ZeRO-0, whole
    nodes, the dearest storage tier, no optional spares), each lever alone, all together,
    and the split of the saving over the levers."""
    from planner.analysis.levers import LEVER_KEYS, LeverError, evaluate_levers

    keys = None
    if only is not None:
        keys = [k.strip() for k in only.split(",") if k.strip()]
        bad = [k for k in keys if k not in LEVER_KEYS]
        if bad:
            fail(f"--only: unknown lever(s) {', '.join(bad)}; expected {', '.join(LEVER_KEYS)}")
    png_output(png)
    inst = load_instance(instance)
    try:
        with progress(f"levers of {inst.name}") as step:
            report = evaluate_levers(inst, time_limit=time_limit, levers=keys, on_step=step)
    except LeverError as e:
        fail(str(e), EXIT_INFEASIBLE)
    if png is not None:
        from planner.interfaces.report.analysis import waterfall

        write_png(png, lambda: waterfall(report))
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, allow_nan=False))
        return
    render(report)
    if png is not None:
        result(f"waterfall chart written to {png}")
