"""Scenario grids: many variants of one instance, solved in batch and stored as they finish.

``solve_grid(grid, workers=..., executor="local"|"ray", store=...)`` returns a DataFrame with
one row per scenario; ``trainplan grid`` does the same from the command line with a progress
bar, a summary and a cost chart. See :mod:`planner.interfaces.grid.spec` for the grid file format
and :mod:`planner.interfaces.grid.store` for what is stored and how a killed run resumes.

The names below are imported on first use, so that a worker process, which imports
:mod:`planner.interfaces.grid.task` only, does not load pandas, rich or matplotlib.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.interfaces.grid.api import (
        RunReport,
        default_store,
        resolve_grid,
        run_grid,
        solve_grid,
    )
    from planner.interfaces.grid.export import export, read_store
    from planner.interfaces.grid.spec import (
        GridError,
        GridSpec,
        Scenario,
        grid_from_instance,
        load_grid,
    )

_WHERE = {
    "RunReport": "api",
    "default_store": "api",
    "resolve_grid": "api",
    "run_grid": "api",
    "solve_grid": "api",
    "export": "export",
    "read_store": "export",
    "GridError": "spec",
    "GridSpec": "spec",
    "Scenario": "spec",
    "grid_from_instance": "spec",
    "load_grid": "spec",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"planner.interfaces.grid.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'planner.interfaces.grid' has no attribute {name!r}")


__all__ = [
    "GridError",
    "GridSpec",
    "RunReport",
    "Scenario",
    "default_store",
    "export",
    "grid_from_instance",
    "load_grid",
    "read_store",
    "resolve_grid",
    "run_grid",
    "solve_grid",
]
