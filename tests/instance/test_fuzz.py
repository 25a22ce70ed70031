"""Fuzzed instances: the shipped instances and tests/data/tiny.yaml, parsed, then mutated at
random paths (fields dropped, duplicated, retyped; extreme numbers; huge lists; unicode,
control-character and duplicate names; wrong units), must each end in one of

- ``invalid``: an :class:`~planner.instance.InstanceError` for the fuzz source, every line
  naming a field path rooted at a top-level field of the document, with a message in the
  reader's words (no pydantic boilerplate, no traceback);
- ``valid``: the instance reads, its numerical hygiene check and the ``trainplan check``
  summary run;
- ``plan``: (solve cases) a plan that the independent checker (planner.checker.verify)
  accepts, from the chosen solver and from the baseline;
- ``infeasible`` / ``no_configuration`` / ``time_limit``: (solve cases) no plan, with a
  message saying why;

never another exception, never a solver ``error`` result, and never a hang: each case runs
under a wall-clock alarm (:data:`CASE_DEADLINE_S`). And never a leak: a planted secret file
outside the instance's folder (:func:`world`) and the process environment (what
``/proc/self/environ`` holds) appear in no message, warning or summary of any case.

Besides the random mutations (drop, duplicate, retype, extreme numbers, huge lists, renames,
unit mistakes), families aimed at what issue 16 found: file references of csv series
(absolute paths, ``..``, symbolic links in and out of the folder, ``/proc``, FIFOs,
directories, with and without a data root), time zones of regions and of csv series, huge
integers, markup and control characters in names (a valid name must come out literally
through the console the CLI prints with), quoted numbers (always refused), option lists,
phases and regions at and over their caps, and instances whose phases are all done (an
empty optimal plan).

Bugs the fuzzer found that are not fixed yet are recognised narrowly (:func:`known_bug`) and
counted as ``known:<id>`` outcomes (:data:`KNOWN`); each has a minimal xfail(strict=True)
test at the end of this file (or in test_hostile.py) whose reason says what to change. Any
other failure fails the test, and hypothesis prints the mutations that led to it.

The default run tries :data:`SHORT_EXAMPLES` cases (derandomised: the same cases every run).
``pytest -m fuzz_long tests/instance/test_fuzz.py -s`` runs :data:`LONG_EXAMPLES` random cases, most
of them validation only and a share (:data:`LONG_SOLVE_PERCENT` of the tiny-based ones) solved,
and prints how many cases ended in each outcome and how often each family was drawn.
"""

from __future__ import annotations

import atexit
import copy
import functools
import io
import math
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from fuzz_surfaces import FAMILIES as SURFACES
from fuzz_surfaces import SurfaceCase, surface_cases
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from planner.analysis.summary import summarize
from planner.checker import verify
from planner.instance import InstanceError
from planner.instance.read import from_dict, load_document
from planner.instance.schema import (
    MAX_CHOICES,
    MAX_DIGITS,
    MAX_FRACTIONS,
    MAX_GPU_COUNTS,
    MAX_PHASES,
    MAX_REGIONS,
    InstanceSpec,
)
from planner.interfaces.cli.check import render
from planner.model.hygiene import check_numerics
from planner.model.result import Result, Termination
from planner.solve import solve
from planner.terminal import TextConsole, shown

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
BASES: dict[str, Path] = {
    "tiny": DATA / "tiny.yaml",
    "small-finetune": ROOT / "instances" / "small-finetune.yaml",
    "week-7b": ROOT / "instances" / "week-7b.yaml",
    "month-70b": ROOT / "instances" / "month-70b.yaml",
}
#: Bases small enough to solve within the per-case deadline.
SOLVABLE = ("tiny",)
#: The name every fuzzed document is read under; errors must name it.
SOURCE = "<fuzz>"
SOLVE_TIME_LIMIT_S = 2.0
CASE_DEADLINE_S = 45.0
SHORT_EXAMPLES = 150
SHORT_SOLVE_PERCENT = 30
LONG_EXAMPLES = 10_000
LONG_SOLVE_PERCENT = 15
#: Share of the long run's cases drawn from the surface families (tests/fuzz_surfaces.py).
LONG_SURFACE_PERCENT = 30
#: Surface cases of the default run (derandomised).
SHORT_SURFACE_EXAMPLES = 90

NO_PLAN = {
    Termination.INFEASIBLE.value,
    Termination.NO_CONFIGURATION.value,
    Termination.TIME_LIMIT.value,
}
OUTCOMES = {"invalid", "valid", "valid+warnings", "plan", *NO_PLAN}

Key = str | int
Where = tuple[Key, ...]
Draw = Callable[[st.SearchStrategy[Any]], Any]


@functools.cache
def _parsed(name: str) -> dict[str, Any]:
    doc = load_document(BASES[name])
    assert isinstance(doc, dict)
    return doc


def fresh(name: str) -> dict[str, Any]:
    return copy.deepcopy(_parsed(name))


# ----------------------------------------------------------------------------- paths


def walk(node: Any, where: Where = ()) -> Iterator[Where]:
    """Every path below ``node`` (mapping keys and list indices), parents before children."""
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return
    for k, v in items:
        yield (*where, k)
        yield from walk(v, (*where, k))


def parent(doc: Any, where: Where) -> Any:
    node = doc
    for k in where[:-1]:
        node = node[k]
    return node


def is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


# ----------------------------------------------------------------------------- pools

