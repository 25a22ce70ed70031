"""The figures a report shows, derived from a plan (and its instance when there is one).

Nothing here re-costs a plan: costs are the plan's own (:mod:`planner.costing`), and
``trainplan verify`` is the place to check them. What is derived here is what a person
monitoring the run would look at (lever 4.3 of docs/levers.md, "alert when GPU utilisation is below
70% or memory is about to overflow"):

- **predicted GPU utilisation** of a phase, the busy share of the GPU time it holds::

      u = work_hours x gpus / (n x (gpus + spare_gpus))

  with ``work_hours`` the hours of work including checkpoint writes (``info.work_hours``,
  docs/cost-model.md "hours n" before rounding up), ``n`` the hours the phase runs and the
  spare GPUs idle. It is the quantity a monitor's "GPU utilisation" (share of time a kernel
  runs) reports, not MFU. Rounding ``n`` up to whole hours and spare nodes lower it.
- **memory headroom** of a phase, the share of the usable memory per GPU left free::

      headroom = (memory_capacity_gb - memory_gb) / memory_capacity_gb

  where ``memory_capacity_gb`` is already the instance's usable capacity (GPU memory x slice
  x (1 - memory.headroom), docs/cost-model.md "memory per GPU"), so this flag warns of a
  configuration running close to that limit.

A phase is flagged when ``u < 0.70`` or ``headroom < 0.05`` (:data:`UTILISATION_ALERT`,
:data:`HEADROOM_ALERT`), or when its memory exceeds the capacity (an overflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from planner.instance.model import Instance
from planner.model.plan import COST_KEYS, PhasePlan, Plan
from planner.model.schedule import hour_runs

#: Alert when the predicted GPU utilisation of a phase is below this share (docs/levers.md,
#: lever 4.3).
UTILISATION_ALERT = 0.70
#: Alert when less than this share of the usable memory per GPU is left free
#: (docs/levers.md, lever 4.3).
HEADROOM_ALERT = 0.05
#: Name of the row holding costs the plan does not attribute to a phase (reserved
#: commitments, porting).
PLAN_WIDE = "plan-wide"


class ReportError(ValueError):
    """A plan and an instance that do not belong together, or a report that cannot be written.
    ``file`` is the file at fault, ``errors`` lines of ``field: what was expected``."""

    def __init__(self, file: str, errors: list[str]) -> None:
        self.file = file
        self.errors = errors
        super().__init__("\n".join(f"{file}: {e}" for e in errors))


def number(info: dict[str, Any], key: str) -> float | None:
    """``info[key]`` as a float when it is a finite number, else None (``info`` is free-form
    and the checker does not validate it, so a report must not trust its types)."""
    v = info.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def utc(t: datetime) -> datetime:
    """A time in UTC (naive times are taken to be UTC)."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def hour_time(plan: Plan, hour: int) -> datetime:
    """Start of horizon hour ``hour`` in UTC."""
    return utc(plan.horizon_start) + timedelta(hours=hour)


@dataclass(frozen=True)
class PhaseFacts:
    """What the report shows of one phase; None where the plan's ``info`` lacks the figure."""

    name: str
    pool: tuple[str, str]
    gpus: float
    spare_gpus: int
    hours: int
    segments: list[tuple[int, int]]
    model_states_gb: float | None
    activations_gb: float | None
    memory_gb: float | None
    memory_capacity_gb: float | None
    utilisation: float | None
    headroom: float | None
    expected_failures: float | None
    failure_rate_per_h: float | None
    checkpoint_interval_s: float | None
    checkpoint_gb: float | None
    flags: list[str] = field(default_factory=list)

    @property
    def other_memory_gb(self) -> float | None:
        """Fragmentation, buffers and the phase's fixed need: total - states - activations."""
        if self.memory_gb is None:
            return None
        return max(
            0.0, self.memory_gb - (self.model_states_gb or 0.0) - (self.activations_gb or 0.0)
        )


def predicted_utilisation(p: PhasePlan) -> float | None:
    """``work_hours x gpus / (n x (gpus + spare_gpus))`` (module docstring)."""
    work = number(p.info, "work_hours")
    held = len(p.hours) * (p.gpus + p.spare_gpus)
    if work is None or held <= 0:
        return None
    return work * p.gpus / held


def phase_facts(p: PhasePlan) -> PhaseFacts:
    """The report's view of one phase, with its monitoring flags."""
    mem = number(p.info, "memory_gb")
    cap = number(p.info, "memory_capacity_gb")
    head = (cap - mem) / cap if mem is not None and cap is not None and cap > 0 else None
    util = predicted_utilisation(p)
    flags: list[str] = []
    if util is not None and util < UTILISATION_ALERT:
        flags.append(f"predicted GPU utilisation {util:.0%} is below {UTILISATION_ALERT:.0%}")
    if mem is not None and cap is not None and mem > cap:
        flags.append(f"memory overflow: {mem:,.1f} GB needed, {cap:,.1f} GB usable")
    elif head is not None and head < HEADROOM_ALERT:
        flags.append(f"memory headroom {head:.1%} is under {HEADROOM_ALERT:.0%}")
    interval = number(p.info, "checkpoint_interval_s")
    return PhaseFacts(
        name=p.name,
        pool=(p.region, p.gpu),
        gpus=p.gpus,
        spare_gpus=p.spare_gpus,
        hours=len(p.hours),
        segments=hour_runs(p.hours),
        model_states_gb=number(p.info, "model_states_gb"),
        activations_gb=number(p.info, "activations_gb"),
        memory_gb=mem,
        memory_capacity_gb=cap,
        utilisation=util,
        headroom=head,
        expected_failures=number(p.info, "expected_failures"),
        failure_rate_per_h=number(p.info, "failure_rate_per_h"),
        checkpoint_interval_s=interval,
        checkpoint_gb=number(p.info, "checkpoint_gb"),
        flags=flags,
    )


