"""What every solver takes: one frozen record of the options they share.

:func:`planner.solve.solve` builds it once from its keywords and hands it to the solver entry
points (``formulations.exact.milp.solve_milp``, ``formulations.exact.starttime.solve_starttime``,
``formulations.exact.cpsat.solve_cpsat``, ``formulations.portfolio.solve_nonpreemptive`` and
``formulations.heuristics.baseline.solve_baseline``); what only one solver has (the hourly MILP's
``prune``, CP-SAT's ``mode``, a prebuilt configuration space) stays a keyword of that
solver. It sits below the formulations so that they can import it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.model.plan import Plan
    from planner.model.progress import ProgressFn
    from planner.model.schedule import Schedule

#: The MILP backends: "highs" (arrays into highspy, with MIP starts), "pyomo" (Pyomo's HiGHS
#: interface, no MIP start), "auto" (= highs).
BACKENDS = ("auto", "highs", "pyomo")


@dataclass(frozen=True)
class SolveOptions:
    """The options every solver shares, checked when built (ValueError naming the option).

    ``time_limit``: seconds for the whole solve; ``gap``: the relative gap within which a
    plan counts as optimal; ``threads``: solver threads (None: HiGHS 1, CP-SAT every core);
    ``backend``: how the MILPs reach HiGHS (:data:`BACKENDS`); ``verbose``: the solvers' own
    logs; ``on_progress``: called with every improvement (:mod:`planner.model.progress`);
    ``start``: the warm start, an earlier plan or schedule (formulations.heuristics.warm for the
    hourly MILP; the non-preemptive solvers' MIP start or solution hint)."""

    time_limit: float = 60.0
    gap: float = 1e-4
    threads: int | None = None
    backend: str = "auto"
    verbose: bool = False
    on_progress: ProgressFn | None = None
    start: Plan | Schedule | None = None

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds, got {self.time_limit}")
        if not 0 <= self.gap <= 1:
            raise ValueError(f"gap must be in [0, 1], got {self.gap}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")

    def but(self, **changes: Any) -> SolveOptions:
        """These options with ``changes`` (checked again): e.g. the time left, or no start."""
        return replace(self, **changes)
