"""Pydantic's validation errors made readable: each becomes a :class:`FieldError` whose path
reads like the file (``phases[1] (pretrain).options.precision[0]``) and whose message says
what was expected and what the file gave (``expected a number > 0 (got -80)``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from pydantic import ValidationError

from planner.instance.errors import FieldError
from planner.instance.schema import MAX_DIGITS

#: Problems listed in one InstanceError; the rest are counted.
MAX_ERRORS = 50
#: Names listed in one message ("known: [...]"); the rest are counted.
MAX_LISTED = 10
#: Characters of one name shown in a message.
MAX_NAME_SHOWN = 40


def quoted(name: str) -> str:
    """A user's name for a message: ``repr()``, at most MAX_NAME_SHOWN characters of it."""
    return repr(name[:MAX_NAME_SHOWN]) + ("..." if len(name) > MAX_NAME_SHOWN else "")


def listing(names: Iterable[object]) -> str:
    """Names for a message, as a list: ``['A100', 'L4']``; at most MAX_LISTED of them, each
    cut to MAX_NAME_SHOWN characters, then ``... (N more)``. Messages stay short however many
    names an instance defines."""
    items = [str(n) for n in names]
    shown = [quoted(n) for n in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        shown.append(f"... ({len(items) - MAX_LISTED} more)")
    return "[" + ", ".join(shown) + "]"


_TAGS = {
    "float",
    "int",
    "str",
    "bool",
    "datetime",
    "date",
    "none",
    "nullable",
    "tagged-union",
    "lax-or-strict",
    "list",
    "tuple",
    "dict",
}


#: Characters that make a key be written quoted in a field path.
_QUOTED = re.compile(r"[. \[\]'\"]")


def _walk(
    loc: tuple[Any, ...],
    data: Any,
    memo: dict[tuple[Any, ...], tuple[str, Any, int | None]] | None = None,
) -> tuple[str, int | None]:
    """A readable field path such as ``phases[1] (pretrain).options.precision[0]``, and the
    index in ``loc`` of the first tag pydantic put there (a union branch), if any.

    Walks ``data`` alongside pydantic's ``loc`` so that list items of mappings with a ``name``
    are labelled by it, and drops the tags pydantic puts in ``loc`` for union members and
    validators (``constrained-float``, ``function-after[...]``, ``tuple[int, ...]``) unless
    the document really has a key of that name. Keys holding a dot or a space are quoted:
    ``regions['us east'].pue``. ``memo`` keeps the walk of each prefix (thousands of errors
    in one long list share all but their index)."""
    text_so_far, node, first_tag = "", data, None
    start = 0
    if memo is not None:
        for k in range(len(loc) - 1, 0, -1):
            hit = memo.get(loc[:k])
            if hit is not None:
                text_so_far, node, first_tag = hit
                start = k
                break
    parts: list[str] = [text_so_far] if text_so_far else []
    for i in range(start, len(loc)):
        item = loc[i]
        if isinstance(item, int) and isinstance(node, list | tuple):
            label = f"[{item}]"
            node = node[item] if -len(node) <= item < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str) and node["name"]:
                label += f" ({node['name']})"
            parts.append(label)
        else:
            key_present = isinstance(node, dict) and item in node
            text = str(item)
            if (
                not key_present
                and isinstance(item, str)
                and (item in _TAGS or "[" in item or item.startswith(("constrained-", "function-")))
            ):
                if first_tag is None:
                    first_tag = i
            else:
                node = node[item] if key_present else None
                if text == "" or _QUOTED.search(text):
                    parts.append(f"[{text!r}]")
                else:
                    parts.append(("." if parts else "") + text)
        if memo is not None and i < len(loc) - 1:
            memo[loc[: i + 1]] = ("".join(parts), node, first_tag)
    return "".join(parts), first_tag


def field_path(loc: tuple[Any, ...], data: Any) -> str:
    """The readable field path of a pydantic ``loc`` (see :func:`_walk`)."""
    return _walk(loc, data)[0]


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    """The value of ``data`` at a location of keys and indices, or None when absent."""
    node = data
    for item in loc:
        if isinstance(node, dict):
            found = item in node
        else:
            found = (
                isinstance(node, list) and isinstance(item, int) and -len(node) <= item < len(node)
            )
        if not found:
            return None
        node = node[item]
    return node


