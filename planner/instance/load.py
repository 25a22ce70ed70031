"""The guarded YAML/JSON loader: :func:`load_document` parses a file into plain Python data,
refusing (with an :class:`InstanceError` naming the file) anything too large, too deep, an
alias bomb, a syntax error or a key given twice, before any of it reaches the schema."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from planner.instance.errors import FieldError, InstanceError
from planner.instance.files import not_a_file
from planner.instance.messages import field_path
from planner.instance.schema import MAX_DIGITS

#: Sizes are set by the largest real instance: a year of hours (8,760) x 20 regions x 4 GPU
#: types x 3 hourly series (capacity, on-demand and spot price) = 2,102,400 values, written
#: inline (2.28M with the regions' prices): 38 MB of YAML as PyYAML writes it (a value a
#: line), 13 MB of JSON; `planner.read` takes 3.4 s of CPU and 744 MB at its peak for either
#: (benchmarks/read_year.py; docs/benchmarks.md, "Reading a year").
MAX_FILE_BYTES = 64 * 1024 * 1024
#: YAML files have the same limit (long lists of plain numbers are read in bulk, not value
#: by value: :func:`_lift_numbers`).
MAX_YAML_BYTES = MAX_FILE_BYTES
MAX_DEPTH = 40
#: Alias uses (``*name``) a YAML document may make.
MAX_ALIASES = 200
#: Values that aliases may repeat, each use weighted by the expanded size of the node it names:
#: the classic "billion laughs" (9 aliases of 9 aliases ... of 9 strings, 9^9 strings in all)
#: passes this at its 46th alias use, while composing, before anything is expanded.
MAX_ALIAS_VALUES = 1_000_000
#: Values a document may hold, aliases expanded (counted after parsing).
MAX_NODES = 4_000_000
#: Values a document may write out (aliases not expanded): 2.1M for the largest real
#: instance (above), with room to spare. Counted while composing YAML and before parsing JSON.
MAX_WRITTEN = 3_000_000
#: Of those, values a YAML document may write other than in long lists of plain numbers:
#: each is composed and constructed one by one (about 20 us with libyaml's parser, 50 us
#: without), so this bounds reading to a few seconds. The largest shipped instance has 474;
#: a 200-phase quarter with hourly capacity written in block lists, 4,000 outside them.
MAX_COMPOSED = 250_000
#: A list of at least this many plain numbers (decimal integers and floats, as YAML 1.2 and
#: JSON write them) is read in bulk.
BULK_MIN = 32

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


class _Guards(Composer, SafeConstructor, Resolver):
    """The guards of a YAML loader, whatever parser feeds it events. It refuses, while
    composing and before building any Python object:

    - alias bombs: more than MAX_ALIASES alias uses, or aliases that would repeat more than
      MAX_ALIAS_VALUES values (each use counts the expanded size of the node it names);
    - recursive aliases (an alias to a node that contains it);
    - documents nested deeper than MAX_DEPTH, with more than MAX_COMPOSED values written
      (aliases not expanded) or more than MAX_NODES values (expanded);

    and records keys given twice in one mapping (``duplicates``: the mapping built, the key,
    the lines of both occurrences) so that the reader can name their path. Numbers follow
    YAML 1.2 (``2.0e9`` is a float); integers of more than 4,300 digits are refused."""

    if TYPE_CHECKING:  # the parser's side, from PyYAML's Parser or libyaml's CParser

        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...
        def dispose(self) -> None: ...

    def _guards_init(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
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
        if self._composed > MAX_COMPOSED:
            raise _Refused(
                f"document has more than {MAX_COMPOSED} values outside long lists of plain "
                "numbers; refusing it (write hourly series as lists of numbers or csv files)"
            )
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


# (the stubs bind add_constructor to PyYAML's own loader classes)
_Guards.add_constructor("tag:yaml.org,2002:map", _Guards._construct_map)  # type: ignore[type-var]
_Guards.add_constructor("tag:yaml.org,2002:int", _Guards._construct_int)  # type: ignore[type-var]
_Guards.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


class _GuardedLoader(Reader, Scanner, Parser, _Guards):
    """The guarded loader on PyYAML's pure-Python scanner and parser."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        self._guards_init()


