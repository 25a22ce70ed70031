"""The guarded YAML/JSON loader: :func:`load_document` parses a file into plain Python data,
refusing (with an :class:`InstanceError` naming the file) anything too large, too deep, an
alias bomb, a syntax error or a key given twice, before any of it reaches the schema."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from planner.instance.errors import FieldError, InstanceError
from planner.instance.files import not_a_file
from planner.instance.messages import field_path
from planner.instance.schema import MAX_DIGITS

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

_MERGE_TAG = "tag:yaml.org,2002:merge"
#: Python refuses to turn text of more digits into an integer (sys.get_int_max_str_digits).
_INT_TEXT_DIGITS = 4300

#: Numbers in exponent form that YAML 1.1 (PyYAML's resolver) leaves as text but YAML 1.2,
#: JSON and every user read as numbers: ``2.0e9``, ``1e308``, ``5e-3``, ``.5E+2``. Read as
#: floats, so that a number written without quotes is a number (and a quoted one is text,
#: which number fields refuse).
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")


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

    def _construct_int(self, node: yaml.ScalarNode) -> int:
        """An integer, unless it has more digits than Python will read: that is refused with
        its line (one of up to 4,300 digits is read, and the schema names its field)."""
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > _INT_TEXT_DIGITS:
            raise _Refused(
                f"an integer of {digits} digits at line {node.start_mark.line + 1}; numbers may "
                f"have at most {MAX_DIGITS} digits"
            )
        value: int = self.construct_yaml_int(node)
        return value


_GuardedLoader.add_constructor("tag:yaml.org,2002:map", _GuardedLoader._construct_map)
_GuardedLoader.add_constructor("tag:yaml.org,2002:int", _GuardedLoader._construct_int)
_GuardedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789.")
)


def _parse_int(text: str) -> int:
    """A JSON integer, unless it has more digits than Python will read."""
    digits = len(text.lstrip("-"))
    if digits > _INT_TEXT_DIGITS:
        raise ValueError(
            f"an integer of {digits} digits; numbers may have at most {MAX_DIGITS} digits"
        )
    return int(text)


def check_shape(data: Any, file: str) -> None:
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
    why = not_a_file(path)
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
    # a UTF-8 byte-order mark (Windows editors write one) is not part of the document
    text = text.removeprefix("\ufeff")
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
                parse_int=_parse_int,
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
    check_shape(data, file)
    if duplicates:
        where = _locate(data, {id(d) for d, _, _ in duplicates})
        errors = []
        for obj, key, lines in duplicates:
            field = field_path((*where.get(id(obj), ()), key), data)
            errors.append(
                FieldError(
                    field,
                    f"key {key!r} is given twice" + (f" ({lines})" if lines else "") + "; keep one",
                )
            )
        raise InstanceError(file, errors)
    return data


def load_yaml_text(text: str, file: str) -> Any:
    """YAML text parsed as :func:`load_document` parses a YAML file (the guarded loader:
    YAML 1.2 numbers, limits); errors name ``file``."""
    loader = _GuardedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        raise InstanceError(file, [FieldError("", f"cannot parse: {_yaml_problem(e)}")]) from None
    finally:
        loader.dispose()


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")
