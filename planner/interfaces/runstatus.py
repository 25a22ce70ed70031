"""What the launched runs report, read back for a re-plan (``trainplan solve FILE --from now
--status STATUS``): so that a re-plan needs no hand-written state.

Every job an export launches is told ``TRAINPLAN_PROGRESS_FILE`` (docs/launch.md) and writes
there, after each durable checkpoint, a small JSON object (format ``trainplan-progress/1``)::

    {"phase": "pretrain", "tokens": 4.2e11, "done": false,
     "job": "tp-1a2b3c-pretrain", "updated": "2026-03-05T11:00:00Z"}

with the work done as ``tokens``, ``flops``, ``fraction`` (0-1) or ``steps`` with
``total_steps``; ``done: true`` once the phase has finished. ``--status`` takes any of:

- one such file, or a folder holding them (the bucket or volume copied down, e.g. ``aws s3
  sync s3://<bucket> status/``): every ``progress.json`` under it, at most
  :data:`MAX_FILES`;
- the output of ``sky jobs queue -o json`` (a list of jobs): a phase whose last run
  SUCCEEDED is done; a phase with no job at all has not started;
- the output of ``kubectl get jobs -o json`` (a ``List`` of Jobs): the same, from the Jobs'
  ``succeeded`` count and conditions.

Job names are matched to phases through the old plan's export names
(:func:`planner.interfaces.export.layout.build_layout`), so only jobs of that plan count. Several
sources may be given; progress files win over job lists for the progress, and any source
saying a phase is done makes it done.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from planner.instance.errors import InstanceError
from planner.instance.model import Instance
from planner.instance.read import load_document
from planner.model.plan import Plan

PROGRESS_FORMAT = "trainplan-progress/1"
#: Progress files read from one folder at most (a bucket copy may hold many files).
MAX_FILES = 1000
#: Managed-job and Job states that mean "ran and ended without success".
FAILED = ("FAILED", "FAILED_SETUP", "FAILED_PRECHECKS", "FAILED_NO_RESOURCE", "FAILED_CONTROLLER")


class StatusError(ValueError):
    """A status that cannot be read; the message names the file and the field."""


@dataclass(frozen=True)
class PhaseStatus:
    """What the runs say of one phase: done, the work done at the last durable checkpoint
    (one of ``tokens``, ``flops``, ``fraction``), whether any run of it started, the segment
    of the old plan the reporting job ran (None: unknown), and where it was read."""

    phase: str
    source: str
    done: bool = False
    progress: dict[str, float] | None = None
    started: bool = True
    job_part: int | None = None
    state: str | None = None


def _number(doc: dict[str, Any], key: str, where: str) -> float | None:
    v = doc.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise StatusError(f"{where}: {key}: expected a non-negative number, got {v!r}")
    return float(v)


def read_progress_file(path: Path, plan: Plan, jobs: dict[str, tuple[str, int]]) -> PhaseStatus:
    """One progress file, checked: its phase is one of the plan's, its work one number."""
    where = str(path)
    try:
        doc = load_document(path)
    except InstanceError as e:
        raise StatusError(f"{where}: " + "; ".join(str(x) for x in e.errors)) from None
    if not isinstance(doc, dict):
        raise StatusError(f"{where}: expected a JSON object (a {PROGRESS_FORMAT} file)")
    if doc.get("format", PROGRESS_FORMAT) != PROGRESS_FORMAT:
        raise StatusError(f"{where}: format: expected {PROGRESS_FORMAT}")
    phase = doc.get("phase")
    names = [p.name for p in plan.phases]
    if not isinstance(phase, str) or phase not in names:
        raise StatusError(
            f"{where}: phase: expected one of the plan's phases {names}, got {phase!r}"
        )
    done = doc.get("done", False)
    if not isinstance(done, bool):
        raise StatusError(f"{where}: done: expected true or false")
    given = {k: _number(doc, k, where) for k in ("tokens", "flops", "fraction", "steps")}
    total = _number(doc, "total_steps", where)
    progress: dict[str, float] | None = None
    if given["steps"] is not None:
        if not total:
            raise StatusError(f"{where}: steps: expected total_steps beside it")
        progress = {"fraction": min(1.0, given["steps"] / total)}
    for k in ("tokens", "flops", "fraction"):
        if given[k] is not None:
            if progress is not None:
                raise StatusError(f"{where}: expected one of tokens, flops, fraction, steps")
            progress = {k: given[k]}  # type: ignore[dict-item]
    if progress is None and not done:
        raise StatusError(f"{where}: expected tokens, flops, fraction or steps (or done: true)")
    if progress and "fraction" in progress:
        if progress["fraction"] > 1.0:
            raise StatusError(f"{where}: fraction: expected a share between 0 and 1")
        done = done or progress["fraction"] >= 1.0
    job = doc.get("job")
    part = jobs[job][1] if isinstance(job, str) and job in jobs else None
    return PhaseStatus(phase, where, done=done, progress=progress, job_part=part)


