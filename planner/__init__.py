"""trainplan: cost-optimal planning of large-model training."""

from planner.instance import Instance, InstanceError, read
from planner.plan import Plan
from planner.result import Result, SolutionStatus, Termination

__all__ = ["Instance", "InstanceError", "Plan", "Result", "SolutionStatus", "Termination", "read"]
