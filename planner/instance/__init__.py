"""Instance files: schema, reading and validation, the resolved instance.

The public names load on first use (:mod:`planner.lazy`): importing a light module of this
package (``planner.instance.errors``, ``files``) does not build the schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.lazy import lazy_names

if TYPE_CHECKING:
    from planner.instance.errors import FieldError, InstanceError
    from planner.instance.model import Instance
    from planner.instance.read import read

lazy_names(
    __name__,
    {
        "FieldError": "planner.instance.errors",
        "InstanceError": "planner.instance.errors",
        "Instance": "planner.instance.model",
        "read": "planner.instance.read",
    },
)

__all__ = ["FieldError", "Instance", "InstanceError", "read"]