def _libyaml_parser() -> Any:
    """libyaml's parser (``yaml.CParser``), scanning in C about four times faster than PyYAML's
    own; events feed the same guarded composer. Used only when installed and when it refuses
    nesting beyond its own depth limit (libyaml 0.2.5 and later; an older one, whose
    composer recursion is unbounded, is not used)."""
    try:
        from yaml.cyaml import CParser  # type: ignore[attr-defined]
    except ImportError:
        return None
    probe = CParser("[" * 5000 + "]" * 5000)
    try:
        while probe.get_event() is not None:
            pass
    except yaml.YAMLError:
        return CParser
    finally:
        probe.dispose()
    return None


_CPARSER: Any = _libyaml_parser()


def _loader(text: str, fast: bool) -> _Guards:
    """A guarded loader of ``text``: on libyaml's parser when ``fast`` and available."""
    if fast and _CPARSER is not None:
        return _CLoader(text)
    return _GuardedLoader(text)


if _CPARSER is not None:

    class _CLoader(_Guards, _CPARSER):
        """The guarded loader on libyaml's parser (events in C, composing in Python)."""

        def __init__(self, stream: str) -> None:
            _CPARSER.__init__(self, stream)
            self._guards_init()

        def dispose(self) -> None:
            _CPARSER.dispose(self)


#: A run of more digits than Python turns into an integer (in a number or in text).
_LONG_DIGITS = re.compile(rf"\d{{{_INT_TEXT_DIGITS + 1}}}")

# ----------------------------------------------------------------------------- bulk numbers
#
# An hourly series written inline is a long list of plain numbers; composing and constructing
# each as a YAML node is what made a year of hours slow to read (50 us a value with PyYAML's
# scanner, 20 us with libyaml's). Such lists are cut out of the text before parsing, each
# replaced by one placeholder element at the same line, and their numbers are read in bulk
# and put back in place after parsing. Only numbers that both YAML loaders and Python read
# alike qualify (decimal integers without leading zeros, decimal floats; YAML 1.2 as in
# JSON); any other list, or a placeholder that does not come back as a list element (the
# text was inside a string or a comment), leaves the whole document to the element-by-element
# path, whose result is the same.

#: ``[...]`` holding only characters of numbers, commas, spaces and line breaks, long enough
#: for BULK_MIN numbers.
_FLOW = re.compile(rf"\[(?P<body>[-+0-9.eE, \n]{{{2 * BULK_MIN - 1},}})\]")
#: At least BULK_MIN lines ``- 1.5`` at one indentation (a block list, or part of one).
_BLOCK = re.compile(
    r"^(?P<indent>[ ]*)- [-+0-9.eE]+[ ]*\r?\n"
    rf"(?:(?P=indent)- [-+0-9.eE]+[ ]*(?:\r?\n|\Z)){{{BULK_MIN - 1},}}",
    re.MULTILINE,
)
#: YAML anchors (``&name``): lists read in bulk would escape the alias limits' counting.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]")
_PLACEHOLDER = "__trainplan_numbers_"


