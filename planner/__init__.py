"""trainplan: cost-optimal planning of large-model training."""

from typing import Any

from planner.instance import Instance, InstanceError, read
from planner.plan import Plan
from planner.result import Result, SolutionStatus, Termination
from planner.solve import solve  # the function: planner.solve(instance, ...) -> Result


def __getattr__(name: str) -> Any:
    """``planner.solve_grid`` loads on first use (it pulls in pandas and rich)."""
    if name == "solve_grid":
        from planner.grid import solve_grid

        return solve_grid
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


__all__ = [
    "Instance",
    "InstanceError",
    "Plan",
    "Result",
    "SolutionStatus",
    "Termination",
    "read",
    "solve",
    "solve_grid",
]
