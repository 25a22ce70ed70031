"""One result type for every solver: why it stopped, what it found, how good it is proved."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from planner.plan import Plan


class Termination(StrEnum):
    """Why the solver stopped (kept apart from what it found, as in Pyomo's contrib.solver)."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    GAP_REACHED = "gap_reached"
    INFEASIBLE = "infeasible"
    NO_CONFIGURATION = "no_configuration"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    HEURISTIC = "heuristic"
    UNKNOWN = "unknown"


class SolutionStatus(StrEnum):
    NONE = "none"
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"


@dataclass(frozen=True)
class Result:
    solver: str
    termination: Termination
    status: SolutionStatus
    objective: float | None
    bound: float | None
    gap: float | None
    runtime_s: float
    plan: Plan | None
    message: str = ""
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def has_plan(self) -> bool:
        return self.plan is not None

    def summary(self) -> str:
        gap = f"{self.gap:.2%}" if self.gap is not None else "n/a"
        obj = f"{self.objective:,.2f}" if self.objective is not None else "n/a"
        bnd = f"{self.bound:,.2f}" if self.bound is not None else "n/a"
        return (
            f"{self.solver}: {self.termination.value}, solution {self.status.value}, "
            f"objective {obj}, bound {bnd}, gap {gap}, {self.runtime_s:.1f} s"
        )


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|objective - bound| / max(|objective|, 1e-9), HiGHS's definition."""
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-9)
