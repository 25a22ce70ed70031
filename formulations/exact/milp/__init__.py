"""The hourly time-indexed MILP (HiGHS, directly or through Pyomo)."""

from formulations.exact.milp.model import MilpModel, build
from formulations.exact.milp.solve import solve_milp

__all__ = ["MilpModel", "build", "solve_milp"]