EXTREMES: list[Any] = [
    0,
    -0.0,
    -1,
    -1e-9,
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -1e308,
    1e-308,
    5e-324,
    2**63,
    10**30,
    1e15,
]
NAMES: list[str] = [
    "🚀",
    "🇩🇪 Frankfurt",
    "\u202eRTL-override\u202c",
    "مركز البيانات",
    "עברית",
    "a\x00b",
    "",
    " ",
    "\t",
    "x" * 300,
    "a.b",
    "a[0]",
    "0",
    "null",
    "日本語",
    "é",
    "e\u0301",
    "A100",
    "east",
    "prep",
    "zero\u200bwidth",
    # markup, emoji codes and terminal escapes: valid names print literally, the others are
    # refused and shown escaped
    "[/]",
    "[bold]",
    "[red]x[/red]",
    ":x:",
    ":warning: done",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "a\x9bb",
]


SUFFIXES: list[str] = ["2", " ", "🚀", "é", "\u202e", "\x00", ".x"]


def as_list(v: Any) -> list[Any]:
    """``v`` if it is a list, else [] (an earlier mutation may have retyped a section, e.g.
    ``phases: true``: the later ones then find nothing to change there)."""
    return v if isinstance(v, list) else []


def as_text(old: Any) -> str:
    """``str(old)``; an integer of more digits than Python converts (4,300) as that many
    nines, as text (the long fuzz run drew one from the "huge integer" family)."""
    try:
        return str(old)
    except ValueError:
        return "9" * 5000


def retypes(old: Any) -> list[Any]:
    return [
        None,
        True,
        False,
        "text",
        "",
        3,
        2.5,
        -7,
        [],
        {},
        [old],
        {"k": old},
        "2023-06-05T00:00:00Z",
        as_text(old),
    ]


# ----------------------------------------------------------------------------- mutations


def op_drop(draw: Draw, doc: dict[str, Any]) -> str:
    where = draw(st.sampled_from(list(walk(doc))))
    del parent(doc, where)[where[-1]]
    return f"drop {where}"


def op_duplicate(draw: Draw, doc: dict[str, Any]) -> str:
    """A list item twice (a phase twice: a duplicate name), or a mapping entry copied under
    a new key (a second region, GPU or model named with a suffix; elsewhere a stray field)."""
    where = draw(st.sampled_from(list(walk(doc))))
    up = parent(doc, where)
    value = copy.deepcopy(up[where[-1]])
    if isinstance(up, list):
        up.insert(int(where[-1]) + 1, value)
        return f"duplicate item {where}"
    new = f"{where[-1]}{draw(st.sampled_from(SUFFIXES))}"
    up[new] = value
    return f"duplicate {where} as {new!r}"


def op_retype(draw: Draw, doc: dict[str, Any]) -> str:
    where = draw(st.sampled_from(list(walk(doc))))
    up = parent(doc, where)
    up[where[-1]] = value = draw(st.sampled_from(retypes(up[where[-1]])))
    return f"retype {where} = {value!r:.60}"


def op_extreme(draw: Draw, doc: dict[str, Any]) -> str:
    paths = list(walk(doc))
    numeric = [w for w in paths if is_number(parent(doc, w)[w[-1]])]
    where = draw(st.sampled_from(numeric or paths))
    parent(doc, where)[where[-1]] = value = draw(st.sampled_from(EXTREMES))
    return f"extreme {where} = {value!r}"


def op_huge_list(draw: Draw, doc: dict[str, Any], most: int) -> str:
    """A list repeated to n items (or a leaf turned into a list of n copies)."""
    paths = list(walk(doc))
    lists = [w for w in paths if isinstance(parent(doc, w)[w[-1]], list)]
    where = draw(st.sampled_from(lists + paths if draw(st.booleans()) else paths))
    up = parent(doc, where)
    n = draw(st.integers(100, most))
    old = up[where[-1]]
    item = old[0] if isinstance(old, list) and old else old
    up[where[-1]] = [copy.deepcopy(item) if isinstance(item, dict | list) else item] * n
    return f"huge list {where} x {n}"


