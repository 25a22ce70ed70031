"""The start-time-indexed MILP for non-preemptive phases (HiGHS), and the start tables it
shares with the CP-SAT model."""

from formulations.exact.starttime.data import StartData, build_data
from formulations.exact.starttime.model import StartModel, build
from formulations.exact.starttime.solve import solve_starttime

__all__ = ["StartData", "StartModel", "build", "build_data", "solve_starttime"]
