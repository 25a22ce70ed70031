"""``trainplan report PLAN [-o report.html] [--png DIR] [--instance INSTANCE]``.

Writes one self-contained HTML page for a plan (charts inline, nothing fetched when it is
opened) and, with ``--png``, the same charts as PNG files. Prices and capacity use need the
instance: ``--instance``, or the plan's ``instance`` name looked up beside the plan file
(``NAME``, ``NAME.yaml``, ``NAME.yml``, ``NAME.json``); without one the page says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from planner.checker import read_solved
from planner.cli.app import app, console, fail, guarded, load_instance
from planner.instance import Instance
from planner.plan import Plan


def _instance(plan: Plan, plan_path: Path, given: Path | None) -> tuple[Instance | None, str]:
    """The instance to draw against and a note for the page when there is none."""
    from planner.report import instance_candidates

    if given is not None:
        return load_instance(given), ""
    cands = instance_candidates(plan, plan_path)
    for c in cands:
        if c.is_file():
            console.print(
                f"instance: {c} (the plan's instance name, beside the plan)", markup=False
            )
            return load_instance(c), ""
    if not cands:
        return None, "The plan does not name its instance."
    looked = ", ".join(str(c) for c in cands)
    return None, f"The plan's instance {plan.instance!r} was not found (looked for {looked})."


@app.command("report")
@guarded
def report(
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="Plan file (JSON) written by trainplan solve.")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="HTML file to write (default: PLAN with the suffix .html)."
        ),
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option("--png", metavar="DIR", help="Also write the charts as PNG files into DIR."),
    ] = None,
    instance: Annotated[
        Path | None,
        typer.Option(
            "--instance",
            metavar="INSTANCE",
            help="Instance file of the plan (default: the plan's instance name beside the plan).",
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report of a plan: schedule, prices, costs, memory,
    utilisation, failures and the solver's bound and gap."""
    # matplotlib loads only when a report is made, not with every command.
    from planner.report import ReportError, check_hours, check_match, render, write_pngs

    plan, header = read_solved(plan_file)
    try:
        check_hours(plan, str(plan_file))
    except ReportError as e:
        fail(f"invalid plan {plan_file}:\n  " + "\n  ".join(e.errors))
    inst, note = _instance(plan, plan_file, instance)
    if inst is not None:
        try:
            check_match(plan, inst, str(plan_file), inst.source)
        except ReportError as e:
            fail(
                f"the plan {plan_file} does not fit the instance {inst.source}:\n  "
                + "\n  ".join(e.errors)
            )
    out = output if output is not None else plan_file.with_suffix(".html")
    if out.is_dir():
        fail(f"-o {out}: is a directory; expected an HTML file name")
    if out.resolve() == plan_file.resolve():
        fail(f"-o {out}: is the plan file itself; give another name with -o")
    if not out.parent.is_dir():
        fail(f"-o {out}: the folder {out.parent} does not exist")
    if png is not None and png.exists() and not png.is_dir():
        fail(f"--png {png}: is a file; expected a folder")
    page = render(plan, inst, header=header, instance_note=note or None, plan_file=str(plan_file))
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as e:
        fail(f"-o {out}: cannot write ({e.strerror})")
    console.print(f"wrote {out}", markup=False)
    if note:
        console.print(
            f"note: {note} Prices and capacity use are left out; pass --instance to include them.",
            soft_wrap=True,
            markup=False,
        )
    if png is not None:
        try:
            paths = write_pngs(plan, inst, png)
        except OSError as e:
            fail(f"--png {png}: cannot write ({e.strerror})")
        console.print(
            f"wrote {len(paths)} PNG files to {png}: " + ", ".join(p.name for p in paths),
            markup=False,
        )