def _numbers(text: str, sep: str) -> list[int | float] | None:
    """The plain numbers of a list's text (``sep`` between them), as the YAML loaders read
    them: integers as ``int``, the rest as ``float`` (``int`` and ``float`` skip the spaces
    around each). None when some token is not such a number or not read alike: an empty one,
    ``1e``, ``1.2.3``, ``+.5`` / ``-.5`` (text in YAML 1.1 without an exponent), an integer
    with a leading zero (``012`` is octal there, ``08`` text) or of more digits than Python
    reads. The list is then left to the loader."""
    if "-." in text or "+." in text or "_" in text:
        return None
    tokens = text.split(sep)
    try:
        if "." not in text and "e" not in text and "E" not in text:
            ints = list(map(int, tokens))
            # a leading zero shows as a digit the integers' own digits do not have
            digits = sum(text.count(d) for d in "0123456789")
            if digits != sum(map(len, map(str, ints))) - text.count("-"):
                return None
            return ints  # type: ignore[return-value]
        if text.count(".") == len(tokens):  # a point in every token (at most one each)
            return list(map(float, tokens))
        out: list[int | float] = []
        for t in tokens:
            if "." in t or "e" in t or "E" in t:
                out.append(float(t))
            else:
                digits_only = t.strip().lstrip("+-")
                if len(digits_only) > 1 and digits_only[0] == "0":
                    return None
                out.append(int(t))
        return out
    except ValueError:
        return None


def _lift_numbers(text: str) -> tuple[str, dict[str, list[int | float]]]:
    """``text`` with every long list of plain numbers replaced by a placeholder element on
    the same line (the other lines kept, so that every line and column a message names is
    the file's), and the numbers of each placeholder. Nothing is lifted from a document with
    anchors or that already holds the placeholder's prefix; one with more than MAX_WRITTEN
    numbers in such lists is refused before they are read."""
    if _PLACEHOLDER in text or ("&" in text and _ANCHOR.search(text)):
        return text, {}
    runs: dict[str, list[int | float]] = {}
    count = [0]

    def counted(n: int) -> None:
        """Refuse before reading more than MAX_WRITTEN numbers."""
        count[0] += n
        if count[0] > MAX_WRITTEN:
            raise _Refused(f"document has more than {MAX_WRITTEN} values; refusing it")

    def flow(m: re.Match[str]) -> str:
        body = m.group("body")
        n = body.count(",") + 1
        if n < BULK_MIN:
            return m.group(0)
        counted(n)
        values = _numbers(body, ",")
        if values is None:
            return m.group(0)
        key = f"{_PLACEHOLDER}{len(runs)}__"
        runs[key] = values
        lines = body.count("\n")
        if not lines:
            return f"[{key.ljust(len(body))}]"
        return f"[{key}" + "\n" * lines + " " * (len(body) - body.rfind("\n") - 1) + "]"

    def block(m: re.Match[str]) -> str:
        run = m.group(0)
        counted(run.count("\n") + 1)
        values = _numbers(run.replace("- ", "").strip(), "\n")  # one value a line
        if values is None:
            return run
        key = f"{_PLACEHOLDER}{len(runs)}__"
        runs[key] = values
        return f"{m.group('indent')}- {key}" + "\n" * run.count("\n")

    if "[" in text:
        text = _FLOW.sub(flow, text)
    if "- " in text:
        text = _BLOCK.sub(block, text)
    return text, runs


def _put_back(data: Any, runs: dict[str, list[int | float]]) -> set[int] | None:
    """Replace every placeholder element of a list in ``data`` by its numbers, in place, and
    return the ``id`` of every list that now holds numbers only. None (nothing changed)
    unless each placeholder is found exactly once, as a list element, and nowhere else (not
    in a key, not inside a string)."""
    found: dict[str, tuple[list[Any], int]] = {}
    stack: list[Any] = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and _PLACEHOLDER in k:
                    return None
                stack.append(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str) and v in runs and v not in found:
                    found[v] = (node, i)
                else:
                    stack.append(v)
        elif isinstance(node, str) and _PLACEHOLDER in node:
            return None
    if len(found) != len(runs):
        return None
    # several placeholders in one list (a block list broken by other entries): last first
    flat: set[int] = set()
    for key, (lst, i) in sorted(found.items(), key=lambda kv: (id(kv[1][0]), -kv[1][1])):
        if len(lst) == 1:
            flat.add(id(lst))
        lst[i : i + 1] = runs[key]
    return flat


