"""``trainplan export PLAN --to skypilot -o DIR``: one SkyPilot task YAML per unit of the plan
(a run of consecutive planned hours of a phase on one configuration), ``launch.json`` and the
launcher (``launch.sh`` running ``launch.py``, :mod:`planner.interfaces.export.launcher`).

Per unit ``NN-<phase>[-r<k>].yaml`` (``NN`` its place in plan order)::

    name: tp-1a2b3c-pretrain          # unique per plan and re-plan
    (planner.interfaces.export.names) num_nodes: 9                      # ceil(gpus / gpus_per_node)
    + spare nodes resources:
      cloud: aws                      # regions.<r>.cloud
      region: us-east-1               # regions.<r>.cloud_region
      accelerators: H100:8            # <name>:<per node>; a slice "L4:0.5"; a part node "H100:4"
      use_spot: true                  # the plan's contract is spot
      job_recovery: {strategy: FAILOVER, max_restarts_on_errors: 3}
    file_mounts:
      /trainplan: {name: trainplan-<run>-<hash>, store: s3, mode: MOUNT_CACHED}
    envs: {TRAINPLAN_PHASE: pretrain, TRAINPLAN_CHECKPOINT_DIR: /trainplan/pretrain/..., ...}
    run: ...                          # --run CMD, else a line that says to give one

Spot phases run as managed jobs (``sky jobs launch``: SkyPilot recovers them from
preemptions, which the plan prices); on-demand and reserved phases too unless ``--on-demand
cluster`` (``sky launch --down``: a cluster for the job, gone when it ends). Nothing is ever
stopped (``sky stop`` is refused for spot clusters on most clouds): a planned pause is the
end of one unit and the start of the next, which resumes from the checkpoint.

Every document is built from an admitted plan (:func:`planner.analysis.admit.admit`: the plan
re-validated against its instance) and written through ``yaml.safe_dump`` and ``json``; no
comment carries a plan value. The accelerator name is the GPU type's ``accelerator`` field,
else SkyPilot's name for its catalog entry (:data:`planner.instance.skypilot_catalog.TO_SKYPILOT`),
else the GPU type's name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from planner.instance.model import Instance
from planner.interfaces.export import launcher
from planner.interfaces.export.clouds import (
    STORES,
    Catalog,
    read_sky_catalog,
    read_user_offers,
    skypilot_catalog_dir,
)
from planner.interfaces.export.layout import MOUNT, Layout, Unit, build_layout, manifest
from planner.model.plan import Plan, SegmentPlan

#: What ``--on-demand`` may say: on-demand and reserved phases as managed jobs (default) or
#: on a cluster of their own.
ON_DEMAND_MODES = ("managed", "cluster")
#: The run section when ``--run`` is not given: it says so and fails, so that a launch
#: without a job stops at the first phase instead of marking it done.
PLACEHOLDER_RUN = (
    'echo "trainplan: no job given for phase $TRAINPLAN_PHASE; export with --run CMD" >&2\nexit 1\n'
)
#: The launch script: fixed text, no plan value (the launcher reads launch.json).
LAUNCH_SH = """#!/usr/bin/env bash
# Written by trainplan export: starts the plan's jobs with launch.py (Python 3), each when
# its planned hour has come and the jobs it depends on have succeeded.
# DRY_RUN=1 prints the commands in order; NO_WAIT=1 ignores the planned hours.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "$0")/launch.py" "$@"
"""
#: The comment on top of every task file (fixed text).
HEADER = "# Written by trainplan export; launch.sh starts it (see launch.json for when).\n"


class ExportError(ValueError):
    """A plan that cannot be exported (a region without a cloud, an accelerator the cloud
    does not offer there, names that collide); the message names the region, GPU or phase."""


@dataclass(frozen=True)
class Written:
    """What an export wrote: the units in plan order, the files, and warnings."""

    directory: Path
    layout: Layout
    files: dict[str, tuple[str, int]]
    warnings: tuple[str, ...]

    @property
    def script(self) -> Path:
        """The launch script written beside the tasks."""
        return self.directory / "launch.sh"


def accelerator_name(inst: Instance, gpu: str) -> str:
    """The name SkyPilot's ``accelerators`` takes for the instance's GPU type ``gpu``."""
    from planner.instance.skypilot_catalog import TO_SKYPILOT

    g = inst.gpu(gpu)
    if g.accelerator:
        return g.accelerator
    return TO_SKYPILOT.get(g.catalog or gpu, TO_SKYPILOT.get(gpu, gpu))


def node_shape(inst: Instance, c: SegmentPlan) -> tuple[float, int, int]:
    """(GPUs per node, nodes running the job, spare nodes) of a configuration: a slice or a
    part node is one node of that many GPUs."""
    per_node = inst.gpu(c.gpu).gpus_per_node
    spare_nodes = c.spare_gpus // per_node if per_node else 0
    if c.gpus <= per_node:
        return c.gpus, 1, spare_nodes
    return float(per_node), math.ceil(c.gpus / per_node), spare_nodes


def shape_warnings(inst: Instance, lay: Layout) -> list[str]:
    """Warnings for jobs whose GPU count is not a whole number of nodes: SkyPilot asks for whole
    nodes, so such a job gets (and pays) more GPUs than planned."""
    out: list[str] = []
    for u in lay.units:
        c = u.config
        per, nodes, _ = node_shape(inst, c)
        if c.gpus > per and c.gpus % per:
            out.append(
                f"{u.phase}: {c.gpus:g} GPUs is not a whole number of {per:g}-GPU nodes; the "
                f"job asks for {nodes} nodes ({nodes * per:g} GPUs)"
            )
    return out


def _count(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


def check_regions(inst: Instance, lay: Layout, catalog_dir: Path | None) -> list[str]:
    """Every unit's region names a cloud and cloud region, and the accelerator is on offer
    there (:mod:`planner.interfaces.export.clouds`); raises :class:`ExportError` naming the region
    or GPU; returns notes (which catalog was used, or that none was)."""
    from planner.instance.skypilot_catalog import TO_SKYPILOT

    for u in lay.units:
        r = inst.region(u.config.region)
        if not (r.cloud and r.cloud_region):
            raise ExportError(
                f"region {u.config.region!r} (phase {u.phase!r}) names no cloud and cloud "
                f"region: set regions.{u.config.region}.cloud and cloud_region (e.g. aws and "
                "us-east-1; trainplan init --region NAME=MARKET@cloud/cloud-region)"
            )
    clouds = {str(inst.region(u.config.region).cloud) for u in lay.units}
    folder = catalog_dir if catalog_dir is not None else skypilot_catalog_dir()
    catalogs: list[Catalog] = []
    if folder is not None:
        sky = read_sky_catalog(folder, clouds)
        if sky is not None:
            catalogs.append(sky)
    accel_of = dict(TO_SKYPILOT)
    for name, g in inst.spec.gpu_types.items():
        accel_of[name] = accelerator_name(inst, name)
        if g.catalog:
            accel_of.setdefault(g.catalog, accel_of[name])
    user = read_user_offers(inst, accel_of)
    if user is not None:
        catalogs.append(user)
    notes: list[str] = []
    unchecked: set[str] = set()
    for u in lay.units:
        c = u.config
        r = inst.region(c.region)
        cloud, where = str(r.cloud), str(r.cloud_region)
        accel = accelerator_name(inst, c.gpu)
        per, _, _ = node_shape(inst, c)
        cat = next((k for k in catalogs if cloud in k.clouds), None)
        if cat is None:
            unchecked.add(cloud)
            continue
        why = cat.why_not(cloud, where, accel, per, c.contract == "spot")
        if why is not None:
            raise ExportError(
                f"phase {u.phase!r}: GPU {c.gpu} ({accel}:{_count(per)}"
                f"{', spot' if c.contract == 'spot' else ''}) in region {c.region!r} "
                f"({cloud}/{where}): {why}"
            )
    for k in catalogs:
        notes.append(f"regions and accelerators checked against {k.source}")
    if unchecked:
        notes.append(
            "not checked whether " + ", ".join(sorted(unchecked)) + " offers the plan's "
            "accelerators in its regions: no SkyPilot catalog (run any sky command once, or "
            "--sky-catalog DIR) and no imported catalog (gpu_catalog)"
        )
    return notes


def _task(
    inst: Instance, lay: Layout, u: Unit, store: str | None, run: str, setup: str | None
) -> dict[str, Any]:
    c = u.config
    r = inst.region(c.region)
    per, nodes, spare_nodes = node_shape(inst, c)
    resources: dict[str, Any] = {
        "cloud": r.cloud,
        "region": r.cloud_region,
        "accelerators": f"{accelerator_name(inst, c.gpu)}:{_count(per)}",
        "use_spot": c.contract == "spot",
        "job_recovery": {"strategy": "FAILOVER", "max_restarts_on_errors": 3},
    }
    mount: dict[str, Any] = {"name": lay.bucket, "mode": "MOUNT_CACHED"}
    if store is not None:
        mount["store"] = store
    doc: dict[str, Any] = {
        "name": u.job,
        "num_nodes": nodes + spare_nodes,
        "resources": resources,
        "file_mounts": {MOUNT: mount},
        "envs": dict(u.envs),
    }
    if setup:
        doc["setup"] = setup
    doc["run"] = run
    return doc


class _Dumper(yaml.SafeDumper):
    """yaml.safe_dump with multi-line strings (``run``) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None  # the emitter falls back to quotes when it must
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(doc: dict[str, Any]) -> str:
    """A document as YAML through the safe dumper (keys in the order given)."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)


def launcher_source() -> str:
    """The launcher's source, copied into the export folder as ``launch.py``."""
    return Path(launcher.__file__).read_text(encoding="utf-8")


