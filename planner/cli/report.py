"""``trainplan report PLAN [-o report.html] [--png DIR] [--instance INSTANCE] [--local-time]``.

Writes one self-contained HTML page for a plan (charts inline, nothing fetched when it is
opened) and, with ``--png``, the same charts as PNG files. The page opens with the answer:
the plan's cost against the lever-free baseline, the saving per component and per lever
(the plan file's ``attribution``, written by ``solve``; computed here when the file has
none and the instance is at hand).

The instance (for prices, capacity use, local times and the baseline): ``--instance``, else
the file the plan records (``instance_file``: a path relative to the plan and the SHA-256 of
the file's bytes). A file whose content differs from the recorded hash is refused (exit 2):
the plan was made for another instance. Plans without ``instance_file`` (older files) fall
back to the plan's instance name beside the plan file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner.cli.app import command, console, fail, load_instance, note, progress
from planner.plan import InstanceRef, Plan, file_sha256

if TYPE_CHECKING:
    from planner.instance.model import Instance


def find_instance(
    plan: Plan, data: dict[str, Any], plan_path: Path, given: Path | None
) -> tuple[Instance | None, str]:
    """The instance to draw against (refusing one whose bytes differ from the hash the plan
    records) and a note for the page when there is none."""
    from planner.report import instance_candidates

    ref = InstanceRef.from_file_dict(data)
    path = given
    if path is None and ref is not None:
        path = ref.locate(plan_path)
        if not path.is_file():
            return None, (
                f"The plan's instance file {ref.path} (relative to the plan) was not found "
                f"at {path}."
            )
    if path is not None:
        if ref is not None and path.is_file() and file_sha256(path) != ref.sha256:
            fail(
                f"{path}: is not the instance {plan_path} was made for (its SHA-256 "
                f"differs from the plan's instance_file.sha256 {ref.sha256[:12]}...); "
                "solve it again, or pass the instance the plan was made for"
            )
        return load_instance(path), ""
    cands = instance_candidates(plan, plan_path)
    for c in cands:
        if c.is_file():
            note(f"instance: {c} (the plan's instance name, beside the plan)")
            return load_instance(c), ""
    if not cands:
        return None, "The plan does not name its instance."
    looked = ", ".join(str(c) for c in cands)
    return None, f"The plan's instance {plan.instance!r} was not found (looked for {looked})."


@command("report")
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
            help="Instance file of the plan (default: the one the plan records).",
        ),
    ] = None,
    local_time: Annotated[
        bool,
        typer.Option(
            "--local-time", help="Show the schedule in each region's local time (default UTC)."
        ),
    ] = False,
) -> None:
    """Write a self-contained HTML report of a plan: its cost against the lever-free
    baseline and the saving per component and per lever first, then the schedule, costs,
    solver, memory, prices, utilisation and failures."""
    # matplotlib loads only when a report is made, not with every command.
    from planner.attribution import Attribution, BaselineError, attribute
    from planner.checker import read_plan_document
    from planner.report import ReportError, check_hours, check_match, render, write_pngs

    plan, header, data = read_plan_document(plan_file)
    try:
        check_hours(plan, str(plan_file))
    except ReportError as e:
        fail(f"invalid plan {plan_file}:\n  " + "\n  ".join(e.errors))
    inst, inst_note = find_instance(plan, data, plan_file, instance)
    if inst is not None:
        try:
            check_match(plan, inst, str(plan_file), inst.source)
        except ReportError as e:
            fail(
                f"the plan {plan_file} does not fit the instance {inst.source}:\n  "
                + "\n  ".join(e.errors)
            )
    attribution: Attribution | None = None
    why = ""
    raw = data.get("attribution")
    if isinstance(raw, dict):
        try:
            attribution = Attribution.from_dict(raw)
        except (KeyError, TypeError, ValueError) as e:
            why = f"the plan file's attribution cannot be read ({type(e).__name__}: {e})"
    elif inst is not None:
        try:
            with progress("attributing the saving") as step:
                attribution = attribute(inst, plan, on_step=step)
        except BaselineError as e:
            why = str(e)
    else:
        why = "the plan file has no attribution and the instance was not found"
    out = output if output is not None else plan_file.with_suffix(".html")
    if out.is_dir():
        fail(f"-o {out}: is a directory; expected an HTML file name")
    if out.resolve() == plan_file.resolve():
        fail(f"-o {out}: is the plan file itself; give another name with -o")
    if not out.parent.is_dir():
        fail(f"-o {out}: the folder {out.parent} does not exist")
    if png is not None and png.exists() and not png.is_dir():
        fail(f"--png {png}: is a file; expected a folder")
    if local_time and inst is None:
        note("note: --local-time needs the instance (the regions' time zones); times are UTC")
    page = render(
        plan,
        inst,
        header=header,
        instance_note=inst_note or None,
        plan_file=str(plan_file),
        attribution=attribution,
        attribution_note=why,
        local_times=local_time,
    )
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as e:
        fail(f"-o {out}: cannot write ({e.strerror})")
    console.print(f"wrote {out}", markup=False)
    if inst_note:
        note(
            f"note: {inst_note} Prices and capacity use are left out; pass --instance to "
            "include them."
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
