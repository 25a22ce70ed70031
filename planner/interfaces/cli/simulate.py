"""``trainplan simulate PLAN --runs N``: replay a plan against random failures, spot
preemptions and recovery (planner.analysis.simulate) and print the distribution of cost and finish
time per phase and the probability that each deadline holds.

The instance is the one the plan records (or ``--instance``); the plan is re-validated
against it first. ``-o FILE`` writes the summary (``trainplan-simulation/1``, quantiles and
histograms) for ``trainplan report PLAN --simulation FILE``; ``--embed`` stores it in the
plan file itself, where the report finds it.

Exit status: 0 on success; 2 on bad input (no instance, a plan that does not fit it).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import typer
from rich.table import Table

from planner.checker import read_plan_document
from planner.interfaces.cli.app import command, console, fail, note
from planner.interfaces.cli.levers import money
from planner.interfaces.cli.report import find_instance


@command("simulate")
def simulate_cmd(
    plan_file: Path = typer.Argument(..., metavar="PLAN", help="Plan file written by solve."),
    runs: int = typer.Option(1000, "--runs", min=2, max=1_000_000, help="replays to draw"),
    seed: int = typer.Option(0, "--seed", min=0, help="seed of the random generator"),
    output: Path | None = typer.Option(None, "-o", "--output", help="write the summary here"),
    embed: bool = typer.Option(False, "--embed", help="store the summary in the plan file"),
    instance: Path | None = typer.Option(
        None, "--instance", help="instance file (default: the one the plan records)"
    ),
) -> None:
    """Replay PLAN RUNS times against random failures (its failure model), spot preemptions
    (their series) and recovery from checkpoints: cost and finish time per phase (mean, 5th,
    50th and 95th percentile), the probability each deadline holds, and the mean failure
    cost with its 99% interval against the plan's expected failure cost."""
    from planner.analysis.admit import PlanRefused, admit
    from planner.analysis.simulate import SimulationError, simulate

    if output is not None and output.is_dir():
        fail(f"-o {output}: is a folder; expected a file name")
    if output is not None and not output.parent.is_dir():
        fail(f"-o {output}: the folder {output.parent} does not exist")
    plan, _header, data = read_plan_document(plan_file)
    inst, why = find_instance(plan, data, plan_file, instance)
    if inst is None:
        fail(f"{plan_file}: the simulation needs the plan's instance: {why} Pass --instance.")
    try:
        admit(inst, plan, str(plan_file))
        sim = simulate(inst, plan, runs, seed)
    except (PlanRefused, SimulationError) as e:
        fail(str(e))
    summary = sim.to_dict()
    t = Table(title=f"{runs:,} replays of {plan.instance} (seed {seed})", title_justify="left")
    for col in (
        "phase",
        "cost mean",
        "cost p5-p95",
        "failures mean",
        "end mean",
        "end p95",
        "deadline",
        "P(deadline holds)",
    ):
        t.add_column(col, overflow="fold")

    def at(hour: float) -> str:
        return f"{inst.start + timedelta(hours=hour):%m-%d %H:%M} (h {hour:,.1f})"

    for p in summary["phases"]:
        c, end = p["cost_usd"], p["end_hour"]
        t.add_row(
            p["name"],
            money(c["mean"]),
            f"{money(c['p5'])} - {money(c['p95'])}",
            f"{p['failures']['mean']:.2f}",
            at(end["mean"]),
            at(end["p95"]),
            at(p["deadline_hour"]),
            f"{p['deadline_probability']:.1%}",
        )
    console.print(t)
    tot, fl = summary["total_usd"], summary["failure_usd"]
    console.print(
        f"total: mean {money(tot['mean'])} (p5 {money(tot['p5'])}, p95 {money(tot['p95'])}); "
        f"the plan states {money(sim.plan_total_usd)}",
        markup=False,
    )
    console.print(
        f"failure cost: simulated mean {money(fl['mean'])} ± {money(fl['ci99'])} (99%), the "
        f"plan's expected failure cost {money(sim.plan_failure_usd)}",
        markup=False,
    )
    if output is not None:
        output.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {output}", markup=False)
    if embed:
        data["simulation"] = summary
        plan_file.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        console.print(f"stored the simulation in {plan_file}", markup=False)
    if output is not None or embed:
        note(
            f"draw it: trainplan report {plan_file}" + (f" --simulation {output}" if output else "")
        )
