"""JSON-ready dicts of the result dataclasses (findings, lever runs, frontier points)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from enum import Enum
from typing import Any


def _value(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, Enum):
        return v.value
    if isinstance(v, tuple | list):
        return [_value(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _value(x) for k, x in v.items()}
    return v


def record(
    obj: Any, rename: Mapping[str, str] | None = None, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``{field: value}`` of a dataclass in field order, fields in ``skip`` left out and keys
    renamed by ``rename``; tuples become lists, objects with ``to_dict`` their dicts."""
    names = rename or {}
    return {
        names.get(f.name, f.name): _value(getattr(obj, f.name))
        for f in fields(obj)
        if f.name not in skip
    }
