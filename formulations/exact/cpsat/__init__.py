"""Contiguous (non-preemptive) scheduling on CP-SAT."""

from formulations.exact.cpsat.model import CpsatModel, build
from formulations.exact.cpsat.solve import Progress, solve_cpsat

__all__ = ["CpsatModel", "Progress", "build", "solve_cpsat"]
