"""The start-time-indexed MILP for non-preemptive phases (HiGHS), and the start tables it
shares with the CP-SAT model. ``solve_starttime`` loads on first use
(:mod:`planner.lazy`): it runs the stages of :mod:`formulations.pipeline`, which reads these
tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from formulations.exact.starttime.data import StartData, build_data
from formulations.exact.starttime.model import StartModel, build
from planner.lazy import lazy_names

if TYPE_CHECKING:
    from formulations.exact.starttime.solve import solve_starttime

lazy_names(__name__, {"solve_starttime": "formulations.exact.starttime.solve"})

__all__ = ["StartData", "StartModel", "build", "build_data", "solve_starttime"]
