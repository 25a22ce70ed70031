"""One way in: :func:`read` loads a YAML or JSON instance, validates it once and resolves it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from planner.instance.errors import FieldError, InstanceError
from planner.instance.model import Instance
from planner.instance.schema import InstanceSpec, Phase
from planner.instance.series import SeriesError, resolve_series
from planner.physics.reliability import per_gpu_hour_from_node_days
from planner.physics.transformer import ModelDims, dims

MAX_FILE_BYTES = 32 * 1024 * 1024
#: YAML is scanned and composed in Python (about 2 MB/s for comments and long strings,
#: 17 us and 0.4 KB per value): a larger YAML file cannot be read in a few seconds.
MAX_YAML_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 40
#: Alias uses (``*name``) a YAML document may make.
MAX_ALIASES = 200
#: Values that aliases may repeat, each use weighted by the expanded size of the node it names:
#: the classic "billion laughs" (9 aliases of 9 aliases ... of 9 strings, 9^9 strings in all)
#: passes this at its 46th alias use, while composing, before anything is expanded.
MAX_ALIAS_VALUES = 1_000_000
MAX_NODES = 2_000_000
#: Values a document may write out (aliases not expanded), counted while composing YAML and
#: before parsing JSON. The largest shipped instance has 474; 200,000 YAML values compose in
#: about 3.5 s and 60 MB.
MAX_WRITTEN = 200_000
#: Problems listed in one InstanceError; the rest are counted.
MAX_ERRORS = 50
#: Nonzero magnitudes a number may take; work sizes and parameter counts up to LARGEST_SIZE.
#: Beyond them costs overflow (1e308 USD/MWh x kW = inf), divide by zero (5e-324 GB/s) or
#: defeat the solver's tolerances; no real instance comes near (tokens up to ~1e13, FLOPs
#: ~1e25, prices ~1e3, failure rates ~1e-5).
MAGNITUDE = (1e-12, 1e15)
LARGEST_SIZE = 1e30
_SIZE_KEYS = frozenset({"tokens", "flops", "params", "gpu_hours"})

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(yaml.YAMLError):
    """A document the reader will not load (too deep, too large once aliases expand)."""


class _GuardedLoader(yaml.SafeLoader):
    """SafeLoader that refuses, while composing and before building any Python object:

    - alias bombs: more than MAX_ALIASES alias uses, or aliases that would repeat more than
      MAX_ALIAS_VALUES values (each use counts the expanded size of the node it names);
    - recursive aliases (an alias to a node that contains it);
    - documents nested deeper than MAX_DEPTH or with more than MAX_NODES values (expanded);

    and records keys given twice in one mapping (``duplicates``: the mapping built, the key,
    the lines of both occurrences) so that the reader can name their path."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        #: expanded value count of every node composed so far (mapping keys not counted)
        self._sizes: dict[yaml.Node, int] = {}
        self._aliases = 0
        self._alias_values = 0
        self._depth = 0
        #: nodes composed so far (aliases not expanded): bounds memory while composing
        self._composed = 0
        self.duplicates: list[tuple[dict[Any, Any], Any, str]] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(str(event.anchor))
            if target is not None:
                if target not in self._sizes:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"recursive alias *{event.anchor} (an alias inside the node"
                        " it names) is not allowed",
                        event.start_mark,
                    )
                self._aliases += 1
                self._alias_values += self._sizes[target]
                line = event.start_mark.line + 1
                if self._aliases > MAX_ALIASES:
                    raise _Refused(
                        f"more than {MAX_ALIASES} YAML aliases (line {line}): "
                        "refusing a possible alias bomb"
                    )
                if self._alias_values > MAX_ALIAS_VALUES:
                    raise _Refused(
                        f"YAML aliases repeat more than {MAX_ALIAS_VALUES} values "
                        f"(line {line}): refusing a possible alias bomb"
                    )
            return super().compose_node(parent, index)
        if self._depth > MAX_DEPTH:
            raise _Refused(f"document nested deeper than {MAX_DEPTH} levels; refusing it")
        self._composed += 1
        if self._composed > MAX_WRITTEN:
            raise _Refused(f"document has more than {MAX_WRITTEN} values; refusing it")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None:
            return None
        if isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._sizes[v] for _, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes[v] for v in node.value)
        else:
            size = 1
        if size > MAX_NODES:
            raise _Refused(f"document has more than {MAX_NODES} values; refusing it")
        self._sizes[node] = size
        return node

    def _duplicate_keys(self, node: yaml.MappingNode) -> list[tuple[Any, str]]:
        """Scalar keys written twice in ``node`` itself (keys brought in by a ``<<`` merge
        may be overridden: that is what merging is for)."""
        first: dict[Any, int] = {}
        found: list[tuple[Any, str]] = []
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    found.append((key, f"lines {first[key]} and {line}"))
                else:
                    first[key] = line
            except TypeError:  # unhashable: the constructor reports it
                continue
        return found

    def _construct_map(self, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
        data: dict[Any, Any] = {}
        yield data
        dups = self._duplicate_keys(node)
        data.update(self.construct_mapping(node))
        self.duplicates.extend((data, key, lines) for key, lines in dups)


_GuardedLoader.add_constructor("tag:yaml.org,2002:map", _GuardedLoader._construct_map)


def _check_shape(data: Any, file: str) -> None:
    """Reject documents nested deeper than MAX_DEPTH or with more than MAX_NODES values,
    counting shared (aliased) objects every time they are reachable. The error names the
    top-level field where the limit was crossed."""
    count = 0
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        node, depth, root = stack.pop()
        count += 1
        if depth > MAX_DEPTH:
            raise InstanceError(
                file,
                [FieldError(root, f"document nested deeper than {MAX_DEPTH} levels; refusing it")],
            )
        if isinstance(node, dict | list):
            if count + len(node) > MAX_NODES:
                raise InstanceError(
                    file,
                    [FieldError(root, f"document has more than {MAX_NODES} values; refusing it")],
                )
            if depth == 0 and isinstance(node, dict):
                stack.extend((v, 1, str(k)) for k, v in node.items())
            else:
                values = node.values() if isinstance(node, dict) else node
                stack.extend((v, depth + 1, root) for v in values)
        elif count > MAX_NODES:
            raise InstanceError(
                file, [FieldError(root, f"document has more than {MAX_NODES} values; refusing it")]
            )


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file, or None when it is a regular file."""
    if path.is_file():
        return None
    if path.is_symlink() and not path.exists():
        return "is a symbolic link that leads nowhere (a loop or a missing target)"
    if path.is_dir():
        return "is a directory; expected a file"
    if path.exists():
        return "is not a regular file (a FIFO, socket or device); expected a file"
    return "does not exist"


def _yaml_problem(e: yaml.YAMLError) -> str:
    """The problem and where it is: ``expected ',' or '}', but got ':' at line 4, column 10
    (while parsing a flow mapping that starts at line 3)``; lines and columns count from 1."""
    if not isinstance(e, yaml.MarkedYAMLError):
        text = str(e).strip()
        return text.splitlines()[0] if text else type(e).__name__
    what = e.problem or e.context or type(e).__name__
    mark = e.problem_mark or e.context_mark
    text = str(what)
    if mark is not None:
        text += f" at line {mark.line + 1}, column {mark.column + 1}"
    if e.problem and e.context:
        text += f" ({e.context}"
        if e.context_mark is not None:
            text += f" that starts at line {e.context_mark.line + 1}"
        text += ")"
    return text


def _locate(data: Any, targets: set[int]) -> dict[int, tuple[Any, ...]]:
    """The pydantic-style location (keys and list indices) of every container in ``data``
    whose ``id`` is in ``targets``; the first path found when one is reachable twice."""
    found: dict[int, tuple[Any, ...]] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack and len(found) < len(targets):
        node, loc = stack.pop()
        if not isinstance(node, dict | list) or id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in targets:
            found.setdefault(id(node), loc)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((v, (*loc, k)) for k, v in items)
    return found


def load_document(path: Path, *, nan_as_float: bool = False) -> Any:
    """Parse YAML (safe loader, alias-limited) or JSON, by extension, with size limits.

    Refused with an :class:`InstanceError` naming the file: a missing, over-large, non-UTF-8
    or empty file; a syntax error (the problem and its line); a document too deep or too
    large (aliases expanded); a key given twice in one mapping (its path, and for YAML the
    lines). JSON's ``NaN`` and ``Infinity`` are refused as syntax unless ``nan_as_float``,
    which parses them as floats so that a schema check can name the field (:func:`read`)."""
    file = str(path)
    why = _not_a_file(path)
    if why is not None:
        raise InstanceError(
            file, [FieldError("", f"file {why}" if why == "does not exist" else why)]
        )
    size = path.stat().st_size
    is_json = path.suffix.lower() == ".json"
    limit = MAX_FILE_BYTES if is_json else MAX_YAML_BYTES
    if size > limit:
        raise InstanceError(
            file,
            [
                FieldError(
                    "",
                    f"file is {size} bytes; the limit is "
                    f"{limit}" + ("" if is_json else " for YAML (JSON may be larger)"),
                )
            ],
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InstanceError(file, [FieldError("", f"not UTF-8 text ({e.reason})")]) from None
    if not text.strip():
        raise InstanceError(
            file, [FieldError("", "the file is empty; expected a mapping of fields")]
        )
    duplicates: list[tuple[dict[Any, Any], Any, str]] = []
    # a JSON document of n values has at least n - 1 - (containers) commas: refuse one that
    # may hold more than MAX_WRITTEN values before building any of them
    if is_json and text.count(",") + text.count("[") + text.count("{") + 1 > MAX_WRITTEN:
        raise InstanceError(
            file, [FieldError("", f"document has more than {MAX_WRITTEN} values; refusing it")]
        )
    try:
        if is_json:

            def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
                obj = dict(pairs)
                if len(obj) < len(pairs):
                    seen: set[str] = set()
                    for k, _ in pairs:
                        if k in seen:
                            duplicates.append((obj, k, ""))
                        seen.add(k)
                return obj

            data = json.loads(
                text,
                object_pairs_hook=pairs_hook,
                parse_constant=float if nan_as_float else _reject_constant,
            )
        else:
            loader = _GuardedLoader(text)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
            duplicates = loader.duplicates
    except _Refused as e:
        raise InstanceError(file, [FieldError("", str(e))]) from None
    except yaml.YAMLError as e:
        raise InstanceError(file, [FieldError("", f"cannot parse: {_yaml_problem(e)}")]) from None
    except RecursionError:
        raise InstanceError(
            file, [FieldError("", f"document nested deeper than {MAX_DEPTH} levels; refusing it")]
        ) from None
    except (json.JSONDecodeError, ValueError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InstanceError(file, [FieldError("", f"cannot parse: {msg}")]) from None
    if data is None:
        raise InstanceError(
            file,
            [
                FieldError(
                    "",
                    "the document is empty (only comments or null); expected a mapping of fields",
                )
            ],
        )
    _check_shape(data, file)
    if duplicates:
        where = _locate(data, {id(d) for d, _, _ in duplicates})
        errors = []
        for obj, key, lines in duplicates:
            field = _loc((*where.get(id(obj), ()), key), data)
            errors.append(
                FieldError(
                    field,
                    f"key {key!r} is given twice" + (f" ({lines})" if lines else "") + "; keep one",
                )
            )
        raise InstanceError(file, errors)
    return data


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def read(path: str | Path) -> Instance:
    """Read, validate and resolve an instance file (``.yaml``, ``.yml`` or ``.json``)."""
    p = Path(path)
    data = load_document(p, nan_as_float=True)
    return from_dict(data, str(p), p.parent)


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


def _walk(loc: tuple[Any, ...], data: Any) -> tuple[str, int | None]:
    """A readable field path such as ``phases[1] (pretrain).options.precision[0]``, and the
    index in ``loc`` of the first tag pydantic put there (a union branch), if any.

    Walks ``data`` alongside pydantic's ``loc`` so that list items of mappings with a ``name``
    are labelled by it, and drops the tags pydantic puts in ``loc`` for union members and
    validators (``constrained-float``, ``function-after[...]``, ``tuple[int, ...]``) unless
    the document really has a key of that name. Keys holding a dot or a space are quoted:
    ``regions['us east'].pue``."""
    parts: list[str] = []
    first_tag: int | None = None
    node: Any = data
    for i, item in enumerate(loc):
        if isinstance(item, int) and isinstance(node, list | tuple):
            label = f"[{item}]"
            node = node[item] if -len(node) <= item < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str) and node["name"]:
                label += f" ({node['name']})"
            parts.append(label)
            continue
        key_present = isinstance(node, dict) and item in node
        text = str(item)
        if (
            not key_present
            and isinstance(item, str)
            and (item in _TAGS or "[" in item or item.startswith(("constrained-", "function-")))
        ):
            if first_tag is None:
                first_tag = i
            continue
        node = node[item] if key_present else None
        if text == "" or any(c in text for c in ". []'\""):
            parts.append(f"[{text!r}]")
        else:
            parts.append(("." if parts else "") + text)
    return "".join(parts), first_tag


def _loc(loc: tuple[Any, ...], data: Any) -> str:
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
    ``function-before[f(), datetime]`` -> ``time``); None when the tag is not understood."""
    inner = re.fullmatch(r"function-[a-z-]+\[.*, (.+)\]", tag)
    t = inner.group(1) if inner else tag
    t = t.removeprefix("constrained-")
    if t.startswith(("dict", "model")):
        return "mapping"
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
    for err in errs:
        loc = tuple(err["loc"])
        _, i = _walk(loc, data)
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
        return "unknown field"
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
    elif kind in ("string_too_short", "too_short") and "min_length" in ctx:
        n = ctx["min_length"]
        text = (
            f"expected at least {n} character{'s' if n != 1 else ''}"
            if kind.startswith("string")
            else f"expected at least {n} item{'s' * (n != 1)}"
        )
    elif kind in ("string_too_long", "too_long") and "max_length" in ctx:
        n = ctx["max_length"]
        text = (
            f"expected at most {n} character{'s' if n != 1 else ''}"
            if kind.startswith("string")
            else f"expected at most {n} item{'s' * (n != 1)}"
        )
    else:
        text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if text.startswith("Input should be "):
            text = "expected " + text.removeprefix("Input should be ")
        if isinstance(inp, dict) or "got" in text.split():
            return text
    return f"{text} (got {shown(inp)})"


def from_dict(data: Any, file: str, base_dir: Path) -> Instance:
    """Validate a parsed document and resolve it; every problem found is reported at once."""
    if not isinstance(data, dict):
        raise InstanceError(
            file,
            [FieldError("", f"expected a mapping at the top level, got {type(data).__name__}")],
        )
    # documents built in Python (not parsed) may share sub-objects: bound them here too
    _check_shape(data, file)
    try:
        spec = InstanceSpec.model_validate(data)
    except ValidationError as e:
        raise InstanceError(
            file,
            _capped(
                [
                    FieldError(_loc(tuple(err["loc"]), data), _explain(err))
                    for err in _plain_branch(e.errors(), data)
                ]
            ),
        ) from None
    errors: list[FieldError] = []
    _check_magnitudes(data, errors)
    _check_references(spec, errors)
    if errors:
        raise InstanceError(file, _capped(errors))
    return _resolve(spec, data, file, base_dir)


def _capped(errors: list[FieldError]) -> list[FieldError]:
    """The first MAX_ERRORS problems, and a count of the rest."""
    if len(errors) <= MAX_ERRORS:
        return errors
    rest = len(errors) - MAX_ERRORS
    return [
        *errors[:MAX_ERRORS],
        FieldError(
            "",
            f"... and {rest} more problem{'s' * (rest != 1)} (the first {MAX_ERRORS} are listed)",
        ),
    ]


def _check_magnitudes(data: Any, errors: list[FieldError]) -> None:
    """Append an error for every nonzero number outside MAGNITUDE (keys in _SIZE_KEYS: above
    LARGEST_SIZE), with its readable path."""
    low, high = MAGNITUDE
    stack: list[tuple[Any, tuple[Any, ...], str]] = [(data, (), "")]
    while stack:
        node, loc, key = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, (*loc, k), str(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*loc, i), key) for i, v in enumerate(node))
        elif (
            isinstance(node, int | float)
            and not isinstance(node, bool)
            and node != 0
            and math.isfinite(node)
        ):
            top = LARGEST_SIZE if key in _SIZE_KEYS else high
            if not low <= abs(node) <= top:
                errors.append(
                    FieldError(
                        _loc(loc, data),
                        f"expected 0 or a magnitude between {low:g} and "
                        f"{top:g} (got {node:g}); is the unit right?",
                    )
                )


