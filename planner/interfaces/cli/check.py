"""``trainplan check FILE``: validate an instance and print what it asks for.

Exit status: 0 when the file is valid and every phase has a configuration that meets its
window; 1 when some phase can never fit (the summary is still printed, with the reason);
2 when the file is invalid (every problem on stderr, naming the file and the field).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from planner.instance.errors import InstanceError
from planner.interfaces.cli.app import (
    command,
    console,
    load_instance,
    print_instance_error,
    result,
    settings,
)
from planner.interfaces.cli.exits import EXIT_INFEASIBLE, EXIT_INPUT
from planner.interfaces.cli.options import InstanceFile


def _num(x: float) -> str:
    """Compact number: 2e+09 -> 2e9, 12.0 -> 12."""
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.4g}"
    text = f"{x:.3g}"
    if "e" not in text:
        return text
    mant, exp = text.split("e")
    return f"{mant}e{int(exp)}"


def _work_text(work: dict[str, Any]) -> str:
    text = f"{_num(work['flops'])} FLOPs"
    if "tokens" in work:
        text += f" ({_num(work['tokens'])} tokens, {work['passes']})"
    if "gpu_hours" in work:
        text += f" ({_num(work['gpu_hours'])} GPU-h on {work['gpu']} {work['precision']})"
    return text


def render(summary: dict[str, Any]) -> list[str]:
    """The human-readable summary, one string per line."""
    h = summary["horizon"]
    lines = [
        f"instance {summary['name']}  ({summary['source']})",
        f"horizon  {h['start']} + {h['hours']} h -> {h['end']}",
        "phases",
    ]
    for p in summary["phases"]:
        preds = ", ".join(p["predecessors"]) or "-"
        head = (
            f"  {p['name']} [{p['kind']}]  {_work_text(p['work'])}  "
            f"window h{p['release_hour']}-h{p['deadline_hour']} ({p['window_hours']} h)  "
            f"after: {preds}"
        )
        if p["done"]:
            lines.append(head + "  done (artifact exists)")
            continue
        fastest = "-" if p["fastest_hours"] is None else f"{p['fastest_hours']} h"
        lines.append(f"{head}  configurations: {p['configurations']}  fastest: {fastest}")
    lines.append("gpu types")
    for g in summary["gpu_types"]:
        peak = ", ".join(f"{k} {_num(v)}" for k, v in g["peak_tflops"].items())
        where = ", ".join(g["regions"]) or "no region offers it"
        lines.append(
            f"  {g['name']} [{g['family']}]  {_num(g['memory_gb'])} {g.get('memory_unit', 'GB')}  "
            f"{_num(g['board_power_w'])} W (idle {_num(g['idle_power_w'])} W)  "
            f"{g['gpus_per_node']}/node  TFLOPS {peak}  in: {where}"
        )
    lines.append("regions")
    for r in summary["regions"]:
        pr = r["price_usd_per_mwh"]
        gp = ", ".join(f"{g} {v['max_capacity']}" for g, v in r["gpus"].items()) or "-"
        lines.append(
            f"  {r['name']}  {r['timezone']}  PUE {r['pue']:.2f}  "
            f"USD/MWh min {pr['min']:.1f} mean {pr['mean']:.1f} max {pr['max']:.1f}  "
            f"GPUs (max capacity): {gp}"
        )
        if "power" in r:
            lines.append(f"    {r['power']}")
    if summary["infeasible"]:
        lines.append("can never fit")
        lines.extend(f"  {i['reason']}" for i in summary["infeasible"])
    if summary["warnings"]:
        lines.append("warnings")
        lines.extend(f"  {w}" for w in summary["warnings"])
    if summary["feasible"]:
        lines.append(f"ok: {summary['configurations']} configurations; every phase can fit")
    else:
        lines.append(f"infeasible: {len(summary['infeasible'])} phase(s) can never fit")
    return lines


@command()
def check(
    file: InstanceFile,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Validate an instance and summarise it: horizon, phases (work, window, configurations,
    fastest hours), GPU types, regions (time zone, PUE, price range), phases that can never
    fit and why. Exit 0 if valid and every phase can fit, 1 if some phase cannot, 2 if the
    file is invalid."""
    from planner.analysis.summary import summarize
    from planner.instance.read import read

    if as_json:
        try:
            inst = read(file)
        except InstanceError as e:
            typer.echo(
                json.dumps(
                    {
                        "valid": False,
                        "file": e.file,
                        "errors": [{"path": fe.path, "message": fe.message} for fe in e.errors],
                    },
                    indent=2,
                )
            )
            print_instance_error(e)
            raise typer.Exit(EXIT_INPUT) from None
    else:
        inst = load_instance(file)
    summary = summarize(inst)
    if as_json:
        typer.echo(json.dumps({"valid": True, **summary}, indent=2))
    else:
        lines = render(summary)
        for line in lines[:-1]:
            console.print(line, markup=False, highlight=False, soft_wrap=True, emoji=False)
        result(f"{file}: {lines[-1]}" if settings.quiet else lines[-1])  # the verdict
    if not summary["feasible"]:
        raise typer.Exit(EXIT_INFEASIBLE)