def _rename_everywhere(node: Any, old: str, new: str) -> Any:
    """A copy of ``node`` with every mapping key and string value equal to ``old`` renamed."""
    if isinstance(node, dict):
        return {(new if k == old else k): _rename_everywhere(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename_everywhere(v, old, new) for v in node]
    return new if node == old else node


def op_rename(draw: Draw, doc: dict[str, Any]) -> str:
    """A GPU type, region, model or phase renamed to a unicode, control-character, empty,
    very long or colliding name; everywhere (references follow) or only where defined."""
    names: list[str] = []
    for section in ("gpu_types", "regions", "models"):
        if isinstance(doc.get(section), dict):
            names.extend(str(k) for k in doc[section])
    if isinstance(doc.get("phases"), list):
        names.extend(
            str(p["name"])
            for p in doc["phases"]
            if isinstance(p, dict) and isinstance(p.get("name"), str)
        )
    if not names:
        return "rename: nothing to rename"
    old = draw(st.sampled_from(names))
    new = draw(st.sampled_from(NAMES))
    if draw(st.booleans()):
        renamed = _rename_everywhere(doc, old, new)
        doc.clear()
        doc.update(renamed)
        return f"rename {old!r} -> {new!r} everywhere"
    for section in ("gpu_types", "regions", "models"):
        table = doc.get(section)
        if isinstance(table, dict) and old in table:
            doc[section] = {(new if k == old else k): v for k, v in table.items()}
            return f"rename {section}.{old!r} -> {new!r} (references left)"
    for p in as_list(doc.get("phases")):
        if isinstance(p, dict) and p.get("name") == old:
            p["name"] = new
    return f"rename phase {old!r} -> {new!r} (references left)"


def _times(x: Any, factor: float) -> Any:
    """``x * factor``; a huge integer (beyond floats) is left as it is."""
    try:
        return x * factor
    except OverflowError:
        return x


def _scale_all(node: Any, keys: set[str], factor: float) -> None:
    """Multiply every number under a key in ``keys`` (anywhere in the document) by factor."""
    if isinstance(node, dict):
        for k, v in list(node.items()):
            if k in keys and is_number(v):
                node[k] = _times(v, factor)
            elif k in keys and isinstance(v, dict):
                for kk, vv in v.items():
                    if is_number(vv):
                        v[kk] = _times(vv, factor)
            else:
                _scale_all(v, keys, factor)
    elif isinstance(node, list):
        for v in node:
            _scale_all(v, keys, factor)


def _per_kwh(doc: dict[str, Any]) -> None:
    """Electricity given in USD/kWh: every series value, band, adder and CSV scale / 1000."""
    regions = doc.get("regions")
    for region in regions.values() if isinstance(regions, dict) else []:
        if not isinstance(region, dict):
            continue
        if is_number(region.get("price_adder_usd_per_mwh")):
            region["price_adder_usd_per_mwh"] = _times(region["price_adder_usd_per_mwh"], 1e-3)
        series = region.get("electricity")
        if not isinstance(series, dict):
            continue
        if "csv" in series:
            series["scale"] = _times(series.get("scale") or 1.0, 1e-3)
        _scale_all(series, {"constant", "default", "weekend", "holiday", "price"}, 1e-3)
        if isinstance(series.get("values"), list):
            series["values"] = [_times(v, 1e-3) if is_number(v) else v for v in series["values"]]


UNITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "memory in bytes": lambda d: _scale_all(d.get("gpu_types"), {"memory_gb"}, 1e9),
    "prices per kWh": _per_kwh,
    "power in kW": lambda d: _scale_all(
        d.get("gpu_types"), {"board_power_w", "idle_power_w", "node_overhead_w"}, 1e-3
    ),
    "rental in cents": lambda d: _scale_all(d.get("regions"), {"usd_per_gpu_hour"}, 100.0),
    "tokens in billions": lambda d: _scale_all(d.get("phases"), {"tokens"}, 1e-9),
    "FLOP/s for TFLOPS": lambda d: _scale_all(d.get("gpu_types"), {"peak_tflops"}, 1e12),
    "capacity in thousands": lambda d: _scale_all(d.get("regions"), {"capacity"}, 1e-3),
    "failures per 1000 GPU-hours": lambda d: d.__setitem__(
        "failure", {"failures_per_gpu_hour": 20.0}
    ),
}


def op_units(draw: Draw, doc: dict[str, Any]) -> str:
    which = draw(st.sampled_from(sorted(UNITS)))
    UNITS[which](doc)
    return f"units: {which}"


# ----------------------------------------------------------------------------- files


@dataclass(frozen=True)
class World:
    """Files that fuzzed csv references point at, made once per process in a temporary
    folder: ``inst`` is the instance folder (a valid prices file, links in and out, a FIFO, a
    folder), ``secret`` a sibling folder with a file that must never be shown, and the
    ``leaks`` no message may contain (the secret's lines, the process environment)."""

    root: Path
    inst: Path
    secret: Path
    leaks: tuple[str, ...]


@functools.cache
def world() -> World:
    root = Path(tempfile.mkdtemp(prefix="trainplan-fuzz-"))
    atexit.register(shutil.rmtree, root, True)
    inst, secret = root / "inst", root / "secret"
    (inst / "sub").mkdir(parents=True)
    secret.mkdir()
    token = secrets.token_hex(8)
    rows = [f"SECRET_HEADER_{token},time", f"SECRET_ROW_{token},2023-06-05T00:00"]
    (secret / "secret.txt").write_text("\n".join(rows) + "\n")
    # the same secret, as a csv the data root lets in: its header may be named (quoted, cut)
    # but its rows never
    (secret / "secret.csv").write_text("time,price\n" + f"SECRET_CELL_{token},1\n")
    prices = (DATA / "fixture_prices_newyork.csv").read_text()
    (inst / "prices.csv").write_text(prices)
    (inst / "sub" / "prices.csv").write_text(prices)
    (inst / "dir.csv").mkdir()
    links = {
        "link_inside.csv": "prices.csv",
        "link_secret.csv": "../secret/secret.txt",
        "link_secret_csv.csv": "../secret/secret.csv",
        "link_environ.csv": "/proc/self/environ",
        "link_loop.csv": "link_loop.csv",
        "link_dev.csv": "/dev/zero",
    }
    if hasattr(os, "symlink"):
        for name, target in links.items():
            (inst / name).symlink_to(target)
    if hasattr(os, "mkfifo"):
        os.mkfifo(inst / "fifo.csv")
    leaks = [f"SECRET_ROW_{token}", f"SECRET_CELL_{token}", f"SECRET_HEADER_{token}"]
    try:
        environ = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace")
        leaks += [e for e in environ.split("\0") if len(e) >= 16 and "=" in e]
    except OSError:
        pass
    return World(root, inst, secret, tuple(leaks))


def csv_refs() -> list[str]:
    w = world()
    return [
        "prices.csv",
        "./prices.csv",
        "sub/../prices.csv",
        "sub/prices.csv",
        "link_inside.csv",
        str(w.inst / "prices.csv"),  # absolute, inside: refused without a data root
        "../secret/secret.txt",
        "../secret/secret.csv",
        "../../" * len(w.inst.parts) + "etc/passwd",
        str(w.secret / "secret.txt"),
        "link_secret.csv",
        "link_secret_csv.csv",
        "/proc/self/environ",
        "link_environ.csv",
        "link_loop.csv",
        "link_dev.csv",
        "/dev/zero",
        "fifo.csv",
        "dir.csv",
        "missing.csv",
        "",
        "\x00.csv",
        "x" * 5000,
    ]


