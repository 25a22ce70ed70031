"""Scenario grids: many variants of one instance, solved in batch and stored as they finish.

``solve_grid(grid, workers=..., executor="local"|"ray", store=...)`` returns a DataFrame with
one row per scenario; ``trainplan grid`` does the same from the command line with a progress
bar, a summary and a cost chart. See :mod:`planner.grid.spec` for the grid file format and
:mod:`planner.grid.store` for what is stored and how a killed run resumes.
"""

from planner.grid.api import RunReport, default_store, resolve_grid, run_grid, solve_grid
from planner.grid.export import export, read_store
from planner.grid.spec import GridError, GridSpec, Scenario, grid_from_instance, load_grid

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
