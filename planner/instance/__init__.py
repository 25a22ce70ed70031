"""Instance files: schema, reading and validation, the resolved instance."""

from planner.instance.errors import FieldError, InstanceError
from planner.instance.model import Instance
from planner.instance.read import read

__all__ = ["FieldError", "Instance", "InstanceError", "read"]
