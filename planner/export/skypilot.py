"""``trainplan export PLAN --to skypilot -o DIR``: one SkyPilot task YAML per phase and a launch
script that starts them in plan order at the hours the plan gives.

Per phase ``NN-<phase>.yaml`` (``NN`` its place in plan order: by start hour, then the
instance's topological order)::

    name: pretrain
    num_nodes: 9                      # ceil(gpus / gpus_per_node) + spare nodes
    resources:
      cloud: aws                      # regions.<r>.cloud (left out when not given)
      region: us-east-1               # regions.<r>.cloud_region, else the region's name
      accelerators: H100:8            # <name>:<per node>; a slice "L4:0.5"; a part node "H100:4"
      use_spot: false                 # the plan's contract is spot
    envs:                             # what the phase's job needs to know of the plan
      TRAINPLAN_START: 2023-06-05T13:00:00+00:00
      ...
    run: |
      ...

The accelerator name is the GPU type's ``accelerator`` field, else SkyPilot's name for its
catalog entry (:data:`planner.skypilot_catalog.TO_SKYPILOT`), else the GPU type's name.
``launch.sh`` waits (``sleep``) until each segment's start and runs ``sky launch``; a
preemptible phase the plan pauses is stopped (``sky stop``) at the end of each segment but
the last and started again at the next; the last segment is launched with ``--down``, so the
cluster goes when its job ends. ``DRY_RUN=1 ./launch.sh`` prints the commands with their
times instead of running them.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from planner.instance.model import Instance
from planner.plan import PhasePlan, Plan
from planner.schedule import hour_runs as segments


class _Dumper(yaml.SafeDumper):
    """YAML with multi-line strings (``run``) as literal blocks, as SkyPilot's examples."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


class ExportError(ValueError):
    """A plan that cannot be exported (its instance does not describe a GPU or region)."""


@dataclass(frozen=True)
class Task:
    """One phase's SkyPilot task and the segments (start, end hour) it runs."""

    order: int
    phase: str
    file: str
    cluster: str
    document: dict[str, Any]
    segments: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SkyPilotExport:
    """What was written: the tasks in plan order, the launch script, and warnings (regions
    without a cloud region, whole nodes rented for a part-node count)."""

    directory: Path
    tasks: tuple[Task, ...]
    script: Path
    warnings: tuple[str, ...]


def accelerator_name(inst: Instance, gpu: str) -> str:
    """The name SkyPilot's ``accelerators`` takes for the instance's GPU type ``gpu``."""
    from planner.skypilot_catalog import TO_SKYPILOT

    g = inst.gpu(gpu)
    if g.accelerator:
        return g.accelerator
    return TO_SKYPILOT.get(g.catalog or gpu, TO_SKYPILOT.get(gpu, gpu))


def plan_order(inst: Instance, plan: Plan) -> list[PhasePlan]:
    """The plan's phases by start hour, ties in the instance's topological order."""
    rank = {n: i for i, n in enumerate(inst.order)}
    return sorted(plan.phases, key=lambda p: (p.start_hour, rank.get(p.name, len(rank))))


def hour_time(plan: Plan, hour: int) -> datetime:
    """Start of horizon hour ``hour`` (UTC)."""
    return plan.horizon_start.astimezone(UTC) + timedelta(hours=hour)


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return s or "phase"


def _iso(t: datetime) -> str:
    return t.isoformat()


def _resources(inst: Instance, p: PhasePlan, warnings: list[str]) -> tuple[dict[str, Any], int]:
    """The task's ``resources`` and ``num_nodes``."""
    g = inst.gpu(p.gpu)
    per_node = g.gpus_per_node
    name = accelerator_name(inst, p.gpu)
    if p.gpus < 1:
        accel, nodes = f"{name}:{p.gpus:g}", 1
    elif p.gpus <= per_node:
        accel, nodes = f"{name}:{int(p.gpus)}", 1
    else:
        nodes = math.ceil(p.gpus / per_node)
        accel = f"{name}:{per_node}"
        if p.gpus % per_node:
            warnings.append(
                f"{p.name}: {p.gpus:g} GPUs is not a whole number of {per_node}-GPU nodes; "
                f"the task asks for {nodes} nodes ({nodes * per_node} GPUs)"
            )
    spare_nodes = p.spare_gpus // per_node if per_node else 0
    region = inst.region(p.region)
    res: dict[str, Any] = {}
    if region.cloud:
        res["cloud"] = region.cloud
    res["region"] = region.cloud_region or p.region
    if not region.cloud_region:
        warnings.append(
            f"region {p.region!r} names no cloud region (regions.{p.region}.cloud and "
            "cloud_region in the instance): the task uses the region's own name"
        )
    res["accelerators"] = accel
    res["use_spot"] = p.contract == "spot"
    return res, nodes + spare_nodes


