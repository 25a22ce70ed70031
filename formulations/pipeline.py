"""The solver pipeline: one function per stage, the chains every solver entry point runs.

Every stage works on one :class:`~formulations.incumbent.Incumbent` (the best plan and the
best bound so far) against the clock: it either **proves** a bound or **finds** plans. The
hourly MILP (:func:`solve_milp`, the chain :func:`hourly`) runs them all; the
non-preemptive models (the start-time MILP and CP-SAT) run the contiguous stages
(:func:`contiguous_entry` with :func:`contiguous_tables`, :func:`contiguous_start`, their
exact model, and :func:`contiguous_finish`); every entry point starts with
:func:`configuration_space`.
docs/architecture.md tables the stages with what each proves or finds.

The hourly chain:

The pipeline (each stage checks the clock; every plan it finds is costed by
:func:`planner.model.costs.cost_plan`, and the best one and the best bound are kept whatever
happens later):

1. **Bounds that need no model.** The separable bound (:mod:`formulations.bounds.separable`): if
   some phase has no placement in its window even with the capacity to itself, the instance is
   infeasible and the solve ends at once. Then the precedence-chained DP bound of
   :mod:`formulations.bounds.lagrange` at zero capacity prices (pauses, resumes and successors
   included) and, when pools can bind or reserved pools are offered, its Lagrangian ascent
   over capacity and reserved prices; the iteration count is fixed by the model's size (not
   by the clock), so a command's bound is reproducible. Where no MILP can follow (models
   over :data:`ASCENT_ONLY_NONZEROS`) and the gap is still open, a second ascent with
   smaller steps takes most of the time left (:func:`longer_ascent`): there the ascent's
   bound is the bound.
2. **Plans that need no model.** The look-ahead list schedule
   (:mod:`formulations.heuristics.lookahead`) and the relaxation's own plan
   (:meth:`~formulations.bounds.lagrange.Relaxation.primal`, at zero prices and at the Lagrangian
   prices).
3. If the best plan is within ``gap`` of the best bound, it is **proved** (status optimal).
4. **Fixing.** Configurations whose Lagrangian bound exceeds the incumbent, starts of
   contiguous phases and hours of preemptible ones that cannot be part of a cheaper plan are
   not built (exact: no plan cheaper than the incumbent is lost).
5. **The reduced MILP** when it is small enough (:data:`FULL_MILP_MAX_NONZEROS`, and its
   estimated memory within :func:`formulations.lp.highs_runner.memory_cap`): HiGHS from the
   incumbent, in a child process for large models, streaming its incumbents and bound; the
   bound is ``max(L, min(U0, MILP bound))`` with U0 the incumbent the fixing used, valid for
   the full problem. With phases that may pause, HiGHS first solves the model with their
   hours and finish indicators continuous (:func:`~formulations.exact.milp.model.loose_columns`):
   a relaxation, so its bound holds, and every other integer (configurations, the starts of
   the runs that may not pause) stays integer; its points become plans only where those
   columns came out integral. It stops as soon as it holds a point below the plan by more
   than the gap (HiGHS's ``objective_target``: its bound can then never prove the plan);
   when it stops there, or ends within the gap of its own incumbent, with the plan's gap
   still open, the exact model gets what is left of the limit, if that is at least what the
   relaxation took and :data:`EXACT_MIN_S` (it solves the same root LP again, inside which
   HiGHS does not stop on time). (medium-x4: the
   relaxation's cut loop proves 0.85% in 35 s, the exact model 1.22% in 60 s.)
   Otherwise (the size guard), each pipeline **placed anew in turn** in what the others
   leave, and one placed as if another did not run, the other after it (ejections;
   :mod:`formulations.heuristics.components`, where the phases form several precedence
   components; on models where only the ascent proves a bound this descent runs before the
   longer ascent already, after **reserved terms packed** across the pipelines,
   :mod:`formulations.heuristics.packing`), then, and after the MILP, **large-neighbourhood search**
   (:mod:`formulations.exact.milp.neighbourhood`) until the time limit.

``solve_milp(prune=False, warm_start=False)`` is the plain reference: the full hourly model,
no bound, no start.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from formulations.bounds.lagrange import (
    STALLED_STEPS,
    Evaluation,
    LagrangeResult,
    OnStep,
    Relaxation,
)
from formulations.bounds.separable import (
    PhaseBound,
    hour_masks,
    lower_bound,
    phase_bounds,
    prune_by_bound,
    single_segment,
)
from formulations.exact.milp.model import build
from formulations.exact.milp.neighbourhood import neighbourhoods, reoptimise
from formulations.exact.milp.recontract import recontract
from formulations.exact.milp.run import model_stats, no_plan_message, solve_reduced
from formulations.exact.milp.solution import point_from_schedule, schedule_from_point
from formulations.exact.starttime.data import (
    StartData,
    WarmStart,
    as_schedule,
    build_data,
    choice_of,
    least_reserved,
    objective_of,
    schedule_of,
    violations_of,
)
from formulations.heuristics.commitments import reservation_first
from formulations.heuristics.components import (
    eject_component,
    ejections,
    free_terms,
    held_pools,
    replace_component,
)
from formulations.heuristics.earliest import budget_within_gap, earliest
from formulations.heuristics.greedy import greedy
from formulations.heuristics.lookahead import LookAhead, lookahead_schedule
from formulations.heuristics.packing import packed_terms
from formulations.heuristics.warm import Start, start_placements
from formulations.incumbent import Incumbent
from formulations.lp.highs_runner import (
    ISOLATE_MIN_NONZEROS,
    RawSolution,
    discard_spare,
    memory_cap,
    prestart,
    solve_highs,
    solve_pyomo,
)
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace, config_space
from planner.model.costs import cost_plan, within_carbon_cap
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.model.progress import Tracker
from planner.model.result import Result, Termination, relative_gap, within_gap
from planner.model.schedule import Pool, Schedule, with_reservations
from planner.model.windows import Windows, precedence_components, time_windows

#: The reduced MILP is solved whole up to this many (estimated) nonzeros; above, the
#: large-neighbourhood search works on it piece by piece (measured: docs/benchmarks.md).
FULL_MILP_MAX_NONZEROS = 300_000


#: Bytes per nonzero HiGHS needs (model, presolved copy, LP factors), for the size guard.
BYTES_PER_NONZERO = 400


#: Nonzeros per x column of the hourly model (work, segment, progress, precedence, capacity).
NONZEROS_PER_COLUMN = 5.5


#: Nonzeros per (segment, configuration, open hour) of a phase in segments (measured: one
#: phase of 624 configurations x 336 hours in 3 segments, 8.3M nonzeros for 630k segment
#: hours, 13 each; formulations/exact/milp/segments.py).
SEGMENT_NONZEROS_PER_COLUMN = 13


#: Share of the time limit the segment-path bounds of the phases in segments may take
#: together (each stops with the best bound found; formulations.bounds.segment_path).
SEGMENT_BOUND_SHARE = 0.25


#: Share of the time left that the ascent over the plans that buy no commitment may take
#: (:func:`without_reserved`, where only the ascent proves a bound). The lab quarter: 40
#: steps raised that bound from 2,933,833 to 2,953,024, so its plan (3,008,683) is within
#: 1.85% of every plan that buys none, where the DP bound said 2.5%.
WITHOUT_RESERVED_SHARE = 0.15

#: Share of the time left that the packed commitments may take (:func:`packed_commitments`),
#: and the least time left for them to run at all: each pool's packing takes up to
#: formulations.heuristics.packing.PACK_SECONDS and its placement 2-5 s, so a 60 s re-plan
#: keeps its time for the descent. The lab's quarter from a 150 s plan: 7 packings in 53 s,
#: two terms kept, 3,005,390 -> 2,947,718.
PACKING_SHARE = 0.25
PACKING_MIN_LEFT = 120.0

#: The DP bound is not evaluated when this many times its estimated time (cells x
#: SECONDS_PER_CELL, measured idle) exceeds what is left: a 200-phase quarter's 400M cells
#: took 10-24 s an evaluation on the loaded 2-core machine, 5-12 times the estimate.
DP_SAFETY = 6.0


#: The relaxation's plan takes about as long as this many DP evaluations (measured: a
#: 200-phase quarter, 16 s against 7 s), and is built only when they fit in the time left.
PRIMAL_EVALUATIONS = 2.5


#: The contracts-at-fixed-times MILP (formulations.exact.milp.recontract) gets at most this share
#: of the time left, and at most this many seconds.
RECONTRACT_SHARE = 0.15


RECONTRACT_MAX_S = 30.0


#: Above this many nonzeros before fixing (NONZEROS_PER_COLUMN) the reduced MILP is out of
#: reach, whatever fixing keeps (the lab quarter and its re-plans: 10-28M after fixing;
#: long-4380, long-8760 and year-seg: 10-23M before it). The ascent's bound is then the
#: bound, and its steps halve after every miss until one gains
#: (:meth:`formulations.bounds.lagrange.Relaxation.solve`, ``halve_first``). Below it
#: (medium-x4 at 355,000, large-x2-cap0.5 at 1.2M) they do not: on medium-x4 the ascent
#: took 9 s from the MILP (1.35% at 60 s against 1.24%).
ASCENT_ONLY_NONZEROS = 5_000_000


#: Share of the time limit the Lagrangian ascent may take, and its iteration cap.
LAGRANGE_SHARE = 0.4


LAGRANGE_MAX_ITERATIONS = 100
#: ... and at most this many where only the ascent proves a bound (models over
#: ASCENT_ONLY_NONZEROS) and the solve has at least LONG_SOLVE_S: there the longer ascent
#: follows (:func:`longer_ascent`), whose smaller steps from the zero prices pass what the
#: first ascent's steps reach, and the first ascent's time is better spent on them. The lab's
#: quarter at 600 s on a machine at 1.4 s a step: the first ascent's 100 steps (138 s) reached
#: 2,727,997, the longer ascent's 145 from the zero prices (201 s) 2,865,503.
LAGRANGE_LARGE_ITERATIONS = 20
LONG_SOLVE_S = 300.0


#: Where only the ascent proves a bound (ASCENT_ONLY_NONZEROS), the first ascent's steps (and
#: those of the bound without commitments, :func:`without_reserved`) are deflected
#: (Camerini, Fratta & Maffioli 1975, :func:`formulations.bounds.lagrange.deflected`, with
#: their gamma): the quarter of seed 7 re-planned after a lost region, from the same old
#: plan, reached 1,508,733 after 64 of the first ascent's steps against 1,508,110 (1,508,808
#: without the cap on beta). Not the longer ascent's smaller steps (:func:`longer_ascent`):
#: on the same instance they gained (1,509,153 after 150 against 1,508,818), but on the
#: shipped quarter at 600 s they needed 278 and 222 steps to prove 2% where the plain steps
#: needed 141 and 132 (four runs, one after another). The ninth session's fixed half of the
#: last direction added to every step tracked the plain steps.
DEFLECT = 1.5


#: Where only the ascent proves a bound, every PRICED_PLAN_EVERY-th iterate of each ascent
#: is planned at (the relaxation's plan, :func:`relaxed_plan`: a Lagrangian heuristic,
#: :func:`priced_plans`). The best prices are not the best to plan at: on the quarter of
#: seed 7 re-planned after a lost region (plan 1,540,508 from the stages before), the
#: relaxation's plan at the iterates after 10, 20, 30 and 40 steps cost 1,543,973,
#: 1,537,114, 1,553,530 and 1,535,785 (0.1-0.2 s each, an evaluation 0.3-0.5 s), and at the
#: best prices after 80 steps 1,537,636.
PRICED_PLAN_EVERY = 5


#: Where only the ascent proves a bound (ASCENT_ONLY_NONZEROS) and the gap is still open
#: after it, a second ascent from the zero prices (:func:`longer_ascent`) takes at most
#: LONG_ASCENT_ITERATIONS steps within LONG_ASCENT_SHARE of the time left, with smaller
#: steps (LONG_ASCENT_THETA of the way to the incumbent's cost) that halve after
#: LONG_ASCENT_PATIENCE misses in a row. On the lab's quarter the first ascent stops at
#: 2,699,538 after 82 steps (the plan 3,007,573); these steps reached 2,733,589 after 80,
#: 2,802,705 after 200 and 2,847,855 after 340, rising all the way (one core, ~1.4 s a step
#: beside another run), where the large-neighbourhood search that had the time before moved
#: the plan by 0.06% in 478 s. Going on from the first ascent's best prices instead gained
#: 11,400 in 150 steps: its steps, halved many times, end where the larger ones miss.
LONG_ASCENT_ITERATIONS = 600
LONG_ASCENT_SHARE = 0.75
LONG_ASCENT_THETA = 0.1
LONG_ASCENT_PATIENCE = 10
#: ... and it goes on while its last 20 steps closed at least this share of what was left to
#: the incumbent's cost (the first ascent: 2%, :data:`formulations.bounds.lagrange.SLOW_SHARE`).
#: At 2% it stopped on the lab's quarter after 301 steps at 2,838,725 (its last 20 steps had
#: gained less than 3,460, 2% of what was left, but still gained), with 250 s left for a
#: search that moved the plan by 0.05%.
LONG_ASCENT_SLOW_SHARE = 0.005
#: ... and its reserved prices take steps this many times the Polyak rule's
#: (:meth:`formulations.bounds.lagrange.Relaxation.solve`, ``reserved_boost``: the
#: projection onto each commitment's price keeps only a small share of the step). On the
#: lab's quarter 150 of these steps reached 2,868,210 at 10 against 2,777,530 at 1 (and
#: 2,895,117 after 450 at 10); on its seed 1, 2,915,172 against 2,800,457.
LONG_ASCENT_RESERVED_BOOST = 10.0
#: ... and it starts from the first ascent's best prices instead of the zero prices when
#: fewer than this many times the first ascent's steps fit in its time (DP evaluations):
#: from the zero prices its smaller steps pass the first ascent's bound only after about
#: 2.3 times as many (the lab's quarter at 600 s: 238 steps against 98 for +655, its seed 1
#: 231 against 100 for +670), so a shorter one proves nothing, where going on from the best
#: prices does: seed 7's quarter re-planned after a price change had time for 41 steps
#: against the first ascent's 42, which from the zero prices proved nothing (2.08% at 60 s)
#: and from its best prices closed 2% in 3. With more time the zero prices win: the quarter
#: of seed 1 resumed with 226 steps reached 2,935,013 against 2,944,066 from them.
LONG_ASCENT_RESTART_FACTOR = 1.5


#: A model estimated at most this many nonzeros before fixing goes to the reduced MILP
#: without the Lagrangian ascent (the estimate as for the reduced model: NONZEROS_PER_COLUMN
#: per configuration-hour of the windows).
SMALL_MODEL_NONZEROS = 160_000


#: ... and goes on from the DP bound without its transfer bound and plan when the gap is
#: still over this.
SMALL_MODEL_GAP = 0.01


#: Share of the time left that the descent over the precedence components may take
#: (:func:`component_descent`), and at most how many rounds (it stops after a round without
#: a gain). On the lab's quarter a round over its 20 teams takes 5-9 s (five rounds took
#: 26-42 s in three 600 s solves), and in a 600 s solve the fifth gained nothing (from the
#: plan of a 20 s solve: 2,938, 358, 74, then nothing).
COMPONENT_SHARE = 0.25
COMPONENT_ROUNDS = 20
#: ... and its share where it runs before the longer ascent (models over
#: ASCENT_ONLY_NONZEROS).
DESCENT_BEFORE_ASCENT_SHARE = 0.5
#: ... and after a packing was kept (:func:`packed_commitments`): the plan is then close, and
#: the longer ascent needs its time from the zero prices. The lab's quarter at 600 s with the
#: share at 0.5: the descent took 175 s (ejections kept 30 of 139), the longer ascent was left
#: 39 s, resumed from the first ascent's prices and stalled after 20 steps: bound 2,722,748
#: for a plan of 2,950,920 (7.73%).
DESCENT_AFTER_PACKING_SHARE = 0.2
#: ... and after the longer ascent (it ends sooner when a round gains nothing; the
#: neighbourhood search gets the rest). Seed 2's lab quarter at 600 s: the neighbourhood
#: search's 275 s after the ascent gained 414, the descent's last 90 s before it 17,500; the
#: descent going on after the ascent gained 3,933 in 195 s (numpy's kernels) and, compiled,
#: 476 before a round gained nothing (at 497 s).
DESCENT_AFTER_ASCENT_SHARE = 0.9


#: Share of the time left that the reserved pools' heuristics may take: the reservation-first
#: plans (one look-ahead forward pass per pool and level tried: at most 16, which took 22 s on
#: the lab's quarter) and the look-ahead pricing reserved GPU-hours as used.
COMMIT_SHARE = 0.1


#: Seconds per DP cell of one relaxation evaluation (measured on this machine, idle),
#: turning the model's size into a fixed iteration count; SECONDS_PER_COMPILED_CELL where the
#: preemptive DP runs compiled (:mod:`formulations.bounds.compiled`: the lab's quarter, 392M
#: cells, 0.49-0.55 s an evaluation in one process, 1.3-1.6 s with numpy).
SECONDS_PER_CELL = 5e-9
SECONDS_PER_COMPILED_CELL = 1.5e-9

#: The transfer bound's time in evaluations: each phase's configurations region by region,
#: one evaluation's DP in all, and the successors' regional shares (the lab's quarter: 1.0-1.6
#: s for evaluations of 0.5 s; each region's DP over all of the phase's configurations took
#: 19-21 s).
TRANSFER_EVALUATIONS = 3.0


#: Seconds a neighbourhood may take at most, and its largest model (nonzeros).
NEIGHBOURHOOD_S = 5.0


NEIGHBOURHOOD_MAX_NONZEROS = 60_000


#: No neighbourhood starts when less than this is left of the time limit.
LNS_MARGIN_S = 1.0


@dataclass(frozen=True)
class Chain:
    """What the stages of the hourly chain read and none changes: the instance, its
    configuration space and time windows, the clock's start ``t0`` and the solve's settings
    (time limit, MILP backend, whether heuristic plans are made, HiGHS's log)."""

    inst: Instance
    space: ConfigSpace
    windows: Windows
    t0: float
    time_limit: float
    backend: str
    warm_start: bool
    verbose: bool

    @cached_property
    def unfixed_nonzeros(self) -> float:
        """The MILP over every configuration and hour of the windows (before any fixing),
        estimated in nonzeros (NONZEROS_PER_COLUMN)."""
        w = self.windows
        columns = sum(
            max(0, w.end[name] - w.start[name]) * len(configs)
            for name, configs in self.space.by_phase.items()
        )
        return columns * NONZEROS_PER_COLUMN

    @property
    def ascent_only(self) -> bool:
        """Whether :attr:`unfixed_nonzeros` is over ASCENT_ONLY_NONZEROS: no MILP can
        follow, and only the Lagrangian ascent proves a bound."""
        return self.unfixed_nonzeros > ASCENT_ONLY_NONZEROS

    @property
    def small(self) -> bool:
        """Whether :attr:`unfixed_nonzeros` is at most SMALL_MODEL_NONZEROS."""
        return self.unfixed_nonzeros <= SMALL_MODEL_NONZEROS


def prestart_if_isolated(estimated_nonzeros: float) -> None:
    """Start the HiGHS child ahead of a reduced MILP that will likely run in one
    (:func:`formulations.lp.highs_runner.prestart`): its 0.35 s of imports then overlap the
    fixing and the model's build. The estimate counts about half the nonzeros of the model
    built (month-70b re-planned after a lost region: 80,696 for 143,945), hence the half."""
    if estimated_nonzeros >= ISOLATE_MIN_NONZEROS / 2:
        prestart()


def best_heuristic(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows,
    notes: list[str],
    offer: Callable[[Schedule, str], object] | None = None,
    deadline: float | None = None,
) -> tuple[Schedule, Plan] | None:
    """The cheapest plan that meets the carbon cap among: the greedy schedule with every
    phase at its earliest start; the look-ahead schedule without reserved capacity; reserved
    pools bought first (:mod:`formulations.heuristics.commitments`) and the look-ahead with
    reserved capacity priced per GPU-hour used (only when it can end in time), the two within
    COMMIT_SHARE of the time left to ``deadline``; and the greedy one with every start when
    the look-ahead finds none. Each better one is handed to ``offer`` with its heuristic's
    name as soon as it is found (the first plan of a large instance comes before the
    look-ahead's)."""
    best: tuple[Schedule, Plan] | None = None
    broke_cap = False

    def consider(sched: Schedule | None, source: str, plan: Plan | None = None) -> None:
        nonlocal best, broke_cap
        if sched is None:
            return
        plan = cost_plan(inst, sched) if plan is None else plan
        if not within_carbon_cap(inst, plan.emissions_t):
            broke_cap = True  # the heuristics do not know the cap
            return
        if best is None or plan.objective < best[1].objective:
            best = (sched, plan)
            if offer is not None:
                offer(sched, source)

    # every phase at its earliest start on its cheapest configuration there, first: it
    # takes a fraction of the look-ahead's time, and the look-ahead, which waits for cheap
    # hours one phase at a time, is not always cheaper (lab quarter x200: 3,009,349 in 0.9 s
    # against the look-ahead's 3,024,730 after 8 s)
    consider(greedy(inst, space, first_start_only=True), "earliest starts")
    t0 = time.perf_counter()
    la = LookAhead(inst, space, windows)
    first = la.schedule()
    consider(first, "look-ahead")
    took = time.perf_counter() - t0
    # the reserved pools' heuristics share COMMIT_SHARE of the time left
    until = deadline
    if space.any_reserved and deadline is not None:
        now = time.perf_counter()
        until = now + COMMIT_SHARE * max(0.0, deadline - now)
    if space.any_reserved and first is not None and best is not None:
        # pools bought first: one forward pass per try
        reservation_first(
            la, best[1].objective, lambda s, p: consider(s, "reservation-first", p), until
        )
    # the second look-ahead takes about as long as the first: only when that fits in the
    # share (the lab quarter re-planned: 4.3 s after 4.4 s of reservation-first, neither
    # better than the greedy plan, with 60 s in all)
    if space.any_reserved and (until is None or time.perf_counter() + took < until):
        consider(lookahead_schedule(inst, space, windows, allow_reserved=True), "look-ahead")
    if first is None:
        consider(greedy(inst, space), "greedy")
    if best is None and broke_cap:
        notes.append("the look-ahead plan breaks the carbon cap; solving without it")
    return best


def relaxed_plan(
    inst: Instance,
    rel: Relaxation,
    lam: np.ndarray,
    mu: np.ndarray,
    ev: Evaluation | None = None,
) -> Schedule | None:
    """The relaxation's plan at these prices (None when it cannot place a phase)."""
    found = rel.primal(ev if ev is not None else rel.evaluate(lam, mu), lam, mu)
    return None if found is None else with_reservations(inst, found)


def configuration_space(
    inst: Instance, space: ConfigSpace | None, solver: str, t0: float
) -> ConfigSpace | Result:
    """Stage 0, every entry point's: the configuration space (``space`` when the caller
    built it, else the instance's cached one), or the result that says which phases have no
    configuration at all."""
    space = space or config_space(inst)
    if space.infeasible:
        return Result.no_configuration(
            solver, [i.reason for i in space.infeasible], runtime_s=time.perf_counter() - t0
        )
    return space


def solve_milp(
    inst: Instance,
    options: SolveOptions = SolveOptions(),
    *,
    space: ConfigSpace | None = None,
    warm_start: bool = True,
    prune: bool = True,
) -> Result:
    """Solve the hourly MILP to a relative ``options.gap`` within ``options.time_limit``
    seconds (the module docstring's pipeline). ``options.start``: an earlier plan or schedule
    (of this instance or the one it was re-planned from) offered as a plan after the
    look-ahead's: its placements kept where they still fit, the other phases placed around
    them (:mod:`formulations.heuristics.warm`). ``options.backend``: "highs" (arrays into
    highspy, from the incumbent) or "pyomo" (Pyomo's HiGHS interface, for the reduced MILP; no
    MIP start), "auto" = highs. ``space``: the configuration space when already built.
    ``prune=False`` builds the full model (with the look-ahead start unless
    ``warm_start=False``: the plain reference, :func:`plain`). ``options.on_progress`` hears
    every improvement."""
    o = options
    t0 = time.perf_counter()
    tracker = Tracker(o.on_progress, t0)
    found = configuration_space(inst, space, "milp", t0)
    if isinstance(found, Result):
        return found
    space = found
    windows = time_windows(inst, space.fewest_hours())
    st = Incumbent(inst, o.gap, o.threads, tracker, t0 + o.time_limit, windows)
    chain = Chain(inst, space, windows, t0, o.time_limit, o.backend, warm_start, o.verbose)
    try:
        if not prune:
            return plain(chain, st)
        return hourly(chain, st, o.start)
    except Exception as e:  # never lose a plan: a later stage failing keeps the best so far
        if st.plan is None or os.environ.get("TRAINPLAN_DEBUG"):
            raise
        why = "out of memory" if isinstance(e, MemoryError) else f"{type(e).__name__}: {e}"
        st.raw = RawSolution(Termination.ERROR, None, None, None, None, 0.0, why)
        st.notes.append(f"a later stage failed ({why}); the best plan found before is kept")
        return finish(st, t0, "milp", "")
    finally:
        discard_spare()  # a HiGHS child started ahead that no solve took


def hourly(chain: Chain, st: Incumbent, start: Start | None = None) -> Result:
    """The hourly chain, stage by stage until the gap closes or time runs out: the separable
    bound (infeasibility at once), the warm start and look-ahead plans, the MILP in segments
    when a phase may gain from segments, else the DP bound with its plan, the Lagrangian
    ascent (and at its prices the bound over plans without commitments, a note), fixing by
    the bounds, the reduced MILP or the neighbourhood search, and the earliest-finish pass
    (:func:`finish`)."""
    t0 = chain.t0
    bounds, lower = separable_bound(chain, st)
    if not math.isfinite(lower):
        return bound_infeasible(bounds, lower, t0)
    first_plans(chain, st, start)
    if st.closed:
        return finish(st, t0, "milp-bound", "the look-ahead plan is within the gap of the bound")
    done = segment_bound(chain, bounds, lower, st)
    if done is not None:
        return done
    rel = Relaxation(chain.inst, chain.space, chain.windows)
    if evaluation_seconds(rel) * DP_SAFETY > st.left():
        # one evaluation would not end in time: fixing by the separable bound, then the
        # reduced MILP or the neighbourhood search
        st.notes.append(
            f"no time for the DP bound (~{evaluation_seconds(rel):.1f} s an evaluation "
            f"at {rel.cells:,} cells; {st.left():.1f} s left): fixing by the separable bound"
        )
        model_space, masks = bound_fixing(chain, bounds, st)
        return reduced_milp(chain, model_space, masks, st)
    ev = dp_bound(chain, rel, st)
    if ev is None:
        return Result.no_plan(
            "milp-bound",
            Termination.INFEASIBLE,
            "infeasible: no chain of runs meets the deadlines and predecessors in hours whose "
            "capacity can hold a configuration; run `trainplan explain` to see which "
            "constraints conflict",
            runtime_s=time.perf_counter() - t0,
            stats=st.stats,
        )
    if st.closed:
        return finish(st, t0, "milp-bound", "proved by the DP bound")
    if chain.small:
        # the reduced MILP over so few columns proves more, and sooner, than the ascent
        # could fix (month-70b re-planned after a lost region: 2.3 s of ascent, 69 of 77
        # configurations kept either way)
        st.notes.append(
            "a small model: the reduced MILP without the Lagrangian ascent (at most "
            f"{SMALL_MODEL_NONZEROS:,} nonzeros before fixing)"
        )
        prestart_if_isolated(chain.unfixed_nonzeros)
        recontract_incumbent(chain, st)
        model_space, masks = fixing(chain, rel, ev, rel.config_bounds(ev), bounds, st)
        return reduced_milp(chain, model_space, masks, st)
    if chain.ascent_only:
        # the plan that fills commitments first: the ascents' steps aim at the incumbent
        packed_commitments(chain, st)
    res = lagrangian(chain, rel, ev, st)
    if st.closed:
        return finish(st, t0, "milp-bound", "proved by the Lagrangian bound")
    recontract_incumbent(chain, st)
    without_reserved(chain, st)
    if chain.ascent_only:
        # the plan first: the longer ascent's steps aim at it, and a re-plan's 60 s end
        # before the ascent does (seed 2's lab quarter after a lost region)
        packed = st.stats.get("packings_kept", 0) > 0
        share = DESCENT_AFTER_PACKING_SHARE if packed else DESCENT_BEFORE_ASCENT_SHARE
        component_descent(chain, st, share)
    res = longer_ascent(chain, rel, ev, res, st)
    without_reserved_at(chain, rel, res, st)
    best_ev = res.evaluation if res is not None and res.evaluation is not None else ev
    config_bound = res.config_bound if res is not None else rel.config_bounds(ev)
    model_space, masks = fixing(chain, rel, best_ev, config_bound, bounds, st)
    return reduced_milp(chain, model_space, masks, st)


def separable_bound(chain: Chain, st: Incumbent) -> tuple[dict[str, PhaseBound], float]:
    """Stage 1, proves: each phase's least cost in its window with every pool to itself,
    summed (:func:`formulations.bounds.separable.phase_bounds`; for phases in segments with
    the segment-path bound, within SEGMENT_BOUND_SHARE of the limit). An infinite sum: some
    phase has no placement at all, the instance is infeasible."""
    st.tracker.stage("bound", "separable bound")
    w = chain.windows
    deadline = chain.t0 + SEGMENT_BOUND_SHARE * chain.time_limit
    bounds = phase_bounds(chain.inst, chain.space, w.start, w.end, deadline=deadline)
    lower = lower_bound(bounds)
    st.stats["lower_bound"] = lower
    if math.isfinite(lower):
        st.prove(lower, "separable bound")
    return bounds, lower


def dp_bound(chain: Chain, rel: Relaxation, st: Incumbent) -> Evaluation | None:
    """Stage 5a, proves: the precedence-chained DP bound at zero prices (pauses, resumes and
    successors included; :class:`formulations.bounds.lagrange.Relaxation`) and, with the
    transfers between regions, :func:`transfer_bound`; finds: the relaxation's own plan. None
    when no chain of runs meets the deadlines (the instance is infeasible). A small model
    (:attr:`Chain.small`) whose gap after the DP bound is still over SMALL_MODEL_GAP goes on
    without the transfer bound and the relaxation's plan: the reduced MILP follows at once.
    (month-70b re-planned after a lost region: 0.23 s for a bound 0.002% higher and a plan
    42% dearer; week-7b, 0.04% from its plan, is proved by the transfer bound.)"""
    st.tracker.stage("lagrange", "precedence-chained DP bound")
    lam, mu = rel.zero_prices()
    te = time.perf_counter()
    ev = rel.evaluate(lam, mu)
    st.stats["dp_eval_s"] = time.perf_counter() - te
    st.stats["dp_bound"] = ev.bound
    if not math.isfinite(ev.bound):
        return None
    st.prove(ev.bound, "DP bound")
    gap = relative_gap(st.upper, st.bound) if st.plan is not None else None
    if gap is not None and gap > SMALL_MODEL_GAP and chain.small:
        return ev  # the reduced MILP comes next and proves more than these could
    if chain.warm_start and _has_time(st, PRIMAL_EVALUATIONS):
        st.offer(relaxed_plan(chain.inst, rel, lam, mu, ev), "relaxation plan")
    transfer_bound(rel, lam, mu, st)
    return ev


def lagrangian(
    chain: Chain, rel: Relaxation, ev: Evaluation, st: Incumbent
) -> LagrangeResult | None:
    """Stage 5b, proves: the Lagrangian bound, subgradient ascent over pool-hour and reserved
    prices from the DP's evaluation, when pools can bind or reserved pools are offered (the
    iteration count fixed by the model's size, not the clock, so a command's bound is
    reproducible; LAGRANGE_LARGE_ITERATIONS where the longer ascent follows); finds: the
    relaxation's plan and the look-ahead at those prices. None when it does not run."""
    st.stats["binding_pool_hours"] = int(rel.binding[: len(rel.pools)].sum())
    st.stats["count_rows"] = len(rel.counts)
    if not (rel.binding.any() or rel.reserved_pools) or st.left() <= 0.5:
        return None
    share = min(LAGRANGE_SHARE * chain.time_limit, st.left() * 0.5)
    cap = LAGRANGE_MAX_ITERATIONS
    large = chain.ascent_only
    if large and chain.time_limit >= LONG_SOLVE_S:
        cap = LAGRANGE_LARGE_ITERATIONS
    iterations = int(min(cap, share / max(1e-9, evaluation_seconds(rel))))
    target = st.upper * (1 - st.gap) if st.plan is not None else None
    res = rel.solve(
        st.upper,
        iterations=iterations,
        deadline=time.perf_counter() + share,
        target=target,
        start=ev,
        step_s=st.stats.get("dp_eval_s", 0.0),
        halve_first=large,
        deflect=DEFLECT if large else 0.0,
        on_step=priced_plans(chain, rel, st),
        every=PRICED_PLAN_EVERY,
    )
    st.stats["lagrange_bound"] = res.bound
    st.stats["lagrange_iterations"] = res.iterations
    st.stats["lagrange_s"] = res.seconds
    st.prove(res.bound, "Lagrangian bound")
    # no better bound: the ascent's best prices are the zero prices the DP bound stage
    # already bounded the transfers and planned at (its relaxation plan, the look-ahead)
    moved = res.bound > ev.bound
    if res.iterations and moved:
        transfer_bound(rel, res.lam, res.mu, st)
    if chain.warm_start and res.evaluation is not None and not st.closed and moved:
        inst = chain.inst
        if _has_time(st, PRIMAL_EVALUATIONS):
            st.offer(relaxed_plan(inst, rel, res.lam, res.mu, res.evaluation), "priced plan")
        priced = lookahead_schedule(inst, chain.space, chain.windows, prices=res.prices())
        st.offer(priced, "priced look-ahead")
    return res


def priced_plans(chain: Chain, rel: Relaxation, st: Incumbent) -> OnStep | None:
    """Where only the ascent proves a bound (ASCENT_ONLY_NONZEROS) and heuristics run, the
    Lagrangian heuristic an ascent over ``rel`` calls at its iterates (every
    PRICED_PLAN_EVERY-th): the relaxation's plan at the iterate's prices, offered to ``st``;
    a better one becomes the steps' aim, and its gap the ascent's target."""
    if not chain.ascent_only or not chain.warm_start:
        return None

    def on_step(
        ev: Evaluation, lam: np.ndarray, mu: np.ndarray
    ) -> tuple[float, float | None] | None:
        t = time.perf_counter()
        better = st.offer(relaxed_plan(chain.inst, rel, lam, mu, ev), "priced plan (ascent)")
        st.stats["ascent_plans"] = st.stats.get("ascent_plans", 0) + 1
        st.stats["ascent_plans_s"] = st.stats.get("ascent_plans_s", 0.0) + time.perf_counter() - t
        return (st.upper, st.upper * (1 - st.gap)) if better else None

    return on_step


def longer_ascent(
    chain: Chain, rel: Relaxation, ev: Evaluation, res: LagrangeResult | None, st: Incumbent
) -> LagrangeResult | None:
    """Stage 5d, proves: where only the ascent proves a bound (models over
    ASCENT_ONLY_NONZEROS) and the gap is still open after :func:`lagrangian`, a second
    ascent from the zero prices (``ev``, their evaluation; from the first ascent's best
    prices when fewer than LONG_ASCENT_RESTART_FACTOR times its steps fit) with smaller steps
    (LONG_ASCENT_THETA, halving after LONG_ASCENT_PATIENCE misses; it gives up only after
    STALLED_STEPS without a gain; the reserved prices' steps LONG_ASCENT_RESERVED_BOOST
    times longer) for at most LONG_ASCENT_ITERATIONS steps (a count, so the
    bound is reproducible) within LONG_ASCENT_SHARE of the time left; then the transfer
    bound and the look-ahead at its prices (the transfer bound's time is kept aside: at the
    zero prices of the lab's quarter it adds 50,539). The fixing and the search after it
    get the rest. Returns the better of the two ascents' results."""
    if res is None or st.closed or not chain.ascent_only or not _has_time(st, 10.0):
        return res
    st.tracker.stage("bound", "longer ascent")
    after = transfer_seconds(rel, st)  # kept for the transfer bound at its prices
    budget = LONG_ASCENT_SHARE * max(0.0, st.left() - after)
    step_s = st.stats.get("dp_eval_s", 0.0)
    resume = (
        res.evaluation is not None
        and res.iterations > 0
        and budget < LONG_ASCENT_RESTART_FACTOR * res.iterations * step_s
    )
    st.stats["long_ascent_resumed"] = int(resume)
    more = rel.solve(
        st.upper,
        iterations=LONG_ASCENT_ITERATIONS,
        deadline=time.perf_counter() + budget,
        target=st.upper * (1 - st.gap) if st.plan is not None else None,
        theta=LONG_ASCENT_THETA,
        step_s=step_s,
        start=res.evaluation if resume else ev,
        prices=(res.lam, res.mu) if resume else None,
        patience=LONG_ASCENT_PATIENCE,
        give_up=STALLED_STEPS,
        slow_share=LONG_ASCENT_SLOW_SHARE,
        reserved_boost=LONG_ASCENT_RESERVED_BOOST,
        on_step=priced_plans(chain, rel, st),
        every=PRICED_PLAN_EVERY,
    )
    st.stats["long_ascent_iterations"] = more.iterations
    st.stats["long_ascent_s"] = more.seconds
    if more.bound <= res.bound:
        return res
    st.stats["lagrange_bound"] = more.bound
    st.prove(more.bound, "Lagrangian bound (longer ascent)")
    transfer_bound(rel, more.lam, more.mu, st, share=0.5)
    if chain.warm_start and not st.closed:
        priced = lookahead_schedule(chain.inst, chain.space, chain.windows, prices=more.prices())
        st.offer(priced, "priced look-ahead")
    return more


def without_reserved(chain: Chain, st: Incumbent) -> None:
    """Stage 5c, explains: when the incumbent buys no reserved pool and the gap is still
    open, the DP bound over the configurations without a reserved contract. No plan that buys
    none costs less; it bounds those plans only, not the instance, so it is a note and
    ``stats["bound_without_reserved"]``, never the result's bound. It tells a gap that is
    the commitments' from one that is not: a commitment is paid for every hour of its term,
    and the relaxations (the separable rule, the Lagrangian prices ``mu``) spread that over
    the hours it may be used, so their bound holds every phase on reserved GPUs at about the
    reserved price per hour, which no plan packs so tightly (the lab's quarter: bound
    2,038,630, plan 3,008,631, bound without commitments 2,933,833). Where only the ascent
    proves a bound (models over ASCENT_ONLY_NONZEROS), that bound gets its own ascent within
    WITHOUT_RESERVED_SHARE of the time left, and a look-ahead at its prices is offered as a
    plan. When the incumbent buys commitments (and the space has no free term: a re-plan's
    plans without reserved GPUs leave paid GPUs idle), the same bound at zero prices, if
    above the plan, says what they save at least. :func:`commitment_note` tells either at
    the end, against the plan returned."""
    if st.plan is None or st.closed or not chain.space.any_reserved:
        return
    buys = bool(st.plan.reserved or st.plan.reserved_terms)
    if buys and free_terms(chain.inst, chain.space):
        return  # a re-plan's plans without reserved GPUs leave its paid GPUs idle
    mine = _without_reserved_space(chain)
    if mine is None or not _has_time(st, 2.0):
        return
    sub = Relaxation(chain.inst, mine, chain.windows)
    ev = sub.evaluate(*sub.zero_prices())
    bound = ev.bound
    if buys:  # the commitments save at least what the bound is above the plan
        if math.isfinite(bound) and bound > st.upper:
            st.stats["bound_without_reserved"] = bound
        return
    if not math.isfinite(bound) or bound <= st.bound:
        return
    if chain.ascent_only and sub.binding.any():
        # where only the ascent proves a bound, the same ascent over the plans that buy
        # none: their capacity prices are what the plan is judged against, and a
        # look-ahead at them may find a better plan among those
        share = WITHOUT_RESERVED_SHARE * st.left()
        res = sub.solve(
            st.upper,
            iterations=LAGRANGE_MAX_ITERATIONS,
            deadline=time.perf_counter() + share,
            target=st.upper * (1 - st.gap),
            start=ev,
            step_s=st.stats.get("dp_eval_s", 0.0),
            halve_first=True,
            deflect=DEFLECT,
            on_step=priced_plans(chain, sub, st),
            every=PRICED_PLAN_EVERY,
        )
        st.stats["without_reserved_iterations"] = res.iterations
        if res.bound > bound:
            bound = res.bound
            if chain.warm_start and not st.closed:
                # over `mine` the plan it finds buys no commitment either: the note holds
                priced = lookahead_schedule(chain.inst, mine, chain.windows, prices=res.prices())
                st.offer(priced, "priced look-ahead without commitments")
    st.stats["bound_without_reserved"] = bound


def _without_reserved_space(chain: Chain) -> ConfigSpace | None:
    """The configurations without a reserved contract, None when some phase has none."""
    own = {
        n: tuple(c for c in cs if c.contract != "reserved")
        for n, cs in chain.space.by_phase.items()
    }
    return chain.space.restricted(own) if all(own.values()) else None


def without_reserved_at(
    chain: Chain, rel: Relaxation, res: LagrangeResult | None, st: Incumbent
) -> None:
    """Stage 5e, explains: the bound over every plan that buys no commitment (stage 5c's,
    ``stats["bound_without_reserved"]``) at the capacity prices of the best ascent over the
    whole space (:meth:`formulations.bounds.lagrange.Relaxation.carried`), with the transfers
    put back; kept where it is higher. Any capacity prices >= 0 bound those plans, and the
    ascent's, found where commitments compete for the same pools, price the pools as the
    plans that buy none meet them. Seed 2's lab quarter at 600 s: 3,093,149.93 at the
    longer ascent's prices (236 steps), where 300 steps of that bound's own ascent had
    reached 3,081,628, so the plan's one term (3,079,780.19) saves at least 13,369.74.
    Where the gap is still open, the space has priced reserved offers and no free term, and
    the time left holds the evaluations; a note at the end (:func:`commitment_note`), never
    the result's bound."""
    if (
        res is None
        or st.plan is None
        or st.closed
        or not chain.space.any_reserved
        or free_terms(chain.inst, chain.space)
        or not _has_time(st, 2.0 + TRANSFER_EVALUATIONS)
    ):
        return
    mine = _without_reserved_space(chain)
    if mine is None:
        return
    sub = Relaxation(chain.inst, mine, chain.windows)
    lam = sub.carried(rel, res.lam)
    mu = np.zeros((0, sub.T))
    bound = sub.evaluate(lam, mu).bound
    if sub.has_transfers and transfer_seconds(sub, st) < st.left():
        bound = max(bound, sub.transfer_bound(lam, mu))
    if math.isfinite(bound) and bound > st.stats.get("bound_without_reserved", -math.inf):
        st.stats["bound_without_reserved"] = bound


def packed_commitments(chain: Chain, st: Incumbent) -> None:
    """Stage 5a, finds: reserved terms bought and filled by a packing across pipelines
    (:mod:`formulations.heuristics.packing`), within PACKING_SHARE of the time left, where
    the model is too large for one MILP (which chooses commitments exactly) and at least
    PACKING_MIN_LEFT seconds are left. Not for plans in segments, nor where the space has
    free terms (a re-plan's commitments, already paid, which the descent fills). Its
    ``stats``: ``packings``, ``packing_s``, ``packings_kept``."""
    if (
        st.schedule is None
        or st.closed
        or st.schedule.segments
        or not chain.space.any_reserved
        or st.left() < PACKING_MIN_LEFT
        or free_terms(chain.inst, chain.space)
    ):
        return
    st.tracker.stage("heuristic", "reserved terms packed")
    deadline = time.perf_counter() + PACKING_SHARE * st.left()
    packed_terms(
        chain.inst,
        chain.space,
        chain.windows,
        st.schedule,
        lambda s: st.offer(s, "reserved terms packed"),
        lambda: st.schedule,
        deadline,
        st.stats,
    )


def commitment_note(st: Incumbent) -> None:
    """At the end, against the plan returned, what ``stats["bound_without_reserved"]`` (the
    bound over every plan that buys no commitment) says: for a plan that buys none, how far
    the best such plan may be below it; for a plan that buys some, what they save at least,
    when the bound is above it."""
    bound = st.stats.get("bound_without_reserved")
    if bound is None or st.plan is None:
        return
    cost = st.plan.objective
    if not (st.plan.reserved or st.plan.reserved_terms):
        st.notes.append(
            f"the plan buys no reserved commitment, and no plan that buys none costs less "
            f"than {bound:,.2f} ({relative_gap(cost, bound):.2%} below this plan): the rest of "
            "the gap is what commitments might save, which the bound cannot settle (it "
            "spreads a commitment's cost over every hour it may be used)"
        )
    elif bound > cost:
        st.notes.append(
            f"the plan's reserved commitments save at least {bound - cost:,.2f}: every plan "
            f"that buys none costs at least {bound:,.2f} "
            f"({(bound - cost) / max(abs(cost), 1e-9):.2%} more than this plan)"
        )


def bound_infeasible(bounds: dict[str, PhaseBound], lower: float, t0: float) -> Result:
    """No plan: the separable bound is infinite, some phase cannot run in its window at all
    (named in the message, with where to look next)."""
    stuck = [n for n, b in bounds.items() if not math.isfinite(b.best)]
    return Result.no_plan(
        "milp-bound",
        Termination.INFEASIBLE,
        f"infeasible: {', '.join(stuck)} cannot run in {'its' if len(stuck) == 1 else 'their'}"
        " window (release, deadline and predecessors' fastest runs) in any hours whose "
        "capacity can hold a configuration, even with every pool to itself; run "
        "`trainplan explain` to see which constraints conflict",
        runtime_s=time.perf_counter() - t0,
        stats={"lower_bound": lower},
    )


def first_plans(chain: Chain, st: Incumbent, start: Start | None) -> None:
    """Stages 2-3b, find: the plan started from (a warm start, its phases kept where they still fit)
    first, then the look-ahead plan, offered to ``st``; then re-contracting the best."""
    tracker, inst, space, windows = st.tracker, chain.inst, chain.space, chain.windows
    if start is not None:
        tracker.stage("heuristic", "warm start")
        kept = start_placements(space, inst.release, start)
        st.stats["warm_start_kept"] = len(kept)
        if st.offer(lookahead_schedule(inst, space, windows, start=kept), "warm start"):
            st.notes.append(
                f"warm start: {len(kept)} of {len(space.by_phase)} phases keep the plan "
                "they started from, the others placed around them"
            )
    if chain.warm_start:
        tracker.stage("heuristic", "look-ahead plan")
        best_heuristic(
            inst, space, windows, st.notes, lambda s, source: st.offer(s, source), st.deadline
        )
    st.stats["heuristic"] = st.upper
    recontract_incumbent(chain, st)


def segment_bound(
    chain: Chain, bounds: dict[str, PhaseBound], lower: float, st: Incumbent
) -> Result | None:
    """Stage 4, proves (for phases that may run in segments): those that cannot gain from them
    within the gap are modelled on one configuration; the others are solved by the MILP in segments
    when it is small enough (the result), else capped by the segment-path bound and planned
    on one configuration by the rest of the pipeline (None: go on)."""
    gap, inst, space = st.gap, chain.inst, chain.space
    segmented = {
        p.name
        for p in inst.active_phases
        if p.options.max_segments > 1 and len(space.by_phase.get(p.name, ())) > 1
    }
    if segmented:
        if st.plan is not None:
            st.single, st.cap = single_segment(bounds, st.upper, gap)
            st.single &= segmented
        if st.single:
            st.notes.append(
                f"{len(st.single)} phase(s) may run in segments but cannot gain from them "
                f"within the gap: modelled on one configuration ({', '.join(sorted(st.single))})"
            )
        rest = segmented - st.single
        if rest:
            # the DP bound, its plans and its fixing have one configuration per phase
            model_space, masks = bound_fixing(chain, bounds, st)
            est = _segments_nonzeros(inst, masks, rest)
            st.stats["estimated_nonzeros"] = est
            if est <= _guard(st):
                st.notes.append(
                    f"{', '.join(sorted(rest))} may change configuration at checkpoints: the "
                    "separable bound (with the segment-path bound) and the MILP in segments"
                )
                solver = "milp-bound"
                if st.left() > 0.3:
                    solver = solve_reduced(
                        model_space,
                        chain.windows,
                        masks,
                        st,
                        chain.backend,
                        chain.verbose,
                        chain.t0,
                    )
                return finish(st, chain.t0, solver, "")
            # too large to model in segments: plans that use segments are bounded (every one
            # costs at least the least bound of a plan with some phase in segments) and the
            # rest of the pipeline plans every phase on one configuration
            floor = min(lower - bounds[n].best + bounds[n].multi for n in rest)
            st.single |= rest
            st.cap = min(st.cap, floor)
            st.bound = min(st.bound, st.cap)
            st.notes.append(
                f"the MILP in segments would have ~{est:,} nonzeros (> {_guard(st):,.0f}): "
                f"{', '.join(sorted(rest))} planned on one configuration each; a plan in "
                f"segments costs at least {floor:,.2f} (the segment-path bound), which caps "
                "the bound"
            )
    return None


def reduced_milp(
    chain: Chain,
    model_space: ConfigSpace,
    masks: dict[tuple[str, int], np.ndarray],
    st: Incumbent,
) -> Result:
    """Stage 7, proves and finds: the reduced MILP over what fixing kept
    (:func:`formulations.exact.milp.run.solve_reduced`) when its estimated size is within the
    guard; else stage 7b (:func:`component_descent`); after either, stage 8
    (:func:`neighbourhood_search`); then :func:`finish`."""
    columns = sum(int(np.sum(m)) for m in masks.values())
    est = int(columns * NONZEROS_PER_COLUMN)
    st.stats["estimated_nonzeros"] = est
    guard = _guard(st)
    solver = "milp-lns"
    if est <= guard and st.left() > 0.3:
        prestart_if_isolated(est)
        solver = solve_reduced(
            model_space, chain.windows, masks, st, chain.backend, chain.verbose, chain.t0
        )
    elif est > guard:
        st.notes.append(
            f"the reduced model would have ~{est:,} nonzeros (> {guard:,.0f}): "
            "large-neighbourhood search instead of one MILP"
        )
    if est > guard:
        share = DESCENT_AFTER_ASCENT_SHARE if chain.ascent_only else COMPONENT_SHARE
        component_descent(chain, st, share)
    if not st.closed and st.schedule is not None and st.left() > 0.3:
        neighbourhood_search(chain, masks, st)
    return finish(st, chain.t0, solver, "")


def recontract_incumbent(chain: Chain, st: Incumbent) -> None:
    """Stage 3b, finds: the incumbent with its contracts and reserved commitments chosen
    anew at its hours (:mod:`formulations.exact.milp.recontract`) when reserved offers exist,
    within RECONTRACT_SHARE of the time left."""
    if st.schedule is None or st.plan is None or st.closed or st.left() < 1.0:
        return
    if not chain.space.any_reserved:
        return
    if st.recontracted is st.plan:
        return  # the same incumbent as the last time: its contracts are chosen already
    st.recontracted = st.plan
    st.tracker.stage("heuristic", "contracts at fixed times")
    found = recontract(
        st.inst,
        chain.space,
        chain.windows,
        st.schedule,
        st.plan.objective,
        min(RECONTRACT_MAX_S, RECONTRACT_SHARE * st.left()),
        st.threads,
    )
    if found is not None:
        st.offer(found[0], "contracts at fixed times")
        st.recontracted = st.plan  # the better plan's contracts are the ones just chosen


def _has_time(st: Incumbent, evaluations: float) -> bool:
    """Whether ``evaluations`` of the DP (as long as the first took) fit in the time left."""
    return evaluations * st.stats.get("dp_eval_s", 0.0) < st.left()


def _guard(st: Incumbent) -> float:
    """The most nonzeros the reduced MILP may have (estimated before it is built): within
    memory, and without an incumbent any size (the MILP is then the only way to a plan), else
    at most FULL_MILP_MAX_NONZEROS."""
    fits = memory_cap() / BYTES_PER_NONZERO
    return fits if st.plan is None else min(FULL_MILP_MAX_NONZEROS, fits)


def _segments_nonzeros(
    inst: Instance, masks: dict[tuple[str, int], np.ndarray], segmented: set[str]
) -> int:
    """Estimated nonzeros of the MILP with ``segmented`` phases in segments: per open
    (configuration, hour), NONZEROS_PER_COLUMN, or for a phase in N segments N x
    SEGMENT_NONZEROS_PER_COLUMN."""
    total = 0.0
    for (name, _), m in masks.items():
        open_hours = int(np.sum(m))
        if name in segmented:
            total += (
                inst.phase(name).options.max_segments * SEGMENT_NONZEROS_PER_COLUMN * open_hours
            )
        else:
            total += NONZEROS_PER_COLUMN * open_hours
    return int(total)


def transfer_seconds(rel: Relaxation, st: Incumbent) -> float:
    """About how long :func:`transfer_bound` takes: TRANSFER_EVALUATIONS evaluations, each
    as long as the first one took or by the size's estimate (0 without transfers)."""
    if not rel.has_transfers:
        return 0.0
    return TRANSFER_EVALUATIONS * max(st.stats.get("dp_eval_s", 0.0), evaluation_seconds(rel))


def evaluation_seconds(rel: Relaxation) -> float:
    """About how long one evaluation of the relaxation takes, by its size."""
    return rel.cells * (SECONDS_PER_COMPILED_CELL if rel.compiled else SECONDS_PER_CELL)


def transfer_bound(
    rel: Relaxation, lam: np.ndarray, mu: np.ndarray, st: Incumbent, share: float = 0.1
) -> None:
    """Prove the DP bound with the transfers between phases' regions (one evaluation per
    region of each phase) when it may close the gap and takes at most ``share`` of the time
    left."""
    if st.closed or not rel.has_transfers:
        return
    if transfer_seconds(rel, st) > share * st.left():
        return
    tb = rel.transfer_bound(lam, mu)
    st.stats["transfer_bound"] = max(tb, st.stats.get("transfer_bound", -math.inf))
    st.prove(tb, "DP bound with transfers")


def fixing(
    chain: Chain,
    rel: Relaxation,
    ev: Evaluation,
    config_bound: dict[str, np.ndarray],
    bounds: dict[str, PhaseBound],
    st: Incumbent,
) -> tuple[ConfigSpace, dict[tuple[str, int], np.ndarray]]:
    """Stage 6, proves: the configurations (by their Lagrangian bound), starts and hours (by
    the DP and separable bounds) a plan cheaper than the incumbent may use; the rest are not
    built (exact). The incumbent's own always stay."""
    inst, space, windows, upper = chain.inst, chain.space, chain.windows, st.upper
    tol = 1e-7 * max(1.0, abs(upper))
    keep: dict[str, tuple[Config, ...]] = {}
    inc = st.schedule
    for name, configs in space.by_phase.items():
        cb = config_bound[name]
        keep[name] = tuple(
            c
            for k, c in enumerate(configs)
            if cb[k] <= upper + tol or (inc is not None and inc[name].config.index == c.index)
        )
    model_space = space.restricted(keep)
    masks: dict[tuple[str, int], np.ndarray] = {}
    if math.isfinite(upper):
        masks.update(rel.start_masks(ev, upper))
        pre_space = model_space.restricted(
            {n: cs for n, cs in model_space.by_phase.items() if inst.phase(n).preemptible}
        )
        masks.update(hour_masks(inst, pre_space, bounds, windows.start, windows.end, upper))
    else:
        for name, configs in model_space.by_phase.items():
            for c in configs:
                masks[(name, c.index)] = np.ones(windows.end[name] - windows.start[name], bool)
    masks = {k: v for k, v in masks.items() if k[1] in {c.index for c in model_space[k[0]]}}
    if inc is not None:
        _open_incumbent(masks, inc, windows)
    kept = model_space.size
    st.notes.append(
        f"fixing kept {kept} of {space.size} configurations and "
        f"{sum(int(m.sum()) for m in masks.values()):,} hours (incumbent {upper:,.2f}, "
        f"bound {st.bound:,.2f})"
    )
    st.stats["configs_kept"] = kept
    return model_space, masks


def _open_incumbent(
    masks: dict[tuple[str, int], np.ndarray], inc: Schedule, windows: Windows
) -> None:
    """The incumbent's own hours stay open whatever the fixing says (ties, rounding)."""
    for name, a in inc.all_parts():
        m = masks.get((name, a.config.index))
        if m is not None:
            m[np.asarray(a.hours) - windows.start[name]] = True


def bound_fixing(
    chain: Chain, bounds: dict[str, PhaseBound], st: Incumbent
) -> tuple[ConfigSpace, dict[tuple[str, int], np.ndarray]]:
    """Stage 6 without the DP (phases in segments, or no time for it): fixing by the separable
    bound alone, configurations and hours that cannot be part of a plan cheaper than the
    incumbent; the incumbent's always stay."""
    inc, space, windows = st.schedule, chain.space, chain.windows
    if inc is None or not math.isfinite(st.upper):
        return space, {}
    pruned = prune_by_bound(space, bounds, st.upper)
    # by index: comparing configurations field by field made this quadratic in them
    keep = {
        name: {c.index for c in pruned.by_phase[name]} | {a.config.index for a in inc.parts(name)}
        for name in space.by_phase
    }
    model_space = space.restricted(
        {name: tuple(c for c in cs if c.index in keep[name]) for name, cs in space.by_phase.items()}
    )
    masks = hour_masks(chain.inst, model_space, bounds, windows.start, windows.end, st.upper)
    _open_incumbent(masks, inc, windows)
    st.notes.append(
        f"bound pruning kept {model_space.size} of {space.size} configurations "
        f"(incumbent {st.upper:,.2f}, bound {st.bound:,.2f})"
    )
    return model_space, masks


def component_descent(chain: Chain, st: Incumbent, share: float = COMPONENT_SHARE) -> None:
    """Stage 7b, finds: where the model is too large for one MILP (before the longer ascent
    on models over ASCENT_ONLY_NONZEROS, and when the reduced MILP is refused) and the
    incumbent's phases form two or more precedence components (independent pipelines), a
    variable-neighbourhood descent within ``share`` of the time left, the incumbent keeping
    every plan that costs less. Each round:

    - each component placed anew in turn in the capacity the others leave, on the reserved
      pools the plan holds (:func:`formulations.heuristics.components.replace_component`)
      and, when it holds a priced commitment, once more with the free terms alone (a
      component leaving the commitment lets its level fall);
    - then ejections: a component placed anew as if another did not run, the other placed
      after it (:func:`formulations.heuristics.components.eject_component`), over the pairs
      :func:`formulations.heuristics.components.ejections` ranks.

    Rounds while one gains, at most COMPONENT_ROUNDS. Once per plan: it does not run again
    on the plan it ended on when it ended by itself (a whole round without a gain, or the
    rounds' cap); cut short by its share of the clock, a later call goes on from that plan
    (seed 2's lab quarter at 600 s: the ejections still gained 17,500 in the last 90 s of
    the descent before the longer ascent, and the neighbourhood search after it 414 in
    275 s). Not for plans in segments. Its ``stats`` add up over the calls."""
    if (
        st.schedule is None
        or st.closed
        or st.schedule.segments
        or st.left() < 1.0
        or (st.plan is not None and st.plan is st.descended)
    ):
        return
    comps = precedence_components(st.inst, list(st.schedule))
    if len(comps) < 2:
        return
    st.tracker.stage("heuristic", "one pipeline at a time")
    ts = time.perf_counter()
    free = free_terms(st.inst, chain.space)
    deadline = ts + share * st.left()

    def busy() -> bool:
        return st.closed or time.perf_counter() >= deadline or st.schedule is None

    tried = improved = rounds = 0
    e_tried = e_improved = 0
    while rounds < COMPONENT_ROUNDS and not busy():
        rounds += 1
        gained = False
        for comp in comps:
            if busy():
                break
            assert st.schedule is not None
            held = held_pools(st.inst, chain.space, st.schedule, free)
            for pools in [held] if held == free else [held, free]:
                found = replace_component(
                    st.inst, chain.space, chain.windows, st.schedule, comp, held=pools
                )
                tried += 1
                if st.offer(found, "one pipeline placed anew"):
                    improved += 1
                    gained = True
                if st.schedule is None:
                    break
            st.tracker.tick()
        if busy():
            break
        assert st.schedule is not None
        held = held_pools(st.inst, chain.space, st.schedule, free)
        for i, j in ejections(st.inst, chain.space, chain.windows, st.schedule, comps, held):
            if busy():
                break
            assert st.schedule is not None
            held = held_pools(st.inst, chain.space, st.schedule, free)
            found = eject_component(
                st.inst, chain.space, chain.windows, st.schedule, comps[i], comps[j], held
            )
            e_tried += 1
            if st.offer(found, "two pipelines placed anew (an ejection)"):
                e_improved += 1
                gained = True
            st.tracker.tick()
        if not gained:
            break
    if not busy():  # it ended by itself: a descent cut short by the clock proved nothing
        st.descended = st.plan
    for key, n in (
        ("components_tried", tried),
        ("components_improved", improved),
        ("ejections_tried", e_tried),
        ("ejections_improved", e_improved),
    ):
        st.stats[key] = st.stats.get(key, 0) + n
    st.stats["components_s"] = st.stats.get("components_s", 0.0) + time.perf_counter() - ts


def neighbourhood_search(
    chain: Chain, masks: dict[tuple[str, int], np.ndarray], st: Incumbent
) -> None:
    """Stage 8, finds: large-neighbourhood search (on ``st.inst``) from the incumbent until
    the deadline or the gap."""
    st.tracker.stage("lns", "large-neighbourhood search")
    rng = np.random.default_rng(0)
    space = chain.space
    size = min(4, len(space.by_phase))
    tried = improved = 0
    ts = time.perf_counter()
    # HiGHS checks its limit only between the LPs of its tree: a neighbourhood may overrun
    # by a second or two, so each gets at most 80% of what is left and none starts in the
    # last LNS_MARGIN_S
    while (
        not st.closed
        and st.left() > LNS_MARGIN_S
        and st.schedule is not None
        and st.plan is not None
    ):
        hood = neighbourhoods(st.inst, st.schedule, rng, size)
        out = reoptimise(
            st.inst,
            space,
            chain.windows,
            st.schedule,
            st.plan.objective,
            hood,
            min(NEIGHBOURHOOD_S, 0.8 * (st.left() - 0.5)),
            masks,
            st.threads,
            max_nonzeros=NEIGHBOURHOOD_MAX_NONZEROS,
        )
        tried += 1
        if out.schedule is not None and st.offer(out.schedule, f"neighbourhood ({hood.kind})"):
            improved += 1
        if out.status == "optimal" and out.seconds < 1.0 and size < len(space.by_phase):
            size += 1
        elif out.status != "optimal" and size > 1:
            size -= 1
        st.tracker.tick()
    st.stats["lns_tried"] = tried
    st.stats["lns_improved"] = improved
    st.stats["lns_s"] = time.perf_counter() - ts


def finish(st: Incumbent, t0: float, solver: str, why: str) -> Result:
    """Stage 9, finds: among the plans within the gap of the bound, the one that finishes
    earliest (:func:`formulations.heuristics.earliest.earliest`, within
    :func:`budget_within_gap`); then the result of the solve: the incumbent with its bound,
    the termination the stages reached, the notes and the plans kept as alternatives."""
    if why:
        st.notes.append(why)
    if st.schedule is not None and st.plan is not None and st.windows is not None:
        budget = budget_within_gap(st.plan.objective, st.bound, st.gap)
        early = earliest(st.inst, st.schedule, st.windows, budget)
        if early is not st.schedule:
            plan = cost_plan(st.inst, early)
            tie = 1e-9 * max(1.0, abs(st.plan.objective))
            if plan.objective <= st.plan.objective + budget + tie:
                st.keep(st.source, st.plan)
                st.schedule, st.plan = early, plan
                st.tracker.offer_plan(plan.objective, "earliest within the gap")
    commitment_note(st)
    runtime = time.perf_counter() - t0
    st.tracker.stage("done")
    raw = st.raw
    if st.plan is None:
        if raw is not None:
            term, msg = raw.termination, no_plan_message(raw)
            if term == Termination.OPTIMAL:  # its point was no plan (a constraint it broke)
                term = Termination.UNKNOWN
        else:
            term, msg = (
                Termination.TIME_LIMIT,
                (
                    "no plan found in time: the solver stopped at its time limit without a "
                    "feasible plan; raise --time-limit or relax the instance"
                ),
            )
        return Result.no_plan(
            solver,
            term,
            msg,
            runtime_s=runtime,
            bound=st.bound if math.isfinite(st.bound) else None,
            notes=tuple(st.notes),
            stats=st.stats,
        )
    term = Termination.TIME_LIMIT
    message = "stopped at the time limit"
    if raw is not None and raw.termination == Termination.ERROR:
        term, message = Termination.ERROR, raw.message
    elif st.left() > LNS_MARGIN_S + 0.5:
        term, message = Termination.HEURISTIC, "best plan found"
    st.stats["best_from_" + st.source.split(" ")[0].replace("-", "_")] = 1.0
    return Result.solved(
        solver,
        st.plan,
        term,
        bound=st.bound if math.isfinite(st.bound) else None,
        gap=st.gap,
        runtime_s=runtime,
        message=message if not within_gap(st.plan.objective, st.bound, st.gap) else "gap closed",
        notes=tuple(st.notes),
        stats=st.stats,
        threads=raw.threads if raw is not None else None,
        alternatives=tuple(st.found),
    )


def plain(chain: Chain, st: Incumbent) -> Result:
    """The full hourly model (the reference mode): with the look-ahead start unless
    ``warm_start`` is off; no bound but HiGHS's."""
    inst, space, windows, t0 = chain.inst, chain.space, chain.windows, chain.t0
    backend, verbose = chain.backend, chain.verbose
    start_sched = None
    if chain.warm_start:
        found = best_heuristic(inst, space, windows, st.notes)
        if found is not None:
            start_sched = found[0]
            st.offer(found[0], "look-ahead")
    mm = build(inst, space, windows)
    st.stats["build_s"] = time.perf_counter() - t0
    st.stats.update(model_stats(mm))
    start = point_from_schedule(mm, start_sched) if start_sched is not None else None

    def on_event(kind: str, obj: float | None, bound: float | None, x: np.ndarray | None) -> None:
        if x is not None:
            st.offer(schedule_from_point(mm, x), "MILP")
        if bound is not None:
            st.prove(bound, "MILP bound")

    left = max(0.1, st.left())
    if backend == "pyomo":
        raw = solve_pyomo(mm.lp, left, st.gap, st.threads, verbose)
    else:
        raw = solve_highs(mm.lp, left, st.gap, st.threads, start, verbose, on_event=on_event)
    if raw.x is not None:
        st.offer(schedule_from_point(mm, raw.x), "MILP")
    if raw.termination == Termination.OPTIMAL and raw.bound is None and raw.objective is not None:
        raw.bound = raw.objective
    if raw.bound is not None:
        st.prove(raw.bound, "MILP bound")
    st.raw = raw
    st.stats["solve_s"] = raw.runtime_s
    return finish(st, t0, "milp-plain" if backend != "pyomo" else "milp-pyomo", "")


# ----------------------------------------------------------- the contiguous models' stages


def contiguous_tables(
    inst: Instance, space: ConfigSpace | None, data: StartData | None, solver: str, t0: float
) -> StartData | Result:
    """The start data of a non-preemptive model (over ``space``, by default the instance's
    configuration space), or the Result that says why there is no model to solve: a phase
    without configurations, or one whose every configuration misses its precedence-tightened
    window. Stage 0 of CP-SAT and the start-time MILP (with :func:`configuration_space`): the
    tables of each configuration's cost per start hour (:func:`build_data`)."""
    found = configuration_space(inst, space, solver, t0)
    if isinstance(found, Result):
        return found
    data = data or build_data(inst, found)
    empty = [p for p, ts in data.tables.items() if not ts]
    if empty:
        return Result.no_plan(
            solver,
            Termination.INFEASIBLE,
            f"infeasible: no configuration of {', '.join(empty)} fits its window after "
            "precedence tightening (release, deadline, predecessors and successors)",
            runtime_s=time.perf_counter() - t0,
        )
    return data


def contiguous_entry(
    inst: Instance,
    options: SolveOptions,
    space: ConfigSpace | None,
    data: StartData | None,
    solver: str,
) -> tuple[StartData, Tracker, float] | Result:
    """The entry of CP-SAT and the start-time MILP: the clock started (``t0``), the tracker
    that reports to ``options.on_progress``, and the start tables of
    :func:`contiguous_tables`; or the Result that says why there is no model to solve."""
    t0 = time.perf_counter()
    tracker = Tracker(options.on_progress, t0)
    prepared = contiguous_tables(inst, space, data, solver, t0)
    if isinstance(prepared, Result):
        return prepared
    return prepared, tracker, t0


def heuristic_schedule(data: StartData) -> tuple[Schedule | None, str]:
    """A starting schedule: the look-ahead list schedule (formulations.heuristics.lookahead), else
    the greedy one (formulations.heuristics.greedy); with the name of the one found."""
    sched = lookahead_schedule(data.inst, data.space, data.windows)
    if sched is not None and choice_of(data, sched) is not None:
        return sched, "look-ahead"
    return greedy(data.inst, data.space), "greedy"


@dataclass(frozen=True)
class ContiguousStart:
    """The schedule a non-preemptive solver starts from: ``source`` ("given", "look-ahead",
    "greedy"); its ``choice`` ``{phase: (table, start)}`` (None: not a contiguous schedule
    inside the modelled windows) with the least ``reserved`` pools, the first constraint it
    breaks (``violation``, None when feasible) and its model objective."""

    source: str
    choice: dict[str, tuple[int, int]] | None
    reserved: dict[Pool, int]
    violation: str | None
    objective: float | None


def contiguous_start(
    data: StartData, given: WarmStart | None, heuristic: bool
) -> ContiguousStart | None:
    """The start of a solve: ``given`` (a schedule or a plan) when there is one, else the
    look-ahead (or greedy) schedule when ``heuristic``; None when there is neither."""
    if given is not None:
        sched, source = as_schedule(data, given), "given"
    elif heuristic:
        sched, source = heuristic_schedule(data)
        if sched is None:
            return None
    else:
        return None
    choice = choice_of(data, sched) if sched is not None else None
    if choice is None:
        return ContiguousStart(source, None, {}, None, None)
    reserved = least_reserved(data, choice)
    broken = violations_of(data, choice, reserved)
    return ContiguousStart(
        source,
        choice,
        reserved,
        broken[0] if broken else None,
        objective_of(data, choice, reserved),
    )


def contiguous_finish(
    data: StartData,
    solver: str,
    term: Termination,
    optimal: bool,
    choice: Mapping[str, tuple[int, int]] | None,
    reserved: Mapping[Pool, int],
    bound: float | None,
    t0: float,
    message: str,
    notes: tuple[str, ...],
    stats: dict[str, float],
    model_objective: float | None = None,
    threads: int | None = None,
    gap: float | None = None,
    also: tuple[tuple[str, Mapping[str, tuple[int, int]], Mapping[Pool, int]], ...] = (),
) -> Result:
    """Cost the chosen schedule (:func:`planner.model.costs.cost_plan`) and wrap it up; among
    the placements within the gap of the bound the earliest
    (:func:`formulations.heuristics.earliest.earliest`). With the
    requested ``gap`` the plan is optimal exactly when the bound proves it within the gap
    (:meth:`Result.solved`); without, ``optimal`` says whether the solver proved it.
    ``model_objective`` is the formulation's own value of the choice; the difference to the
    costed plan is ``stats["objective_mismatch_usd"]``. ``also``: other choices the solver
    had (its warm start, by source), kept with the solver's own plan before the earliest
    pass as the result's alternatives (planner.solve's verification net)."""
    runtime = time.perf_counter() - t0
    if choice is None:
        return Result.no_plan(
            solver,
            term,
            message,
            runtime_s=runtime,
            bound=bound,
            notes=notes,
            stats=stats,
            threads=threads,
        )
    sched = schedule_of(data, choice, reserved)
    plan = cost_plan(data.inst, sched)
    alternatives = [
        (source, cost_plan(data.inst, schedule_of(data, ch, res))) for source, ch, res in also
    ]
    if model_objective is not None:
        stats["objective_mismatch_usd"] = abs(plan.objective - model_objective)
    budget = budget_within_gap(plan.objective, bound, gap) if gap is not None else 0.0
    early = earliest(data.inst, sched, data.windows, budget, pauses=False)
    if early is not sched:
        moved = cost_plan(data.inst, early)
        if moved.objective <= plan.objective + budget + 1e-9 * max(1.0, abs(plan.objective)):
            alternatives.append((solver, plan))
            plan = moved
    return Result.solved(
        solver,
        plan,
        term,
        bound=bound,
        runtime_s=runtime,
        optimal=None if gap is not None else optimal,
        gap=gap,
        message=message,
        notes=notes,
        stats=stats,
        threads=threads,
        alternatives=tuple(alternatives),
    )
