"""Contiguous (non-preemptive) scheduling on CP-SAT. ``solve_cpsat`` and ``Progress`` load on
first use (:mod:`planner.lazy`): the solve runs the stages of :mod:`formulations.pipeline`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from formulations.exact.cpsat.model import CpsatModel, build
from planner.lazy import lazy_names

if TYPE_CHECKING:
    from formulations.exact.cpsat.solve import Progress, solve_cpsat

lazy_names(
    __name__,
    {"Progress": "formulations.exact.cpsat.solve", "solve_cpsat": "formulations.exact.cpsat.solve"},
)

__all__ = ["CpsatModel", "Progress", "build", "solve_cpsat"]
