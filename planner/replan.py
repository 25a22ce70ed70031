"""Re-plan from now: keep an earlier plan's hours before ``HOUR`` and plan the rest.

The state at ``HOUR`` is written into the instance itself (docs/cost-model.md, "Re-planning"),
so the new plan is an ordinary plan of an ordinary instance that ``verify`` checks:

- a phase whose hours all lie before HOUR is ``done``;
- a phase under way gets ``progress`` (the share of its work its hours before HOUR did,
  ``sum_k |H_k ∩ [0, HOUR)| / W_h(c_k)`` of what was left) and ``running``: the configuration
  of its last hour before HOUR, where its checkpoint is;
- every phase still to run is released at HOUR at the earliest;
- reservations can be bought from HOUR on only (a reserved offer without terms becomes one
  term from HOUR to the horizon end), and the old plan's commitments stay paid: each becomes a
  free term of its size.

:func:`replan` solves the derived instance and records in the plan (``replan``) what changed
against the old plan, phase by phase.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from planner.configs import Config, enumerate_phase
from planner.costs import cost_plan
from planner.instance.model import Instance
from planner.plan import CONFIG_FIELDS, PhasePlan, Plan, SegmentPlan
from planner.result import Result
from planner.schedule import Assignment, Schedule
from planner.solve import SolveOptions, solve
from planner.workload import remaining_share


class ReplanError(ValueError):
    """The old plan cannot be continued on this instance; the message says why."""


@dataclass(frozen=True)
class Replan:
    """The derived instance (the state at ``hour``), the solve of it, and what changed."""

    hour: int
    instance: Instance
    updates: dict[str, Any]
    result: Result


def _running(part: SegmentPlan) -> dict[str, Any]:
    out = {k: getattr(part, k) for k in CONFIG_FIELDS}
    if part.term:
        out["term"] = part.term
    return out


def config_of(inst: Instance, name: str, part: SegmentPlan) -> Config | None:
    """The configuration of phase ``name`` a plan entry or segment states, under ``inst``
    (whether or not it still fits: a lost region has no capacity now)."""
    want = {**{k: getattr(part, k) for k in CONFIG_FIELDS}, "term": part.term}
    configs, _ = enumerate_phase(inst, inst.phase(name), every=True)
    for c in configs:
        if c.plan_fields() == want:
            return c
    return None


def state_at(inst: Instance, old: Plan, hour: int) -> dict[str, Any]:
    """The instance updates (dotted paths) that put ``inst`` in the state ``old`` leaves at
    ``hour``. Raises :class:`ReplanError` when the plan does not fit the instance."""
    if not 0 < hour < inst.hours:
        raise ReplanError(
            f"--from: expected an hour inside the horizon (1 to {inst.hours - 1}), got {hour}"
        )
    if old.horizon_start != inst.start:
        raise ReplanError(
            f"the old plan's hours count from {old.horizon_start.isoformat()}, the instance's "
            f"from {inst.start.isoformat()}"
        )
    ups: dict[str, Any] = {}
    planned = {p.name: p for p in old.phases}
    for p in inst.active_phases:
        e = planned.get(p.name)
        at = f"phases.{p.name}"
        before = [] if e is None else [h for h in e.hours if h < hour]
        if e is not None and before and max(e.hours) < hour:
            ups[f"{at}.done"] = True
            continue
        if before and e is not None:
            done = 0.0
            last: SegmentPlan | None = None
            for part in e.parts():
                hs = [h for h in part.hours if h < hour]
                if not hs:
                    continue
                c = config_of(inst, p.name, part)
                if c is None:
                    raise ReplanError(
                        f"phase {p.name!r}: the old plan's configuration {part.gpus:g} x "
                        f"{part.gpu} {part.contract} in {part.region} is not one the instance "
                        "allows"
                    )
                done += len(hs) / c.work_hours
                last = part
            prior = 1.0 - remaining_share(inst, p)
            fraction = prior + (1.0 - prior) * min(1.0, done)
            if fraction >= 1.0 - 1e-9:
                ups[f"{at}.done"] = True
                continue
            ups[f"{at}.progress"] = {"fraction": fraction}
            assert last is not None
            ups[f"{at}.running"] = _running(last)
        if inst.release[p.name] < hour:
            ups[f"{at}.release"] = hour
        if inst.deadline[p.name] <= hour:
            raise ReplanError(
                f"phase {p.name!r} is not finished by hour {hour} and its deadline (hour "
                f"{inst.deadline[p.name]}) has passed"
            )
    committed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r, g, n in old.reserved:
        committed.setdefault((r, g), []).append(
            {
                "name": "committed",
                "start": 0,
                "hours": inst.hours,
                "usd_per_gpu_hour": 0.0,
                "min_gpus": n,
                "max_gpus": n,
            }
        )
    for r, g, term, n in old.reserved_terms:
        t = inst.term(r, g, term)
        if t is None:
            raise ReplanError(
                f"the old plan reserves {g} in {r} under a term {term!r} the instance lacks"
            )
        committed.setdefault((r, g), []).append(
            {
                "name": f"committed-{term}",
                "start": t.start,
                "hours": t.hours,
                "usd_per_gpu_hour": 0.0,
                "min_gpus": n,
                "max_gpus": n,
            }
        )
    for rname, region in inst.spec.regions.items():
        for gname, offers in region.offers.items():
            res = offers.reserved
            if res is None:
                continue
            raw = inst.raw["regions"][rname]["offers"][gname]["reserved"]
            terms = list(raw.get("terms", [])) or [
                {"name": f"from-{hour}", "start": hour, "hours": inst.hours - hour}
            ]
            extra = committed.get((rname, gname), [])
            if extra or not res.terms:
                ups[f"regions.{rname}.offers.{gname}.reserved.terms"] = [*terms, *extra]
    return ups


def _summary(p: PhasePlan | None, hour: int) -> dict[str, Any]:
    if p is None:
        return {"runs": False}
    parts = [
        {
            "config": f"{s.gpus:g} x {s.gpu} {s.contract} @{s.region}",
            "hours": [h for h in s.hours if h >= hour],
        }
        for s in p.parts()
    ]
    parts = [x for x in parts if x["hours"]]
    return {
        "runs": bool(parts),
        "segments": parts,
        "cost": round(sum(v for k, v in p.costs.items()), 6),
    }


def describe(side: dict[str, Any]) -> str:
    """One side of a change (``before`` or ``after``) in words: each segment's configuration
    and hours, ``-`` when the phase does not run."""
    segs = [s for s in side.get("segments") or [] if s["hours"]]
    if not segs:
        return "-"
    return "; ".join(f"{s['config']} hours {s['hours'][0]}-{s['hours'][-1]}" for s in segs)


def changes(old: Plan, new: Plan, hour: int) -> list[dict[str, Any]]:
    """Phase by phase: what the old plan did from ``hour`` on and what the new one does."""
    names = [p.name for p in old.phases] + [
        p.name for p in new.phases if p.name not in {q.name for q in old.phases}
    ]
    out: list[dict[str, Any]] = []
    new_by = {p.name: p for p in new.phases}
    for name in names:
        before = _summary(next((p for p in old.phases if p.name == name), None), hour)
        after = _summary(new_by.get(name), hour)
        same = [s["config"] for s in before.get("segments", [])] == [
            s["config"] for s in after.get("segments", [])
        ] and [s["hours"] for s in before.get("segments", [])] == [
            s["hours"] for s in after.get("segments", [])
        ]
        out.append({"phase": name, "before": before, "after": after, "changed": not same})
    return out


def history_usd(inst: Instance, old: Plan, hour: int) -> float | None:
    """The old plan's hours before ``hour`` re-costed as a plan of their own (its reserved
    commitments included): what has been spent. None when some configuration cannot be
    matched."""
    parts: dict[str, list[Assignment]] = {}
    for p in old.phases:
        if p.name not in {q.name for q in inst.active_phases}:
            continue
        for seg in p.parts():
            hs = tuple(h for h in seg.hours if h < hour)
            if not hs:
                continue
            c = config_of(inst, p.name, seg)
            if c is None:
                return None
            parts.setdefault(p.name, []).append(Assignment(c, hs))
    single = {n: a[0] for n, a in parts.items() if len(a) == 1}
    multi = {n: tuple(a) for n, a in parts.items() if len(a) > 1}
    reserved: dict[tuple[str, ...], int] = {(r, g): n for r, g, n in old.reserved}
    reserved.update({(r, g, t): n for r, g, t, n in old.reserved_terms})
    return float(cost_plan(inst, Schedule(single, reserved, multi)).costs["total"])


def replan(
    inst: Instance,
    old: Plan,
    hour: int,
    **options: Unpack[SolveOptions],
) -> Replan:
    """Solve the rest of ``old`` from ``hour`` on ``inst`` (which may differ from the instance
    the old plan was made for: a region lost, prices changed): the derived instance, the
    result, and in its plan's ``replan`` block the hour, the old plan's total, what its hours
    before ``hour`` cost, the state derived and the changes. ``options`` are
    :func:`planner.solve.solve`'s (solver, time_limit, gap, threads, backend, ...)."""
    updates = state_at(inst, old, hour)
    derived = inst.replace(updates)
    options.setdefault("start", old)  # the old plan as a warm start
    res = solve(derived, **options)
    if res.plan is not None:
        block = {
            "from_hour": hour,
            "previous_instance": old.instance,
            "previous_total": old.costs.get("total"),
            "history_usd": history_usd(inst, old, hour),
            "state": {k: v for k, v in updates.items() if k.startswith("phases.")},
            "changes": changes(old, res.plan, hour),
        }
        res = dataclasses.replace(res, plan=dataclasses.replace(res.plan, replan=block))
    return Replan(hour, derived, updates, res)


def write_instance(derived: Instance, path: str | Path) -> None:
    """Write the derived instance as JSON (readable by :func:`planner.read`), CSV series
    paths made absolute so it reads from anywhere."""
    data = _absolute(derived.raw, derived.base_dir)
    Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def _absolute(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        out = {k: _absolute(v, base) for k, v in node.items()}
        if isinstance(out.get("csv"), str) and not Path(out["csv"]).is_absolute():
            out["csv"] = str((base / out["csv"]).resolve())
        return out
    if isinstance(node, list):
        return [_absolute(v, base) for v in node]
    return node