def _load_yaml(text: str) -> tuple[Any, list[tuple[dict[Any, Any], Any, str]], set[int]]:
    """Parse YAML with the guarded loader: long lists of plain numbers read in bulk
    (:func:`_lift_numbers`), the rest on libyaml's parser where available. A syntax error
    found by libyaml is reported as PyYAML's own scanner words it (the same text is parsed
    again, without libyaml); a document whose lifted lists do not all come back as lists is
    parsed again without lifting. Returns the data, the keys given twice and the ``id`` of
    every list of numbers only that was read in bulk."""
    lifted, runs = _lift_numbers(text)
    total = sum(len(v) for v in runs.values())
    try:
        data, dups, composed = _compose(lifted, fast=True)
    except _Refused:
        raise
    except yaml.YAMLError:
        data, dups, composed = _compose(lifted, fast=False)
    flat = _put_back(data, runs) if runs else set()
    if flat is None:
        data, dups, composed = _compose(text, fast=True)
        flat, total, runs = set(), 0, {}
    if composed + total - len(runs) > MAX_WRITTEN:
        raise _Refused(f"document has more than {MAX_WRITTEN} values; refusing it")
    return data, dups, flat


def _compose(text: str, fast: bool) -> tuple[Any, list[tuple[dict[Any, Any], Any, str]], int]:
    """(data, keys given twice, values composed) of a YAML text, on the guarded loader."""
    loader = _loader(text, fast)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return data, loader.duplicates, loader._composed


def _parse_int(text: str) -> int:
    """A JSON integer, unless it has more digits than Python will read."""
    digits = len(text.lstrip("-"))
    if digits > _INT_TEXT_DIGITS:
        raise ValueError(
            f"an integer of {digits} digits; numbers may have at most {MAX_DIGITS} digits"
        )
    return int(text)


def check_shape(data: Any, file: str, flat: set[int] | frozenset[int] = frozenset()) -> None:
    """Reject documents nested deeper than MAX_DEPTH or with more than MAX_NODES values,
    counting shared (aliased) objects every time they are reachable. The error names the
    top-level field where the limit was crossed. Only containers are visited one by one (a
    list of a year of numbers counts as its length); lists whose ``id`` is in ``flat`` are
    known to hold no container."""
    if not isinstance(data, dict | list):
        return
    count = 1
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        node, depth, root = stack.pop()
        if depth > MAX_DEPTH:
            raise InstanceError(
                file,
                [FieldError(root, f"document nested deeper than {MAX_DEPTH} levels; refusing it")],
            )
        count += len(node)
        if count > MAX_NODES:
            raise InstanceError(
                file,
                [FieldError(root, f"document has more than {MAX_NODES} values; refusing it")],
            )
        if depth == MAX_DEPTH and node:
            raise InstanceError(
                file,
                [FieldError(root, f"document nested deeper than {MAX_DEPTH} levels; refusing it")],
            )
        if id(node) in flat:
            continue
        if depth == 0 and isinstance(node, dict):
            stack.extend((v, 1, str(k)) for k, v in node.items() if isinstance(v, dict | list))
        else:
            values = node.values() if isinstance(node, dict) else node
            stack.extend((v, depth + 1, root) for v in values if isinstance(v, dict | list))


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
        raise InstanceError(file, [FieldError("", f"file is {size} bytes; the limit is {limit}")])
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
    flat: set[int] = set()
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

            # integers are read by json itself unless the text may hold one of more digits
            # than Python reads (then each is checked, for the message)
            long_int = _LONG_DIGITS.search(text) is not None
            data = json.loads(
                text,
                object_pairs_hook=pairs_hook,
                parse_int=_parse_int if long_int else None,
                parse_constant=float if nan_as_float else _reject_constant,
            )
        else:
            data, duplicates, flat = _load_yaml(text)
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
    check_shape(data, file, flat)
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
