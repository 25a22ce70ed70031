"""``trainplan pareto INSTANCE --vs deadline|carbon``: the cost frontier as a table and chart.

``--vs deadline`` caps the makespan (every phase's deadline = min(own, D)) for D from the
fastest feasible makespan to the horizon end; ``--vs carbon`` caps the emissions from the
min-emission plan's to the min-cost plan's (planner.analysis.pareto).

Exit status: 0 on success; 1 when the instance has no plan; 2 on bad input (including
``--vs carbon`` on regions without ``carbon_intensity``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from planner.interfaces.cli.app import command, fail, load_instance, progress, results
from planner.interfaces.cli.exits import EXIT_INFEASIBLE, EXIT_INPUT
from planner.interfaces.cli.options import InstanceFile, TimeLimit, png_output, write_png

if TYPE_CHECKING:
    from planner.analysis.pareto import ParetoPoint


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}"


def render(inst_name: str, vs: str, points: list[ParetoPoint]) -> None:
    """Print the cost frontier, tightest cap first: each point's cap, cost, extra cost over the
    loosest cap's point, makespan, emissions, solver status and a note when it keeps a looser cap's
    cheaper plan."""
    last = points[-1].cost if points else None
    t = Table(
        title=f"cost frontier of {inst_name} vs {vs} (tightest cap first)", title_justify="left"
    )
    cap = "makespan cap (h)" if vs == "deadline" else "emissions cap (t)"
    for col in (
        cap,
        "cost",
        "over unconstrained",
        "makespan (h)",
        "emissions (t)",
        "solver",
        "note",
    ):
        t.add_column(col, justify="left" if col in ("solver", "note") else "right")
    for p in points:
        x = f"{p.x:g}" if vs == "deadline" else f"{p.x:.4g}"
        extra = "-"
        if p.cost is not None and last is not None:
            extra = _money(p.cost - last) + (f" ({(p.cost - last) / last:.1%})" if last else "")
        note = "" if p.kept_from is None else f"plan of cap {p.kept_from:g} (cheaper)"
        t.add_row(
            x,
            _money(p.cost),
            extra,
            "-" if p.makespan_h is None else str(p.makespan_h),
            "-" if p.emissions_t is None else f"{p.emissions_t:.4g}",
            p.termination + (f", gap {p.gap:.2%}" if p.gap and p.gap >= 5e-5 else ""),
            note,
        )
    results.print(t)


@command("pareto")
def pareto_cmd(
    instance: InstanceFile,
    vs: str = typer.Option(..., "--vs", help="deadline or carbon"),
    points: int = typer.Option(8, "--points", min=1, max=200, help="caps to try"),
    time_limit: TimeLimit = 60.0,
    png: Path | None = typer.Option(None, "--png", help="write the frontier chart (PNG) here"),
    as_json: bool = typer.Option(False, "--json", help="print the points as JSON"),
) -> None:
    """The cost frontier of INSTANCE against completion time (--vs deadline) or emissions
    (--vs carbon): the cheapest plan under each of --points caps, as a table and a chart."""
    from planner.analysis.pareto import VS, ParetoError, frontier

    if vs not in VS:
        fail(f"--vs: expected one of {', '.join(VS)}, got {vs!r}")
    png_output(png)
    inst = load_instance(instance)
    try:
        with progress(f"cost frontier of {inst.name} vs {vs} ({points} caps)"):
            pts = frontier(inst, vs, points, time_limit)
    except ParetoError as e:
        msg = str(e)
        fail(msg, EXIT_INPUT if "carbon_intensity" in msg else EXIT_INFEASIBLE)
    if png is not None:
        from planner.interfaces.report.analysis import frontier as frontier_chart

        write_png(png, lambda: frontier_chart(pts, f"{inst.name}: cost vs {vs}"))
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "format": "trainplan-pareto/1",
                    "instance": inst.name,
                    "vs": vs,
                    "points": [p.to_dict() for p in pts],
                },
                indent=2,
                allow_nan=False,
            )
        )
        return
    render(inst.name, vs, pts)
    if png is not None:
        results.print(f"frontier chart written to {png}")
