"""Contracts at fixed times: the incumbent's hours kept, each phase's contract (on demand,
spot, a reserved term) and the reserved commitments chosen anew by the hourly MILP.

Where reserved terms are offered, the plans the heuristics and relaxations find run phases
on demand (a reservation sized to a plan's peak is dear), while the best plans buy a
commitment that several phases fill in turn. With every phase's hours fixed the choice is
small: per phase its configuration and the *twins* of it that differ only in contract and
reserved term (and so in billing and preemption), each open only in the hours the phase runs
now (:func:`twins`); the hourly MILP (:func:`formulations.exact.milp.model.build`) over that space
sizes the reserved pools (their price for the term against the hours they cover) exactly.
The incumbent is its MIP start; the result is costed by the cost model and kept only when
cheaper.
"""

from __future__ import annotations

import time

import numpy as np

from formulations.exact.milp.model import build
from formulations.exact.milp.solution import point_from_schedule, schedule_from_point
from formulations.lp.highs_runner import solve_highs
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import cost_plan
from planner.model.plan import Plan
from planner.model.schedule import Schedule, with_reservations
from planner.model.windows import Windows

#: Seconds to build the model per open (configuration, hour) (measured: a 100-phase
#: quarter's 46k open hours in 1.2 s on a loaded machine; generous).
SECONDS_PER_COLUMN = 5e-5
#: Fields that may differ between a configuration and its twins.
CONTRACT_FIELDS = ("contract", "term")


def _same_but_contract(c: Config) -> tuple[object, ...]:
    fields = {**c.plan_fields(), "term": c.term}
    return tuple(v for k, v in sorted(fields.items()) if k not in CONTRACT_FIELDS)


def twins(
    space: ConfigSpace, windows: Windows, schedule: Schedule
) -> tuple[ConfigSpace, Windows, dict[tuple[str, int], np.ndarray]] | None:
    """The space of each phase's configuration in ``schedule`` and its twins (same but for
    contract and reserved term), the phases' windows narrowed to the span of their hours
    and each configuration open only in those hours (precedence then holds whatever the
    contracts); None when a phase runs in segments (left as it is), runs outside its window,
    or no phase has a twin."""
    if schedule.segments:
        return None
    by_phase: dict[str, tuple[Config, ...]] = {}
    masks: dict[tuple[str, int], np.ndarray] = {}
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    found = False
    for name, a in schedule.assignments.items():
        key = _same_but_contract(a.config)
        mine = tuple(c for c in space.by_phase.get(name, ()) if _same_but_contract(c) == key)
        if all(c.index != a.config.index for c in mine):
            mine = (a.config, *mine)
        found |= len(mine) > 1
        by_phase[name] = mine
        if a.hours[0] < windows.start[name] or a.hours[-1] >= windows.end[name]:
            return None
        start[name], end[name] = a.hours[0], a.hours[-1] + 1
        m = np.zeros(end[name] - start[name], dtype=bool)
        m[np.asarray(a.hours) - start[name]] = True
        for c in mine:
            masks[(name, c.index)] = m.copy()
    if not found:
        return None
    return space.restricted(by_phase), Windows(start, end), masks


def recontract(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    incumbent: float,
    time_limit: float,
    threads: int | None = 1,
) -> tuple[Schedule, Plan] | None:
    """The schedule with the same hours and the best contracts and reservations for them
    (the module docstring), and its plan, when it costs less than ``incumbent``; None
    otherwise (or when nothing can change, or no time)."""
    t0 = time.perf_counter()
    found = twins(space, windows, schedule)
    if found is None:
        return None
    sub, narrow, masks = found
    columns = sum(int(m.sum()) for m in masks.values())
    if columns * SECONDS_PER_COLUMN > time_limit:
        return None  # building alone would take the time
    mm = build(inst, sub, narrow, masks, single=tuple(sub.by_phase))
    start = point_from_schedule(mm, schedule)
    if start is not None and mm.lp.violations(start):
        start = None
    left = time_limit - (time.perf_counter() - t0)
    if left <= 0.1:
        return None
    raw = solve_highs(mm.lp, left, 1e-6, threads, start, isolate=False, options={"presolve": "off"})
    if raw.x is None:
        return None
    got = with_reservations(inst, dict(schedule_from_point(mm, raw.x).assignments))
    if got is None:
        return None
    plan = cost_plan(inst, got)
    if plan.objective < incumbent - 1e-7 * max(1.0, abs(incumbent)):
        return got, plan
    return None
