"""Re-plan from now: keep an earlier plan's hours before ``HOUR`` and plan the rest.

The old plan is judged against the instance it was made for (its ``instance_file``; the
*old* instance) before anything is derived (:func:`planner.analysis.admit.admit`): hours outside the
horizon, repeated hours, configurations or reserved pools that instance does not allow are
refused, naming the entry. The past is what happened under the old instance; the future is
the file as it is now (the *new* instance). The state at ``HOUR`` is written into the new
instance (docs/cost-model.md, "Re-planning"), so the new plan is an ordinary plan of an
ordinary instance that ``verify`` checks:

- a phase whose hours all lie before HOUR is ``done``;
- a phase under way gets ``progress``: its prior progress plus ``sum_k |H_k ∩ [0, HOUR)| /
  W_h(c_k)`` of what was left, ``W_h`` the work hours of segment ``k``'s configuration under
  the old instance, and ``running``: the configuration of its last hour before HOUR, where
  its checkpoint is;
- a run status (:mod:`planner.interfaces.runstatus`: the jobs' progress files, SkyPilot's or
  Kubernetes' job list) overrides the plan's assumption for the phases it knows: done,
  tokens or steps done at the last durable checkpoint, or not started at all;
- a region (or GPU type) the running configuration needs but the file no longer has is a
  *lost* region: it comes back into the derived instance from the old one with no capacity
  and constant prices (their means), so the run must move, and the move is costed as any
  migration from the running configuration; the work since its last durable checkpoint is
  lost (``(tau + delta) / 2 + lag`` of the running configuration, all of it without
  checkpoints), unless a status gives the checkpoint's progress;
- every phase still to run is released at HOUR at the earliest;
- reservations can be bought from HOUR on only (an offer without terms becomes one term
  ``from-HOUR`` to the horizon end), and the old plan's commitments stay paid: each becomes a
  free term of its size (``committed`` for a whole-horizon reservation, ``committed-<term>``
  for a named one), and a phase running on one continues on its free term.

:func:`replan` solves the derived instance and records in the plan (``replan``) the hour,
what the old hours cost under the old instance (``history_usd``), how much of the old plan's
reservations lies after HOUR (``reserved_after_usd``: paid, not in the new plan), the state
derived and what changed, phase by phase.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, Unpack

import numpy as np

from planner.analysis.admit import admit
from planner.checker.recompute import derive
from planner.instance.files import data_file
from planner.instance.model import Instance, copy_document
from planner.interfaces.runstatus import PhaseStatus
from planner.model.configs import Config, config_with
from planner.model.costs import cost_plan, pool_usd_per_gpu
from planner.model.plan import CONFIG_FIELDS, PhasePlan, Plan, SegmentPlan
from planner.model.result import Result
from planner.model.schedule import Assignment, Schedule
from planner.model.workload import remaining_share, work_flops
from planner.solve import SolveArgs, solve

#: A plan entry: a phase or one of its segments.
E = TypeVar("E", PhasePlan, SegmentPlan)


class ReplanError(ValueError):
    """The old plan cannot be continued on this instance; the message says why."""


@dataclass(frozen=True)
class Replan:
    """The derived instance (the state at ``hour``), the solve of it, what changed, and notes
    (lost regions, phases whose state came from a status or from the plan)."""

    hour: int
    instance: Instance
    updates: dict[str, Any]
    result: Result
    notes: tuple[str, ...] = ()


def committed_term(term: str) -> str:
    """The free term a commitment of the old plan becomes (``""``: the whole horizon)."""
    return f"committed-{term}" if term else "committed"


def _held(old: Plan) -> set[tuple[str, str, str]]:
    """The old plan's reserved commitments, ``(region, GPU type, term)`` (``""``: the whole
    horizon): each is a free term of the derived instance (:func:`committed_term`)."""
    return {(r, g, "") for r, g, _ in old.reserved} | {
        (r, g, t) for r, g, t, _ in old.reserved_terms
    }


def _on_committed(entry: E, held: set[tuple[str, str, str]]) -> E:
    """A plan entry (phase or segment) on a held commitment names its free term."""
    if entry.contract == "reserved" and (entry.region, entry.gpu, entry.term) in held:
        return dataclasses.replace(entry, term=committed_term(entry.term))
    return entry


def warm_start_of(old: Plan) -> Plan:
    """The old plan as the derived instance names its configurations, the re-plan's warm
    start: a run on a commitment of the old plan runs on its free term (``committed...``), so
    that :func:`formulations.heuristics.warm.start_placements` finds it in the derived
    configuration space (month-70b from hour 360: every phase kept, where none was)."""
    held = _held(old)
    phases = tuple(
        dataclasses.replace(
            _on_committed(p, held), segments=tuple(_on_committed(s, held) for s in p.segments)
        )
        for p in old.phases
    )
    return dataclasses.replace(old, phases=phases)


def _running(part: SegmentPlan, held: set[tuple[str, str, str]]) -> dict[str, Any]:
    out = {k: getattr(part, k) for k in CONFIG_FIELDS}
    if part.contract == "reserved" and (part.region, part.gpu, part.term) in held:
        out["term"] = committed_term(part.term)
    elif part.term:
        out["term"] = part.term
    return out


def config_of(inst: Instance, name: str, part: SegmentPlan) -> Config | None:
    """The configuration of phase ``name`` a plan entry or segment states, under ``inst``
    (whether or not it still fits: a lost region has no capacity now):
    :func:`planner.model.configs.config_with`, which enumerates only its own choices (a
    200-phase quarter re-planned spent 24 of its 46 s to the first plan under cProfile
    enumerating every combination of 103 phases)."""
    fields = {**{k: getattr(part, k) for k in CONFIG_FIELDS}, "term": part.term}
    return config_with(inst, inst.phase(name), fields)


def _mean(a: np.ndarray) -> float:
    return float(np.mean(a)) if len(a) else 0.0


def lost_region(old: Instance, name: str) -> dict[str, Any]:
    """Region ``name`` of the old instance as a region of the derived one: its figures, no
    capacity, every price and rate a constant (its mean over the old horizon), so that a run
    there can be priced and moved but nothing new runs there."""
    raw = old.raw["regions"][name]
    keep = (
        "timezone",
        "pue",
        "cooling",
        "zones",
        "storage",
        "transfer_usd_per_gb",
        "default_transfer_usd_per_gb",
        "link_gb_per_s",
        "default_link_gb_per_s",
        "sla",
        "cloud",
        "cloud_region",
    )
    out: dict[str, Any] = {k: copy_document(raw[k]) for k in keep if k in raw}
    out["electricity"] = {"constant": _mean(old.price[name])}
    carbon = old.carbon.get(name)
    if carbon is not None:
        out["carbon_intensity"] = {"constant": _mean(carbon)}
    offers: dict[str, Any] = {}
    for gpu, kinds in raw["offers"].items():
        offer: dict[str, Any] = {}
        for kind, spec in kinds.items():
            if spec is None:
                continue
            o = copy_document(spec)
            o["usd_per_gpu_hour"] = {"constant": _mean(old.offer_price(name, gpu, kind))}
            if kind == "spot":
                o["preemptions_per_hour"] = {"constant": _mean(old.preemptions(name, gpu))}
            if kind == "reserved":
                o["terms"] = [
                    {
                        "name": t.name,
                        "start": t.start,
                        "hours": t.hours,
                        "usd_per_gpu_hour": {
                            "constant": _mean(old.offer_price(name, gpu, "reserved", t.name))
                        },
                        "min_gpus": t.min_gpus,
                        **({} if t.max_gpus is None else {"max_gpus": t.max_gpus}),
                        "prorate": t.prorate,
                    }
                    for t in old.reserved_terms(name, gpu)
                    if t.name
                ]
                if not o["terms"]:
                    del o["terms"]
            offer[kind] = o
        offers[gpu] = offer
    out["offers"] = offers
    out["capacity"] = dict.fromkeys(raw["offers"], 0)
    return out


def _lost(inst: Instance, old_inst: Instance, old: Plan, hour: int) -> dict[str, Any]:
    """Updates that bring back the regions and GPU types of the old plan's runs before
    ``hour`` that the new file no longer has."""
    ups: dict[str, Any] = {}
    for p in old.phases:
        for part in p.parts():
            if not any(h < hour for h in part.hours):
                continue
            if part.gpu not in inst.spec.gpu_types and f"gpu_types.{part.gpu}" not in ups:
                ups[f"gpu_types.{part.gpu}"] = copy_document(old_inst.raw["gpu_types"][part.gpu])
            if part.region not in inst.spec.regions and f"regions.{part.region}" not in ups:
                ups[f"regions.{part.region}"] = lost_region(old_inst, part.region)
    return ups


def _checkpoint_loss(old_inst: Instance, name: str, part: SegmentPlan, c: Config) -> float:
    """The share of the phase's (remaining) work a run on ``part`` loses when its region goes:
    the work since its last durable checkpoint, ``(tau + delta) / 2 + lag`` hours of the
    configuration (everything without checkpoints: returns inf)."""
    f = derive(old_inst, old_inst.phase(name), part)
    if not math.isfinite(f.interval_s):
        return math.inf
    lost_h = f.loss_h - f.downtime_h
    return lost_h / c.work_hours


def _progress_update(
    inst: Instance, name: str, st: PhaseStatus
) -> tuple[dict[str, float] | None, bool]:
    """The ``progress`` a status gives a phase of the new instance, and whether it is done."""
    if st.done:
        return None, True
    if not st.progress:
        return None, False
    p = inst.phase(name)
    (key, value), *_ = st.progress.items()
    if key == "tokens" and p.work.tokens is not None:
        share = value / p.work.tokens
    elif key == "flops":
        share = value / work_flops(inst, p)
    else:
        share = value
    if share >= 1.0 - 1e-9:
        return None, True
    return ({key: value} if value > 0 else None), False


def state_at(
    inst: Instance,
    old: Plan,
    hour: int,
    old_inst: Instance | None = None,
    status: dict[str, PhaseStatus] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The instance updates (dotted paths) that put ``inst`` in the state ``old`` leaves at
    ``hour`` (``old_inst``: the instance ``old`` was made for, default ``inst``; ``status``:
    what the runs report, by phase). Raises :class:`ReplanError` when the plan does not fit
    the instances."""
    base = old_inst if old_inst is not None else inst
    said = notes if notes is not None else []
    status = status or {}
    if not 0 < hour < inst.hours:
        raise ReplanError(
            f"--from: expected an hour inside the horizon (1 to {inst.hours - 1}), got {hour}"
        )
    for other in {id(base): base, id(inst): inst}.values():
        if old.horizon_start != other.start:
            raise ReplanError(
                f"the old plan's hours count from {old.horizon_start.isoformat()}, the "
                f"instance {other.source}'s from {other.start.isoformat()}"
            )
    ups: dict[str, Any] = {}
    if old_inst is not None:
        ups.update(_lost(inst, old_inst, old, hour))
        for k in ups:
            said.append(
                f"{k.split('.')[0][:-1].replace('_', ' ')} {k.split('.', 1)[1]!r} is not in "
                f"{inst.source}: lost; the run there moves from its last durable checkpoint"
            )
    held = _held(old)
    planned = {p.name: p for p in old.phases}
    for p in inst.active_phases:
        e = planned.get(p.name)
        at = f"phases.{p.name}"
        st = status.get(p.name)
        before = [] if e is None else [h for h in e.hours if h < hour]
        if e is not None and p.name not in {q.name for q in base.phases}:
            e = None
        derived_progress = _derived(base, inst, p.name, e, hour, ups, said) if e else None
        progress: dict[str, float] | None = None
        running: SegmentPlan | None = None
        done = False
        if st is not None and (st.done or st.progress is not None or not st.started):
            progress, done = _progress_update(inst, p.name, st)
            if not st.started and before:
                said.append(f"phase {p.name!r}: the status shows no run of it; it starts again")
            if progress and e is not None:
                running = _part_of(e, st.job_part, hour)
        elif e is not None and before and derived_progress is not None:
            fraction, running = derived_progress
            if fraction >= 1.0 - 1e-9:
                done = True
            elif fraction > 0:
                progress = {"fraction": fraction}
        if done:
            ups[f"{at}.done"] = True
            continue
        if progress is not None:
            ups[f"{at}.progress"] = progress
            if running is not None:
                ups[f"{at}.running"] = _running(running, held)
        if inst.release[p.name] < hour:
            ups[f"{at}.release"] = hour
        if inst.deadline[p.name] <= hour:
            raise ReplanError(
                f"phase {p.name!r} is not finished by hour {hour} and its deadline (hour "
                f"{inst.deadline[p.name]}) has passed"
            )
    ups.update(_reservations(inst, base, old, hour, ups))
    return ups


