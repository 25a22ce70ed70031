"""The plan: a schedule and its costs, what the checker, report, export and grid store read.

A :class:`Plan` is a pure function of (instance, schedule): :func:`planner.model.costs.cost_plan`
builds it. How it was found (solver, status, bound, gap, runtime) is the
:class:`~planner.model.result.Result`'s, which writes it under ``"solve"`` in the same file.

JSON layout (all money in USD, hours are horizon slots counted from the horizon start)::

    {"format": "trainplan-plan/2" | "trainplan-plan/3", "instance": ..., "horizon_start": ...,
     "objective": ...,
     "costs": {"rental", "energy", "storage", "failure", "transfer", "porting", "carbon",
               "total"[, "time"]},
     "energy_kwh": ..., "emissions_t": ...,
     "reserved": [{"region", "gpu", "gpus"[, "term"]}],
     "phases": [{"name", "gpu", "region", "contract", "gpus", "spare_gpus", "precision",
                 "zero", "recompute", "tp", "pp", "tier", "sp", "cp", "ep", "microbatches",
                 "virtual", "offload", "checkpoint"[, "term"], "hours": [...], "start_hour",
                 "end_hour", "start", "end", "costs": {...}, "info": {...}
                 [, "segments": [{the configuration fields as above, "hours": [...],
                                  "work": ..., "costs": {...}, "migration": {...},
                                  "info": {...}}]]}],
     ["replan": {"from_hour", "previous", "changes": [...], ...},]
     "solve": {"solver", "termination", "status", "objective", "bound", "gap", "runtime_s",
               "threads", "message", "notes", "stats"}}

Optional, written by ``trainplan solve`` and read by ``report`` and ``export``:

- ``"instance_file": {"path", "sha256"}``: the instance file the plan was made for, its
  path relative to the plan file's folder (POSIX separators) and the SHA-256 of its bytes
  (:class:`InstanceRef`), so that a report finds it and refuses another;
- ``"attribution"``: the saving against the lever-free baseline, per cost component and per
  lever (:mod:`planner.analysis.attribution`, format ``trainplan-attribution/1``);
- ``"instance_snapshot"``: the instance's document as planned, so that a re-plan costs the
  past at the prices it was planned with after the file is edited in place
  (:mod:`planner.interfaces.replan`);
- ``"simulation"``: a ``trainplan simulate --embed`` summary the report draws.

Readers ignore keys they do not know, so these are compatible additions to
``trainplan-plan/2``.

``objective`` is the weighted total ``sum_k weights[k] x costs[k]`` plus, when the instance
values time, ``costs["time"]``, the value of the hours the plan takes (not part of
``total``, the bill; docs/cost-model.md "The value of time"). ``end_hour`` is
exclusive (the hour after the last running hour). ``info`` carries derived figures for people
(memory, checkpoint interval, expected failures); the checker recomputes what it needs and
does not trust it: it recomputes the figures ``info`` states and reports those that differ.
The layout fields after ``tier`` (sequence/context/expert parallelism, micro-batches,
interleaving, offload, checkpointing scheme) may be left out of a hand-written plan: they
default to one rank each, 16 micro-batches, no offload and the phase's default scheme.

Format ``/3`` (written only when a plan uses what ``/2`` cannot say, so every other plan stays
readable by ``/2`` readers) adds:

- ``segments``: a phase that changes configuration at checkpoints lists its segments in time
  order, each with its configuration, hours, ``work`` (the share of the phase's work done in
  it), its running ``costs`` and the ``migration`` into it (empty for the first segment
  unless the phase continues from a running configuration; keys ``rental``, ``energy``,
  ``transfer``, ``total``, ``hours``, ``from``). The phase's own configuration fields are
  its first segment's, its ``hours`` the union of the segments' and its ``costs`` the sum,
  migrations included;
- ``term``: the reserved term of a reserved-contract entry or pool (absent: the offer's
  whole-horizon reservation);
- ``replan``: the hour a re-plan starts from and what changed against the previous plan.

Files of format ``trainplan-plan/1`` (the solver fields at the top level) are read too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from planner.physics.layout import LayoutChoice

COST_KEYS = ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon")
PLAN_FORMAT = "trainplan-plan/2"
#: The format of plans with segments, reserved terms or a re-plan (see the module docstring).
PLAN_FORMAT_3 = "trainplan-plan/3"
#: Plan formats :meth:`Plan.from_dict` reads.
READABLE_FORMATS = ("trainplan-plan/1", PLAN_FORMAT, PLAN_FORMAT_3)

#: The configuration fields of a plan entry and of a segment, with their types.
CONFIG_FIELDS = (
    "gpu",
    "region",
    "contract",
    "gpus",
    "spare_gpus",
    "precision",
    "zero",
    "recompute",
    "tp",
    "pp",
    "tier",
    "sp",
    "cp",
    "ep",
    "microbatches",
    "virtual",
    "offload",
    "checkpoint",
)


@dataclass(frozen=True, kw_only=True)
class EntryConfig(LayoutChoice):
    """What a plan entry and a segment both state: the configuration (:data:`CONFIG_FIELDS`:
    the layout, :class:`~planner.physics.layout.LayoutChoice`, with the defaults a
    hand-written plan may leave out, and where and on what it runs), its reserved term, its
    hours, its costs and the derived figures (``info``)."""

    gpu: str
    region: str
    contract: str
    gpus: float
    spare_gpus: int
    tier: str
    checkpoint: str | None = None
    hours: tuple[int, ...]
    term: str = ""
    costs: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def start_hour(self) -> int:
        """The first hour the entry runs (its hours need not be contiguous)."""
        return min(self.hours)

    @property
    def end_hour(self) -> int:
        """One past the last hour the entry runs: where the entry (phase or segment) ends."""
        return max(self.hours) + 1

    def config(self) -> dict[str, Any]:
        """The configuration fields, by name."""
        return {k: getattr(self, k) for k in CONFIG_FIELDS}


@dataclass(frozen=True, kw_only=True)
class SegmentPlan(EntryConfig):
    """One segment of a phase that changes configuration: a configuration, its hours, the
    share of the phase's work it does, its running costs and the migration into it."""

    work: float = 0.0
    migration: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The segment as the plan JSON states it: its configuration, hours, work share and
        migration (``term`` only when reserved under one)."""
        d = {**self.config(), **asdict(self)}
        d["hours"] = list(self.hours)
        if not self.term:
            del d["term"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SegmentPlan:
        """A segment read back from the plan JSON (:meth:`to_dict`'s form)."""
        return cls(
            **_entry_of(d),
            work=float(d.get("work", 0.0)),
            migration=dict(d.get("migration", {})),
        )


@dataclass(frozen=True, kw_only=True)
class PhasePlan(EntryConfig):
    """A phase's entry in a plan: its configuration (that of its first segment when it has
    segments), all its hours and costs."""

    name: str
    #: Two or more segments when the phase changes configuration at checkpoints (or one, with
    #: its migration, when it moves off the configuration it was running on); () otherwise.
    segments: tuple[SegmentPlan, ...] = ()

    @property
    def contiguous(self) -> bool:
        """Whether the phase runs in one block of consecutive hours (no pause)."""
        return self.end_hour - self.start_hour == len(self.hours)

    @property
    def segmented(self) -> bool:
        """The phase changes configuration at a checkpoint (more than one segment)."""
        return len(self.segments) > 1

    def parts(self) -> tuple[SegmentPlan, ...]:
        """The phase as segments: its segments, or one segment of its own configuration."""
        if self.segments:
            return self.segments
        return (
            SegmentPlan(
                **self.config(), hours=self.hours, term=self.term, work=1.0, costs=dict(self.costs)
            ),
        )


@dataclass(frozen=True)
class Plan:
    """Per phase its configuration, hours and costs; the reserved pools; plan totals.
    ``objective`` is the weighted total the solvers minimise."""

    instance: str
    horizon_start: datetime
    objective: float
    costs: dict[str, float]
    phases: tuple[PhasePlan, ...]
    reserved: tuple[tuple[str, str, int], ...] = ()
    energy_kwh: float = 0.0
    emissions_t: float = 0.0
    #: Reserved commitments under a named term: (region, GPU type, term, GPUs).
    reserved_terms: tuple[tuple[str, str, str, int], ...] = ()
    #: For a re-plan: the hour it starts from and what changed (planner.interfaces.replan).
    replan: dict[str, Any] | None = None

    @property
    def format(self) -> str:
        """``/3`` when the plan uses segments, reserved terms or is a re-plan, else ``/2``."""
        new = (
            self.reserved_terms
            or self.replan is not None
            or any(p.segments or p.term for p in self.phases)
        )
        return PLAN_FORMAT_3 if new else PLAN_FORMAT

    def phase(self, name: str) -> PhasePlan:
        """The entry of the phase called ``name``; KeyError when the plan has none."""
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def total(self) -> float:
        """The plan's total cost in USD (NaN when the costs are missing, as in a hand-made file)."""
        return self.costs.get("total", math.nan)

    def to_dict(self) -> dict[str, Any]:
        """The plan JSON (trainplan-plan format) as a mapping: every entry with its times in ISO
        form, costs, reserved pools and figures; what :meth:`from_dict` reads back."""

        def t(h: int) -> str:
            return (self.horizon_start + timedelta(hours=h)).isoformat()

        phases = []
        for p in self.phases:
            d = {"name": p.name, **p.config(), **asdict(p)}
            d["hours"] = list(p.hours)
            del d["segments"], d["term"]
            if p.term:
                d["term"] = p.term
            if p.segments:
                d["segments"] = [sg.to_dict() for sg in p.segments]
            d.update(
                start_hour=p.start_hour,
                end_hour=p.end_hour,
                start=t(p.start_hour),
                end=t(p.end_hour),
            )
            phases.append(d)
        out: dict[str, Any] = {
            "format": self.format,
            "instance": self.instance,
            "horizon_start": self.horizon_start.isoformat(),
            "objective": _num(self.objective),
            "costs": self.costs,
            "energy_kwh": self.energy_kwh,
            "emissions_t": self.emissions_t,
            "reserved": [{"region": r, "gpu": g, "gpus": n} for r, g, n in self.reserved]
            + [{"region": r, "gpu": g, "gpus": n, "term": t} for r, g, t, n in self.reserved_terms],
            "phases": phases,
        }
        if self.replan is not None:
            out["replan"] = self.replan
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The plan JSON text; NaN or infinite figures raise instead of writing invalid JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def write(self, path: str | Path) -> None:
        """Write the plan JSON to ``path`` (UTF-8, one trailing newline)."""
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        """A plan read from its JSON mapping (:meth:`to_dict`'s form; older formats' missing fields
        get their defaults)."""
        phases = tuple(
            PhasePlan(
                name=str(p["name"]),
                **_entry_of(p),
                segments=tuple(SegmentPlan.from_dict(x) for x in p.get("segments", [])),
            )
            for p in d["phases"]
        )
        pools = d.get("reserved", [])
        return cls(
            instance=str(d.get("instance", "")),
            horizon_start=datetime.fromisoformat(d["horizon_start"]),
            objective=math.nan if d.get("objective") is None else float(d["objective"]),
            costs={k: float(v) for k, v in d["costs"].items()},
            phases=phases,
            reserved=tuple(
                (str(r["region"]), str(r["gpu"]), int(r["gpus"]))
                for r in pools
                if not r.get("term")
            ),
            energy_kwh=float(d.get("energy_kwh", 0.0)),
            emissions_t=float(d.get("emissions_t", 0.0)),
            reserved_terms=tuple(
                (str(r["region"]), str(r["gpu"]), str(r["term"]), int(r["gpus"]))
                for r in pools
                if r.get("term")
            ),
            replan=dict(d["replan"]) if isinstance(d.get("replan"), dict) else None,
        )

    @classmethod
    def read(cls, path: str | Path) -> Plan:
        """The plan stored in the JSON file at ``path``."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _entry_of(d: dict[str, Any]) -> dict[str, Any]:
    """The :class:`EntryConfig` fields of a plan entry or segment, typed, with the defaults a
    hand-written plan may leave out (one rank each, 16 micro-batches, no offload, the phase's
    default checkpointing scheme, no term)."""
    return {
        "gpu": str(d["gpu"]),
        "region": str(d["region"]),
        "contract": str(d["contract"]),
        "gpus": float(d["gpus"]),
        "spare_gpus": int(d["spare_gpus"]),
        "precision": str(d["precision"]),
        "zero": int(d["zero"]),
        "recompute": str(d["recompute"]),
        "tp": int(d["tp"]),
        "pp": int(d["pp"]),
        "tier": str(d["tier"]),
        "sp": bool(d.get("sp", True)),
        "cp": int(d.get("cp", 1)),
        "ep": int(d.get("ep", 1)),
        "microbatches": int(d.get("microbatches", 16)),
        "virtual": int(d.get("virtual", 1)),
        "offload": str(d.get("offload", "none")),
        "checkpoint": None if d.get("checkpoint") is None else str(d["checkpoint"]),
        "hours": tuple(int(h) for h in d["hours"]),
        "term": str(d.get("term", "")),
        "costs": {k: float(v) for k, v in d.get("costs", {}).items()},
        "info": dict(d.get("info", {})),
    }


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class InstanceRef:
    """The instance file a plan was made for: ``path`` relative to the plan file's folder
    (POSIX separators; absolute when no relative path exists, e.g. another drive) and the
    SHA-256 of the file's bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, instance_file: str | Path, plan_file: str | Path) -> InstanceRef:
        """The reference a plan written to ``plan_file`` records of its instance: the path relative
        to the plan's folder (absolute across drives) and the file's SHA-256, so a later command
        finds it and notices a change."""
        inst = Path(instance_file).resolve()
        folder = Path(plan_file).resolve().parent
        try:
            rel = Path(os.path.relpath(inst, folder)).as_posix()
        except ValueError:
            rel = inst.as_posix()
        return cls(rel, file_sha256(inst))

    def locate(self, plan_file: str | Path) -> Path:
        """Where the instance file is, seen from the plan file."""
        p = Path(self.path)
        return p if p.is_absolute() else Path(plan_file).parent / p

    def to_dict(self) -> dict[str, str]:
        """The reference as the plan file stores it (``path``, ``sha256``)."""
        return {"path": self.path, "sha256": self.sha256}

    @classmethod
    def from_file_dict(cls, d: Mapping[str, Any]) -> InstanceRef | None:
        """The plan file's ``instance_file``, or None when absent or malformed."""
        ref = d.get("instance_file")
        if not isinstance(ref, Mapping):
            return None
        path, digest = ref.get("path"), ref.get("sha256")
        if not isinstance(path, str) or not isinstance(digest, str) or not path:
            return None
        return cls(path, digest)