def _branch_takes(tag: str) -> str | None:
    """What a union branch takes, from pydantic's tag for it (``constrained-float`` ->
    ``number``, ``dict[str,constrained-float]`` -> ``mapping``, ``tuple[...]`` -> ``list``,
    ``function-before[f(), datetime]`` -> ``time``, ``Series`` -> ``mapping``); None when the
    tag is not understood."""
    if re.fullmatch(r"function-wrap\[_bulk_\w+\(\)\]", tag):
        return "list"  # schema's lists of numbers checked at once
    inner = re.fullmatch(r"function-[a-z-]+\[.*, (.+)\]", tag)
    t = inner.group(1) if inner else tag
    t = t.removeprefix("constrained-")
    if t.startswith(("dict", "model")) or re.fullmatch(r"[A-Z]\w*", t):
        return "mapping"  # a model is tagged by its class name (Series)
    if t.startswith(("tuple", "list", "set", "frozenset")):
        return "list"
    if t in ("float", "int"):
        return "number"
    if t in ("datetime", "date"):
        return "time"
    if t == "str":
        return "text"
    if t == "bool":
        return "bool"
    return None


def _input_is(x: Any) -> set[str]:
    """The branch kinds (see :func:`_branch_takes`) an input plainly belongs to."""
    if isinstance(x, dict):
        return {"mapping"}
    if isinstance(x, list | tuple):
        return {"list"}
    if isinstance(x, bool):
        return {"bool"}
    if isinstance(x, int | float):
        return {"number"}
    if isinstance(x, datetime | date):
        return {"time"}
    if isinstance(x, str):
        return {"text", "time"}
    return set()


def _plain_branch(errs: Sequence[Mapping[str, Any]], data: Any) -> list[Mapping[str, Any]]:
    """Drop the errors of union branches an input plainly is not.

    Pydantic reports every branch of a union that failed: ``mfu: 0`` (``PosFloat | dict``)
    gives "expected a number > 0" and "expected a mapping". When the input is a number, a
    mapping or a list and some failing branch takes that kind of input, only that branch's
    errors are kept; otherwise (say, text for a number-or-mapping field) all of them are."""
    groups: dict[tuple[Any, ...], dict[str, str | None]] = {}
    where: list[tuple[tuple[Any, ...], str] | None] = []
    memo: dict[tuple[Any, ...], tuple[str, Any, int | None]] = {}
    for err in errs:
        loc = tuple(err["loc"])
        _, i = _walk(loc, data, memo)
        if i is None or not isinstance(loc[i], str):
            where.append(None)
            continue
        prefix, tag = loc[:i], loc[i]
        groups.setdefault(prefix, {})[tag] = _branch_takes(tag)
        where.append((prefix, tag))
    keep_tags: dict[tuple[Any, ...], set[str]] = {}
    for prefix, branches in groups.items():
        if len(branches) < 2 or None in branches.values():
            continue
        kinds = _input_is(_at(data, prefix))
        plain = {tag for tag, takes in branches.items() if takes in kinds}
        if plain:
            keep_tags[prefix] = plain
    return [
        err
        for err, w in zip(errs, where, strict=True)
        if w is None or w[0] not in keep_tags or w[1] in keep_tags[w[0]]
    ]


#: pydantic's length errors: (the bound's words, the context key holding it).
_LENGTHS = {
    "string_too_short": ("at least", "min_length"),
    "too_short": ("at least", "min_length"),
    "string_too_long": ("at most", "max_length"),
    "too_long": ("at most", "max_length"),
}