def _jobs_of(inst: Instance, plan: Plan) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """Job name -> (phase, segment index) for every unit of the plan's export, and phase ->
    its last unit's job."""
    from planner.interfaces.export.layout import build_layout

    lay = build_layout(inst, plan)
    jobs = {u.job: (u.phase, u.part) for u in lay.units}
    last: dict[str, str] = {}
    for u in sorted(lay.units, key=lambda u: u.start_hour):
        last[u.phase] = u.job
    return jobs, last


def _job_states(doc: Any, where: str) -> dict[str, str] | None:
    """Job name -> state from ``sky jobs queue -o json`` or ``kubectl get jobs -o json``;
    None when ``doc`` is neither."""
    if isinstance(doc, list):
        newest: dict[str, tuple[int, str]] = {}
        for r in doc:
            if not isinstance(r, dict) or not isinstance(r.get("job_name"), str):
                raise StatusError(f"{where}: expected sky jobs queue -o json records")
            jid = r["job_id"] if isinstance(r.get("job_id"), int) else -1
            state = str(r.get("status", "")).split(".")[-1].upper()
            if r["job_name"] not in newest or jid >= newest[r["job_name"]][0]:
                newest[r["job_name"]] = (jid, state)
        return {k: v[1] for k, v in newest.items()}
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        out: dict[str, str] = {}
        for item in doc["items"]:
            if not isinstance(item, dict) or item.get("kind", "Job") != "Job":
                continue
            name = (item.get("metadata") or {}).get("name")
            status = item.get("status") or {}
            want = (item.get("spec") or {}).get("completions") or 1
            conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            if not isinstance(name, str):
                continue
            if conds.get("Failed") == "True":
                out[name] = "FAILED"
            elif conds.get("Complete") == "True" or (status.get("succeeded") or 0) >= want:
                out[name] = "SUCCEEDED"
            else:
                out[name] = "RUNNING"
        return out
    return None


def read_status(paths: list[Path], inst: Instance, plan: Plan) -> dict[str, PhaseStatus]:
    """Phase -> what the sources at ``paths`` say of it (``inst``: the instance of ``plan``,
    whose export names the jobs). Raises :class:`StatusError`."""
    jobs, last = _jobs_of(inst, plan)
    files: list[Path] = []
    states: dict[str, str] = {}
    lists: list[str] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("progress.json"))
            if len(found) > MAX_FILES:
                raise StatusError(f"{path}: more than {MAX_FILES} progress files")
            if not found:
                raise StatusError(f"{path}: holds no progress.json")
            files.extend(found)
            continue
        if not path.is_file():
            raise StatusError(f"{path}: no such file or folder")
        try:
            doc = load_document(path)
        except InstanceError as e:
            raise StatusError(f"{path}: " + "; ".join(str(x) for x in e.errors)) from None
        got = _job_states(doc, str(path))
        if got is None:
            files.append(path)
        else:
            states.update(got)
            lists.append(str(path))
    out: dict[str, PhaseStatus] = {}
    if lists:
        src = ", ".join(lists)
        for p in plan.phases:
            mine = {j: s for j, s in states.items() if jobs.get(j, ("",))[0] == p.name}
            done = states.get(last.get(p.name, "")) == "SUCCEEDED"
            st = next((s for s in mine.values() if s not in ("SUCCEEDED",)), None)
            out[p.name] = PhaseStatus(
                p.name,
                src,
                done=done,
                started=bool(mine),
                state=st or ("SUCCEEDED" if done else None),
            )
    for f in files:
        s = read_progress_file(f, plan, jobs)
        prev = out.get(s.phase)
        if prev is not None and prev.source != s.source and prev.progress is not None:
            raise StatusError(f"{f}: phase {s.phase!r} has progress in {prev.source} too")
        out[s.phase] = replace(s, done=s.done or (prev is not None and prev.done))
    return out
