"""``trainplan export PLAN --to skypilot -o DIR``: turn a plan into something a team launches.

The instance is the one the plan records (``instance_file``, checked against its hash), or
``--instance``. Writes one SkyPilot task YAML per phase and ``launch.sh``, which starts them
in plan order at the plan's hours (planner.export.skypilot).

Exit status: 0 on success; 2 on bad input (no instance, a different instance, an unknown
``--to``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from planner.checker import read_plan_document
from planner.cli.app import command, console, fail, note
from planner.cli.report import find_instance

TARGETS = ("skypilot",)


@command("export")
def export_cmd(
    plan_file: Path = typer.Argument(..., metavar="PLAN", help="Plan file written by solve."),
    to: str = typer.Option("skypilot", "--to", help=f"one of {', '.join(TARGETS)}"),
    output: Path = typer.Option(..., "-o", "--output", help="folder to write the files into"),
    instance: Path | None = typer.Option(
        None, "--instance", help="instance file (default: the one the plan records)"
    ),
) -> None:
    """Export PLAN as SkyPilot tasks (one YAML per phase: accelerators and count, cloud
    region, spot or on demand, nodes, the phase's start time) and a launch script that
    starts them in plan order."""
    from planner.export import ExportError, export_skypilot

    if to not in TARGETS:
        fail(f"--to: expected one of {', '.join(TARGETS)}, got {to!r}")
    if output.exists() and not output.is_dir():
        fail(f"-o {output}: is a file; expected a folder")
    plan, _header, data = read_plan_document(plan_file)
    inst, why = find_instance(plan, data, plan_file, instance)
    if inst is None:
        fail(f"{plan_file}: the export needs the plan's instance: {why} Pass --instance.")
    try:
        done = export_skypilot(inst, plan, output)
    except ExportError as e:
        fail(str(e))
    for t in done.tasks:
        console.print(f"wrote {output / t.file}", markup=False)
    console.print(f"wrote {done.script}: launches {len(done.tasks)} tasks in plan order")
    for w in done.warnings:
        note(f"warning: {w}")
    note(f"dry run: DRY_RUN=1 {done.script}")