COLUMNS = ["price", "time", "", "SECRET", "nope", "[/]", "\x1b[31m"]
TIMEZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Etc/GMT+14",
    "EST5EDT",
    "Mars/Olympus",
    "",
    "utc",
    "+02:00",
    "America/New_York ",
    "../../etc/passwd",
    "/etc/localtime",
    "posix/Europe/Berlin",
    "right/UTC",
    "localtime",
    "\x00",
    "A" * 300,
    "Europe/Berlin\n",
]


def _tiny_region(draw: Draw, doc: dict[str, Any]) -> dict[str, Any] | None:
    regions = doc.get("regions")
    if not isinstance(regions, dict):
        return None
    names = [k for k, v in regions.items() if isinstance(v, dict)]
    return regions[draw(st.sampled_from(names))] if names else None


def op_file_ref(draw: Draw, doc: dict[str, Any]) -> str:
    """A region's electricity or carbon intensity read from a csv reference (valid, outside
    the folder, a link, /proc, a FIFO, a folder, missing), with drawn column names."""
    region = _tiny_region(draw, doc)
    if region is None:
        return "file ref: no region"
    field = draw(st.sampled_from(["electricity", "electricity", "carbon_intensity"]))
    ref = draw(st.sampled_from(csv_refs()))
    series: dict[str, Any] = {
        "csv": ref,
        "column": draw(st.sampled_from(COLUMNS[:2] + COLUMNS)),
        "time_column": draw(st.sampled_from(["time", "time", *COLUMNS])),
    }
    if draw(st.booleans()):
        series["timezone"] = draw(st.sampled_from(TIMEZONES))
    region[field] = series
    return f"file ref {field} = {series!r:.120}"


def op_timezone(draw: Draw, doc: dict[str, Any]) -> str:
    """A region's time zone, or a csv series' (read from the folder's valid prices file)."""
    region = _tiny_region(draw, doc)
    if region is None:
        return "time zone: no region"
    tz = draw(st.sampled_from(TIMEZONES))
    if draw(st.booleans()):
        region["timezone"] = tz
        return f"region time zone {tz!r:.60}"
    region["electricity"] = {
        "csv": "prices.csv",
        "column": "price",
        "time_column": "time",
        "timezone": tz,
    }
    return f"csv time zone {tz!r:.60}"


def _numeric_paths(doc: dict[str, Any]) -> list[Where]:
    return [w for w in walk(doc) if is_number(parent(doc, w)[w[-1]])]


def op_huge_int(draw: Draw, doc: dict[str, Any]) -> str:
    """A number replaced by an integer of about MAX_DIGITS digits (at, just over, far over)."""
    paths = _numeric_paths(doc) or list(walk(doc))
    where = draw(st.sampled_from(paths))
    digits = draw(st.sampled_from([MAX_DIGITS - 1, MAX_DIGITS, MAX_DIGITS + 1, 400, 5000]))
    value = draw(st.sampled_from([1, -1, 7])) * 10 ** (digits - 1)
    parent(doc, where)[where[-1]] = value
    return f"huge integer {where} of {digits} digits"


QUOTED = ["12", "1e308", "-1", "0", "0x10", " 5", "1_000", "inf", "NaN", "2.0e9", "1e-3"]


def op_quote_number(draw: Draw, doc: dict[str, Any], quoted: list[tuple[Where, str]]) -> str:
    """A number written as text: its own digits, or another number's. ``quoted`` collects
    where, so that the judge can insist on a refusal while the text is still there."""
    paths = _numeric_paths(doc)
    if not paths:
        return "quoted number: none"
    where = draw(st.sampled_from(paths))
    up = parent(doc, where)
    old = up[where[-1]]
    own = "1" + "0" * 400 if isinstance(old, int) and abs(old) > 10**4000 else repr(old)
    text = draw(st.sampled_from([own, *QUOTED]))
    up[where[-1]] = text
    quoted.append((where, text))
    return f"quoted number {where} = {text!r}"


def value_at(doc: Any, where: Where) -> Any:
    """The value at ``where`` in ``doc``, or a fresh object() when the path is gone."""
    node = doc
    for k in where:
        try:
            node = node[k]
        except (KeyError, IndexError, TypeError):
            return object()
    return node


#: (option list, cap, distinct values of length n)
OPTION_LISTS: dict[str, tuple[int, Callable[[int], list[Any]]]] = {
    "gpu_counts": (MAX_GPU_COUNTS, lambda n: list(range(1, n + 1))),
    "fractions": (MAX_FRACTIONS, lambda n: [1.0 / (k + 1) for k in range(n)]),
    "tensor_parallel": (MAX_CHOICES, lambda n: [2**k for k in range(n)]),
    "pipeline_parallel": (MAX_CHOICES, lambda n: [2**k for k in range(n)]),
    "extra_spare_nodes": (MAX_CHOICES, lambda n: list(range(n))),
}


