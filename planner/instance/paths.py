"""Dotted field paths into a raw (parsed, not yet validated) document, the way variants name
what they change: ``regions.de.pue``, ``phases.pretrain.deadline``."""

from __future__ import annotations

from typing import Any

from planner.instance.errors import FieldError, InstanceError


def set_path(data: Any, path: str, value: Any, file: str = "<variant>") -> None:
    """Set a dotted field path in a raw document; list items of ``phases`` are addressed by
    name (``phases.pretrain.deadline``), other lists by index. Unknown paths raise
    :class:`InstanceError` naming the path."""
    parts = path.split(".")
    node = data
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(node, list):
            # a name may itself contain dots: take the longest run of parts naming an item
            idx: int | None = None
            names = {item.get("name"): j for j, item in enumerate(node) if isinstance(item, dict)}
            for k in range(len(parts), i, -1):
                joined = ".".join(parts[i:k])
                if joined in names:
                    idx, i = names[joined], k - 1
                    break
            if idx is None and part.isdigit() and int(part) < len(node):
                idx = int(part)
            last = i == len(parts) - 1
            if idx is None:
                raise InstanceError(file, [FieldError(path, f"no item named {part!r}")])
            if last:
                node[idx] = value
                return
            node = node[idx]
        elif isinstance(node, dict):
            last = i == len(parts) - 1
            if last:
                node[part] = value
                return
            if part not in node:
                if i + 1 < len(parts):
                    node[part] = {}
                else:
                    raise InstanceError(file, [FieldError(path, f"no field {part!r}")])
            node = node[part]
        else:
            raise InstanceError(
                file, [FieldError(path, f"{'.'.join(parts[:i])} is not a mapping or list")]
            )
        i += 1
