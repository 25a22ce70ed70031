"""One precedence component re-placed at a time, and ejections over two: a descent over the
incumbent where the phases form several independent pipelines (the lab's quarter: 20 teams of
10 phases).

With every other component's runs fixed, the component's phases are placed anew by the
relaxation's plan (:meth:`formulations.bounds.lagrange.Relaxation.primal`) in the GPUs the
others leave (:func:`planner.model.schedule.residual`): the DP gives each phase's least cost
from every hour with its successors' share, exact for the component alone whenever its own
phases do not compete for a pool, and the placement takes the phases in precedence order
within the capacity still left. Configurations under a reserved term are left out (a
component alone would commit to a term for its own hours), except on the pools the plan
already holds (:func:`held_pools`): the commitments of the incumbent, at their level, and a
re-plan's free terms (commitments the old plan already paid), at their size. Their rental is
sunk, so the relaxation charges their GPU-hours nothing beyond the licence, and the placement
keeps the component within the GPUs committed that the other components leave
(``reserved_capacity`` of :class:`formulations.bounds.lagrange.Relaxation`): a component
moves onto a commitment's idle hours, and a re-plan's runs keep to their free terms. (To let
a component leave a priced commitment, so that its level may fall, the descent also places
it with the free terms alone.) The caller offers the result to the incumbent, which keeps it
only when it costs less under the cost model and meets the carbon cap, so the plan never
gets worse: a block coordinate descent (Bertsekas, *Nonlinear Programming*, 2nd ed., 1999,
section 2.7) whose blocks are the components.

One component at a time cannot take hours another holds when that other gains nothing by
leaving them. An **ejection** (:func:`eject_component`) places one component anew as if a
second did not run and then the second in what is left, over the pairs :func:`ejections`
ranks: a component whose placement alone (its *wish*) costs less than it does in the plan,
paired with the components running where the wish would exceed a pool's capacity. On seed
2's lab quarter re-planned after losing a region, where single placements had stopped at
1,339,215 (and a 300 s solve without ejections at 1,338,838), ejections took the plan to
1,331,294 (0.6% less) within 60 s.

On the lab's quarter, rounds over its 20 components took the plan of a 20 s solve from
3,009,288 to 3,005,917 (0.11%) in 15 s, where the large-neighbourhood search had moved its
first plan by 1,215 in a whole 600 s solve; rounds over pairs of teams after that gained 111
more in 87 s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from formulations.bounds.lagrange import Relaxation
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.costs import cost_plan, pool_usd_per_gpu
from planner.model.schedule import (
    Assignment,
    Pool,
    ReservedKey,
    Schedule,
    reserved_usage,
    residual,
    with_reservations,
)
from planner.model.windows import Windows

#: Configurations the placement weighs per phase (the best by the DP's value first).
TOP = 8


def free_terms(inst: Instance, space: ConfigSpace) -> dict[ReservedKey, int]:
    """Every free term of the space (a term whose GPUs cost nothing: a re-plan's commitment
    already paid) at its size."""
    offered = {
        (c.region, c.gpu, c.term)
        for configs in space.by_phase.values()
        for c in configs
        if c.contract == "reserved"
    }
    out: dict[ReservedKey, int] = {}
    for key in sorted(offered):
        t = inst.term(*key)
        if t is not None and t.max_gpus and pool_usd_per_gpu(inst, *key) <= 0.0:
            out[key] = t.max_gpus
    return out


def held_pools(
    inst: Instance,
    space: ConfigSpace,
    schedule: Schedule,
    free: Mapping[ReservedKey, int] | None = None,
) -> dict[ReservedKey, int]:
    """The reserved pools whose GPUs ``schedule`` may use without paying more, with the GPUs
    committed: the free terms (``free``; None: :func:`free_terms`) and its own commitments at
    their level."""
    held = dict(free_terms(inst, space) if free is None else free)
    held.update({k: n for k, n in schedule.reserved.items() if n > 0})
    return held


def replace_component(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    free: Sequence[str],
    top: int = TOP,
    held: Mapping[ReservedKey, int] | None = None,
    pins: Mapping[str, Assignment] | None = None,
) -> Schedule | None:
    """``schedule`` with the phases ``free`` (a precedence component: none of them has a
    predecessor or successor outside it) placed anew by the relaxation's plan in the capacity
    the other phases leave, on reserved pools only those ``held`` (pool -> GPUs committed;
    None: :func:`held_pools`) within the GPUs the other phases leave on them; None when a
    phase has no configuration or cannot be placed. Not costed: the caller's cost model
    decides.

    ``pins`` (phase -> assignment) fixes runs: a pinned phase of ``free`` runs its pinned
    configuration in exactly its pinned hours (the relaxation's only choice for it), and the
    component's other phases keep off the pools of its pins, so that they never take the
    GPUs a pin needs before it is placed; a pinned phase outside ``free`` and outside
    ``schedule`` (another component, still to be placed) holds its GPUs, in its pool and
    on its reserved term, as if it ran already."""
    mine = set(free)
    held = held_pools(inst, space, schedule) if held is None else held
    pins = pins or {}
    avoid = {(a.config.region, a.config.gpu) for n, a in pins.items() if n in mine}
    own = {
        n: (pins[n].config,)
        if n in pins
        else tuple(
            c
            for c in space.by_phase[n]
            if (c.contract != "reserved" or (c.region, c.gpu, c.term) in held)
            and (c.region, c.gpu) not in avoid
        )
        for n in free
    }
    if not free or not all(own.values()):
        return None
    others = [n for n in schedule if n not in mine]
    capacity = residual(inst, schedule, others)
    ahead = {n: a for n, a in pins.items() if n not in mine and n not in schedule}
    for a in ahead.values():
        capacity[(a.config.region, a.config.gpu)][list(a.hours)] -= a.config.total_gpus
    use = reserved_usage(inst, {**{n: schedule[n] for n in others}, **ahead})
    masks: dict[tuple[str, int], np.ndarray] = {}
    for name in mine & pins.keys():
        a = pins[name]
        e, l_ = windows.start[name], windows.end[name]
        if a.start < e or a.end > l_:
            return None
        mask = np.zeros(l_ - e, dtype=bool)
        mask[a.start - e : a.end - e] = True
        masks[(name, a.config.index)] = mask
    left: dict[ReservedKey, np.ndarray] = {}
    for key, n in held.items():
        t = inst.term(*key)
        cap = np.full(inst.hours, float(n))
        if t is not None:  # usable inside its term only
            cap[: t.first] = 0.0
            cap[t.end :] = 0.0
        left[key] = cap - use.get(key, 0.0)
    rel = Relaxation(inst, space.restricted(own), windows, masks, capacity, left)
    lam, mu = rel.zero_prices()
    mu = np.zeros_like(mu)  # a held pool's rental is sunk
    found = rel.primal(rel.evaluate(lam, mu), lam, mu, top=top)
    if found is None:
        return None
    merged = {n: a for n, a in schedule.assignments.items() if n not in mine}
    merged.update(found)
    return with_reservations(inst, merged)


def eject_component(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    first: Sequence[str],
    then: Sequence[str],
    held: Mapping[ReservedKey, int] | None = None,
) -> Schedule | None:
    """An ejection move over two components: ``first`` placed anew as if ``then`` did not
    run (:func:`replace_component` on the schedule without ``then``), then ``then`` placed
    anew in the capacity left; None when either cannot be placed. One component at a time
    cannot make this move: ``first`` gains only from hours ``then`` holds, and ``then``
    does not leave them by itself (it gains nothing by moving). On seed 2's lab quarter
    re-planned after losing a region, one team's pre-training took the cheaper pool another
    held and the other moved, 9,692 less (0.72%), after every single component had been
    placed anew. ``held``: as :func:`replace_component`'s, for both (None: the schedule's)."""
    out = set(then)
    held = held_pools(inst, space, schedule) if held is None else held
    rest = Schedule(
        {n: a for n, a in schedule.assignments.items() if n not in out}, schedule.reserved
    )
    moved = replace_component(inst, space, windows, rest, first, held=held)
    if moved is None:
        return None
    back = dict(moved.assignments)
    back.update({n: schedule[n] for n in then})  # its old hours, freed at once below
    merged = with_reservations(inst, back)
    if merged is None:
        return None
    return replace_component(inst, space, windows, merged, then, held=held)


def ejections(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    schedule: Schedule,
    comps: Sequence[Sequence[str]],
    held: Mapping[ReservedKey, int] | None = None,
) -> list[tuple[int, int]]:
    """The pairs (first, then) of component indices worth an ejection
    (:func:`eject_component`), most promising first. Each component's *wish* is its
    placement as if it were alone (:func:`replace_component` with every other component
    removed) and its *excess* what its phases cost in ``schedule`` less what they cost in
    the wish (:func:`planner.model.costs.cost_plan`'s phase costs on both sides: a held
    commitment's rental, paid by the pool and not by a phase, counts in neither). Where the
    wish together with every other component's runs exceeds a pool's capacity, the GPU-hours
    over are charged to the components running there, up to their own use; ``then`` is such
    a component. Ordered by the first's excess, then the GPU-hours over (both descending);
    components without excess are left out."""
    held = held_pools(inst, space, schedule) if held is None else held
    costs = _phase_costs(inst, schedule)
    use: list[dict[Pool, np.ndarray]] = [_pool_use(inst, schedule, comp) for comp in comps]
    total: dict[Pool, np.ndarray] = {}
    for u in use:
        for key, arr in u.items():
            total[key] = total.get(key, 0.0) + arr
    pairs: dict[tuple[int, int], tuple[float, float]] = {}  # (excess, GPU-hours over)
    for i, comp in enumerate(comps):
        own = Schedule({n: schedule[n] for n in comp}, schedule.reserved)
        wish = replace_component(inst, space, windows, own, comp, held=held)
        if wish is None:
            continue
        wished = _phase_costs(inst, wish)
        excess = sum(costs.get(n, 0.0) - wished.get(n, 0.0) for n in comp)
        if excess <= 1e-6:
            continue
        for key, arr in _pool_use(inst, wish, comp).items():
            cap = np.asarray(inst.capacity[key], dtype=float)
            over = np.maximum(0.0, arr + total.get(key, 0.0) - use[i].get(key, 0.0) - cap)
            if not over.any():
                continue
            for j, u in enumerate(use):
                if j != i and key in u:
                    blocked = float(np.minimum(over, u[key]).sum())
                    if blocked > 0:  # a pair blocked on several pools: summed
                        pairs[(i, j)] = (excess, pairs.get((i, j), (0.0, 0.0))[1] + blocked)
    return sorted(pairs, key=lambda ij: (-pairs[ij][0], -pairs[ij][1], ij))


def _phase_costs(inst: Instance, schedule: Schedule) -> dict[str, float]:
    """Each phase's costs in ``schedule`` (unweighted, summed over the cost components)."""
    return {p.name: sum(p.costs.values()) for p in cost_plan(inst, schedule).phases}


def _pool_use(inst: Instance, schedule: Schedule, names: Sequence[str]) -> dict[Pool, np.ndarray]:
    """GPUs (working and spare) per pool and hour of the phases ``names`` of ``schedule``."""
    out: dict[Pool, np.ndarray] = {}
    for n in names:
        for c, hours in schedule.parts(n):
            arr = out.setdefault((c.region, c.gpu), np.zeros(inst.hours))
            arr[list(hours)] += c.total_gpus
    return out
