"""The hourly time-indexed MILP (HiGHS, directly or through Pyomo)."""

from formulations.milp.model import MilpModel, build
from formulations.milp.solve import solve_milp

__all__ = ["MilpModel", "build", "solve_milp"]