def _explain(err: Mapping[str, Any]) -> str:
    """What the field expected and what the file gave, from one pydantic error.

    Pydantic's messages ("Input should be a valid dictionary") are rephrased as
    ``expected ...`` with the user's vocabulary (mapping, list, whole number, ISO time) and
    followed by ``(got ...)`` unless the message already says what it got or the input is a
    whole mapping (a check across several fields, whose message names them)."""
    kind = str(err.get("type", ""))
    inp = err.get("input")
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    msg = str(err.get("msg", "invalid"))
    if kind == "extra_forbidden":
        from planner.instance.schema import InstanceSpec
        from planner.instance.suggest import did_you_mean

        return "unknown field" + did_you_mean(InstanceSpec, tuple(err.get("loc", ())))
    if kind == "missing":
        return "required field is missing"

    def shown(x: Any) -> str:
        if isinstance(x, dict):
            return "a mapping"
        if isinstance(x, list | tuple):
            return f"a list of {len(x)} item{'s' if len(x) != 1 else ''}"
        if x is None:
            return "null"
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, datetime | date):
            return x.isoformat()
        if isinstance(x, int) and abs(x) >= 10**MAX_DIGITS:
            return f"an integer of more than {MAX_DIGITS} digits"
        text = repr(x)
        return text if len(text) <= 60 else text[:57] + "..."

    def num(x: Any) -> str:
        return f"{x:g}" if isinstance(x, int | float) else str(x)

    when = "an ISO date-time with a UTC offset, e.g. 2023-06-05T00:00:00Z"
    phrases = {
        "float_parsing": "a number",
        "float_type": "a number",
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "int_parsing_size": "a whole number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "a string",
        "dict_type": "a mapping (key: value)",
        "model_type": "a mapping (key: value)",
        "model_attributes_type": "a mapping (key: value)",
        "tuple_type": "a list",
        "list_type": "a list",
        "iterable_type": "a list",
        "finite_number": "a finite number",
        "datetime_parsing": when,
        "datetime_from_date_parsing": when,
        "datetime_type": when,
        "datetime_object_invalid": when,
        "date_parsing": "a date, e.g. 2023-12-25",
        "date_type": "a date, e.g. 2023-12-25",
        "date_from_datetime_parsing": "a date, e.g. 2023-12-25",
        "date_from_datetime_inexact": "a date without a time, e.g. 2023-12-25",
    }
    bounds = {
        "greater_than": ("gt", ">"),
        "greater_than_equal": ("ge", ">="),
        "less_than": ("lt", "<"),
        "less_than_equal": ("le", "<="),
    }
    if kind in phrases:
        text = f"expected {phrases[kind]}"
    elif kind in bounds and bounds[kind][0] in ctx:
        key, op = bounds[kind]
        text = f"expected a number {op} {num(ctx[key])}"
    elif kind == "literal_error" and "expected" in ctx:
        text = f"expected one of {ctx['expected']}"
    elif kind == "too_long" and "max_length" in ctx and isinstance(inp, dict):
        return f"expected at most {ctx['max_length']} entries (got {len(inp)})"
    elif kind in _LENGTHS and _LENGTHS[kind][1] in ctx:
        least, key = _LENGTHS[kind]
        n = ctx[key]
        unit = "character" if kind.startswith("string") else "item"
        text = f"expected {least} {n} {unit}{'s' * (n != 1)}"
    else:
        text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if text.startswith("Input should be "):
            text = "expected " + text.removeprefix("Input should be ")
        if isinstance(inp, dict) or "got" in text.split():
            return text
    return f"{text} (got {shown(inp)})"


def schema_errors(e: ValidationError, data: Any) -> list[FieldError]:
    """One readable :class:`FieldError` per pydantic error of ``data`` (union branches the
    input plainly is not dropped), at most MAX_ERRORS of them."""
    kept = _plain_branch(e.errors(), data)
    # only the errors shown are written out (a list of 150,000 bad values gives 50 and a count)
    shown = [
        FieldError(field_path(tuple(err["loc"]), data), _explain(err))
        for err in kept[: MAX_ERRORS + 1]
    ]
    return capped(shown, len(kept))


def capped(errors: list[FieldError], total: int | None = None) -> list[FieldError]:
    """The first MAX_ERRORS problems, and a count of the rest (of ``total`` problems when
    only the first are given)."""
    total = len(errors) if total is None else total
    if total <= MAX_ERRORS:
        return errors
    rest = total - MAX_ERRORS
    return [
        *errors[:MAX_ERRORS],
        FieldError(
            "",
            f"... and {rest} more problem{'s' * (rest != 1)} (the first {MAX_ERRORS} are listed)",
        ),
    ]