def op_long_list(draw: Draw, doc: dict[str, Any]) -> str:
    """An option list, or the phases or regions, at, just under or over their caps."""
    what = draw(st.sampled_from([*OPTION_LISTS, "phases", "regions"]))
    if what == "phases":
        cap, items = MAX_PHASES, doc.get("phases")
    elif what == "regions":
        cap, items = MAX_REGIONS, doc.get("regions")
    else:
        cap, items = OPTION_LISTS[what][0], doc.get("phases")
    # an earlier mutation may have retyped them (phases: true): nothing to lengthen
    if not items or not isinstance(items, dict if what == "regions" else list):
        return f"long {what}: none"
    n = draw(st.sampled_from([cap - 1, cap, cap + 1, 10 * cap, 2000]))
    if what == "phases":
        assert isinstance(items, list)
        first = copy.deepcopy(items[0]) if isinstance(items[0], dict) else {}
        for k in range(n - len(items)):
            extra = copy.deepcopy(first)
            extra["name"] = f"copy{k}"
            extra.pop("predecessors", None)
            items.append(extra)
    elif what == "regions":
        assert isinstance(items, dict)
        name, body = next(iter(items.items()))
        for k in range(n - len(items)):
            items[f"{name}-{k}"] = copy.deepcopy(body)
    else:
        phases = [p for p in items if isinstance(p, dict)]
        if not phases:
            return f"long {what}: no phase"
        p = draw(st.sampled_from(phases))
        options = p.setdefault("options", {})
        if isinstance(options, dict):
            options[what] = OPTION_LISTS[what][1](n)
    return f"long {what} x {n} (cap {cap})"


def op_all_done(draw: Draw, doc: dict[str, Any]) -> str:
    """Every phase done (a finished campaign): a valid, empty plan."""
    for p in as_list(doc.get("phases")):
        if isinstance(p, dict):
            p["done"] = True
    return "all done"


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    base: str
    doc: dict[str, Any]
    mutations: tuple[str, ...]
    solve: bool
    #: The folder files are named relative to (default: the base's own), and the data root.
    base_dir: Path | None = None
    data_root: Path | None = None
    #: Numbers written as text (where, text) by op_quote_number.
    quoted: tuple[tuple[Where, str], ...] = ()

    def family(self, name: str) -> bool:
        return any(m.startswith(name) for m in self.mutations)


@st.composite
def cases(draw: Draw, solve_percent: int, most_items: int) -> Case:
    base = draw(st.sampled_from(["tiny", "tiny", "tiny", "small-finetune", "week-7b", "month-70b"]))
    doc = fresh(base)
    solving = base in SOLVABLE and draw(st.integers(0, 99)) < solve_percent
    ops: list[Callable[[Draw, dict[str, Any]], str]] = [
        op_drop,
        op_duplicate,
        op_retype,
        op_extreme,
        op_rename,
        op_units,
        lambda dr, d: op_huge_list(dr, d, most_items),
    ]
    quoted: list[tuple[Where, str]] = []
    ops += [op_huge_int, lambda dr, d: op_quote_number(dr, d, quoted), op_all_done]
    if not solving:  # validation only: solving at the caps is the benchmarks' business
        ops.append(op_long_list)
    base_dir = data_root = None
    if base == "tiny":  # its folder may be changed: tiny names no file of its own
        ops += [op_file_ref, op_file_ref, op_timezone, op_timezone]
        base_dir = world().inst
        data_root = draw(st.sampled_from([None, None, None, world().root]))
    if solving:
        # most structural mutations are refused at the door; a solve case leans on the
        # ones that keep a document valid and change its numbers and names
        ops += [op_extreme, op_extreme, op_units, op_units, op_rename, op_all_done]
    done = []
    for _ in range(draw(st.integers(1, 3))):
        if not doc:
            break
        done.append(draw(st.sampled_from(ops))(draw, doc))
    return Case(base, doc, tuple(done), solving, base_dir, data_root, tuple(quoted))


# ----------------------------------------------------------------------------- known bugs


@dataclass(frozen=True)
class Known:
    """A bug the fuzzer found, tolerated here until its fix lands: ``test`` is the
    xfail(strict=True) test that shows it; when the fix makes that test pass, delete the
    entry and the test's xfail mark."""

    id: str
    test: str
    fix: str


KNOWN: dict[str, Known] = {}  # every bug found so far is fixed

#: Largest and smallest nonzero magnitudes a field may take (KNOWN["extreme-magnitudes"]);
#: work sizes and parameter counts may be larger.
MAGNITUDE = (1e-12, 1e15)
SIZES = {"tokens", "flops", "params", "gpu_hours"}


def has_extreme(node: Any, key: str = "") -> bool:
    """A number in ``node`` outside MAGNITUDE (SIZES keys: above 1e30 only)."""
    if isinstance(node, dict):
        return any(has_extreme(v, str(k)) for k, v in node.items())
    if isinstance(node, list):
        return any(has_extreme(v, key) for v in node)
    if not is_number(node) or not math.isfinite(node) or node == 0:
        return False
    top = 1e30 if key in SIZES else MAGNITUDE[1]
    return not MAGNITUDE[0] <= abs(node) <= top


def known_bug(case: Case, e: BaseException) -> str | None:
    """The KNOWN entry ``e`` is an instance of, if any."""
    frames = traceback.extract_tb(e.__traceback__)
    last = Path(frames[-1].filename).as_posix() if frames else ""
    text = str(e)
    if isinstance(e, AssertionError) and "which has no peak at precision" in text:
        return "work-gpu-precision"
    if isinstance(e, AssertionError) and last.endswith("planner/instance/series.py"):
        return "empty-csv-names"
    if isinstance(e, ArithmeticError | ValueError) and last.endswith("planner/model/configs.py"):
        return "config-arithmetic"
    if isinstance(e, ArithmeticError | ValueError | AssertionError) and has_extreme(case.doc):
        return "extreme-magnitudes"
    return None