def _part_of(e: PhasePlan, k: int | None, hour: int) -> SegmentPlan:
    """The segment a status names (by index), else the last one begun before ``hour``, else
    the first."""
    parts = e.parts()
    if k is not None and 0 <= k < len(parts):
        return parts[k]
    begun = [s for s in parts if min(s.hours) < hour]
    return begun[-1] if begun else parts[0]


def _derived(
    base: Instance,
    inst: Instance,
    name: str,
    e: PhasePlan,
    hour: int,
    ups: dict[str, Any],
    said: list[str],
) -> tuple[float, SegmentPlan] | None:
    """The share of phase ``name``'s work its hours before ``hour`` did under the old instance
    (its prior progress included) and the segment its checkpoint is on; None when it ran no
    hour before ``hour``. A run in a lost region loses the work since its last checkpoint."""
    done = 0.0
    last: tuple[SegmentPlan, Config] | None = None
    for part in e.parts():
        hs = [h for h in part.hours if h < hour]
        if not hs:
            continue
        c = config_of(base, name, part)
        if c is None:
            raise ReplanError(
                f"phase {name!r}: the old plan's configuration {part.gpus:g} x {part.gpu} "
                f"{part.contract} in {part.region} is not one its instance allows"
            )
        done += len(hs) / c.work_hours
        last = (part, c)
    if last is None:
        return None
    part, c = last
    if f"regions.{part.region}" in ups or f"gpu_types.{part.gpu}" in ups:
        loss = _checkpoint_loss(base, name, part, c)
        done = 0.0 if math.isinf(loss) else max(0.0, done - loss)
        said.append(
            f"phase {name!r}: its run in the lost region {part.region!r} goes back to its "
            + (
                "start (it writes no checkpoints)"
                if math.isinf(loss)
                else f"last durable checkpoint ({loss:.2%} of its work lost)"
            )
        )
    prior = 1.0 - remaining_share(base, base.phase(name))
    return prior + (1.0 - prior) * min(1.0, done), part


