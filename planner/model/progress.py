"""What a long solve reports while it runs: the best plan's objective, the best proved bound,
their gap and the seconds since the solve started.

Every solver (the hourly MILP pipeline, the start-time MILP, CP-SAT) calls an
``on_progress(event)`` callback with a :class:`Progress` whenever its incumbent or its bound
improves or it moves to another stage, and at least every :data:`HEARTBEAT_S` seconds while a
MILP runs; ``planner.solve(..., on_progress=...)`` passes the callback through. The bound of an
event is always valid for the whole instance (a relaxation's or a solver's proved bound,
never a bound of a restricted model), so ``gap`` is a proved gap at that moment.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.model.result import Result, relative_gap

#: Seconds between events while nothing improves (a MILP that is still working).
HEARTBEAT_S = 1.0


@dataclass(frozen=True)
class Progress:
    """One event: ``elapsed_s`` since the solve started, the best plan's objective
    (``incumbent``, None before the first plan), the best proved lower bound (None: none
    yet), the ``stage`` the solver is in ("bound", "heuristic", "lagrange", "lns", "milp",
    "cpsat", "done") and a short human ``message``."""

    elapsed_s: float
    incumbent: float | None
    bound: float | None
    stage: str
    message: str = ""

    @property
    def gap(self) -> float | None:
        """``max(0, incumbent - bound) / max(|incumbent|, 1e-9)``, as ``Result.gap``."""
        return relative_gap(self.incumbent, self.bound)

    def line(self) -> str:
        """One line for a terminal: ``milp: plan 120,293.80  bound 118,791.37  gap 1.25%  12 s``."""
        inc = "no plan yet" if self.incumbent is None else f"plan {self.incumbent:,.2f}"
        bnd = "" if self.bound is None else f"  bound {self.bound:,.2f}"
        g = self.gap
        gap = "" if g is None else f"  gap {g:.2%}"
        return f"{self.stage}: {inc}{bnd}{gap}  {self.elapsed_s:.0f} s"


ProgressFn = Callable[[Progress], None]


class Tracker:
    """The best incumbent and bound of one solve, and the events they make.

    ``offer_plan`` / ``offer_bound`` keep the better value and emit an event when it improves;
    ``stage`` emits one when the solver moves on; ``tick`` emits a heartbeat at most every
    :data:`HEARTBEAT_S`. A callback that raises is not the solver's problem: it is dropped
    (with the exception kept in ``callback_error``) and the solve goes on."""

    def __init__(self, on_progress: ProgressFn | None, t0: float | None = None) -> None:
        self.fn = on_progress
        self.t0 = time.perf_counter() if t0 is None else t0
        self.incumbent: float | None = None
        self.bound: float | None = None
        self.current = "start"
        self.events = 0
        self.callback_error: BaseException | None = None
        self._last = -math.inf

    def elapsed(self) -> float:
        """Seconds since the solve started."""
        return time.perf_counter() - self.t0

    def emit(self, message: str = "") -> None:
        """Send a progress event (best plan, bound, stage, ``message``) to the callback; a
        callback that raises is dropped (its error kept in ``callback_error``), never taking the
        solve down."""
        self._last = time.perf_counter()
        if self.fn is None:
            return
        ev = Progress(self.elapsed(), self.incumbent, self.bound, self.current, message)
        self.events += 1
        try:
            self.fn(ev)
        except Exception as e:  # a broken callback must not take the solve down
            self.callback_error = e
            self.fn = None

    def offer_plan(self, objective: float | None, message: str = "") -> bool:
        """Record a plan's objective; True (and an event) if it is the best so far."""
        if objective is None or not math.isfinite(objective):
            return False
        if self.incumbent is not None and objective >= self.incumbent - 1e-9 * max(
            1.0, abs(objective)
        ):
            return False
        self.incumbent = float(objective)
        self.emit(message)
        return True

    def offer_bound(self, bound: float | None, message: str = "") -> bool:
        """Record a proved lower bound; True (and an event) if it improves the best."""
        if bound is None or math.isnan(bound):
            return False
        if self.incumbent is not None and math.isfinite(bound):
            bound = min(bound, self.incumbent) if bound > self.incumbent else bound
        if self.bound is not None and bound <= self.bound + 1e-9 * max(1.0, abs(bound)):
            return False
        self.bound = float(bound)
        self.emit(message)
        return True

    def stage(self, name: str, message: str = "") -> None:
        """Enter stage ``name`` and report it."""
        self.current = name
        self.emit(message)

    def tick(self) -> None:
        """Report again when nothing was reported for a heartbeat interval, so a long stage still
        shows it is alive."""
        if time.perf_counter() - self._last >= HEARTBEAT_S:
            self.emit()

    def finish(self, res: Result) -> Result:
        """The last events of a solve: its result's objective and bound, then the stage
        "done"; returns ``res``."""
        self.offer_plan(res.objective)
        self.offer_bound(res.bound)
        self.stage("done")
        return res

    @property
    def gap(self) -> float | None:
        """Relative gap between the best plan and the bound so far, None before either exists."""
        return relative_gap(self.incumbent, self.bound)
