"""trainplan: cost-optimal planning of large-model training.

The public names load on first use (:mod:`planner.lazy`), so that ``import planner`` (and
every command of the command line, which imports this package first) costs no solver, no
schema and no numpy until something asks for them. ``planner.solve`` is the function
(``planner.solve(instance, ...) -> Result``), as it always was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.lazy import lazy_names

if TYPE_CHECKING:
    from planner.instance import Instance, InstanceError, read
    from planner.interfaces.grid import solve_grid
    from planner.model.plan import Plan
    from planner.model.result import Result, SolutionStatus, Termination
    from planner.solve import solve

lazy_names(
    __name__,
    {
        "Instance": "planner.instance",
        "InstanceError": "planner.instance",
        "read": "planner.instance",
        "Plan": "planner.model.plan",
        "Result": "planner.model.result",
        "SolutionStatus": "planner.model.result",
        "Termination": "planner.model.result",
        "solve": "planner.solve",
        "solve_grid": "planner.interfaces.grid",  # pulls in pandas and rich
    },
)

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