def cost_rows(plan: Plan) -> list[tuple[str, dict[str, float]]]:
    """Cost components per phase, then the costs the plan does not attribute to a phase
    (``plan.costs[k] - sum of phase costs[k]``: reserved commitments, porting), when any."""
    rows = [(p.name, {k: float(p.costs.get(k, 0.0)) for k in COST_KEYS}) for p in plan.phases]
    rest = {k: float(plan.costs.get(k, 0.0)) - sum(r[k] for _, r in rows) for k in COST_KEYS}
    if any(abs(v) > 5e-3 for v in rest.values()):
        rows.append((PLAN_WIDE, {k: (v if abs(v) > 5e-7 else 0.0) for k, v in rest.items()}))
    return rows


def horizon_hours(plan: Plan, inst: Instance | None) -> int:
    """Hours shown on time axes: the instance's horizon, else up to the last planned hour."""
    if inst is not None:
        return inst.hours
    return max((p.end_hour for p in plan.phases if p.hours), default=1)


def pool_usage(plan: Plan, hours: int) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """GPUs held (working + spare) per (region, GPU) pool, per phase, per hour ``0..hours-1``;
    hours outside the range are ignored."""
    out: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for p in plan.phases:
        for seg in p.parts():  # each segment in its own pool
            pool = out.setdefault((seg.region, seg.gpu), {})
            use = pool.setdefault(p.name, np.zeros(hours))
            idx = np.asarray([h for h in seg.hours if 0 <= h < hours], dtype=int)
            use[idx] = seg.gpus + seg.spare_gpus
    return out


def energy_weighted_price(plan: Plan, inst: Instance, region: str) -> float | None:
    """Mean price paid in a region, USD/MWh: ``sum kW price_t / sum kW`` over the hours its
    phases run (kW from ``info.facility_kw``, 1 when absent). None if no phase runs there."""
    num = den = 0.0
    price = inst.price[region]
    for p in plan.phases:
        for seg in p.parts():
            if seg.region != region:
                continue
            info = seg.info or p.info
            kw = number(info, "facility_kw") or 1.0
            for h in seg.hours:
                if 0 <= h < len(price):
                    num += kw * float(price[h])
                    den += kw
    return num / den if den > 0 else None


#: Hours a report can draw: a plan's hours must be in ``0 .. MAX_HOUR - 1`` (about 114 years).
MAX_HOUR = 1_000_000


def check_hours(plan: Plan, plan_file: str) -> None:
    """Raise :class:`ReportError` for a phase without hours or with an hour that is negative
    or past :data:`MAX_HOUR` (it could not be drawn as a date)."""
    errors: list[str] = []
    for i, p in enumerate(plan.phases):
        where = f"phases[{i}] ({p.name}).hours"
        if not p.hours:
            errors.append(f"{where}: expected at least one hour, got an empty list")
        bad = [h for h in p.hours if not 0 <= h < MAX_HOUR]
        if bad:
            errors.append(f"{where}: expected hours in 0..{MAX_HOUR - 1}, got {bad[0]}")
    if errors:
        raise ReportError(plan_file, errors)


def check_match(plan: Plan, inst: Instance, plan_file: str, inst_file: str) -> None:
    """Raise :class:`ReportError` when the plan cannot be drawn against the instance: another
    horizon start, hours past the horizon, a region or GPU type the instance lacks."""
    errors: list[str] = []
    if utc(plan.horizon_start) != utc(inst.start):
        errors.append(
            f"horizon_start: the plan starts at {utc(plan.horizon_start).isoformat()}"
            f" but the instance {inst_file} starts at {utc(inst.start).isoformat()}"
        )
    for i, p in enumerate(plan.phases):
        where = f"phases[{i}] ({p.name})"
        if p.region not in inst.spec.regions:
            errors.append(
                f"{where}.region: {p.region!r} is not a region of the instance "
                f"{inst_file} (expected one of {sorted(inst.spec.regions)})"
            )
        if p.gpu not in inst.spec.gpu_types:
            errors.append(
                f"{where}.gpu: {p.gpu!r} is not a GPU type of the instance "
                f"{inst_file} (expected one of {sorted(inst.spec.gpu_types)})"
            )
        bad = [h for h in p.hours if not 0 <= h < inst.hours]
        if bad:
            errors.append(
                f"{where}.hours: hour {bad[0]} is outside the instance's horizon "
                f"0..{inst.hours - 1}"
            )
    if errors:
        raise ReportError(plan_file, errors)


def instance_candidates(plan: Plan) -> list[str]:
    """The names the plan's ``instance`` may have beside the plan file: the name as given
    (when it ends in ``.yaml``, ``.yml`` or ``.json``), then with each of them appended.
    They are looked up under the file-access policy (``planner.instance.files``)."""
    name = plan.instance.strip()
    if not name:
        return []
    cands = [name] if Path(name).suffix.lower() in (".yaml", ".yml", ".json") else []
    return cands + [name + ext for ext in (".yaml", ".yml", ".json")]
