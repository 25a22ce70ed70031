"""``trainplan report PLAN [-o report.html] [--png DIR] [--instance INSTANCE] [--local-time]``.

Writes one self-contained HTML page for a plan (charts inline, nothing fetched when it is
opened) and, with ``--png``, the same charts as PNG files. The page opens with the answer:
the plan's cost against the lever-free baseline, the saving per component and per lever
(the plan file's ``attribution``, written by ``solve``; computed here when the file has
none and the instance is at hand).

The instance (for prices, capacity use, local times and the baseline): ``--instance``, else
the file the plan records (``instance_file``: a path relative to the plan and the SHA-256 of
the file's bytes), else (older files) the plan's ``instance`` name beside the plan file. A
reference obeys the file-access policy of the files an instance names
(:func:`planner.instance.files.referenced_file`): inside the plan's folder or the data
root, or (``instance_file``) outside it when the file's bytes have the recorded SHA-256; so a
crafted plan cannot have any other file read or its keys shown. A file inside whose bytes
differ from the recorded hash is refused (exit 2): the plan was made for another instance.

Nothing the page shows is taken on trust (issue 26): with the instance, the plan must pass
the independent checker (``trainplan verify``; exit 1 with its violations otherwise), and
the ``attribution`` and ``replan`` blocks are checked (:mod:`planner.interfaces.report.blocks`: exit
2 when malformed, 1 when their figures do not hold). Without the instance the page says that
the plan was not checked. The output paths are checked before any work
(:mod:`planner.outfiles`): missing folders created, links never written through.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner.interfaces.cli.app import (
    command,
    fail,
    load_instance,
    note,
    output_path,
    progress,
    result,
    write_output,
)
from planner.interfaces.cli.exits import EXIT_INFEASIBLE
from planner.model.plan import InstanceRef, Plan, file_sha256

if TYPE_CHECKING:
    from planner.analysis.attribution import Attribution
    from planner.instance.model import Instance

#: Violations of the checker a refusal lists.
SHOWN_VIOLATIONS = 10


def find_instance(
    plan: Plan, data: dict[str, Any], plan_path: Path, given: Path | None
) -> tuple[Instance | None, str]:
    """The instance to draw against (refusing one whose bytes differ from the hash the plan
    records) and a note for the page when there is none (module docstring)."""
    from planner.instance.files import FileRefused, data_root_of, referenced_file
    from planner.interfaces.report import instance_candidates

    ref = InstanceRef.from_file_dict(data)
    if given is not None:
        return _same(given, ref, plan_path), ""
    folder = plan_path.parent
    root = data_root_of(None)
    if ref is not None:
        try:
            path = referenced_file(ref.path, folder, root, sha256=ref.sha256)
        except FileRefused as e:
            return None, f"The plan's instance_file cannot be read: {e}."
        if not path.is_file():
            return None, (
                f"The plan's instance file {ref.path} (relative to the plan) was not found "
                f"at {path}."
            )
        return _same(path, ref, plan_path), ""
    cands = instance_candidates(plan)
    refused = ""
    for name in cands:
        try:
            c = referenced_file(name, folder, root)
        except FileRefused as e:
            refused = f" ({e})"
            continue
        if c.is_file():
            note(f"instance: {c} (the plan's instance name, beside the plan)")
            return load_instance(c), ""
    if not cands:
        return None, "The plan does not name its instance."
    return None, (f"The plan's instance {plan.instance!r} was not found beside the plan{refused}.")


def _same(path: Path, ref: InstanceRef | None, plan_path: Path) -> Instance:
    """The instance at ``path``, refused (exit 2) when the plan records another file's
    SHA-256."""
    if ref is not None and path.is_file() and file_sha256(path) != ref.sha256:
        fail(
            f"{path}: is not the instance {plan_path} was made for (its SHA-256 "
            f"differs from the plan's instance_file.sha256 {ref.sha256[:12]}...); "
            "solve it again, or pass the instance the plan was made for"
        )
    return load_instance(path)


def _checked(plan: Plan, inst: Instance, plan_file: Path) -> None:
    """The plan must fit the instance and pass the independent checker: exit 2 when it
    does not fit (another horizon, regions or GPU types), 1 with the checker's violations."""
    from planner.checker import verify
    from planner.interfaces.report import ReportError, check_match

    try:
        check_match(plan, inst, str(plan_file), inst.source)
    except ReportError as e:
        fail(
            f"the plan {plan_file} does not fit the instance {inst.source}:\n  "
            + "\n  ".join(e.errors)
        )
    v = verify(inst, plan)
    if not v.ok:
        shown = [f"{x.kind} {x.phase or '-'}: {x.message}" for x in v.violations]
        more = len(shown) - SHOWN_VIOLATIONS
        fail(
            f"the plan {plan_file} is not valid on the instance {inst.source} "
            f"(trainplan verify lists every problem):\n  "
            + "\n  ".join(shown[:SHOWN_VIOLATIONS])
            + (f"\n  ... and {more} more" if more > 0 else ""),
            EXIT_INFEASIBLE,
        )


