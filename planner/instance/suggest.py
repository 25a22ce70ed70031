""" "Did you mean": the fields a mapping of the instance file may hold, found by walking the
schema along a pydantic error location, and the closest to a mistyped one."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel


def _unwrap(tp: Any) -> list[Any]:
    """The concrete alternatives of an annotation: ``Annotated`` stripped, unions split,
    ``None`` dropped."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        out: list[Any] = []
        for a in typing.get_args(tp):
            if a is not type(None):
                out.extend(_unwrap(a))
        return out
    return [tp]


def _step(tp: Any, item: Any) -> list[Any]:
    """The types reached from ``tp`` by one location item (a field, a key or an index)."""
    out: list[Any] = []
    for alt in _unwrap(tp):
        origin = typing.get_origin(alt)
        if isinstance(alt, type) and issubclass(alt, BaseModel):
            if isinstance(item, str) and item in alt.model_fields:
                out.append(alt.model_fields[item].annotation)
        elif origin is dict and isinstance(item, str):
            out.append(typing.get_args(alt)[1])
        elif origin in (tuple, list) and isinstance(item, int):
            args = typing.get_args(alt)
            if args:
                out.append(args[0])
    return out


def known_fields(root: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """The field names of the model that holds the last item of ``loc`` (an unknown field's
    location); [] when the walk does not end at a model. Location items pydantic adds for
    union branches and validators are skipped."""
    current: list[Any] = [root]
    for item in loc[:-1]:
        nxt = [t for tp in current for t in _step(tp, item)]
        if nxt:
            current = nxt
        # else: a tag of a union branch (``function-after[...]``): stay where we are
    names: list[str] = []
    for tp in current:
        for alt in _unwrap(tp):
            if isinstance(alt, type) and issubclass(alt, BaseModel):
                names.extend(n for n in alt.model_fields if n not in names)
    return names


def did_you_mean(root: type[BaseModel], loc: Sequence[Any]) -> str:
    """`` (did you mean 'memory_gb'?)`` for an unknown field at ``loc``, or the fields the
    mapping may hold when none is close; '' when the holder is not known."""
    if not loc:
        return ""
    names = known_fields(root, loc)
    if not names:
        return ""
    wrong = str(loc[-1])
    close = difflib.get_close_matches(wrong, names, n=2, cutoff=0.6)
    if not close:
        close = [n for n in names if n.startswith(wrong) or wrong.startswith(n)][:2]
    if close:
        return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f" (expected one of: {shown})"
