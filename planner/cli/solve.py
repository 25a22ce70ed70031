"""``trainplan solve``: solve an instance, print the plan and its saving, write the plan JSON."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import typer
from rich.table import Table

from planner.cli.app import (
    EXIT_INFEASIBLE,
    EXIT_SOLVER,
    app,
    console,
    err_console,
    fail,
    guarded,
    load_instance,
)
from planner.cli.hygiene_hook import print_numeric_warnings
from planner.consistency import NumericWarning
from planner.instance.model import Instance
from planner.plan import COST_KEYS, Plan
from planner.progress import Progress, ProgressFn
from planner.result import Result, Termination
from planner.solve import SOLVERS, solve


def _money(x: float) -> str:
    return f"${x:,.2f}"


def print_plan(inst: Instance, plan: Plan, title: str) -> None:
    t = Table(title=title, title_justify="left")
    for col in (
        "phase",
        "GPUs",
        "contract",
        "region",
        "layout",
        "tier",
        "start (local)",
        "end (local)",
        "UTC",
        "hours run",
        "cost",
    ):
        t.add_column(col, overflow="fold")
    for p in plan.phases:
        tz = ZoneInfo(inst.region(p.region).timezone)
        s = inst.start + timedelta(hours=p.start_hour)
        e = inst.start + timedelta(hours=p.end_hour)
        cost = sum(p.costs.get(k, 0.0) for k in COST_KEYS)
        gpus = f"{p.gpus:g}" + (f"+{p.spare_gpus}" if p.spare_gpus else "") + f" {p.gpu}"
        layout = f"{p.precision} ZeRO-{p.zero} rc:{p.recompute} tp{p.tp} pp{p.pp}"
        t.add_row(
            p.name,
            gpus,
            p.contract,
            p.region,
            layout,
            p.tier,
            s.astimezone(tz).strftime("%a %m-%d %H:%M %Z"),
            e.astimezone(tz).strftime("%a %m-%d %H:%M %Z"),
            f"{s:%m-%d %H:%M}-{e:%m-%d %H:%M}",
            f"{len(p.hours)}" + ("" if p.contiguous else f" in {p.end_hour - p.start_hour}"),
            _money(cost),
        )
    console.print(t)
    if plan.reserved:
        console.print("reserved: " + ", ".join(f"{n} x {g} in {r}" for r, g, n in plan.reserved))


def print_costs(plan: Plan, baseline: Plan | None) -> None:
    t = Table(title="cost breakdown (USD)", title_justify="left")
    t.add_column("component")
    t.add_column("plan", justify="right")
    if baseline is not None:
        t.add_column("baseline", justify="right")
        t.add_column("saving", justify="right")
    for k in (*COST_KEYS, "total"):
        row = [k, _money(plan.costs.get(k, 0.0))]
        if baseline is not None:
            b, v = baseline.costs.get(k, 0.0), plan.costs.get(k, 0.0)
            pct = f" ({(b - v) / b:.1%})" if abs(b) > 1e-9 else ""
            row += [_money(b), _money(b - v) + pct]
        t.add_row(*row)
    console.print(t)
    console.print(f"energy {plan.energy_kwh:,.0f} kWh, emissions {plan.emissions_t:,.2f} tCO2")


def print_status(res: Result) -> None:
    console.print(f"solver: {res.summary()}")
    for note in res.notes:
        console.print(f"note: {note}")


@contextmanager
def live_progress(quiet: bool) -> Iterator[ProgressFn | None]:
    """A progress line on stderr while the block runs, fed by the solver's progress events;
    nothing (None) when stderr is not a terminal or with ``quiet``."""
    if quiet or not err_console.is_terminal:
        yield None
        return
    with err_console.status("solving ...") as status:

        def show(ev: Progress) -> None:
            status.update(ev.line())

        yield show


@app.command("solve")
@guarded
def solve_cmd(
    instance: Path = typer.Argument(..., help="instance file (.yaml or .json)"),
    output: Path | None = typer.Option(None, "-o", "--output", help="write the plan JSON here"),
    time_limit: float = typer.Option(60.0, "--time-limit", min=0.1, help="seconds"),
    gap: float = typer.Option(1e-4, "--gap", min=0.0, max=1.0, help="relative MIP gap"),
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="solver threads (default: HiGHS 1, CP-SAT every core)"
    ),
    solver: str = typer.Option("auto", "--solver", help=f"one of {', '.join(SOLVERS)}"),
    backend: str = typer.Option("auto", "--backend", help="MILP backend: auto, highs, pyomo"),
    baseline: bool = typer.Option(
        False, "--baseline", help="output the hand-made baseline plan instead"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the plan JSON only"),
    quiet: bool = typer.Option(
        False, "-q", "--quiet", help="no progress line while the solver works"
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="show the solver's own log"),
) -> None:
    """Solve INSTANCE and print the plan, its costs against the baseline, and the solver's
    status, bound and gap. On a terminal a progress line (best plan, bound, gap, seconds)
    shows while the solver works; not when the output is piped or with --quiet."""
    if solver not in SOLVERS:
        fail(f"--solver: expected one of {', '.join(SOLVERS)}, got {solver!r}")
    if backend not in ("auto", "highs", "pyomo"):
        fail(f"--backend: expected auto, highs or pyomo, got {backend!r}")
    inst = load_instance(instance)
    for w in inst.warnings:
        err_console.print(f"warning: {w}", soft_wrap=True)
    print_numeric_warnings(inst)
    warnings.simplefilter("ignore", NumericWarning)  # printed above, once
    base = solve(inst, solver="baseline")
    if baseline:
        res = base
    else:
        if solver == "auto":
            try:
                from formulations.dispatch import choose

                _, why = choose(inst)
                if not as_json:
                    console.print(f"solver auto -> {why}")
            except ImportError:
                pass
        with live_progress(quiet) as on_progress:
            res = solve(
                inst,
                solver=solver,
                time_limit=time_limit,
                gap=gap,
                threads=threads,
                backend=backend,
                verbose=verbose,
                on_progress=on_progress,
            )
    if res.plan is None:
        err_console.print(f"no plan: {res.message}", soft_wrap=True)
        if res.termination in (Termination.INFEASIBLE, Termination.NO_CONFIGURATION):
            err_console.print(f"explain the conflict with: trainplan explain {instance}")
            raise typer.Exit(EXIT_INFEASIBLE)
        raise typer.Exit(EXIT_SOLVER)
    plan = res.plan
    if output is not None:
        res.write(output)
    if as_json:
        print(json.dumps(res.to_dict(), indent=2))
        return
    print_plan(inst, plan, f"plan for {inst.name} ({res.solver})")
    print_costs(plan, base.plan if (base.plan is not None and not baseline) else None)
    print_status(res)
    if base.plan is None and not baseline:
        console.print(f"baseline: {base.message}")
    if output is not None:
        console.print(
            f"plan written to {output}; check it with: trainplan verify {instance} {output}"
        )
