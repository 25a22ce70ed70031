"""``trainplan verify INSTANCE PLAN``: check a plan against its instance, independently of the
planner that made it (planner.checker), and compare its stated costs with a recomputation.

Exit status: 0 when the plan is valid and every stated figure matches, 1 when there is any
violation, 2 when the instance or plan file cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from planner.interfaces.cli.app import command, console, fail, load_instance, results
from planner.interfaces.cli.exits import EXIT_INFEASIBLE
from planner.interfaces.cli.options import InstanceFile
from planner.terminal import styled

if TYPE_CHECKING:
    from planner.checker import Verification
    from planner.model.plan import Plan


def _rows(plan: Plan, v: Verification) -> list[tuple[str, float | None, float]]:
    """(figure, stated, recomputed) for every plan-level figure the checker compares."""
    from planner.checker.costs import ALL_KEYS

    rows: list[tuple[str, float | None, float]] = [
        (k, plan.costs.get(k), v.costs[k]) for k in ALL_KEYS
    ]
    rows.append(("objective", plan.objective, v.objective))
    rows.append(("energy_kwh", plan.energy_kwh, v.energy_kwh))
    rows.append(("emissions_t", plan.emissions_t, v.emissions_t))
    return rows


def _as_json(
    instance: Path, plan_path: Path, plan: Plan, v: Verification, rel_tol: float, abs_tol: float
) -> dict[str, Any]:
    from planner.checker.costs import within

    figures = {
        name: {
            "stated": stated,
            "recomputed": recomputed,
            "match": stated is not None and within(stated, recomputed, rel_tol, abs_tol),
        }
        for name, stated, recomputed in _rows(plan, v)
    }
    return {
        "instance": str(instance),
        "plan": str(plan_path),
        "ok": v.ok,
        "costed": v.costed,
        "violations": [
            {"kind": x.kind, "phase": x.phase, "message": x.message} for x in v.violations
        ],
        "figures": figures,
        "phase_costs": {k: dict(c) for k, c in v.phase_costs.items()},
        "tolerance": {"rel": rel_tol, "abs": abs_tol},
    }


def _print(plan_path: Path, plan: Plan, v: Verification, rel_tol: float, abs_tol: float) -> None:
    from planner.checker.costs import within

    verdict = styled("valid", "bold green") if v.ok else styled("invalid", "bold red")
    results.print(Text.assemble(f"{plan_path}: ", verdict, f", {len(v.violations)} violation(s)"))
    if v.violations:
        table = Table(title="violations", show_lines=False)
        table.add_column("kind")
        table.add_column("phase")
        table.add_column("message", overflow="fold")
        for x in v.violations:
            table.add_row(x.kind, x.phase or "-", x.message)  # str: shown escaped
        results.print(table)  # what is wrong: kept by --quiet
    costs = Table(title="stated against recomputed (USD unless named)")
    for col in ("figure", "stated", "recomputed", "difference", ""):
        costs.add_column(col, justify="left" if col == "figure" else "right")
    for name, stated, recomputed in _rows(plan, v):
        if stated is None:
            costs.add_row(name, "-", f"{recomputed:,.4f}", "-", Text("missing", style="red"))
            continue
        ok = within(stated, recomputed, rel_tol, abs_tol)
        mark = Text("ok", style="green") if ok else Text("differs", style="red")
        if not v.costed:
            mark = Text("not compared", style="yellow")
        costs.add_row(
            name, f"{stated:,.4f}", f"{recomputed:,.4f}", f"{stated - recomputed:+,.4f}", mark
        )
    console.print(costs)
    if not v.costed:
        console.print(
            "costs not compared: some entries name a GPU type, region, offer, tier "
            "or precision the instance cannot price, or hours outside the horizon; "
            "recomputed figures cover the other phases only",
            markup=False,
        )


@command("verify")
def verify_command(
    instance: InstanceFile,
    plan: Path = typer.Argument(
        ...,
        help="Plan file (JSON) written by trainplan solve: trainplan-plan/2, /3 (segments, "
        "terms, re-plans), or the older /1.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    rel_tol: float = typer.Option(1e-6, "--rel-tol", help="Relative tolerance on figures."),
    abs_tol: float = typer.Option(0.01, "--abs-tol", help="Absolute tolerance on figures."),
) -> None:
    """Check every constraint of PLAN and recompute every cost from INSTANCE and PLAN alone.

    Exit status: 0 valid with matching costs, 1 any violation, 2 a file cannot be read."""
    from planner.checker import read_plan, verify

    if not (rel_tol >= 0 and abs_tol >= 0):
        fail(f"--rel-tol and --abs-tol must be non-negative numbers; got {rel_tol}, {abs_tol}")
    inst = load_instance(instance)
    p = read_plan(plan)
    v = verify(inst, p, rel_tol=rel_tol, abs_tol=abs_tol)
    if as_json:
        typer.echo(
            json.dumps(_as_json(instance, plan, p, v, rel_tol, abs_tol), indent=2, allow_nan=False)
        )
    else:
        _print(plan, p, v, rel_tol, abs_tol)
    if not v.ok:
        raise typer.Exit(EXIT_INFEASIBLE)