class Hang(BaseException):
    """A case ran past its deadline (a BaseException: planner.solve turns every Exception
    from a solver into an error result, which would hide the hang)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"case still running after {CASE_DEADLINE_S} s")


#: The last line of an error list that was cut short, if the reader cuts it.
MORE = re.compile(r"\.\.\. and \d+ more problems? \(the first \d+ are listed\)")


def check_error(e: InstanceError, doc: dict[str, Any]) -> None:
    """The error names the fuzz source and, on every line, a field rooted in the document."""
    assert e.file == SOURCE
    assert e.errors, "an InstanceError without errors"
    roots = set(InstanceSpec.model_fields) | {str(k) for k in doc}
    for fe in e.errors:
        if not fe.path and MORE.fullmatch(fe.message):
            continue  # the count of problems not listed (a reader that caps its list)
        assert fe.path, f"an error without a field path: {fe.message!r}"
        assert fe.message.strip(), f"an empty message at {fe.path}"
        head = fe.path.split(".")[0].split("[")[0]
        assert head in roots or fe.path.startswith("["), f"path {fe.path!r} is not a field"
        for junk in ("Traceback", "errors.pydantic.dev", "For further information"):
            assert junk not in fe.message, fe.message
    assert str(e).startswith(f"{SOURCE}: ")


def check_result(inst: Any, res: Result) -> str:
    """A verified plan, or no plan with a message; never a solver error. Every phase done:
    the empty plan, optimal and free."""
    no_leak(res.message, *res.notes)
    if res.plan is not None:
        v = verify(inst, res.plan)
        assert v.ok, f"{res.solver}: checker rejected the plan: " + "; ".join(
            f"{x.kind} {x.phase}: {x.message}" for x in v.violations[:5]
        )
        if not inst.active_phases:
            assert res.plan.phases == () and res.plan.objective == 0.0, res.summary()
        return "plan"
    assert inst.active_phases, f"{res.solver}: no plan for an instance with nothing to do"
    # the lever-free baseline that cannot be built (a name it cannot address) proves nothing:
    # unknown, with the reason (planner.solve never calls that a solver error)
    baseline_unknown = res.solver == "baseline" and res.termination.value == "unknown"
    assert res.termination.value in NO_PLAN or baseline_unknown, (
        f"{res.solver}: {res.termination.value}: {res.message}"
    )
    assert res.message.strip(), f"{res.solver}: {res.termination.value} without a message"
    return res.termination.value


def no_leak(*texts: str) -> None:
    """No planted secret and no entry of the process environment in any of ``texts``."""
    for text in texts:
        for secret in world().leaks:
            assert secret not in text, f"leaked {secret[:40]!r}: {text[:300]!r}"


#: Where the CLI's console would print (what a terminal would receive).
_SCREEN = io.StringIO()
_CONSOLE = TextConsole(file=_SCREEN, width=160)


def on_screen(lines: list[str]) -> str:
    """``lines`` as the CLI's console prints them."""
    _SCREEN.seek(0)
    _SCREEN.truncate()
    for line in lines:
        _CONSOLE.print(line, soft_wrap=True)
    return _SCREEN.getvalue()


def judge(case: Case) -> str:
    """Run one case to its outcome (see the module docstring); assertion errors are bugs."""
    base_dir = case.base_dir or BASES[case.base].parent
    try:
        inst = from_dict(case.doc, SOURCE, base_dir, data_root=case.data_root)
    except InstanceError as e:
        check_error(e, case.doc)
        text = str(e)
        assert "\x1b" not in text and "\x07" not in text, repr(text[:300])
        no_leak(text, *(fe.message for fe in e.errors))
        return "invalid"
    base = _parsed(case.base)
    for where, text in case.quoted:
        if is_number(value_at(base, where)):  # a number field (not one retyped to a number)
            assert value_at(case.doc, where) != text, f"{text!r} at {where} read as a number"
    warnings = check_numerics(inst)
    assert all(isinstance(w, str) and w.strip() for w in warnings)
    no_leak(*warnings, *inst.warnings)
    if not case.solve:
        shown_text = on_screen(render(summarize(inst)))  # what `trainplan check` prints
        assert "\x1b" not in shown_text
        for p in inst.phases:
            assert f"  {shown(p.name)} [" in shown_text, p.name  # literally: no markup read
        no_leak(shown_text)
        return "valid+warnings" if warnings else "valid"
    outcome = check_result(inst, solve(inst, time_limit=SOLVE_TIME_LIMIT_S, threads=1))
    check_result(inst, solve(inst, solver="baseline"))
    return outcome


#: The family of a mutation, from the text its operation returns.
FAMILY = re.compile(
    r"^(drop|duplicate|retype|extreme|huge list|huge integer|rename|units|file ref|"
    r"region time zone|csv time zone|time zone|quoted number|long \w+|all done)"
)


def run_case(case: Case, tally: Counter[str]) -> None:
    note(f"base {case.base}; solve {case.solve}; " + "; ".join(case.mutations))
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_DEADLINE_S)
    try:
        try:
            outcome = judge(case)
        except Hang:
            raise
        except Exception as e:
            known = known_bug(case, e)
            if known is None:
                raise
            note(f"known bug {known}: {type(e).__name__}: {e!s:.200}")
            outcome = f"known:{known}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert outcome in OUTCOMES or outcome.removeprefix("known:") in KNOWN, outcome
    tally[outcome] += 1
    tally["cases"] += 1
    for m in case.mutations:
        fam = FAMILY.match(m)
        tally[f"family:{fam.group(1) if fam else m[:20]}"] += 1


