"""Between schedules and MILP points: a schedule as a full variable vector (a MIP start, and a
consistency test of the model against the costing), and a solution vector as a schedule."""

from __future__ import annotations

import numpy as np

from formulations.exact.milp.model import MilpModel
from planner.instance.model import Instance
from planner.model.configs import Config
from planner.model.schedule import Assignment, Schedule, reserved_usage


def _index(mm: MilpModel, family: str) -> dict[object, int]:
    """Column index by key of one variable family."""
    fam = mm.lp.var_families.get(family)
    if fam is None:
        return {}
    return {k: int(j) for k, j in zip(fam.keys, fam.members, strict=True)}


def _bill(
    mm: MilpModel, v: np.ndarray, key: tuple[object, ...], c: Config, hours: tuple[int, ...]
) -> None:
    if key in mm.b:
        g = c.billing_hours
        blocks = {h // g for h in hours}
        for k, j in mm.b[key].items():
            v[j] = 1.0 if k in blocks else 0.0
        if key in mm.m:
            v[mm.m[key]] = max(0.0, c.min_rental_hours - g * len(blocks))


def _segmented_point(
    mm: MilpModel, v: np.ndarray, name: str, parts: tuple[Assignment, ...]
) -> bool:
    """Set the segment variables of one phase from its parts (False: not a point)."""
    if len(parts) > mm.segmented[name]:
        return False
    e, l_ = mm.windows.start[name], mm.windows.end[name]
    idx = {f: _index(mm, f) for f in ("xs", "ur", "om", "lv", "mv", "u_seg")}
    run = np.zeros(l_ - e)
    for k, (c, hours) in enumerate(parts):
        key = (name, k, c.index)
        if key not in mm.zs or c not in mm.space.by_phase[name]:
            return False
        v[mm.zs[key]] = 1.0
        x = np.zeros(l_ - e)
        for t in hours:
            if not e <= t < l_ or (*key, t) not in idx["xs"]:
                return False
            v[idx["xs"][(*key, t)]] = 1.0
            x[t - e] = 1.0
        run += x
        prev = np.concatenate([[0.0], x[:-1]])
        for i, t in enumerate(range(e, l_)):
            j = idx["ur"].get((*key, t))
            if j is not None:
                v[j] = max(0.0, x[i] - prev[i])
        if key in idx["om"]:
            v[idx["om"][key]] = max(0.0, c.min_rental_hours - len(hours))
        _bill(mm, v, key, c, hours)
        if k + 1 < len(parts):
            if key in idx["lv"]:
                v[idx["lv"][key]] = 1.0
            nxt = parts[k + 1].config
            j = idx["mv"].get((name, k, c.region, nxt.index))
            if j is not None:
                v[j] = 1.0
    g = mm.seg.get(name, {}).get("g", {})
    starts = [a.start for a in parts]
    for (k, t), j in g.items():  # type: ignore[attr-defined]
        v[j] = 1.0 if k + 1 < len(parts) and t >= starts[k + 1] else 0.0
    prev = np.concatenate([[0.0], run[:-1]])
    for i, t in enumerate(range(e, l_)):
        j = idx["u_seg"].get((name, t))
        if j is not None:
            v[j] = max(0.0, run[i] - prev[i])
    hours_all = [h for a in parts for h in a.hours]
    end = max(hours_all) + 1
    for t, j in mm.F.get(name, {}).items():
        v[j] = 1.0 if t >= end else 0.0
    for t, j in mm.seg.get(name, {}).get("Rm", {}).items():  # type: ignore[attr-defined]
        v[j] = float(sum(1 for h in hours_all if h >= t))
    v[mm.last[(name, parts[-1].config.region)]] = 1.0
    return True


def point_from_schedule(mm: MilpModel, schedule: Schedule) -> np.ndarray | None:
    """The MILP point of a schedule, every auxiliary variable set (reserved pools at least the
    schedule's commitment); None if a phase's hours fall outside its modelled window or a
    phase runs in more segments than the model allows (then the schedule cannot be a start)."""
    inst: Instance = mm.inst
    v = np.zeros(mm.lp.num_vars)
    reserved = dict(schedule.reserved)
    for name in schedule:
        parts = schedule.parts(name)
        if name in mm.segmented:
            if not _segmented_point(mm, v, name, parts):
                return None
            hours = schedule.hours_of(name)
            start, end = min(hours), max(hours) + 1
            if name in mm.s:
                for t, j in mm.s[name].items():
                    v[j] = 1.0 if t >= start else 0.0
            for (pn, r), ts in mm.a.items():
                if pn == name and r == parts[-1].config.region:
                    for t, j in ts.items():
                        v[j] = 1.0 if t >= end else 0.0
            continue
        if len(parts) > 1:
            return None
        c, hours = parts[0]
        if (name, c.index) not in mm.z or c not in mm.space.by_phase[name]:
            return None
        v[mm.z[(name, c.index)]] = 1.0
        hs, xi = mm.x[(name, c.index)]
        pos = {int(t): k for k, t in enumerate(hs)}
        run = np.zeros(len(hs))
        for t in hours:
            if t not in pos:
                return None
            run[pos[t]] = 1.0
        v[xi] = run
        if (name, c.index) in mm.u:
            # the previous hour's x, 0 where that hour has no column
            follows = np.concatenate([[False], np.diff(hs) == 1])
            prev = np.where(follows, np.concatenate([[0.0], run[:-1]]), 0.0)
            v[mm.u[(name, c.index)]] = np.maximum(0.0, run - prev)
        end = max(hours) + 1
        start = min(hours)
        if (name, c.index) in mm.y:
            starts, yi = mm.y[(name, c.index)]
            at = np.flatnonzero(starts == start)
            if not len(at) or end - start != c.hours:
                return None  # not one run over open hours
            v[yi[at[0]]] = 1.0
        for t, j in mm.P.get(name, {}).items():
            v[j] = sum(1 for h in hours if h < t) / c.hours
        for t, j in mm.F.get(name, {}).items():
            v[j] = 1.0 if end <= t else 0.0
        for t, j in mm.S.get(name, {}).items():
            v[j] = 1.0 if t >= start else 0.0
        if name in mm.s:
            for t, j in mm.s[name].items():
                v[j] = 1.0 if t >= start else 0.0
        for (pn, r), ts in mm.a.items():
            if pn == name and r == c.region:
                for t, j in ts.items():
                    v[j] = 1.0 if t >= end else 0.0
        _bill(mm, v, (name, c.index), c, hours)
    # reserved: the least R covering peak reserved usage (at least the term's minimum)
    usage = reserved_usage(inst, schedule)
    for (rname, gname, term), j in mm.R.items():
        use = usage.get((rname, gname, term))
        peak = float(use.max()) if use is not None else 0.0
        given = reserved.get((rname, gname, term), 0)
        n = max(peak, given)
        tm = inst.term(rname, gname, term)
        if n > 0 and tm is not None:
            n = max(n, tm.min_gpus)
        v[j] = np.ceil(n - 1e-9)
        if (rname, gname, term) in mm.sign:
            v[mm.sign[(rname, gname, term)]] = 1.0 if n > 0 else 0.0
    for (p, q, r1, r2), j in mm.w.items():
        if p in schedule and q in schedule:
            v[j] = 1.0 if (schedule.last_region(p) == r1 and schedule.region_of()[q] == r2) else 0.0
    families = {inst.gpu(a.config.gpu).family for _, a in schedule.all_parts()}
    for fam, j in mm.used.items():
        v[j] = 1.0 if fam in families else 0.0
    return v


def schedule_from_point(mm: MilpModel, v: np.ndarray) -> Schedule:
    """Read the chosen configuration and running hours of every phase (its segments, for a
    phase modelled in segments), and reserved GPUs."""
    out: dict[str, Assignment] = {}
    segs: dict[str, tuple[Assignment, ...]] = {}
    for name, configs in mm.space.by_phase.items():
        if name in mm.segmented:
            parts: list[Assignment] = []
            for col in mm.columns[name]:
                if float(v[col.z]) <= 0.5:
                    continue
                hours = tuple(
                    int(t) for t, val in zip(col.hours, v[col.xi], strict=True) if val > 0.5
                )
                if hours:
                    parts.append(Assignment(col.config, hours))
            parts.sort(key=lambda a: a.start)
            if len(parts) == 1:
                out[name] = parts[0]
            else:
                segs[name] = tuple(parts)
            continue
        best = max(configs, key=lambda c: float(v[mm.z[(name, c.index)]]))
        hs, xi = mm.x[(name, best.index)]
        hours = tuple(int(t) for t, val in zip(hs, v[xi], strict=True) if val > 0.5)
        out[name] = Assignment(best, hours)
    reserved = {k: round(float(v[j])) for k, j in mm.R.items() if round(float(v[j])) > 0}
    return Schedule(out, reserved, segs)
