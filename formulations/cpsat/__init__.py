"""Contiguous (non-preemptive) scheduling on CP-SAT."""

from formulations.cpsat.model import CpsatModel, build
from formulations.cpsat.solve import Progress, solve_cpsat

__all__ = ["CpsatModel", "Progress", "build", "solve_cpsat"]