def _reservations(
    inst: Instance, base: Instance, old: Plan, hour: int, ups: dict[str, Any]
) -> dict[str, Any]:
    """The reserved terms of the derived instance: the file's own (an offer without terms:
    one term from ``hour``) and one free term per commitment of the old plan."""
    committed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    pools = [(r, g, "", n) for r, g, n in old.reserved] + list(old.reserved_terms)
    for r, g, term, n in pools:
        t = base.term(r, g, term)
        if t is None:
            raise ReplanError(
                f"the old plan reserves {g} in {r} under a term {term!r} its instance lacks"
            )
        committed.setdefault((r, g), []).append(
            {
                "name": committed_term(term),
                "start": t.start if term else 0,
                "hours": t.hours if term else inst.hours,
                "usd_per_gpu_hour": 0.0,
                "min_gpus": n,
                "max_gpus": n,
            }
        )
    out: dict[str, Any] = {}
    for rname in inst.spec.regions:
        raw_offers = inst.raw["regions"][rname]["offers"]
        for gname, offers in raw_offers.items():
            res = offers.get("reserved") if isinstance(offers, dict) else None
            if res is None:
                continue
            terms = list(res.get("terms", [])) or [
                {"name": f"from-{hour}", "start": hour, "hours": inst.hours - hour}
            ]
            extra = committed.pop((rname, gname), [])
            if extra or not res.get("terms"):
                out[f"regions.{rname}.offers.{gname}.reserved.terms"] = [*terms, *extra]
    for (rname, gname), extra in committed.items():
        key = f"regions.{rname}"
        if key in ups and "reserved" in ups[key]["offers"].get(gname, {}):
            region = ups[key]
            terms = region["offers"][gname]["reserved"].get("terms", [])
            region["offers"][gname]["reserved"]["terms"] = [*terms, *extra]
    return out


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