def run_surface(case: SurfaceCase, tally: Counter[str]) -> None:
    """One case of the surface families (tests/fuzz_surfaces.py) under the same deadline and
    leak check as the instance cases."""
    note(f"{case.family}: {case.drawn}")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_DEADLINE_S)
    try:
        outcome = case.judge(no_leak)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert outcome.split(":")[0] == case.family, outcome
    tally[outcome] += 1
    tally["cases"] += 1
    tally[f"family:{case.family}"] += 1


def surfaces() -> st.SearchStrategy[SurfaceCase]:
    """The surface families over the fuzz world (its catalog references are the csv ones;
    its secret files are what a crafted plan names)."""
    w = world()
    secrets = [str(w.secret / "secret.txt"), "../secret/secret.txt", "link_secret.csv"]
    secrets += ["/etc/passwd", "/proc/self/environ", "../" * 12 + "etc/shadow"]
    return surface_cases(w.inst, csv_refs(), secrets)


def mixed(solve_percent: int, most_items: int, surface_percent: int) -> st.SearchStrategy[Any]:
    """Instance cases and surface cases, ``surface_percent`` of them surfaces."""
    return st.integers(0, 99).flatmap(
        lambda k: surfaces() if k < surface_percent else cases(solve_percent, most_items)
    )


def run_any(case: Case | SurfaceCase, tally: Counter[str]) -> None:
    if isinstance(case, SurfaceCase):
        run_surface(case, tally)
    else:
        run_case(case, tally)


_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
}


# ----------------------------------------------------------------------------- tests


def test_bases_are_valid_and_clean() -> None:
    # the fuzz starts from valid instances without hygiene warnings: a finding is the
    # mutation's doing
    for name, path in BASES.items():
        inst = from_dict(fresh(name), SOURCE, path.parent)
        assert check_numerics(inst) == [], name


def test_mutations_do_what_they_say() -> None:
    doc = fresh("tiny")
    UNITS["prices per kWh"](doc)
    assert doc["regions"]["east"]["electricity"] == {"constant": 0.06}  # 60 USD/MWh / 1000
    assert doc["regions"]["west"]["electricity"]["tou"]["bands"][0]["price"] == 0.04
    doc = _rename_everywhere(fresh("tiny"), "A100", "🚀")
    assert "🚀" in doc["gpu_types"] and "🚀" in doc["regions"]["west"]["capacity"]
    assert doc["phases"][0]["work"]["gpu"] == "🚀"
    assert ("phases", 1, "deadline") in set(walk(fresh("tiny")))


#: Families every run must draw (the short run's derandomised cases included).
FAMILIES = {
    "file ref",
    "region time zone",
    "csv time zone",
    "huge integer",
    "rename",
    "quoted number",
    "all done",
}


def _outcomes(tally: Counter[str]) -> dict[str, int]:
    return {k: v for k, v in tally.items() if k != "cases" and not k.startswith("family:")}


def _families(tally: Counter[str]) -> dict[str, int]:
    return {k.removeprefix("family:"): v for k, v in tally.items() if k.startswith("family:")}


def test_fuzz_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """SHORT_EXAMPLES derandomised cases, a SHORT_SOLVE_PERCENT share of tiny ones solved."""
    monkeypatch.delenv("TRAINPLAN_DATA_ROOT", raising=False)
    tally: Counter[str] = Counter()

    @settings(max_examples=SHORT_EXAMPLES, derandomize=True, **_SETTINGS)
    @given(cases(SHORT_SOLVE_PERCENT, 5_000))
    def run(case: Case) -> None:
        run_case(case, tally)

    run()
    assert tally["cases"] >= SHORT_EXAMPLES
    # the mix exercises both doors: refused documents and valid ones
    assert tally["invalid"] > 0 and tally["valid"] + tally["valid+warnings"] > 0
    families = _families(tally)
    assert set(families) >= FAMILIES, families
    assert any(f.startswith("long ") for f in families), families


def test_fuzz_surfaces_short() -> None:
    """SHORT_SURFACE_EXAMPLES derandomised cases of the surface families (plan files,
    catalogs, vms.csv, init flags, profiles around year ends and clock changes, local-time
    CSVs); every family drawn."""
    tally: Counter[str] = Counter()

    @settings(max_examples=SHORT_SURFACE_EXAMPLES, derandomize=True, **_SETTINGS)
    @given(surfaces())
    def run(case: SurfaceCase) -> None:
        run_surface(case, tally)

    run()
    assert tally["cases"] >= SHORT_SURFACE_EXAMPLES
    assert set(_families(tally)) == set(SURFACES), _families(tally)


@pytest.mark.fuzz_long
@pytest.mark.timeout(6 * 3600)
def test_fuzz_long(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """LONG_EXAMPLES random cases; prints the count per outcome and per family."""
    monkeypatch.delenv("TRAINPLAN_DATA_ROOT", raising=False)
    tally: Counter[str] = Counter()
    t0 = time.perf_counter()

    @settings(max_examples=LONG_EXAMPLES, **_SETTINGS)
    @given(mixed(LONG_SOLVE_PERCENT, 50_000, LONG_SURFACE_PERCENT))
    def run(case: Case | SurfaceCase) -> None:
        run_any(case, tally)

    try:
        run()
    finally:
        with capsys.disabled():
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(_outcomes(tally).items()))
            families = ", ".join(f"{k} {v}" for k, v in sorted(_families(tally).items()))
            print(
                f"\nfuzz_long: {tally['cases']} cases in {time.perf_counter() - t0:.0f} s: "
                f"{outcomes}\nfamilies drawn: {families}"
            )
    assert tally["cases"] >= LONG_EXAMPLES
    assert all(
        k in OUTCOMES or k.removeprefix("known:") in KNOWN or k.split(":")[0] in SURFACES
        for k in _outcomes(tally)
    )
    assert tally["invalid"] > 0 and tally["plan"] > 0
    assert set(_families(tally)) >= FAMILIES | set(SURFACES)