def _stored_attribution(
    plan: Plan, data: dict[str, Any], inst: Instance | None, plan_file: Path
) -> Attribution | None:
    """The attribution the plan file holds (None without one), its re-plan and baseline
    blocks checked against the plan and instance first: a file edited by hand is refused."""
    from planner.interfaces.report.blocks import (
        BlockError,
        attribution_of,
        check_baseline,
        check_replan,
    )

    attribution = None
    try:
        if "replan" in data:
            check_replan(data["replan"], inst)
        if "attribution" in data:
            attribution = attribution_of(data["attribution"], plan)
            if inst is not None:
                check_baseline(attribution, inst)
    except BlockError as e:
        fail(f"the plan file {plan_file}:\n  " + "\n  ".join(e.errors), e.code)
    return attribution


def _simulation(
    plan: Plan, data: dict[str, Any], simulation: Path | None, plan_file: Path
) -> dict[str, Any] | None:
    """The simulation summary to draw (``--simulation``, else the plan file's), checked
    against the plan; None when there is none."""
    from planner.instance.read import load_document
    from planner.interfaces.report import ReportError
    from planner.interfaces.report.simulation import check_simulation

    sim_doc = load_document(simulation) if simulation is not None else data.get("simulation")
    if sim_doc is None:
        return None
    try:
        return check_simulation(sim_doc, plan, str(simulation or plan_file))
    except ReportError as e:
        fail("the simulation cannot be drawn:\n  " + "\n  ".join(e.errors))


def _attributed(
    plan: Plan, inst: Instance | None, attribution: Attribution | None, no_day_earlier: bool
) -> tuple[Attribution | None, str]:
    """The attribution to show and why there is none: the stored one, else computed against
    the instance; with the price of finishing a day earlier when it has none (unless
    ``--no-day-earlier``)."""
    from planner.analysis.attribution import DAY_EARLIER_S, BaselineError, attribute, day_earlier

    why = ""
    if attribution is None and inst is not None:
        try:
            with progress("attributing the saving") as step:
                attribution = attribute(inst, plan, on_step=step)
        except BaselineError as e:
            why = str(e)
    elif attribution is None:
        why = "the plan file has no attribution and the instance was not found"
    if (
        attribution is not None
        and attribution.day_earlier is None
        and inst is not None
        and not no_day_earlier
    ):
        import dataclasses

        with progress("pricing a finish a day earlier"):
            later = day_earlier(inst, plan, DAY_EARLIER_S)
        attribution = dataclasses.replace(attribution, day_earlier=later)
    return attribution, why


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
    simulation: Annotated[
        Path | None,
        typer.Option(
            "--simulation",
            metavar="FILE",
            help="A trainplan simulate summary to draw (default: the one the plan file holds).",
        ),
    ] = None,
    no_day_earlier: Annotated[
        bool,
        typer.Option(
            "--no-day-earlier",
            help="Do not price finishing a day earlier when the plan file has no such figure "
            "(it takes a second solve of up to 20 s).",
        ),
    ] = False,
) -> None:
    """Write a self-contained HTML report of a plan: its cost against the lever-free
    baseline and the saving per component and per lever first, then the schedule, costs,
    solver, memory, prices, utilisation and failures."""
    # matplotlib loads only when a report is made, not with every command.
    from planner.checker import read_plan_document
    from planner.interfaces.report import ReportError, check_hours, render, write_pngs

    plan, header, data = read_plan_document(plan_file)
    out = output if output is not None else plan_file.with_suffix(".html")
    if out.resolve() == plan_file.resolve():
        fail(f"-o {out}: is the plan file itself; give another name with -o")
    try:
        check_hours(plan, str(plan_file))
    except ReportError as e:
        fail(f"invalid plan {plan_file}:\n  " + "\n  ".join(e.errors))
    inst, inst_note = find_instance(plan, data, plan_file, instance)
    if inst is not None:
        _checked(plan, inst, plan_file)
    else:
        inst_note += " The plan was not checked against an instance."
    attribution = _stored_attribution(plan, data, inst, plan_file)
    sim_checked = _simulation(plan, data, simulation, plan_file)
    output_path(out, "-o")
    if png is not None:
        output_path(png, "--png", folder=True)
    attribution, why = _attributed(plan, inst, attribution, no_day_earlier)
    if local_time and inst is None:
        note("note: --local-time needs the instance (the regions' time zones); times are UTC")
    page = render(
        plan,
        inst,
        header=header,
        instance_note=inst_note.strip() or None,
        plan_file=str(plan_file),
        attribution=attribution,
        attribution_note=why,
        local_times=local_time,
        simulation=sim_checked,
    )
    write_output(out, page, "-o")
    result(f"wrote {out}")
    if inst is None:
        note(
            f"note: {inst_note.strip()} Prices and capacity use are left out; pass --instance "
            "to include them."
        )
    if png is not None:
        from planner.outfiles import OutputError

        try:
            paths = write_pngs(plan, inst, png)
        except (OSError, OutputError) as e:
            fail(f"--png {png}: cannot write ({getattr(e, 'strerror', None) or e})")
        result(f"wrote {len(paths)} PNG files to {png}: " + ", ".join(p.name for p in paths))
