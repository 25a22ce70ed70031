"""The best plan and the best bound one solve holds (:class:`Incumbent`): every stage of
:mod:`formulations.pipeline` offers the plans it finds to it (costed by
:func:`planner.model.costs.cost_plan`, kept when cheapest and within the carbon cap) and proves
its bounds into it; the plans offered are kept as the result's alternatives."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from formulations.lp.highs_runner import RawSolution
from planner.instance.model import Instance
from planner.model.costs import cost_plan, within_carbon_cap
from planner.model.plan import Plan
from planner.model.progress import Tracker
from planner.model.result import MAX_ALTERNATIVES, within_gap
from planner.model.schedule import Schedule
from planner.model.windows import Windows


@dataclass
class Incumbent:
    """The best plan and bound of one solve, and what the stages noted."""

    inst: Instance
    gap: float
    threads: int | None
    tracker: Tracker
    deadline: float
    windows: Windows | None = None
    schedule: Schedule | None = None
    plan: Plan | None = None
    bound: float = -math.inf
    notes: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)
    source: str = ""
    #: the reduced (or plain) MILP's run, when one ran
    raw: RawSolution | None = None
    #: phases that may run in segments but are modelled on one configuration (they cannot
    #: gain from segments within the gap, :func:`formulations.bounds.separable.single_segment`), and
    #: the least cost of a plan so left out: every later bound is capped by it
    single: set[str] = field(default_factory=set)
    cap: float = math.inf
    #: every plan offered that meets the carbon cap, ``(source, plan)``: the result's
    #: alternatives (the verification net of ``planner.solve``), trimmed to the cheapest
    found: list[tuple[str, Plan]] = field(default_factory=list)
    #: the plan whose contracts were last chosen anew at its hours (the recontract stage)
    recontracted: Plan | None = None
    #: the plan the component descent last ended on (it does not run twice from one plan)
    descended: Plan | None = None

    def left(self) -> float:
        """Seconds left until the deadline."""
        return self.deadline - time.perf_counter()

    def offer(self, schedule: Schedule | None, source: str) -> bool:
        """Cost a schedule; keep it if it is the best plan so far (and meets the cap)."""
        if schedule is None:
            return False
        plan = cost_plan(self.inst, schedule)
        if not within_carbon_cap(self.inst, plan.emissions_t):
            return False
        self.keep(source, plan)
        if self.plan is not None and plan.objective >= self.plan.objective - 1e-9 * max(
            1.0, abs(plan.objective)
        ):
            return False
        self.schedule, self.plan, self.source = schedule, plan, source
        self.tracker.offer_plan(plan.objective, source)
        return True

    def keep(self, source: str, plan: Plan) -> None:
        """Keep ``plan`` among the alternatives (at most twice MAX_ALTERNATIVES, cheapest)."""
        self.found.append((source, plan))
        if len(self.found) > 2 * MAX_ALTERNATIVES:
            self.found.sort(key=lambda sp: sp[1].objective)
            del self.found[MAX_ALTERNATIVES:]

    def prove(self, bound: float, source: str) -> None:
        """Keep ``bound`` (capped by :attr:`cap`) if it is the best so far."""
        bound = min(bound, self.cap)
        if bound > self.bound:
            self.bound = bound
            self.tracker.offer_bound(bound, source)

    @property
    def closed(self) -> bool:
        """Whether the plan is within the gap of the bound."""
        return self.plan is not None and within_gap(self.plan.objective, self.bound, self.gap)

    @property
    def upper(self) -> float:
        """The plan's objective (infinite without a plan)."""
        return math.inf if self.plan is None else self.plan.objective
