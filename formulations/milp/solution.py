"""Between schedules and MILP points: a schedule as a full variable vector (a MIP start, and a
consistency test of the model against the costing), and a solution vector as a schedule."""

from __future__ import annotations

import numpy as np

from formulations.milp.model import MilpModel
from planner.instance.model import Instance
from planner.schedule import Assignment, Schedule


def point_from_schedule(mm: MilpModel, schedule: Schedule) -> np.ndarray | None:
    """The MILP point of a schedule, every auxiliary variable set (reserved pools at least the
    schedule's commitment); None if a phase's hours fall outside its modelled window (then the
    schedule cannot be a start)."""
    inst: Instance = mm.inst
    v = np.zeros(mm.lp.num_vars)
    reserved = dict(schedule.reserved)
    for name, (c, hours) in schedule.items():
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
        if name in mm.P:
            for t, j in mm.P[name].items():
                done = sum(1 for h in hours if h < t)
                v[j] = done / c.hours
                v[mm.F[name][t]] = 1.0 if done == c.hours else 0.0
        if name in mm.s:
            for t, j in mm.s[name].items():
                v[j] = 1.0 if t >= start else 0.0
        for (pn, r), ts in mm.a.items():
            if pn == name and r == c.region:
                for t, j in ts.items():
                    v[j] = 1.0 if t >= end else 0.0
        if (name, c.index) in mm.b:
            g = c.billing_hours
            blocks = {h // g for h in hours}
            for k, j in mm.b[(name, c.index)].items():
                v[j] = 1.0 if k in blocks else 0.0
            if (name, c.index) in mm.m:
                v[mm.m[(name, c.index)]] = max(0.0, c.min_rental_hours - g * len(blocks))
    # reserved: the least R covering peak reserved usage (at least the offer's minimum)
    for (rname, gname), j in mm.R.items():
        usage = np.zeros(inst.hours)
        for c, hours in schedule.values():
            if c.contract == "reserved" and c.region == rname and c.gpu == gname:
                usage[list(hours)] += c.total_gpus
        peak = float(usage.max())
        given = reserved.get((rname, gname), 0)
        n = max(peak, given)
        offer = inst.region(rname).offers[gname].reserved
        if n > 0 and offer is not None:
            n = max(n, offer.min_gpus)
        v[j] = np.ceil(n - 1e-9)
        if (rname, gname) in mm.sign:
            v[mm.sign[(rname, gname)]] = 1.0 if n > 0 else 0.0
    for (p, q, r1, r2), j in mm.w.items():
        if p in schedule and q in schedule:
            v[j] = 1.0 if (schedule[p][0].region == r1 and schedule[q][0].region == r2) else 0.0
    for fam, j in mm.used.items():
        v[j] = 1.0 if any(inst.gpu(c.gpu).family == fam for c, _ in schedule.values()) else 0.0
    return v


def schedule_from_point(mm: MilpModel, v: np.ndarray) -> Schedule:
    """Read the chosen configuration and running hours of every phase, and reserved GPUs."""
    out: dict[str, Assignment] = {}
    for name, configs in mm.space.by_phase.items():
        best = max(configs, key=lambda c: float(v[mm.z[(name, c.index)]]))
        hs, xi = mm.x[(name, best.index)]
        hours = tuple(int(t) for t, val in zip(hs, v[xi], strict=True) if val > 0.5)
        out[name] = Assignment(best, hours)
    reserved = {k: round(float(v[j])) for k, j in mm.R.items() if round(float(v[j])) > 0}
    return Schedule(out, reserved)