def reserved_after_usd(inst: Instance, old: Plan, hour: int) -> float:
    """What the old plan's reserved commitments cost for their hours from ``hour`` on (under
    ``inst``, the old plan's instance): paid already, usable by the new plan for free. The
    hours of a term outside the horizon that ``prorate: false`` charges count as after
    ``hour`` when they follow the horizon."""
    total = 0.0
    pools = [(r, g, "", n) for r, g, n in old.reserved] + list(old.reserved_terms)
    for r, g, term, n in pools:
        t = inst.term(r, g, term)
        if t is None or n <= 0:
            continue
        price = inst.offer_price(r, g, "reserved", term)
        after = float(np.sum(price[max(t.first, hour) : t.end]))
        if not t.prorate:
            after += max(0, t.start + t.hours - t.end) * _mean(price[t.first : t.end])
        total += n * min(after, pool_usd_per_gpu(inst, r, g, term))
    return total


def history_usd(inst: Instance, old: Plan, hour: int) -> float | None:
    """The old plan's hours before ``hour`` re-costed under ``inst`` (the instance the old plan
    was made for, so at the prices they were bought at) as a plan of their own, its reserved
    commitments' hours before ``hour`` included (:func:`reserved_after_usd` is the rest):
    what has been spent. None when some configuration cannot be matched."""
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
    total = float(cost_plan(inst, Schedule(single, reserved, multi)).costs["total"])
    return total - reserved_after_usd(inst, old, hour)


