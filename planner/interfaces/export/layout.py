"""What every export target launches, derived once from an admitted plan: the *units* (one run
of consecutive planned hours of a phase on one configuration), their names, their order and
dependencies, and the environment each job is given.

Dependencies: a unit waits for the phase's previous unit, and the first unit of a phase for
the last unit of each predecessor phase in the plan (a predecessor marked done has nothing
to wait for). Units are numbered in plan order: by planned start, ties in the instance's
topological order.

The environment (every value a string, built from validated plan and instance values):

==============================  ================================================================
``TRAINPLAN_PLAN_ID``           the plan's tag (another plan or re-plan: another tag)
``TRAINPLAN_PHASE``             the phase's name
``TRAINPLAN_JOB``               this unit's job name
``TRAINPLAN_RUN``               ``k/n``: this run of the phase's ``n`` planned runs
``TRAINPLAN_RUN_START`` / _END  this run's planned hours (ISO, UTC); checkpoint and exit 0 by
                                the end when more runs follow (a planned pause)
``TRAINPLAN_START`` / ``_END``  the phase's first and last planned hour (ISO)
``TRAINPLAN_BUCKET_DIR``        where the run's storage is mounted (one bucket or volume for
                                the plan and its re-plans)
``TRAINPLAN_CHECKPOINT_DIR``    this phase's checkpoints: ``<bucket>/<phase>/checkpoints``
``TRAINPLAN_RESUME_FROM``       where to resume from: the newest checkpoint in this folder, if
                                any (after a preemption, a pause or a re-plan)
``TRAINPLAN_OUTPUT_DIR``        where this phase leaves its output: ``<bucket>/<phase>/output``
``TRAINPLAN_INPUTS``            JSON object: predecessor phase -> its output folder
``TRAINPLAN_PROGRESS_FILE``     where the job reports progress (docs/launch.md): a JSON object
                                ``{"phase", "tokens" | "flops" | "steps" + "total_steps" |
                                "fraction", "done", "updated"}`` written after each durable
                                checkpoint; ``trainplan solve --from now --status`` reads it
``TRAINPLAN_PROGRESS_START``    the share of the work done before this plan (a re-plan's)
``TRAINPLAN_WORK``              JSON object: the phase's whole work (tokens, flops or GPU-hours)
``TRAINPLAN_GPU`` ... ``_PP``   the configuration: GPU type, region, contract, GPUs, spares,
                                precision, ZeRO stage, recomputation, tensor/pipeline parallel
``TRAINPLAN_CHECKPOINT_``       the checkpoint interval the plan is costed with (seconds;
``INTERVAL_S``                  absent when the job never checkpoints)
==============================  ================================================================
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from planner.checker.recompute import derive
from planner.instance.model import Instance
from planner.interfaces.export.names import bucket_name, job_name, phase_slugs, plan_tag
from planner.model.plan import Plan, SegmentPlan
from planner.model.schedule import hour_runs
from planner.model.workload import remaining_share

#: Where the run's storage is mounted in every job.
MOUNT = "/trainplan"


@dataclass(frozen=True)
class Unit:
    """One run of consecutive planned hours of a phase on one configuration."""

    job: str
    phase: str
    part: int
    run: int
    runs: int
    config: SegmentPlan
    start_hour: int
    end_hour: int
    after: tuple[str, ...]
    file: str = ""
    envs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Layout:
    """The plan's units in plan order, its tag, bucket, and each phase's slug."""

    tag: str
    bucket: str
    slugs: dict[str, str]
    units: tuple[Unit, ...]
    mount: str = MOUNT

    def checkpoint_dir(self, phase: str) -> str:
        """Where phase ``phase`` writes and resumes its checkpoints (one folder per phase in the
        plan's bucket or volume)."""
        return f"{self.mount}/{self.slugs[phase]}/checkpoints"

    def output_dir(self, phase: str) -> str:
        """Where phase ``phase`` writes its output for its successors."""
        return f"{self.mount}/{self.slugs[phase]}/output"


def iso(start: datetime, hour: int) -> str:
    """Horizon hour ``hour`` after ``start`` as an ISO time (what the launch files state)."""
    return (start + timedelta(hours=hour)).isoformat()


def _work(inst: Instance, phase: str) -> str:
    w = inst.phase(phase).work
    given = {k: getattr(w, k) for k in ("tokens", "flops", "gpu_hours")}
    return json.dumps({k: v for k, v in given.items() if v is not None}, sort_keys=True)


def _envs(inst: Instance, plan: Plan, lay: Layout, u: Unit) -> dict[str, str]:
    c = u.config
    p = plan.phase(u.phase)
    start = plan.horizon_start
    phase = inst.phase(u.phase)
    inputs = {q: lay.output_dir(q) for q in phase.predecessors if q in lay.slugs}
    envs = {
        "TRAINPLAN_PLAN_ID": lay.tag,
        "TRAINPLAN_PHASE": u.phase,
        "TRAINPLAN_JOB": u.job,
        "TRAINPLAN_RUN": f"{u.run}/{u.runs}",
        "TRAINPLAN_RUN_START": iso(start, u.start_hour),
        "TRAINPLAN_RUN_END": iso(start, u.end_hour),
        "TRAINPLAN_START": iso(start, p.start_hour),
        "TRAINPLAN_END": iso(start, p.end_hour),
        "TRAINPLAN_HOURS": str(len(p.hours)),
        "TRAINPLAN_BUCKET_DIR": lay.mount,
        "TRAINPLAN_CHECKPOINT_DIR": lay.checkpoint_dir(u.phase),
        "TRAINPLAN_RESUME_FROM": lay.checkpoint_dir(u.phase),
        "TRAINPLAN_OUTPUT_DIR": lay.output_dir(u.phase),
        "TRAINPLAN_INPUTS": json.dumps(inputs, sort_keys=True),
        "TRAINPLAN_PROGRESS_FILE": f"{lay.checkpoint_dir(u.phase)}/progress.json",
        "TRAINPLAN_PROGRESS_START": f"{1.0 - remaining_share(inst, phase):.6g}",
        "TRAINPLAN_WORK": _work(inst, u.phase),
        "TRAINPLAN_GPU": c.gpu,
        "TRAINPLAN_REGION": c.region,
        "TRAINPLAN_CONTRACT": c.contract,
        "TRAINPLAN_GPUS": f"{c.gpus:g}",
        "TRAINPLAN_SPARE_GPUS": str(c.spare_gpus),
        "TRAINPLAN_PRECISION": c.precision,
        "TRAINPLAN_ZERO": str(c.zero),
        "TRAINPLAN_RECOMPUTE": c.recompute,
        "TRAINPLAN_TP": str(c.tp),
        "TRAINPLAN_PP": str(c.pp),
        "TRAINPLAN_STORAGE_TIER": c.tier,
    }
    interval = derive(inst, phase, c).interval_s
    if math.isfinite(interval):
        envs["TRAINPLAN_CHECKPOINT_INTERVAL_S"] = f"{interval:.6g}"
    return envs


def build_layout(inst: Instance, plan: Plan, bucket: str | None = None) -> Layout:
    """The units of an admitted plan (:func:`planner.analysis.admit.admit`), in plan order, with
    their names, files (``NN-<slug>[-r<k>].yaml``), dependencies and environments. Raises
    :class:`planner.interfaces.export.names.NameError_` when names cannot be made unique."""
    rank = {n: i for i, n in enumerate(inst.order)}
    slugs = phase_slugs(p.name for p in plan.phases)
    tag = plan_tag(plan.to_json())
    raw: list[Unit] = []
    for p in plan.phases:
        pieces = [
            (k, part, a, b) for k, part in enumerate(p.parts()) for a, b in hour_runs(part.hours)
        ]
        pieces.sort(key=lambda x: x[2])
        for i, (k, part, a, b) in enumerate(pieces, start=1):
            run = i if len(pieces) > 1 else None
            raw.append(
                Unit(job_name(tag, slugs[p.name], run), p.name, k, i, len(pieces), part, a, b, ())
            )
    raw.sort(key=lambda u: (u.start_hour, rank.get(u.phase, len(rank)), u.run))
    last: dict[str, str] = {}
    for u in sorted(raw, key=lambda u: u.start_hour):
        last[u.phase] = u.job
    prev: dict[str, str] = {}
    ordered: list[Unit] = []
    width = max(2, len(str(len(raw))))
    for n, u in enumerate(raw, start=1):
        if u.phase in prev:
            after: tuple[str, ...] = (prev[u.phase],)
        else:
            after = tuple(last[q] for q in inst.phase(u.phase).predecessors if q in last)
        prev[u.phase] = u.job
        suffix = f"-r{u.run}" if u.runs > 1 else ""
        file = f"{n:0{width}d}-{slugs[u.phase]}{suffix}.yaml"
        ordered.append(replace(u, after=after, file=file))
    name = bucket or bucket_name(inst.name, inst.start.isoformat())
    lay = Layout(tag, name, slugs, tuple(ordered))
    units = tuple(replace(u, envs=_envs(inst, plan, lay, u)) for u in ordered)
    return Layout(tag, name, slugs, units)


def manifest(
    lay: Layout,
    plan: Plan,
    target: str,
    modes: dict[str, str],
    contexts: dict[str, str | None],
    prepare: list[dict[str, str | None]] | None = None,
) -> str:
    """``launch.json`` for the launcher (:mod:`planner.interfaces.export.launcher`), through
    ``json``: the units with their mode and context, and ``prepare``, files applied before any unit
    (the Kubernetes volume claim)."""
    doc = {
        "format": "trainplan-launch/1",
        "target": target,
        "plan_id": lay.tag,
        "bucket": lay.bucket,
        "prepare": prepare or [],
        "units": [
            {
                "job": u.job,
                "phase": u.phase,
                "file": u.file,
                "start": iso(plan.horizon_start, u.start_hour),
                "end": iso(plan.horizon_start, u.end_hour),
                "after": list(u.after),
                "mode": modes[u.job],
                "context": contexts.get(u.job),
            }
            for u in lay.units
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
