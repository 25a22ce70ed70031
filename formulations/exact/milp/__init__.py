"""The hourly time-indexed MILP (HiGHS, directly or through Pyomo): one builder per constraint
family (``model``), phases in segments (``segments``), the reduced model's HiGHS runs
(``run``), neighbourhoods and re-contracting. Its entry point is
:func:`formulations.pipeline.solve_milp`."""

from formulations.exact.milp.model import MilpModel, build

__all__ = ["MilpModel", "build"]