def replan(
    inst: Instance,
    old: Plan,
    hour: int,
    *,
    old_instance: Instance | None = None,
    status: dict[str, PhaseStatus] | None = None,
    source: str = "the old plan",
    **options: Unpack[SolveArgs],
) -> Replan:
    """Solve the rest of ``old`` from ``hour`` on ``inst`` (the file as it is now: a region
    lost, prices changed); ``old_instance`` is the instance ``old`` was made for (default
    ``inst``), against which ``old`` is re-validated (:class:`planner.analysis.admit.PlanRefused`)
    and its past costed; ``status`` what the runs report (:mod:`planner.interfaces.runstatus`).
    Returns the derived instance, the result, and in its plan's ``replan`` block the hour, the old
    plan's total, what its hours before ``hour`` cost, the reservations after ``hour``, the state
    derived and the changes. ``options`` are :func:`planner.solve.solve`'s."""
    base = old_instance if old_instance is not None else inst
    notes: list[str] = []
    if old_instance is None:
        notes.append(
            "the old plan's instance is not known: it is judged against the file as it is "
            "now (capacity aside) and its past costed at the file's prices"
        )
        admit(base, old, source, frozenset({"capacity"}))
    else:
        admit(base, old, source)
    updates = state_at(inst, old, hour, old_instance, status, notes)
    derived = inst.replace(updates)
    options.setdefault("start", warm_start_of(old))  # the old plan as a warm start
    res = solve(derived, **options)
    if res.plan is not None:
        block = {
            "from_hour": hour,
            "previous_instance": old.instance,
            "previous_total": old.costs.get("total"),
            "history_usd": history_usd(base, old, hour),
            "reserved_after_usd": reserved_after_usd(base, old, hour),
            "state": {k: v for k, v in updates.items() if k.startswith("phases.")},
            "lost": sorted(
                k for k in updates if k.startswith(("regions.", "gpu_types.")) and k.count(".") == 1
            ),
            "notes": notes,
            "changes": changes(old, res.plan, hour),
        }
        res = dataclasses.replace(res, plan=dataclasses.replace(res.plan, replan=block))
    return Replan(hour, derived, updates, res, tuple(notes))


def write_instance(derived: Instance, path: str | Path) -> list[Path]:
    """Write the derived instance as JSON (readable by :func:`planner.read` as printed: every
    file it names relative to it, inside its folder). A data file (CSV series, user catalog)
    already inside the new file's folder is named relative to it; any other is copied into
    ``<name>.data/`` beside it. Returns the files copied."""
    out = Path(path)
    folder = out.resolve().parent
    copies: list[Path] = []
    data_dir = out.with_name(out.stem + ".data")

    def place(name: str) -> str:
        src = data_file(name, derived.base_dir, derived.data_root).resolve()
        if src.is_relative_to(folder):
            return src.relative_to(folder).as_posix()
        data_dir.mkdir(exist_ok=True)
        dst = data_dir / src.name
        k = 1
        while dst.exists() and dst.resolve() != src and dst.read_bytes() != src.read_bytes():
            dst = data_dir / f"{src.stem}-{k}{src.suffix}"
            k += 1
        if not dst.exists():
            shutil.copyfile(src, dst)
            copies.append(dst)
        return dst.resolve().relative_to(folder).as_posix()

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            new = {k: walk(v) for k, v in node.items()}
            if isinstance(new.get("csv"), str):
                new["csv"] = place(new["csv"])
            return new
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    data = walk(copy_document(dict(derived.raw)))
    if isinstance(data.get("gpu_catalog"), str):
        data["gpu_catalog"] = place(data["gpu_catalog"])
    out.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return copies