def export_skypilot(
    inst: Instance,
    plan: Plan,
    directory: str | Path,
    *,
    on_demand: str = "managed",
    run: str | None = None,
    setup: str | None = None,
    bucket: str | None = None,
    catalog_dir: Path | None = None,
) -> Written:
    """The SkyPilot files of an admitted plan (:func:`planner.analysis.admit.admit`), not yet
    written: ``write`` them with :func:`planner.interfaces.export.folder.write_files`. Raises
    :class:`ExportError`."""
    from planner.interfaces.export.names import NameError_

    if on_demand not in ON_DEMAND_MODES:
        raise ExportError(f"--on-demand: expected one of {', '.join(ON_DEMAND_MODES)}")
    try:
        lay = build_layout(inst, plan, bucket)
    except NameError_ as e:
        raise ExportError(str(e)) from None
    notes = check_regions(inst, lay, catalog_dir)
    first_cloud = inst.region(lay.units[0].config.region).cloud if lay.units else None
    store = STORES.get(str(first_cloud)) if first_cloud else None
    files: dict[str, tuple[str, int]] = {}
    modes: dict[str, str] = {}
    for u in lay.units:
        doc = _task(inst, lay, u, store, run if run else PLACEHOLDER_RUN, setup)
        files[u.file] = (HEADER + dump_yaml(doc), 0o644)
        modes[u.job] = "managed" if u.config.contract == "spot" else on_demand
    files["launch.json"] = (manifest(lay, plan, "skypilot", modes, {}), 0o644)
    files["launch.py"] = (launcher_source(), 0o644)
    files["launch.sh"] = (LAUNCH_SH, 0o755)
    warnings = [*notes, *shape_warnings(inst, lay)]
    if not run:
        warnings.append(
            "no --run CMD given: every job says so and fails (give the training command)"
        )
    return Written(Path(directory), lay, files, tuple(dict.fromkeys(warnings)))