# ----------------------------------------------------------------------------- found by fuzzing
# Minimal cases of the KNOWN bugs. Each fails today (xfail, strict) and passes once the fix
# in its reason is applied; then remove the mark and the KNOWN entry.


def _refused(doc: dict[str, Any], base_dir: Path = DATA) -> InstanceError:
    with pytest.raises(InstanceError) as e:
        from_dict(doc, SOURCE, base_dir)
    return e.value


def _paths(e: InstanceError) -> list[str]:
    return [fe.path for fe in e.errors]


def test_gpu_hours_on_a_gpu_without_that_precision_is_refused() -> None:
    # prep's work is 12 GPU-hours measured on A100 at bf16 (the default precision); without
    # A100's bf16 peak the work has no FLOPs (configs.work_flops uses peak 0.0), the solver
    # runs prep for one hour and the checker rejects the plan: "the work is undefined"
    doc = fresh("tiny")
    del doc["gpu_types"]["A100"]["peak_tflops"]["bf16"]
    e = _refused(doc)
    assert any(p.startswith("phases[0] (prep).work") for p in _paths(e)), str(e)


@pytest.mark.parametrize("field", ["column", "time_column"])
def test_empty_csv_names_are_refused(field: str) -> None:
    # today: AssertionError in planner/instance/series.py (the CLI says "internal error")
    doc = fresh("tiny")
    doc["regions"]["east"]["electricity"] = {
        "csv": "fixture_prices_newyork.csv",
        "column": "price",
        "time_column": "time",
        "timezone": "America/New_York",
    }
    doc["regions"]["east"]["electricity"][field] = ""
    e = _refused(doc)
    assert _paths(e) == [f"regions.east.electricity.{field}"], str(e)


def test_empty_csv_file_name_names_the_series() -> None:
    doc = fresh("tiny")
    doc["regions"]["east"]["electricity"] = {"csv": "", "column": "price", "time_column": "time"}
    (path,) = _paths(_refused(doc))
    assert path.startswith("regions.east.electricity")


def test_configs_survive_a_checkpoint_overhead_of_one() -> None:
    # finetune on west's A100 spot with 1e15 preemptions per hour (inside MAGNITUDE): the
    # mean time between failures is 3600 / 1e15 = 3.6e-12 s, while a checkpoint of m1b
    # (1.2e9 parameters) to a 1e-6 GB/s tier takes ~1e7 s, so the checkpoint overhead
    # delta / (tau + delta) with tau = M rounds to exactly 1.0 and
    # compute_h / (1 - overhead) divides by zero. Such a configuration never finishes:
    # it must be skipped, and the on-demand ones remain.
    from planner.model.configs import build_config_space

    doc = fresh("tiny")
    doc["phases"][1]["preemptible"] = True
    doc["regions"]["west"]["offers"]["A100"]["spot"]["preemptions_per_hour"] = 1e15
    doc["regions"]["west"]["storage"] = {"slow": {"usd_per_gb_month": 0.1, "write_gb_per_s": 1e-6}}
    assert not has_extreme(doc)
    inst = from_dict(doc, SOURCE, DATA)
    space = build_config_space(inst)
    assert space["finetune"]
    assert not any(c.contract == "spot" and c.region == "west" for c in space["finetune"])


EXTREME_CASES = [
    # (path in tiny, value, the field path the error must name)
    (("regions", "east", "electricity", "constant"), -1e308, "regions.east.electricity.constant"),
    (("gpu_types", "A100", "peak_tflops", "bf16"), 5e-324, "gpu_types.A100.peak_tflops.bf16"),
    (("regions", "east", "capacity", "A100"), 10**30, "regions.east.capacity.A100"),
    (
        ("regions", "west", "offers", "A100", "spot", "preemptions_per_hour"),
        1e30,
        "regions.west.offers.A100.spot.preemptions_per_hour",
    ),
    (
        ("phases", 1, "options", "gpu_counts", 0),
        10**30,
        "phases[1] (finetune).options.gpu_counts[0]",
    ),
]


@pytest.mark.parametrize(
    ("where", "value", "field"), EXTREME_CASES, ids=[c[2] for c in EXTREME_CASES]
)
def test_extreme_magnitudes_are_refused(where: Where, value: float, field: str) -> None:
    # today these read; then costs overflow to inf/NaN: configs raise OverflowError or
    # ZeroDivisionError, HiGHS ends "unknown", the baseline states NaN costs
    doc = fresh("tiny")
    parent(doc, where)[where[-1]] = value
    assert has_extreme(doc)
    e = _refused(doc)
    assert field in _paths(e), str(e)


def test_shipped_instances_are_inside_the_proposed_magnitudes() -> None:
    # the rule of KNOWN["extreme-magnitudes"] refuses none of the shipped or test instances
    files = [*BASES.values(), *sorted(DATA.glob("explain_*.yaml")), DATA / "levers_tou.yaml"]
    for f in files:
        assert not has_extreme(load_document(f)), f


def test_empty_gpu_counts_is_refused() -> None:
    # today: accepted, and the phase "can never fit" because "none of the allowed GPU types
    # supports the allowed precisions ['bf16']", which is not the reason
    doc = fresh("tiny")
    doc["phases"][1]["options"]["gpu_counts"] = []
    assert _paths(_refused(doc)) == ["phases[1] (finetune).options.gpu_counts"]
