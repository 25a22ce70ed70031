"""``trainplan export PLAN --to skypilot|kubernetes -o DIR``: turn a plan into something a
team launches (planner.interfaces.export; docs/launch.md).

The instance is the one the plan records (``instance_file``, checked against its hash), or
``--instance``. The plan is re-validated against it first (planner.analysis.admit): a plan that
breaks a rule of its instance is refused, naming the entry, and nothing is written. Then the
files are built (task YAMLs or Job manifests, ``launch.json``, ``launch.py``, ``launch.sh``)
and written into ``-o DIR`` (created when missing; never through a link in it).

Exit status: 0 on success; 2 on bad input (no instance or another one, a plan that does not
fit it, a region without a cloud, an accelerator not offered there, a bad flag or folder).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from planner.checker import read_plan_document
from planner.interfaces.cli.app import command, console, fail, note
from planner.interfaces.cli.report import find_instance

TARGETS = ("skypilot", "kubernetes")
#: A Kubernetes label value (and the name part of a key): at most 63 characters.
_LABEL = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


def read_gpu_labels(path: Path) -> dict[str, dict[str, str]]:
    """``--gpu-labels FILE``: a mapping GPU name -> {label: value}, each label valid."""
    from planner.instance.read import load_document

    data: Any = load_document(path)
    if not isinstance(data, dict):
        fail(f"--gpu-labels {path}: expected a mapping of GPU names to node labels")
    out: dict[str, dict[str, str]] = {}
    for gpu, labels in data.items():
        if not isinstance(labels, dict) or not labels:
            fail(f"--gpu-labels {path}: {gpu}: expected a mapping of labels to values")
        for k, v in labels.items():
            if not isinstance(k, str) or not _LABEL_KEY.fullmatch(k):
                fail(f"--gpu-labels {path}: {gpu}: {k!r} is not a Kubernetes label key")
            if not isinstance(v, str) or not _LABEL.fullmatch(v):
                fail(
                    f"--gpu-labels {path}: {gpu}.{k}: expected a label value (63 characters "
                    "of letters, digits, '-', '_', '.')"
                )
        out[str(gpu)] = {str(k): str(v) for k, v in labels.items()}
    return out


@command("export")
def export_cmd(
    plan_file: Path = typer.Argument(..., metavar="PLAN", help="Plan file written by solve."),
    to: str = typer.Option("skypilot", help=f"one of {', '.join(TARGETS)}"),
    output: Path = typer.Option(..., "-o", "--output", help="folder to write the files into"),
    instance: Path | None = typer.Option(
        None, help="instance file (default: the one the plan records)"
    ),
    run: str | None = typer.Option(
        None, help="the job's command (default: a line that says to give one, and fails)"
    ),
    setup: str | None = typer.Option(None, help="SkyPilot: the task's setup command"),
    on_demand: str = typer.Option(
        "managed",
        help="SkyPilot: on-demand and reserved phases as managed jobs (managed) or on a "
        "cluster of their own (cluster); spot phases are always managed jobs",
    ),
    bucket: str | None = typer.Option(
        None, help="the storage bucket (Kubernetes: volume claim) of the run"
    ),
    sky_catalog: Path | None = typer.Option(
        None,
        help="SkyPilot catalog folder (<cloud>/vms.csv) to check regions and GPUs against "
        "(default: SkyPilot's local copy, when installed)",
    ),
    queue: str = typer.Option("trainplan", help="Kubernetes: the Kueue queue"),
    image: str | None = typer.Option(None, help="Kubernetes: the container image"),
    gpu_labels: Path | None = typer.Option(
        None, help="Kubernetes: YAML mapping GPU name -> node labels"
    ),
    volume_size: str = typer.Option("1Ti", help="Kubernetes: size of the checkpoint volume claim"),
) -> None:
    """Export PLAN as SkyPilot tasks (spot phases as managed jobs) or Kubernetes Jobs (Indexed,
    under Kueue), with a launcher that starts each run of the plan when its hour has come and
    the runs it depends on have succeeded (launch.sh; DRY_RUN=1 prints the commands)."""
    from planner.analysis.admit import PlanRefused, admit
    from planner.interfaces.export import ExportError, FolderError, write_files
    from planner.interfaces.export.folder import check_target
    from planner.interfaces.export.names import check_bucket

    if to not in TARGETS:
        fail(f"--to: expected one of {', '.join(TARGETS)}, got {to!r}")
    if on_demand not in ("managed", "cluster"):
        fail(f"--on-demand: expected managed or cluster, got {on_demand!r}")
    if bucket is not None and (why := check_bucket(bucket)) is not None:
        fail(f"--bucket {bucket!r}: {why}")
    if not _LABEL.fullmatch(queue) or not queue:
        fail(f"--queue {queue!r}: expected a Kubernetes name (letters, digits, '-', '.')")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?", volume_size):
        fail(f"--volume-size {volume_size!r}: expected a quantity such as 500Gi or 2Ti")
    try:
        check_target(output)
    except FolderError as e:
        fail(str(e))
    if sky_catalog is not None and not sky_catalog.is_dir():
        fail(f"--sky-catalog {sky_catalog}: expected a folder holding <cloud>/vms.csv")
    labels = read_gpu_labels(gpu_labels) if gpu_labels is not None else None
    plan, _header, data = read_plan_document(plan_file)
    inst, why_none = find_instance(plan, data, plan_file, instance)
    if inst is None:
        fail(f"{plan_file}: the export needs the plan's instance: {why_none} Pass --instance.")
    try:
        admitted = admit(inst, plan, str(plan_file))
    except PlanRefused as e:
        fail(str(e))
    try:
        if to == "skypilot":
            from planner.interfaces.export import export_skypilot

            done = export_skypilot(
                inst,
                plan,
                output,
                on_demand=on_demand,
                run=run,
                setup=setup,
                bucket=bucket,
                catalog_dir=sky_catalog,
            )
        else:
            from planner.interfaces.export import export_kubernetes
            from planner.interfaces.export.kubernetes import DEFAULT_IMAGE

            done = export_kubernetes(
                inst,
                plan,
                output,
                queue=queue,
                image=image or DEFAULT_IMAGE,
                run=run,
                labels=labels,
                volume_size=volume_size,
                bucket=bucket,
            )
        written = write_files(output, done.files)
    except (ExportError, FolderError) as e:
        fail(str(e))
    for n in admitted.notes:
        note(f"note: the plan's stated figures differ from the instance's: {n}")
    for path in written:
        console.print(f"wrote {path}", markup=False)
    console.print(
        f"{len(done.layout.units)} jobs in plan order; start them with {done.script} "
        f"(storage: {done.layout.bucket})",
        markup=False,
    )
    for w in done.warnings:
        note(f"warning: {w}")
    note(f"dry run: DRY_RUN=1 {done.script}")
