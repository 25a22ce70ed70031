"""Phases in segments: the hourly MILP's families for a phase that may change configuration at
checkpoints (``options.max_segments`` N > 1; docs/cost-model.md, "Segments").

Only such phases get these variables; every other phase keeps the families of
:mod:`formulations.exact.milp.model` unchanged. Sets: segments k = 0 .. N-1 of phase p, its
configurations c (after bound pruning), hours t of its window [e_p, l_p), regions r.

- ``zs[p,k,c]``  binary  segment k runs configuration c:  sum_c zs[p,0,c] = 1,
  sum_c zs[p,k,c] <= sum_c zs[p,k-1,c] (segments are used in order), zs[p,k,c] + zs[p,k+1,c]
  <= 1 (consecutive segments differ), and per class v of what ``segment_changes`` keeps
  fixed, sum_{c in v} zs[p,k+1,c] <= sum_{c in v} zs[p,k,c];
- ``xs[p,k,c,t]`` binary  p runs c in segment k during hour t, at c's hourly cost h_c(t)
  (fixed to 0 in hours c has no capacity for, outside its reserved term, or the bound's hour
  mask rules out, :func:`formulations.bounds.separable.segment_bound`):
  zs[p,k,c] <= sum_t xs[p,k,c,t] <= n_c zs[p,k,c] (a used segment runs, and never longer than
  c would need alone);
- ``g[p,k,t]``   binary  segment k+1 has begun by hour t: monotone in t and in k;
  sum_c xs[p,k,c,t] <= 1 - g[p,k,t] and sum_c xs[p,k+1,c,t] <= g[p,k,t] (segments in time
  order, one at a time);
- work: sum_{k,c,t} xs[p,k,c,t] / W_c >= 1 with W_c the fractional hours c needs for the
  whole work (each configuration at its own rate);
- ``F[p,t]`` binary finished before t and ``Rm[p,t] >= 0`` hours still run from t:
  run(t) + F[p,t] <= 1, F monotone, Rm[p,t] = run(t) + Rm[p,t+1], F[p,t] + Rm[p,t] >= 1
  (run(t) = sum_{k,c} xs[p,k,c,t]): F is 1 exactly when nothing runs from t on;
- non-preemptible p: ``u[p,t] >= run(t) - run(t-1)``, sum_t u <= 1 (one block across all
  segments); preemptible p: ``ur[p,k,c,t] >= xs[p,k,c,t] - xs[p,k,c,t-1]`` at the resume
  cost, the first run of each segment refunded on zs;
- ``last[p,r] >= sum_{c in r} zs[p,k,c] - sum_c zs[p,k+1,c]``: the region p ends in (its
  archive, its successors' retrieval, transfers to successors);
- ``om[p,k,c] >= m_c zs[p,k,c] - sum_t xs[p,k,c,t]``: minimum-rental hours owed per segment
  (hourly billing; block billing is :func:`formulations.exact.milp.model.add_billing`'s, per
  segment column);
- migrations (:func:`planner.model.costs.migration_cost` = leave + move + enter): the restart at
  the target on zs[p,k,c] for k >= 1; ``lv[p,k,c] >= zs[p,k,c] + sum_c' zs[p,k+1,c'] - 1``
  pays the checkpoint write at the source; ``mv[p,k,r,c] >= sum_{c' in r} zs[p,k,c'] +
  zs[p,k+1,c] - 1`` for r != r_c pays the checkpoint and data moved from r and the wait at
  the link's bandwidth.

The first segment carries the configuration's one-time costs but the successors' retrieval,
which the last region carries with the archive after the window; a re-planned phase pays the
entry from its running configuration on zs[p,0,c] (refunded on xs[p,0,c,release] for the
running configuration itself).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from formulations.exact.milp.columns import Column
from formulations.exact.milp.variables import MilpModel
from planner.model.configs import Config, fixed_attributes
from planner.model.costs import (
    Weights,
    enter_cost,
    entry_usd,
    first_segment_usd,
    hourly_cost,
    last_segment_usd,
    leave_cost,
    move_cost,
    usd_per_hour_early,
)

#: Work a plan may fall short of 1 by, for rounding (the checker allows 1e-9).
WORK_TOL = 1e-10


def segmented_phases(mm: MilpModel) -> dict[str, int]:
    """Phases modelled in segments: ``max_segments`` > 1 and more than one configuration."""
    return {
        name: mm.inst.phase(name).options.max_segments
        for name, cs in mm.space.by_phase.items()
        if mm.inst.phase(name).options.max_segments > 1 and len(cs) > 1
    }


def _zs(mm: MilpModel, name: str, k: int) -> list[tuple[Config, int]]:
    return [(c, mm.zs[(name, k, c.index)]) for c in mm.space.by_phase[name]]


def add_segment_choice(mm: MilpModel, wts: Weights) -> None:
    """zs[p,k,c] with its costs, segments used in order, consecutive ones different and
    changing only what ``segment_changes`` allows; last[p,r], the region p ends in."""
    inst, lp = mm.inst, mm.lp
    for name, n_seg in mm.segmented.items():
        p = inst.phase(name)
        configs = mm.space.by_phase[name]
        l_ = mm.windows.end[name]
        for k in range(n_seg):
            cost = []
            for c in configs:
                if k == 0:
                    v = first_segment_usd(inst, c, wts, -1)
                else:
                    v = enter_cost(inst, c).weighted(wts)
                if p.preemptible:
                    v -= wts.failure * c.resume_usd  # a segment's first run is no resume
                cost.append(v)
            idx = lp.add_vars("zs", [(name, k, c.index) for c in configs], 0, 1, True, cost)
            for c, j in zip(configs, idx, strict=True):
                mm.zs[(name, k, c.index)] = int(j)
        first = [j for _, j in _zs(mm, name, 0)]
        lp.add_row("segment_first", name, first, [1.0] * len(first), 1.0, 1.0)
        for k in range(1, n_seg):
            now, before = _zs(mm, name, k), _zs(mm, name, k - 1)
            lp.add_row(
                "segment_order",
                (name, k),
                [j for _, j in now] + [j for _, j in before],
                [1.0] * len(now) + [-1.0] * len(before),
                upper=0.0,
            )
            for (c, a), (_, b) in zip(before, now, strict=True):
                lp.add_row("segment_differs", (name, k, c.index), [a, b], [1.0, 1.0], upper=1.0)
            classes: dict[tuple[object, ...], list[tuple[int, int]]] = defaultdict(list)
            for (c, a), (_, b) in zip(before, now, strict=True):
                key = fixed_attributes(inst, c)
                if key:
                    classes[key].append((a, b))
            for key, pairs in classes.items():
                if len(classes) == 1:
                    break  # one class: nothing to keep apart
                lp.add_row(
                    "segment_keeps",
                    (name, k, str(key)),
                    [b for _, b in pairs] + [a for a, _ in pairs],
                    [1.0] * len(pairs) + [-1.0] * len(pairs),
                    upper=0.0,
                )
        by_region: dict[str, list[Config]] = defaultdict(list)
        for c in configs:
            by_region[c.region].append(c)
        for r, cs in sorted(by_region.items()):
            c0 = cs[0]  # archive rate and handoff follow the region alone
            cost_r = last_segment_usd(inst, c0, l_, wts)
            j = int(lp.add_vars("last", [(name, r)], 0, 1, False, cost_r)[0])
            mm.last[(name, r)] = j
            for k in range(n_seg):
                here = [mm.zs[(name, k, c.index)] for c in cs]
                nxt = [j2 for _, j2 in _zs(mm, name, k + 1)] if k + 1 < n_seg else []
                lp.add_row(
                    "segment_last",
                    (name, r, k),
                    [j, *here, *nxt],
                    [1.0, *([-1.0] * len(here)), *([1.0] * len(nxt))],
                    lower=0.0,
                )


def add_segment_runs(mm: MilpModel, wts: Weights) -> None:
    """xs[p,k,c,t] at c's hourly cost, linked to zs; segments in time order (g); the work
    of the segments adds up at each configuration's rate; one block for a non-preemptible
    phase, resumes per segment for a preemptible one; owed minimum rental per segment."""
    inst, lp = mm.inst, mm.lp
    for name, n_seg in mm.segmented.items():
        p = inst.phase(name)
        configs = mm.space.by_phase[name]
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        hours = np.arange(e, l_)
        mm.columns[name] = []
        work_idx: list[int] = []
        work_val: list[float] = []
        for k in range(n_seg):
            for c in configs:
                cost = hourly_cost(inst, c, wts)[hours]
                cap_ok = mm.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9
                ok = cap_ok & np.isfinite(cost)
                mask = mm.masks.get((name, c.index))  # hours the bound rules out
                if mask is not None:
                    ok = ok & mask
                cost = np.where(ok, cost, 0.0)
                if k == 0 and c.continues and c.entry is not None and e == inst.release[name]:
                    cost[0] -= entry_usd(inst, c, wts, -1)
                key = (name, k, c.index)
                xi = lp.add_vars(
                    "xs", [(*key, int(t)) for t in hours], 0, ok.astype(float), True, cost
                )
                zj = mm.zs[key]
                mm.columns[name].append(Column(key, c, hours, xi, zj))
                lp.add_row(
                    "segment_hours_max",
                    key,
                    [*xi.tolist(), zj],
                    [1.0] * len(xi) + [-float(c.hours)],
                    upper=0.0,
                )
                lp.add_row(
                    "segment_hours_min",
                    key,
                    [*xi.tolist(), zj],
                    [1.0] * len(xi) + [-1.0],
                    lower=0.0,
                )
                work_idx.extend(xi.tolist())
                work_val.extend([1.0 / c.work_hours] * len(xi))
                if p.preemptible and c.resume_usd > 0:
                    ui = lp.add_vars(
                        "ur",
                        [(*key, int(t)) for t in hours],
                        0,
                        1,
                        False,
                        wts.failure * c.resume_usd,
                    )
                    for i in range(len(hours)):
                        ids = [int(ui[i]), int(xi[i])] + ([int(xi[i - 1])] if i else [])
                        lp.add_row(
                            "segment_resume",
                            (*key, int(hours[i])),
                            ids,
                            [1.0, -1.0] + ([1.0] if i else []),
                            lower=0.0,
                        )
                if c.contract != "reserved" and c.billing_hours == 1 and c.min_rental_hours > 0:
                    om = int(
                        lp.add_vars(
                            "om",
                            [key],
                            0,
                            float(c.min_rental_hours),
                            False,
                            wts.rental * c.rental_per_h,
                        )[0]
                    )
                    lp.add_row(
                        "segment_min_rental",
                        key,
                        [om, zj, *xi.tolist()],
                        [1.0, -float(c.min_rental_hours), *([1.0] * len(xi))],
                        lower=0.0,
                    )
        lp.add_row("segment_work", name, work_idx, work_val, lower=1.0 - WORK_TOL)
        _order(mm, name, n_seg, hours)
        if not p.preemptible:
            _one_block(mm, name, hours)


def _run_ids(mm: MilpModel, name: str, k: int | None, pos: int) -> list[int]:
    """x columns of phase ``name`` (segment k, or all) at window position ``pos``."""
    return [int(col.xi[pos]) for col in mm.columns[name] if k is None or col.key[1] == k]


def _order(mm: MilpModel, name: str, n_seg: int, hours: np.ndarray) -> None:
    lp = mm.lp
    g: dict[tuple[int, int], int] = {}
    for k in range(n_seg - 1):
        gi = lp.add_vars("g", [(name, k, int(t)) for t in hours], 0, 1, True, 0.0)
        for i, t in enumerate(hours.tolist()):
            g[(k, t)] = int(gi[i])
            if i:
                lp.add_at_least("segment_begun", (name, k, t), int(gi[i]), int(gi[i - 1]))
            if k:
                lp.add_at_most("segment_nested", (name, k, t), int(gi[i]), g[(k - 1, t)])
            now, nxt = _run_ids(mm, name, k, i), _run_ids(mm, name, k + 1, i)
            lp.add_row(
                "segment_before",
                (name, k, t),
                [*now, int(gi[i])],
                [1.0] * (len(now) + 1),
                upper=1.0,
            )
            lp.add_row(
                "segment_after",
                (name, k, t),
                [*nxt, int(gi[i])],
                [1.0] * len(nxt) + [-1.0],
                upper=0.0,
            )
    mm.seg.setdefault(name, {})["g"] = g


def _one_block(mm: MilpModel, name: str, hours: np.ndarray) -> None:
    """u[p,t] >= run(t) - run(t-1), sum_t u[p,t] <= 1."""
    lp = mm.lp
    ui = lp.add_vars("u_seg", [(name, int(t)) for t in hours], 0, 1, False, 0.0)
    for i, t in enumerate(hours.tolist()):
        now = _run_ids(mm, name, None, i)
        before = _run_ids(mm, name, None, i - 1) if i else []
        lp.add_row(
            "segment_run_start",
            (name, t),
            [int(ui[i]), *now, *before],
            [1.0, *([-1.0] * len(now)), *([1.0] * len(before))],
            lower=0.0,
        )
    lp.add_row("segment_contiguous", name, ui.tolist(), [1.0] * len(ui), upper=1.0)
    mm.seg.setdefault(name, {})["u"] = {int(t): int(j) for t, j in zip(hours, ui, strict=True)}


def add_segment_finish(mm: MilpModel, wts: Weights) -> None:
    """F[p,t] (finished before t) and Rm[p,t] (hours still run from t) for the phases whose
    end matters: successors, pauses, an archive or a value of time (whose constant
    ``v_p (l_p - release_p)`` is the model's offset; each F[p,t] earns v_p back in
    :func:`formulations.exact.milp.model.add_storage`)."""
    inst, lp = mm.inst, mm.lp
    for name in mm.segmented:
        configs = mm.space.by_phase[name]
        value = usd_per_hour_early(inst, name)
        needs = (
            inst.successors(name)
            or inst.phase(name).preemptible
            or any(c.archive_per_h > 0 for c in configs)
            or value > 0
        )
        e, l_ = mm.windows.start[name], mm.windows.end[name]
        # the value of time: v (l_ - release), less v for every F[p,t] (add_storage)
        lp.offset += value * (l_ - inst.release[name])
        ts = list(range(e + 1, l_))
        if not needs or not ts:
            continue
        Fi = lp.add_vars("F", [(name, t) for t in ts], 0, 1, True, 0.0)
        Ri = lp.add_vars("Rm", [(name, t) for t in ts], 0, float(l_ - e), False, 0.0)
        mm.F[name] = {t: int(j) for t, j in zip(ts, Fi, strict=True)}
        mm.seg.setdefault(name, {})["Rm"] = {t: int(j) for t, j in zip(ts, Ri, strict=True)}
        for i, t in enumerate(ts):
            run = _run_ids(mm, name, None, t - e)
            lp.add_row(
                "seg_finished_idle",
                (name, t),
                [*run, int(Fi[i])],
                [1.0] * (len(run) + 1),
                upper=1.0,
            )
            if i:
                lp.add_at_least("seg_finished_monotone", (name, t), int(Fi[i]), int(Fi[i - 1]))
            nxt = [int(Ri[i + 1])] if i + 1 < len(ts) else []
            lp.add_row(
                "seg_remaining",
                (name, t),
                [int(Ri[i]), *run, *nxt],
                [1.0, *([-1.0] * len(run)), *([-1.0] * len(nxt))],
                0.0,
                0.0,
            )
            lp.add_row(
                "seg_finished_when_idle", (name, t), [int(Fi[i]), int(Ri[i])], [1.0, 1.0], lower=1.0
            )


def add_migrations(mm: MilpModel, wts: Weights) -> None:
    """lv[p,k,c]: the checkpoint written when segment k on c is followed by another;
    mv[p,k,r,c]: the move from region r into segment k+1 on c (r != r_c)."""
    inst, lp = mm.inst, mm.lp
    for name, n_seg in mm.segmented.items():
        configs = mm.space.by_phase[name]
        regions = sorted({c.region for c in configs})
        for k in range(n_seg - 1):
            nxt = [j for _, j in _zs(mm, name, k + 1)]
            for c in configs:
                cost = leave_cost(inst, c).weighted(wts)
                if cost <= 0:
                    continue
                j = int(lp.add_vars("lv", [(name, k, c.index)], 0, 1, False, cost)[0])
                lp.add_row(
                    "segment_leave",
                    (name, k, c.index),
                    [j, mm.zs[(name, k, c.index)], *nxt],
                    [1.0, -1.0, *([-1.0] * len(nxt))],
                    lower=-1.0,
                )
            for r in regions:
                here = [mm.zs[(name, k, c.index)] for c in configs if c.region == r]
                for c in configs:
                    if c.region == r:
                        continue
                    cost = move_cost(inst, r, c).weighted(wts)
                    if cost <= 0:
                        continue
                    j = int(lp.add_vars("mv", [(name, k, r, c.index)], 0, 1, False, cost)[0])
                    lp.add_row(
                        "segment_move",
                        (name, k, r, c.index),
                        [j, *here, mm.zs[(name, k + 1, c.index)]],
                        [1.0, *([-1.0] * len(here)), -1.0],
                        lower=-1.0,
                    )
