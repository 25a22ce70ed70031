"""The independent plan checker (docs/cost-model.md).

:func:`verify` recomputes every cost and checks every constraint of a plan from the resolved
instance and the plan alone. It never imports ``planner.model.configs``, ``planner.costing`` or the
formulations, so a bug there shows up as a disagreement rather than being repeated here.
"""

from planner.checker.check import verify
from planner.checker.planfile import (
    PlanFileError,
    plan_from_dict,
    read_plan,
    read_plan_document,
    read_solved,
)
from planner.checker.recompute import PhaseFacts
from planner.checker.violation import KINDS, Kind, Verification, Violation

__all__ = [
    "KINDS",
    "Kind",
    "PhaseFacts",
    "PlanFileError",
    "Verification",
    "Violation",
    "plan_from_dict",
    "read_plan",
    "read_plan_document",
    "read_solved",
    "verify",
]