def _task(inst: Instance, plan: Plan, p: PhasePlan, order: int, warnings: list[str]) -> Task:
    res, nodes = _resources(inst, p, warnings)
    segs = tuple(segments(p.hours))
    start, end = hour_time(plan, p.start_hour), hour_time(plan, p.end_hour)
    envs = {
        "TRAINPLAN_PLAN": plan.instance,
        "TRAINPLAN_PHASE": p.name,
        "TRAINPLAN_START": _iso(start),
        "TRAINPLAN_END": _iso(end),
        "TRAINPLAN_HOURS": str(len(p.hours)),
        "TRAINPLAN_SEGMENTS": " ".join(
            f"{_iso(hour_time(plan, a))}/{_iso(hour_time(plan, b))}" for a, b in segs
        ),
        "TRAINPLAN_GPUS": f"{p.gpus:g}",
        "TRAINPLAN_SPARE_GPUS": str(p.spare_gpus),
        "TRAINPLAN_CONTRACT": p.contract,
        "TRAINPLAN_PRECISION": p.precision,
        "TRAINPLAN_ZERO": str(p.zero),
        "TRAINPLAN_RECOMPUTE": p.recompute,
        "TRAINPLAN_TP": str(p.tp),
        "TRAINPLAN_PP": str(p.pp),
        "TRAINPLAN_STORAGE_TIER": p.tier,
    }
    ck = p.info.get("checkpoint_interval_s")
    if isinstance(ck, int | float):
        envs["TRAINPLAN_CHECKPOINT_INTERVAL_S"] = f"{ck:g}"
    doc: dict[str, Any] = {
        "name": p.name,
        "num_nodes": nodes,
        "resources": res,
        "envs": envs,
        "run": (
            'echo "trainplan phase $TRAINPLAN_PHASE on $SKYPILOT_NUM_NODES node(s): '
            'replace this run section with the job"\n'
        ),
    }
    file = f"{order:02d}-{_slug(p.name)}.yaml"
    cluster = f"tp-{_slug(plan.instance)[:20]}-{_slug(p.name)[:20]}".strip("-")
    return Task(order, p.name, file, cluster, doc, segs)


def _header(plan: Plan, p: PhasePlan, t: Task) -> str:
    spare = f" + {p.spare_gpus} spare" if p.spare_gpus else ""
    runs = ", ".join(f"h{a}-h{b}" for a, b in t.segments)
    return (
        f"# trainplan: phase {p.name!r} of plan {plan.instance!r}, #{t.order} in plan order\n"
        f"# {p.gpus:g}{spare} {p.gpu} ({p.contract}) in {p.region}; {p.precision}, "
        f"ZeRO-{p.zero}, recompute {p.recompute}, tp {p.tp}, pp {p.pp}; tier {p.tier}\n"
        f"# runs {len(p.hours)} h from {_iso(hour_time(plan, p.start_hour))} "
        f"(horizon hours {runs}); launch.sh starts it then\n"
    )


_SCRIPT_HEAD = """#!/usr/bin/env bash
# Launch the plan's phases with SkyPilot in plan order, at the hours the plan gives.
# Written by `trainplan export --to skypilot`. DRY_RUN=1 prints the commands and their
# times instead of running them; NO_WAIT=1 skips the waits (to start everything now).
set -euo pipefail
cd "$(dirname "$0")"

run() {
  if [ "${DRY_RUN:-0}" = "1" ]; then echo "$*"; else "$@"; fi
}

wait_until() {  # wait_until ISO-TIME
  local target now
  if [ "${DRY_RUN:-0}" = "1" ] || [ "${NO_WAIT:-0}" = "1" ]; then echo "# at $1"; return; fi
  target=$(date -d "$1" +%s)
  now=$(date +%s)
  if [ "$target" -gt "$now" ]; then
    echo "waiting until $1"
    sleep $((target - now))
  fi
}
"""


def _script(plan: Plan, tasks: list[Task]) -> str:
    """Events in time order: each segment's start (launch) and, for all but the last
    segment of a phase, its end (stop)."""
    events: list[tuple[int, int, int, str]] = []
    for t in tasks:
        for i, (a, b) in enumerate(t.segments):
            last = i == len(t.segments) - 1
            cmd = ["sky", "launch", "-y", "-d"]
            if last:
                cmd.append("--down")
            cmd += ["-c", t.cluster, t.file]
            events.append((a, 1, t.order, " ".join(shlex.quote(x) for x in cmd)))
            if not last:
                stop = ["sky", "stop", "-y", t.cluster]
                events.append((b, 0, t.order, " ".join(shlex.quote(x) for x in stop)))
    lines = [_SCRIPT_HEAD]
    current: int | None = None
    for hour, _kind, _order, line in sorted(events):
        if hour != current:
            lines.append(f"\nwait_until {shlex.quote(_iso(hour_time(plan, hour)))}")
            current = hour
        lines.append(f"run {line}")
    lines.append('\necho "every phase is launched; watch them with: sky status"')
    return "\n".join(lines) + "\n"


def export_skypilot(inst: Instance, plan: Plan, directory: str | Path) -> SkyPilotExport:
    """Write the tasks and ``launch.sh`` into ``directory`` (created if missing)."""
    out = Path(directory)
    missing = sorted({p.gpu for p in plan.phases} - set(inst.spec.gpu_types)) + sorted(
        {p.region for p in plan.phases} - set(inst.spec.regions)
    )
    if missing:
        raise ExportError(
            f"the plan names {', '.join(missing)}, which the instance {inst.source} lacks"
        )
    out.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    tasks = [_task(inst, plan, p, i + 1, warnings) for i, p in enumerate(plan_order(inst, plan))]
    by_name = {p.name: p for p in plan.phases}
    for t in tasks:
        text = _header(plan, by_name[t.phase], t) + yaml.dump(
            t.document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100
        )
        (out / t.file).write_text(text, encoding="utf-8")
    script = out / "launch.sh"
    script.write_text(_script(plan, tasks), encoding="utf-8")
    script.chmod(0o755)
    unique = tuple(dict.fromkeys(warnings))
    return SkyPilotExport(out, tuple(tasks), script, unique)