def _hour_of(spec: InstanceSpec, when: int | datetime) -> int | float:
    """Hours from the horizon start (NaN for a date-time without a UTC offset)."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            return math.nan
        return (when - spec.horizon.start).total_seconds() / 3600.0
    return when


def _window(spec: InstanceSpec, p: Phase) -> tuple[int, int]:
    """The phase's hour slots ``release <= t < deadline``: slot ``t`` covers ``[t, t + 1)``
    hours from the start, so a release between whole hours rounds up (06:30 -> slot 7, the
    first that starts no earlier) and a deadline rounds down (10:30 -> 10, slot 9 is the last
    that ends by then)."""
    rel = _hour_of(spec, p.release)
    dl = spec.horizon.hours if p.deadline is None else _hour_of(spec, p.deadline)
    return math.ceil(rel), math.floor(dl)


def _check_references(spec: InstanceSpec, errors: list[FieldError]) -> None:
    """Append an error for every name that refers to nothing (GPU types, regions, models,
    phases, storage tiers, families), every release/deadline that is naive, outside the
    horizon or leaves no whole hour slot, and (when all names resolve) a precedence cycle."""
    gpus, regions = spec.gpu_types, spec.regions
    names = [p.name for p in spec.phases]
    known_names = set(names)
    seen: set[str] = set()
    for i, p in enumerate(spec.phases):
        where = f"phases[{i}] ({p.name})"
        if p.name in seen:
            errors.append(FieldError(f"{where}.name", f"duplicate phase name {p.name!r}"))
        seen.add(p.name)
        for q in p.predecessors:
            if q not in known_names:
                errors.append(
                    FieldError(f"{where}.predecessors", f"unknown phase {q!r}; phases are {names}")
                )
            if q == p.name:
                errors.append(FieldError(f"{where}.predecessors", "a phase cannot precede itself"))
        for g in p.gpu_types or ():
            if g not in gpus:
                errors.append(
                    FieldError(
                        f"{where}.gpu_types", f"unknown GPU type {g!r}; known: {sorted(gpus)}"
                    )
                )
        for r in p.regions or ():
            if r not in regions:
                errors.append(
                    FieldError(
                        f"{where}.regions", f"unknown region {r!r}; known: {sorted(regions)}"
                    )
                )
        if p.model is not None and p.model not in spec.models:
            errors.append(
                FieldError(
                    f"{where}.model", f"unknown model {p.model!r}; known: {sorted(spec.models)}"
                )
            )
        if p.work.gpu is not None and p.work.gpu not in gpus:
            errors.append(
                FieldError(
                    f"{where}.work.gpu", f"unknown GPU type {p.work.gpu!r}; known: {sorted(gpus)}"
                )
            )
        if (
            p.work.gpu_hours is not None
            and p.work.gpu in gpus
            and not gpus[p.work.gpu].peak_tflops.get(p.work.precision)
        ):
            errors.append(
                FieldError(
                    f"{where}.work.precision",
                    f"GPU type {p.work.gpu!r} has no peak_tflops at "
                    f"{p.work.precision!r}, so its GPU-hours say nothing "
                    "about the work; give a precision it has",
                )
            )
        if p.work.tokens is not None and p.model is None:
            errors.append(
                FieldError(f"{where}.work.tokens", "work in tokens needs the phase's 'model' (6ND)")
            )
        if isinstance(p.mfu, dict):
            for g in p.mfu:
                if g not in gpus:
                    errors.append(FieldError(f"{where}.mfu", f"unknown GPU type {g!r}"))
        if p.data.home_region is not None and p.data.home_region not in regions:
            errors.append(
                FieldError(f"{where}.data.home_region", f"unknown region {p.data.home_region!r}")
            )
        rel = _hour_of(spec, p.release)
        dl = spec.horizon.hours if p.deadline is None else _hour_of(spec, p.deadline)
        naive = False
        for fname, when in (("release", p.release), ("deadline", p.deadline)):
            if isinstance(when, datetime) and when.tzinfo is None:
                naive = True
                errors.append(
                    FieldError(
                        f"{where}.{fname}",
                        "expected a time with a UTC offset, e.g. "
                        "2023-06-06T12:00:00Z, or an hour number "
                        f"(got {when.isoformat()})",
                    )
                )
        if naive:
            continue
        if dl <= rel:
            errors.append(
                FieldError(
                    f"{where}.deadline",
                    f"deadline (hour {dl:g}) must be after release (hour {rel:g})",
                )
            )
        elif math.floor(dl) <= math.ceil(rel):
            errors.append(
                FieldError(
                    f"{where}.deadline",
                    f"no whole hour slot between release (hour {rel:g}, "
                    f"slots from {math.ceil(rel)}) and deadline (hour {dl:g}, "
                    f"slots before {math.floor(dl)})",
                )
            )
        if rel < 0 or rel >= spec.horizon.hours:
            errors.append(
                FieldError(
                    f"{where}.release",
                    f"release hour {rel:g} is outside the horizon [0, {spec.horizon.hours})",
                )
            )
        if dl > spec.horizon.hours:
            errors.append(
                FieldError(
                    f"{where}.deadline",
                    f"deadline hour {dl:g} is after the horizon end ({spec.horizon.hours})",
                )
            )
        for t in p.options.storage_tiers or ():
            if not any(t in r.storage for r in regions.values()):
                errors.append(
                    FieldError(
                        f"{where}.options.storage_tiers", f"no region has a storage tier {t!r}"
                    )
                )
    for rname, region in regions.items():
        for part, keys in (("capacity", region.capacity), ("offers", region.offers)):
            for g in keys:
                if g not in gpus:
                    errors.append(
                        FieldError(
                            f"regions.{rname}.{part}.{g}",
                            f"unknown GPU type {g!r}; known: {sorted(gpus)}",
                        )
                    )
        for g, cap in region.capacity.items():
            if isinstance(cap, tuple) and len(cap) < spec.horizon.hours:
                errors.append(
                    FieldError(
                        f"regions.{rname}.capacity.{g}",
                        f"expected {spec.horizon.hours} hourly values (the "
                        f"horizon), got {len(cap)}",
                    )
                )
        for other in region.transfer_usd_per_gb:
            if other not in regions:
                errors.append(
                    FieldError(f"regions.{rname}.transfer_usd_per_gb", f"unknown region {other!r}")
                )
    for fam in spec.families:
        if not any(g.family == fam for g in gpus.values()):
            errors.append(FieldError(f"families.{fam}", "no GPU type belongs to this family"))
    if not errors:
        cycle = _find_cycle(spec.phases)
        if cycle:
            errors.append(FieldError("phases", "precedence cycle: " + " -> ".join(cycle)))


def _find_cycle(phases: tuple[Phase, ...]) -> list[str] | None:
    """A precedence cycle (``[a, b, ..., a]``) or None, by an iterative depth-first search
    over predecessor edges: O(phases + edges), no recursion."""
    preds = {p.name: p.predecessors for p in phases}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in preds:
        if root in state:
            continue
        path = [root]
        state[root] = 1
        todo = [iter(preds[root])]
        while todo:
            q = next(todo[-1], None)
            if q is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(q) == 1:
                return [*path[path.index(q) :], q]
            elif q not in state:
                state[q] = 1
                path.append(q)
                todo.append(iter(preds[q]))
    return None


def _topological(phases: tuple[Phase, ...]) -> tuple[str, ...]:
    """Phase names with every phase after its predecessors (Kahn 1962), ties in file order:
    O(phases + edges)."""
    import heapq

    index = {p.name: i for i, p in enumerate(phases)}
    waiting = {p.name: len(set(p.predecessors)) for p in phases}
    after: dict[str, list[str]] = {p.name: [] for p in phases}
    for p in phases:
        for q in set(p.predecessors):
            after[q].append(p.name)
    ready = [index[n] for n, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    done: list[str] = []
    while ready:
        name = phases[heapq.heappop(ready)].name
        done.append(name)
        for n in after[name]:
            waiting[n] -= 1
            if waiting[n] == 0:
                heapq.heappush(ready, index[n])
    return tuple(done)


def _resolve(spec: InstanceSpec, data: Any, file: str, base_dir: Path) -> Instance:
    """Resolve every series to one value per horizon hour (price = series x scale + adder,
    USD/MWh), capacities to hourly arrays, release/deadline to hour slots (:func:`_window`)
    and failure rates per GPU type; arrays are read-only and mappings are read-only views."""
    errors: list[FieldError] = []
    T, start = spec.horizon.hours, spec.horizon.start
    price: dict[str, np.ndarray] = {}
    carbon: dict[str, np.ndarray | None] = {}
    capacity: dict[tuple[str, str], np.ndarray] = {}
    for rname, r in spec.regions.items():
        try:
            prices = (
                resolve_series(r.electricity, start, T, r.timezone, base_dir)
                + r.price_adder_usd_per_mwh
            )
            prices.setflags(write=False)
            price[rname] = prices
        except SeriesError as e:
            errors.append(FieldError(f"regions.{rname}.electricity", str(e)))
        carbon[rname] = None
        if r.carbon_intensity is not None:
            try:
                ci = resolve_series(r.carbon_intensity, start, T, r.timezone, base_dir)
                if np.any(ci < 0):
                    errors.append(
                        FieldError(
                            f"regions.{rname}.carbon_intensity", "expected non-negative gCO2/kWh"
                        )
                    )
                carbon[rname] = ci
            except SeriesError as e:
                errors.append(FieldError(f"regions.{rname}.carbon_intensity", str(e)))
        for g, cap in r.capacity.items():
            arr = np.asarray(cap[:T] if isinstance(cap, tuple) else [cap] * T, dtype=float)
            arr.setflags(write=False)
            capacity[(rname, g)] = arr
    if errors:
        raise InstanceError(file, errors)
    models: dict[str, ModelDims] = {}
    warnings: list[str] = []
    for mname, m in spec.models.items():
        models[mname] = dims(
            m.params,
            m.layers,
            m.hidden,
            m.heads,
            m.seq_len,
            m.vocab,
            m.optimizer,
            m.flash_attention,
        )
        if models[mname].inferred:
            md = models[mname]
            warnings.append(
                f"models.{mname}: architecture inferred from params (L={md.layers},"
                f" h={md.hidden}, heads={md.heads}); give layers/hidden for accuracy"
            )
    windows = {p.name: _window(spec, p) for p in spec.phases}
    fr: dict[str, float] = {}
    for gname, gpu in spec.gpu_types.items():
        if gpu.failures_per_gpu_hour is not None:
            fr[gname] = gpu.failures_per_gpu_hour
        elif gpu.failures_per_1000_node_days is not None:
            fr[gname] = per_gpu_hour_from_node_days(
                gpu.failures_per_1000_node_days, gpu.gpus_per_node
            )
        else:
            fr[gname] = spec.failure.failures_per_gpu_hour
    return Instance(
        spec=spec,
        source=file,
        raw=data,
        base_dir=base_dir,
        price=MappingProxyType(price),
        carbon=MappingProxyType(carbon),
        capacity=MappingProxyType(capacity),
        release=MappingProxyType({n: w[0] for n, w in windows.items()}),
        deadline=MappingProxyType({n: w[1] for n, w in windows.items()}),
        models=MappingProxyType(models),
        order=_topological(spec.phases),
        failures_per_gpu_hour=MappingProxyType(fr),
        warnings=tuple(warnings),
    )


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
