"""Hostile files: alias bombs, deep nesting, files at and past the size limits, CSV references
that are binary, huge, directories, FIFOs or symlink loops, and documents built to make the
reader or the planner do quadratic work.

Each must give a clear error (or a result) within bounded time and bounded memory, through
``planner.read`` and through ``trainplan check`` (exit 2, the error on stderr, no traceback).
Time is wall-clock; memory is the growth of the process's peak resident set (Linux: the peak
is reset through /proc/self/clear_refs before each measurement; elsewhere tracemalloc's peak
of Python allocations).

What tests/instance/test_instance_errors.py already covers is not repeated here: the classic
9-level alias bomb, more than 200 aliases, a recursive alias, a file over 32 MiB, 100,000
nested lists, a missing / short / non-numeric CSV.

Tests marked ``xfail(strict=True)`` show problems found here; their reason says what to
change. The expensive ones run in a child process with a hard timeout and an address-space
cap, so that today's behaviour (minutes, gigabytes) costs the test run a few seconds.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner, Result

import planner.interfaces.cli.check  # noqa: F401  (registers the command)
from planner.instance import Instance, InstanceError, read
from planner.instance.read import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, from_dict, load_document
from planner.instance.schema import MAX_PHASES
from planner.instance.series import MAX_CSV_BYTES
from planner.interfaces.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TINY = DATA / "tiny.yaml"
PRICES = DATA / "fixture_prices_newyork.csv"

#: Bounds: seconds for an ordinary hostile file, seconds for one near a size limit, and
#: peak memory growth in MB.
QUICK_S = 2.0
BIG_S = 5.0
MEMORY_MB = 200.0

POSIX = os.name == "posix"


# ----------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    value: Any
    seconds: float
    growth_mb: float


def _status_kb(key: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) if m else None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _status_kb("VmHWM") is not None


def measured(fn: Callable[[], Any]) -> Measured:
    """Run ``fn``; its return value or the exception it raised, the seconds it took and the
    growth of peak memory in MB."""
    rss = _reset_peak()
    base = _status_kb("VmRSS") or 0
    if not rss:
        tracemalloc.start()
    t0 = time.perf_counter()
    value: Any
    try:
        value = fn()
    except Exception as e:
        value = e
    seconds = time.perf_counter() - t0
    if rss:
        growth = ((_status_kb("VmHWM") or 0) - base) / 1024
    else:
        growth = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return Measured(value, seconds, growth)


class _Late(BaseException):
    """Past a deadline (a BaseException: neither `guarded` nor CliRunner swallows it)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise _Late in this (main) thread once ``seconds`` have passed."""

    def late(signum: int, frame: FrameType | None) -> None:
        raise _Late(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Late:
        # reported from here: the frame the alarm interrupted may have no line number
        pytest.fail(f"still running after {seconds} s", pytrace=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cli() -> typer.Typer:
    return app  # a command group (it has a callback), whatever commands are registered


def run_check(path: Path) -> tuple[Result, Measured]:
    m = measured(lambda: CliRunner().invoke(_cli(), ["check", str(path)]))
    assert isinstance(m.value, Result)
    return m.value, m


def refused(
    path: Path, message: str | re.Pattern[str], field: str = "", bound_s: float = QUICK_S
) -> InstanceError:
    """``path`` is refused by read() and by `trainplan check` with one error naming the file
    (and ``field`` when given) whose message equals (or matches) ``message``, within
    ``bound_s`` seconds and MEMORY_MB each."""
    m = measured(lambda: read(path))
    err = m.value
    assert isinstance(err, InstanceError), f"expected an InstanceError, got {err!r:.300}"
    assert err.file == str(path)
    (fe,) = err.errors
    assert fe.path == field, str(err)
    if isinstance(message, re.Pattern):
        assert message.fullmatch(fe.message), fe.message
    else:
        assert fe.message == message
    assert m.seconds < bound_s, f"read took {m.seconds:.2f} s"
    assert m.growth_mb < MEMORY_MB, f"read grew the peak by {m.growth_mb:.0f} MB"
    res, mc = run_check(path)
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    assert f"{path}: {fe}" in " ".join(res.stderr.split())
    assert "Traceback" not in res.output
    assert mc.seconds < bound_s + 1.0, f"check took {mc.seconds:.2f} s"
    assert mc.growth_mb < MEMORY_MB, f"check grew the peak by {mc.growth_mb:.0f} MB"
    return err


#: Run in a child process: read() or `trainplan check` on a file, under an address-space cap
#: of 1.5 GiB above what the imports use; writes what happened, the seconds and the growth
#: of the peak resident set (MB) as JSON to the third argument.
PROBE = r"""
import json, sys, time
from pathlib import Path
mode, path, out = sys.argv[1:4]
from planner.interfaces.cli import main
from planner.instance import InstanceError, read

def kb(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0

try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (kb("VmSize") * 1024 + 3 * 2**29,
                                            resource.RLIM_INFINITY))
except (ImportError, ValueError, OSError):
    pass
Path("/proc/self/clear_refs").write_text("5")
base = kb("VmRSS")
r = {}
t0 = time.perf_counter()
try:
    if mode == "read":
        read(path)
        r["outcome"] = "instance"
    else:
        sys.argv = ["trainplan", "check", path]
        main()
        r["outcome"] = "exit 0"
except InstanceError as e:
    r.update(outcome="InstanceError", errors=len(e.errors), message=str(e)[:2000])
except SystemExit as e:
    r.update(outcome=f"exit {e.code}")
except BaseException as e:
    r.update(outcome=type(e).__name__, message=str(e)[:500])
r["seconds"] = time.perf_counter() - t0
r["growth_mb"] = (kb("VmHWM") - base) / 1024
Path(out).write_text(json.dumps(r))
"""


def probe(tmp_path: Path, mode: str, path: Path, timeout: float) -> dict[str, Any]:
    """PROBE's report; fails the test (after ``timeout`` s) if the child is still running.
    For mode "check" the child's stderr is in the report as ``stderr``."""
    out = tmp_path / f"probe-{mode}.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode, str(path), str(out)],
        capture_output=True,
        text=True,
        timeout=timeout + 1.5,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    report: dict[str, Any] = json.loads(out.read_text())
    report["stderr"] = proc.stderr
    return report


def tiny_text() -> str:
    return TINY.read_text()


def tiny_doc() -> dict[str, Any]:
    # the reader's loader: yaml.safe_load would read tokens: 2.0e9 as text (YAML 1.1)
    doc: dict[str, Any] = load_document(TINY)
    return copy.deepcopy(doc)


# ----------------------------------------------------------------------------- alias bombs


def _laughs(kind: str, levels: int = 9) -> str:
    """``levels`` levels (a0 ...) of nine aliases of the level below: with 9 levels,
    9^9 = 387,420,489 strings expanded."""
    if kind == "mapping":
        keys = [f"k{j}" for j in range(9)]
        lines = ["a0: &a0 {" + ", ".join(f"{k}: lol" for k in keys) + "}"]
        lines += [
            f"a{i}: &a{i} {{" + ", ".join(f"{k}: *a{i - 1}" for k in keys) + "}"
            for i in range(1, levels)
        ]
    elif kind == "merge":
        # '<<' merges collapse equal keys, so each level also keeps nine aliases in a list
        lines = ["a0: &a0 {x: [lol, lol, lol, lol, lol, lol, lol, lol, lol]}"]
        lines += [
            f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 9)}], "
            f"y: [{', '.join([f'*a{i - 1}'] * 9)}]}}"
            for i in range(1, levels)
        ]
    else:
        raise ValueError(kind)
    return "\n".join(lines) + "\n"


ALIAS_LIMIT = re.compile(
    r"YAML aliases repeat more than 1000000 values \(line \d+\): "
    r"refusing a possible alias bomb"
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["mapping", "merge"])
def test_alias_bomb_shapes_are_refused(tmp_path: Path, kind: str) -> None:
    f = tmp_path / f"{kind}.yaml"
    f.write_text(_laughs(kind))
    refused(f, ALIAS_LIMIT)


@pytest.mark.timeout(60)
def test_wide_alias_bomb_is_refused(tmp_path: Path) -> None:
    # few aliases (150, under the 200 allowed) of one wide list: 150 x 20,001 values
    f = tmp_path / "wide.yaml"
    f.write_text(
        "big: &b [" + ", ".join(["1"] * 20_000) + "]\nuse: [" + ", ".join(["*b"] * 150) + "]\n"
    )
    refused(f, ALIAS_LIMIT)


@pytest.mark.timeout(60)
def test_alias_bomb_inside_an_instance_is_refused(tmp_path: Path) -> None:
    # six levels defined under a stray key repeat 9 x (10 + 91 + 820 + 7381 + 66430) =
    # 672,588 values (allowed); using the sixth (597,871 values) as finetune's GPU counts
    # passes the limit: refused on that line, while composing, before the schema
    bomb = _laughs("mapping", levels=6).replace("\n", "\n  ")
    text = tiny_text().replace(
        "    options: {gpu_counts: [8, 16]}\n", "    options: {gpu_counts: *a5}\n"
    )
    f = tmp_path / "inside.yaml"
    f.write_text("bombs:\n  " + bomb + "\n" + text)
    line = f.read_text().splitlines().index("    options: {gpu_counts: *a5}") + 1
    refused(
        f,
        f"YAML aliases repeat more than 1000000 values (line {line}): refusing a "
        "possible alias bomb",
    )


@pytest.mark.timeout(60)
def test_alias_chain_deeper_than_the_limit_once_expanded(tmp_path: Path) -> None:
    # each anchor is 35 lists deep (under MAX_DEPTH = 40) and holds an alias of the previous
    # one: the composer sees no deep node, the expanded document is 8 x 35 = 280 deep
    lines = ["n0: &n0 " + "[" * 35 + "1" + "]" * 35]
    lines += [f"n{i}: &n{i} " + "[" * 35 + f"*n{i - 1}" + "]" * 35 for i in range(1, 8)]
    f = tmp_path / "chain.yaml"
    f.write_text("\n".join(lines) + "\n")
    refused(f, f"document nested deeper than {MAX_DEPTH} levels; refusing it", "n7")


@pytest.mark.timeout(60)
def test_alias_as_a_mapping_key_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "key.yaml"
    f.write_text("a: &k [1, 2]\n? *k\n: v\n")
    refused(f, re.compile(r"cannot parse: found unhashable key at line \d+, column \d+ .*"))


# ----------------------------------------------------------------------------- nesting


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("name", "text"),
    [
        # 100,000 nested objects (test_instance_errors covers nested lists)
        ("objects.json", '{"a":' * 100_000 + "1" + "}" * 100_000),
        ("flow.yaml", "a: {" * 100_000 + "b: 1" + "}" * 100_000),
        # 2,000 levels of block indentation, and 5,000 block sequences on one line
        ("block.yaml", "".join(" " * i + f"k{i}:\n" for i in range(2000)) + " " * 2000 + "x: 1\n"),
        ("dashes.yaml", "- " * 5000 + "1\n"),
    ],
)
def test_deep_documents_are_refused(tmp_path: Path, name: str, text: str) -> None:
    f = tmp_path / name
    f.write_text(text)
    refused(
        f,
        re.compile(
            rf"document nested deeper than {MAX_DEPTH} levels; refusing it"
            r"|cannot parse: .*recursion.*"
        ),
    )


# ----------------------------------------------------------------------------- other files


@pytest.mark.timeout(60)
def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    # the safe loader builds no Python objects: the tag is an error, nothing runs
    marker = tmp_path / "ran"
    f = tmp_path / "tag.yaml"
    f.write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    refused(
        f,
        "cannot parse: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object/apply:os.system' at line 1, column 1",
    )
    assert not marker.exists()


@pytest.mark.timeout(60)
def test_a_second_document_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "two.yaml"
    f.write_text(tiny_text() + "---\n" + tiny_text())
    lines = tiny_text().count("\n")
    refused(
        f,
        f"cannot parse: but found another document at line {lines + 1}, column 1 "
        "(expected a single document in the stream that starts at line 2)",
    )


@pytest.mark.timeout(60)
@pytest.mark.skipif(not POSIX, reason="FIFOs and symbolic links need POSIX")
@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink loop", "device"])
def test_instance_path_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    # never opened (a FIFO would block, /dev/zero never ends): refused at once
    f = _not_a_file(tmp_path, kind, "instance.yaml")
    refused(f, re.compile(r"file does not exist|.*(directory|regular file|link).*"))


def _not_a_file(tmp_path: Path, kind: str, name: str) -> Path:
    f = tmp_path / name
    if kind == "directory":
        f.mkdir()
    elif kind == "fifo":
        os.mkfifo(f)
    elif kind == "symlink loop":
        f.symlink_to(f)
    elif kind == "device":
        f.symlink_to("/dev/zero")
    else:
        raise ValueError(kind)
    return f


@pytest.mark.skipif(not POSIX, reason="FIFOs and symbolic links need POSIX")
@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink loop", "device"])
def test_not_a_file_says_what_it_is(tmp_path: Path, kind: str) -> None:
    inst = _not_a_file(tmp_path, kind, "instance.yaml")
    with pytest.raises(InstanceError) as e:
        read(inst)
    assert _KIND_WORDS[kind] in str(e.value), str(e.value)
    _not_a_file(tmp_path, kind, "prices.csv")
    with pytest.raises(InstanceError) as e:
        from_dict(_with_csv(tiny_doc(), "prices.csv"), "<test>", tmp_path)
    assert _KIND_WORDS[kind] in str(e.value), str(e.value)


#: What the message should say for each kind of path that is not a regular file.
_KIND_WORDS = {
    "directory": "is a directory",
    "fifo": "not a regular file",
    "symlink loop": "symbolic link",
    "device": "not a regular file",
}


# ----------------------------------------------------------------------------- CSV references


def _with_csv(
    doc: dict[str, Any], csv: str, field: str = "electricity", column: str = "price"
) -> dict[str, Any]:
    doc["regions"]["east"][field] = {
        "csv": csv,
        "column": column,
        "time_column": "time",
        "timezone": "America/New_York",
    }
    return doc


def _instance_with_csv(tmp_path: Path, csv_name: str, field: str = "electricity") -> Path:
    f = tmp_path / "inst.yaml"
    f.write_text(
        yaml.safe_dump(_with_csv(tiny_doc(), csv_name, field), sort_keys=False, allow_unicode=True)
    )
    return f


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("content", "message"),
    ids=["binary", "nul", "unclosed-quote"],
    argvalues=[
        (bytes(range(256)) * 100, "is not UTF-8 text (invalid start byte)"),
        # Python 3.11's csv module reads NUL bytes: the value is not a number
        (b"time,price\n2023-06-05T00:00,\0\0\n", "line 2: 'price' is not a number"),
        # one field longer than the csv module's 131,072-character limit (an unclosed quote)
        (
            b'time,price\n"' + b"x" * 5_000_000 + b"\n",
            "is not readable CSV (field larger than field limit (131072))",
        ),
    ],
)
def test_malformed_csv_is_refused(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "p.csv").write_bytes(content)
    f = _instance_with_csv(tmp_path, "p.csv")
    refused(f, f"file '{tmp_path / 'p.csv'}' {message}", "regions.east.electricity")


@pytest.mark.timeout(60)
def test_csv_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    # a header, then sparse past 64 MiB: nothing of it is read
    csv = tmp_path / "p.csv"
    csv.write_text("time,price\n")
    with csv.open("r+b") as fh:
        fh.truncate(MAX_CSV_BYTES + 1)
    f = _instance_with_csv(tmp_path, "p.csv")
    refused(f, f"file '{csv}' is larger than 64 MiB", "regions.east.electricity")
    assert MAX_CSV_BYTES == 64 * 2**20


@pytest.mark.timeout(60)
def test_csv_just_under_the_size_limit_is_refused_quickly(tmp_path: Path) -> None:
    # a header, then 64 MiB - 1 of NUL bytes on one line: no line is ever a valid row
    csv = tmp_path / "p.csv"
    csv.write_text("time,price\n")
    with csv.open("r+b") as fh:
        fh.truncate(MAX_CSV_BYTES - 1)
    f = _instance_with_csv(tmp_path, "p.csv")
    refused(
        f,
        re.compile(rf"file '{re.escape(str(csv))}' is not readable CSV \(.*\)"),
        "regions.east.electricity",
        bound_s=BIG_S,
    )


@pytest.mark.timeout(60)
def test_carbon_series_shorter_than_the_horizon(tmp_path: Path) -> None:
    # the fixture's rows end at local 2023-06-06 19:00 EDT = 23:00 UTC: hour 47 exists;
    # cut it to the first day (rows before local 20:00 on June 5 = 2023-06-06 00:00 UTC)
    rows = PRICES.read_text().splitlines()
    (tmp_path / "ci.csv").write_text(
        "\n".join([rows[0], *[r for r in rows[1:] if r < "2023-06-05T20:00"]]) + "\n"
    )
    f = _instance_with_csv(tmp_path, "ci.csv", field="carbon_intensity")
    refused(
        f,
        f"file '{tmp_path / 'ci.csv'}' has no value for 2023-06-06T00:00:00+00:00 "
        "(hour 24 of the horizon); expected hourly rows covering the horizon, or a price profile "
        "of a year the file covers ('reference_year')",
        "regions.east.carbon_intensity",
    )


@pytest.mark.timeout(60)
@pytest.mark.skipif(not POSIX, reason="FIFOs and symbolic links need POSIX")
@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink loop", "device"])
def test_csv_path_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    csv = _not_a_file(tmp_path, kind, "p.csv")
    f = _instance_with_csv(tmp_path, "p.csv")
    refused(
        f,
        re.compile(
            rf"file '{re.escape(str(csv))}' (does not exist|.*(directory|regular"
            r" file|link).*)"
        ),
        "regions.east.electricity",
    )


def test_csv_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts with U+FEFF; today: "has no column 'time'; columns are
    # ['\ufefftime', 'price']"
    (tmp_path / "bom.csv").write_text("\ufeff" + PRICES.read_text(), encoding="utf-8")
    (tmp_path / "plain.csv").write_text(PRICES.read_text(), encoding="utf-8")
    bom = from_dict(_with_csv(tiny_doc(), "bom.csv"), "<test>", tmp_path)
    plain = from_dict(_with_csv(tiny_doc(), "plain.csv"), "<test>", tmp_path)
    assert list(bom.price["east"]) == list(plain.price["east"])


def test_csv_error_does_not_echo_a_huge_header(tmp_path: Path) -> None:
    # a header of 100,000 columns, none the one asked for: today the message lists them all
    (tmp_path / "wide.csv").write_text(",".join(f"c{i}" for i in range(100_000)) + "\n")
    with pytest.raises(InstanceError) as e:
        from_dict(_with_csv(tiny_doc(), "wide.csv"), "<test>", tmp_path)
    assert "has no column 'price'" in str(e.value)
    assert len(str(e.value)) < 2000, f"{len(str(e.value))} characters"


@pytest.mark.timeout(120)
def test_csv_rows_outside_the_horizon_cost_no_memory(tmp_path: Path) -> None:
    # 600,000 hourly rows from 1950 (12 MiB), then the horizon's; today +40 MB
    start = datetime(1950, 1, 1)
    lines = ["time,price"]
    lines += [f"{start + timedelta(hours=k):%Y-%m-%dT%H:%M},1.5" for k in range(600_000)]
    lines += PRICES.read_text().splitlines()[1:]
    (tmp_path / "long.csv").write_text("\n".join(lines) + "\n")
    doc = _with_csv(tiny_doc(), "long.csv")
    m = measured(lambda: from_dict(doc, "<test>", tmp_path))
    assert isinstance(m.value, Instance | InstanceError), repr(m.value)
    assert m.growth_mb < 15, f"{m.growth_mb:.0f} MB"


# ----------------------------------------------------------------------------- near the limits


def _sparse_json_list(tmp_path: Path) -> Path:
    # 15 million zeros in 28.6 MiB: under the 32 MiB file limit
    f = tmp_path / "list.json"
    n = 15_000_000
    f.write_text('{"x": [' + "0," * (n - 1) + "0]}")
    assert f.stat().st_size < MAX_FILE_BYTES
    return f


def _flat_yaml_list(tmp_path: Path) -> Path:
    f = tmp_path / "list.yaml"
    n = 15_000_000
    f.write_text("x: [" + "1," * (n - 1) + "1]\n")
    assert f.stat().st_size < MAX_FILE_BYTES
    return f


def _long_comment(tmp_path: Path) -> Path:
    f = tmp_path / "comment.yaml"
    f.write_text("#" + "x" * 30_000_000 + "\n" + tiny_text())
    assert f.stat().st_size < MAX_FILE_BYTES
    return f


def _assert_bounded(report: dict[str, Any], path: Path, bound_s: float) -> None:
    assert report["outcome"] in ("InstanceError", "instance"), report
    if report["outcome"] == "InstanceError":
        assert report["message"].startswith(f"{path}: "), report
    assert report["seconds"] < bound_s, report
    assert report["growth_mb"] < MEMORY_MB, report


@pytest.mark.timeout(120)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures through /proc")
def test_flat_yaml_list_under_the_size_limit(tmp_path: Path) -> None:
    f = _flat_yaml_list(tmp_path)
    _assert_bounded(probe(tmp_path, "read", f, BIG_S), f, BIG_S)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures through /proc")
def test_long_yaml_comment_under_the_size_limit(tmp_path: Path) -> None:
    f = _long_comment(tmp_path)
    _assert_bounded(probe(tmp_path, "read", f, BIG_S), f, BIG_S)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures through /proc")
def test_flat_json_list_under_the_size_limit(tmp_path: Path) -> None:
    f = _sparse_json_list(tmp_path)
    _assert_bounded(probe(tmp_path, "read", f, BIG_S), f, BIG_S)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures through /proc")
def test_check_on_a_file_over_the_limit_in_a_fresh_process(tmp_path: Path) -> None:
    # the console script's path end to end: exit 2, the message, no traceback, at once
    f = tmp_path / "big.yaml"
    f.write_text(tiny_text())
    with f.open("r+b") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    report = probe(tmp_path, "check", f, QUICK_S)
    assert report["outcome"] == "exit 2", report
    assert f"{f}: file is {MAX_FILE_BYTES + 1} bytes" in report["stderr"]
    assert "Traceback" not in report["stderr"]
    assert report["seconds"] < QUICK_S and report["growth_mb"] < MEMORY_MB, report


@pytest.mark.timeout(60)
def test_many_bad_values_give_a_short_error(tmp_path: Path) -> None:
    doc = tiny_doc()
    doc["regions"]["east"]["electricity"] = {"values": ["x"] * 150_000}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc, default=str))
    m = measured(lambda: read(f))
    assert isinstance(m.value, InstanceError)
    assert m.seconds < BIG_S
    assert len(str(m.value).splitlines()) <= 51, f"{len(m.value.errors)} errors listed"


# ----------------------------------------------------------------------------- quadratic work


def _phase_chain(n: int) -> dict[str, Any]:
    """tiny with n data-preparation phases in a chain, listed successors first."""
    doc = tiny_doc()
    prep = doc["phases"][0]
    doc["phases"] = [
        dict(
            prep, name=f"p{i}", predecessors=[f"p{i - 1}"] if i else [], options={"gpu_counts": [1]}
        )
        for i in reversed(range(n))
    ]
    return doc


@pytest.mark.timeout(60)
def test_long_phase_chain_reads(tmp_path: Path) -> None:
    # the longest chain allowed (MAX_PHASES), listed successors first
    doc = _phase_chain(MAX_PHASES)
    with deadline(QUICK_S):
        inst = from_dict(doc, "<test>", DATA)
    assert inst.order[:3] == ("p0", "p1", "p2")
    f = tmp_path / "chain.json"
    f.write_text(json.dumps(doc, default=str))
    res = CliRunner().invoke(_cli(), ["check", str(f)])
    assert "internal error" not in res.output and res.exit_code in (0, 1), res.output
    # one more: refused at once, naming the field
    with deadline(QUICK_S), pytest.raises(InstanceError) as e:
        from_dict(_phase_chain(MAX_PHASES + 1), "<test>", DATA)
    assert [str(fe) for fe in e.value.errors] == [
        f"phases: expected at most {MAX_PHASES} items (got a list of {MAX_PHASES + 1} items)"
    ]


@pytest.mark.timeout(60)
def test_repeated_choices_do_not_hang(tmp_path: Path) -> None:
    # two lines of YAML: finetune may use bf16 (300 times) with no recomputation (300 times)
    text = tiny_text().replace(
        "    options: {gpu_counts: [8, 16]}\n",
        "    options: {gpu_counts: [8, 16], precision: ["
        + ", ".join(["bf16"] * 300)
        + "], recompute: ["
        + ", ".join(["none"] * 300)
        + "]}\n",
    )
    f = tmp_path / "repeats.yaml"
    f.write_text(text)
    with deadline(3.0):
        res = CliRunner().invoke(_cli(), ["check", str(f)])
        if res.exit_code == 2:
            assert "phases[1] (finetune).options" in res.stderr
        else:
            assert res.exit_code == 0, res.output


@pytest.mark.timeout(60)
def test_many_tariff_bands_do_not_hang() -> None:
    doc = tiny_doc()
    doc["horizon"]["hours"] = 24 * 366 * 3
    doc["phases"][1]["deadline"] = 24 * 366 * 3
    doc["regions"]["west"]["electricity"]["tou"]["bands"] = [
        {"start_hour": h % 24, "end_hour": (h + 1) % 24 or 24, "price": 40 + h % 7}
        for h in range(20_000)
    ]
    with deadline(3.0):
        try:
            from_dict(doc, "<test>", DATA)
        except InstanceError as e:
            assert any(
                fe.path.startswith("regions.west.electricity.tou.bands") for fe in e.errors
            ), str(e)


def test_shared_sub_objects_in_a_python_document_are_bounded() -> None:
    # A document built in Python (a library caller, a grid variant) may reuse one object many
    # times: 25,200 references to one phase holding 25,200 GPU counts would be 635M values to
    # validate. from_dict counts every reference and refuses it at once.
    import time as _time

    from planner.instance.read import from_dict

    doc = load_document(DATA / "tiny.yaml")
    phase = doc["phases"][1]
    phase["options"] = {"gpu_counts": list(range(1, 25_201))}
    doc["phases"] = [phase] * 25_200
    t0 = _time.perf_counter()
    with pytest.raises(InstanceError, match=f"more than {MAX_NODES} values"):
        from_dict(doc, "<python>", DATA)
    assert _time.perf_counter() - t0 < 5


# ----------------------------------------------------------------------------- file access

#: Put in the environment of the tests below: it must never appear in any message.
SECRET = "sk-live-4f1c2e9a-NOT-A-REAL-SECRET"


@pytest.fixture(autouse=True)
def _no_data_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages about files outside the instance's folder assume no data root is set."""
    monkeypatch.delenv("TRAINPLAN_DATA_ROOT", raising=False)


def _csv_instance(folder: Path, csv: str, name: str = "inst.yaml") -> Path:
    """tiny with east's prices from ``csv`` (as written in the file), in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / name
    f.write_text(
        tiny_text().replace(
            "    electricity: {constant: 60}\n",
            f"    electricity: {{csv: {json.dumps(csv)}, column: price, time_column: time,"
            " timezone: America/New_York}\n",
        )
    )
    return f


def _only_error(path: Path, **kw: Any) -> str:
    with pytest.raises(InstanceError) as e:
        read(path, **kw)
    (fe,) = e.value.errors
    assert fe.path == "regions.east.electricity", str(e.value)
    return fe.message


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize("how", ["absolute", "symlink", "data root /", "dotdot"])
def test_proc_environ_is_never_read_or_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Before: 'has no column 'price'; columns are ['...PATH=/usr/bin...TRAINPLAN_...']':
    # the process environment on stderr. /proc/self/environ is a "regular" file to stat().
    monkeypatch.setenv("TRAINPLAN_TEST_SECRET", SECRET)
    folder = tmp_path / "inst"
    if how == "symlink":
        folder.mkdir()
        (folder / "env.csv").symlink_to("/proc/self/environ")
        f = _csv_instance(folder, "env.csv")
    elif how == "dotdot":
        depth = len(folder.resolve().parts)
        f = _csv_instance(folder, "../" * depth + "proc/self/environ")
    else:
        f = _csv_instance(folder, "/proc/self/environ")
    if how == "data root /":
        monkeypatch.setenv("TRAINPLAN_DATA_ROOT", "/")
    msg = _only_error(f)
    assert SECRET not in msg and "PATH=" not in msg
    if how == "absolute":
        assert msg.endswith(
            "is an absolute path; give a path relative to the instance's "
            f"folder {str(folder)!r}, or allow a folder with read(..., "
            "data_root=...) or TRAINPLAN_DATA_ROOT=<folder>"
        ), msg
    else:
        # links and '..' are followed: /proc is refused wherever the data root is
        assert msg.endswith("is not a regular file (it is under /proc, a special file system)"), msg
    res, _ = run_check(f)
    assert res.exit_code == 2, res.output
    assert SECRET not in res.output and "PATH=" not in res.output
    assert "Traceback" not in res.output and "internal error" not in res.output


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_instance_path_under_proc_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINPLAN_TEST_SECRET", SECRET)
    f = Path("/proc/self/environ")
    refused(f, "is not a regular file (it is under /proc, a special file system)")


def test_files_outside_the_folder_need_a_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "their-data"
    shared.mkdir()
    (shared / "p.csv").write_text(PRICES.read_text())
    folder = tmp_path / "inst"
    outside = {
        "dotdot": _csv_instance(folder, "../their-data/p.csv", "a.yaml"),
        "absolute": _csv_instance(folder, str(shared / "p.csv"), "b.yaml"),
    }
    folder.joinpath("link.csv").symlink_to(shared / "p.csv")
    outside["symlink"] = _csv_instance(folder, "link.csv", "c.yaml")
    # a file that does not exist out there gets the same answer as one that does: an
    # instance cannot probe which files exist outside its folder
    outside["missing"] = _csv_instance(folder, "../their-data/nothing.csv", "d.yaml")
    for how, f in outside.items():
        msg = _only_error(f)
        assert ("is an absolute path" if how == "absolute" else "leads outside") in msg, msg
        assert "does not exist" not in msg
        assert "TRAINPLAN_DATA_ROOT" in msg
    inside = read(_csv_instance(folder, "link.csv", "e.yaml"), data_root=shared)
    for how in ("dotdot", "absolute", "symlink"):
        # allowed through read(data_root=...), and through the environment variable
        assert list(read(outside[how], data_root=shared).price["east"]) == list(
            inside.price["east"]
        )
        monkeypatch.setenv("TRAINPLAN_DATA_ROOT", str(shared))
        assert list(read(outside[how]).price["east"]) == list(inside.price["east"])
        monkeypatch.delenv("TRAINPLAN_DATA_ROOT")
    assert "does not exist" in _only_error(outside["missing"], data_root=shared)
    # a variant keeps the data root it was read with
    v = read(outside["dotdot"], data_root=shared).replace({"regions.east.pue": 1.3})
    assert v.data_root == shared and list(v.price["east"]) == list(inside.price["east"])
    # a data root elsewhere does not open the rest of the disk
    msg = _only_error(outside["dotdot"], data_root=tmp_path / "elsewhere")
    assert "leads outside the instance's folder" in msg and "or the data root" in msg, msg


@pytest.mark.parametrize(
    ("first_line", "name"),
    [
        ("AWS_SECRET_ACCESS_KEY=" + SECRET, "creds.csv"),
        ("-----BEGIN OPENSSH PRIVATE KEY----- " + SECRET, "id_ed25519"),
        ("token: " + SECRET + ", scope: all", ".env"),
    ],
)
def test_a_secret_on_the_first_line_is_never_shown(
    tmp_path: Path, first_line: str, name: str
) -> None:
    (tmp_path / name).write_text(first_line + "\nmore secrets " + SECRET + "\n")
    f = _csv_instance(tmp_path, name)
    msg = _only_error(f)
    assert "has no column" in msg and SECRET not in msg, msg
    res, _ = run_check(f)
    assert res.exit_code == 2 and SECRET not in res.output, res.output


def test_a_header_is_shown_quoted_and_cut(tmp_path: Path) -> None:
    # a real CSV header: its column names are shown, each as repr() of at most 40 characters
    long = "x" * 100
    (tmp_path / "p.csv").write_text(f"time,{long},\x1b[31mred\nrow," + SECRET + ",1\n")
    msg = _only_error(_csv_instance(tmp_path, "p.csv"))
    assert msg.endswith(
        f"has no column 'price'; columns are ['time', '{'x' * 40}'..., '\\x1b[31mred']"
    ), msg
    assert SECRET not in msg and "\x1b" not in msg


def test_no_data_row_is_shown(tmp_path: Path) -> None:
    rows = ["time,price", f"2023-06-04T18:00,{SECRET}", f"{SECRET},3"]
    for bad, what in ((1, "'price' is not a number"), (2, "'time' is not an ISO time")):
        (tmp_path / "p.csv").write_text(f"{rows[0]}\n{rows[bad]}\n")
        msg = _only_error(_csv_instance(tmp_path, "p.csv"))
        assert msg.endswith(f"line 2: {what}") or f"line 2: {what} " in msg, msg
        assert SECRET not in msg


def test_csv_values_follow_the_instances_magnitude_rule(tmp_path: Path) -> None:
    # 1e308 would overflow the costs: refused like the same number in the instance, with the
    # line and the column, even outside the horizon
    for value, line in (("1e308", 3), ("2e15", 5)):
        rows = PRICES.read_text().splitlines()
        rows[line - 1] = rows[line - 1].split(",")[0] + "," + value
        (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
        msg = _only_error(_csv_instance(tmp_path, "p.csv"))
        assert msg == (
            f"file '{tmp_path / 'p.csv'}' line {line}: 'price' is outside the magnitudes "
            "allowed; expected 0 or a magnitude between 1e-12 and 1e+15 (is the unit right?)"
        ), msg
    # 0 and ordinary prices are fine
    rows = PRICES.read_text().splitlines()
    rows[2] = rows[2].split(",")[0] + ",0"
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    read(_csv_instance(tmp_path, "p.csv"))
    # below the floor in size is rounding residue of 0 (the 2023 DE-LU series holds
    # -5.684e-14 USD/MWh): read as 0, not refused
    for tiny in ("-5.684341886080802e-14", "-5e-324"):
        rows = PRICES.read_text().splitlines()
        rows[1:] = [r.split(",")[0] + "," + tiny for r in rows[1:]]
        (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
        inst = read(_csv_instance(tmp_path, "p.csv"))
        assert not inst.price["east"].any()


def test_csv_time_past_year_1_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # 0001-01-01T00:00+05:00 is 0000-12-31T19:00Z: no such date
    (tmp_path / "p.csv").write_text("time,price\n0001-01-01T00:00:00+05:00,1\n")
    msg = _only_error(_csv_instance(tmp_path, "p.csv"))
    assert msg.endswith("line 2: 'time' is not an ISO time with a date in years 1-9999"), msg


# ----------------------------------------------------------------------------- numbers


def _doc_with(path: str, value: Any) -> dict[str, Any]:
    doc = tiny_doc()
    node = doc
    *parents, last = path.split(".")
    for k in parents:
        node = node[k]
    node[last] = value
    return doc


@pytest.mark.parametrize("digits", [309, 400, 4300])
def test_integers_beyond_float_range_are_field_errors(tmp_path: Path, digits: int) -> None:
    # in a YAML file, a JSON file and a Python document; in a float field and an int field
    big = "9" * digits
    for field in ("gpu_types.A100.memory_gb", "gpu_types.A100.gpus_per_node"):
        key = field.rsplit(".", 1)[1]
        y = tmp_path / "big.yaml"
        y.write_text(re.sub(rf"(\n    {key}): \d+", rf"\1: {big}", tiny_text(), count=1))
        j = tmp_path / "big.json"
        j.write_text(
            json.dumps(tiny_doc(), default=str).replace(
                f'"{key}": {80 if key == "memory_gb" else 8},', f'"{key}": {big},', 1
            )
        )
        expected = (
            f"{field}: expected a number of at most 308 digits, got an integer of {digits} digits"
        )
        for f in (y, j):
            with pytest.raises(InstanceError) as e:
                read(f)
            assert [str(x) for x in e.value.errors] == [expected], str(e.value)
        with pytest.raises(InstanceError) as e:
            from_dict(_doc_with(field, int(big)), "<test>", DATA)
        assert [str(x) for x in e.value.errors] == [expected]


def test_integers_longer_than_python_reads_are_refused(tmp_path: Path) -> None:
    y = tmp_path / "big.yaml"
    y.write_text(
        tiny_text().replace("    memory_gb: 80\n", "    memory_gb: " + "9" * 5000 + "\n", 1)
    )
    refused(y, "an integer of 5000 digits at line 6; numbers may have at most 308 digits")
    j = tmp_path / "big.json"
    j.write_text('{"x": ' + "9" * 5000 + "}")
    refused(j, "cannot parse: an integer of 5000 digits; numbers may have at most 308 digits")


def test_floats_beyond_float_range_are_field_errors(tmp_path: Path) -> None:
    y = tmp_path / "inf.yaml"
    y.write_text(tiny_text().replace("    memory_gb: 80\n", "    memory_gb: 1e400\n", 1))
    refused(y, "expected a finite number (got inf)", "gpu_types.A100.memory_gb")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpu_types.A100.memory_gb", "1e308"),
        ("horizon.hours", "12"),
        ("phases.1.deadline", "12"),  # hour | time: a quoted number is not tried as a time
        ("phases.1.mfu", "0.5"),  # number | mapping
        ("regions.east.capacity.A100", "16"),  # whole number | list
    ],
)
def test_quoted_numbers_are_refused_one_rule(tmp_path: Path, field: str, value: str) -> None:
    # the same error whether the number was quoted in YAML, a string in JSON or text in a
    # Python document: "1e308" passed check before and then failed in the solver
    doc = tiny_doc()
    node: Any = doc
    *parents, last = field.split(".")
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[last] = value
    shown = "phases[1] (finetune)." + last if field.startswith("phases") else field
    expected = f"{shown}: expected a number, not text (got {value!r})"
    j = tmp_path / "q.json"
    j.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    y = tmp_path / "q.yaml"
    y.write_text(j.read_text())  # JSON is YAML: "1e308" is a double-quoted YAML scalar
    assert f'"{value}"' in y.read_text()
    for f in (j, y):
        with pytest.raises(InstanceError) as e:
            read(f)
        assert [str(x) for x in e.value.errors] == [expected], str(e.value)
    with pytest.raises(InstanceError) as e:
        from_dict(doc, "<test>", DATA)
    # a document built in Python gets a hint about YAML 1.1 readers
    assert [str(x) for x in e.value.errors] == [
        f"{expected}; yaml.safe_load reads an unquoted number such as 2.0e9 as text "
        "(YAML 1.1): parse YAML with planner.instance.read.load_document"
    ]


def test_unquoted_exponent_numbers_are_numbers(tmp_path: Path) -> None:
    # YAML 1.2 (and JSON) numbers that YAML 1.1 would leave as text: 2e9, 2.0e9, 2.0E+9
    for text in ("2e9", "2.0e9", "2.0E+9", "20.0e8"):
        f = tmp_path / "t.yaml"
        f.write_text(tiny_text().replace("work: {tokens: 2.0e9}", f"work: {{tokens: {text}}}"))
        assert read(f).phase("finetune").work.tokens == 2e9
    # and 1e308 unquoted meets the magnitude rule, as in JSON
    f.write_text(tiny_text().replace("    memory_gb: 80\n", "    memory_gb: 1e308\n", 1))
    refused(
        f,
        "expected 0 or a magnitude between 1e-12 and 1e+15 (got 1e+308); is the unit right?",
        "gpu_types.A100.memory_gb",
    )


def test_json_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    text = json.dumps(tiny_doc(), default=lambda o: o.isoformat())
    (tmp_path / "bom.json").write_text("\ufeff" + text, encoding="utf-8")
    (tmp_path / "plain.json").write_text(text, encoding="utf-8")
    assert read(tmp_path / "bom.json").spec == read(tmp_path / "plain.json").spec
    assert read(tmp_path / "bom.json").spec == read(TINY).spec


@pytest.mark.parametrize("start", ["9999-12-31T23:00:00Z", "9999-12-31T00:00:00-05:00"])
def test_horizon_past_year_9999_through_check(tmp_path: Path, start: str) -> None:
    f = tmp_path / "late.yaml"
    f.write_text(tiny_text().replace("start: 2023-06-05T00:00:00Z", f"start: {start}"))
    err = refused(
        f, re.compile(r"expected a start between 0001-01-02 and 9999-12-30 .*"), "horizon.start"
    )
    assert "internal error" not in str(err)


# ----------------------------------------------------------------------------- caps


def _with_gpu_counts(n: int) -> dict[str, Any]:
    doc = tiny_doc()
    doc["phases"][1]["options"] = {"gpu_counts": list(range(1, n + 1)), "max_gpus": 1024}
    return doc


def _with_fractions(n: int) -> dict[str, Any]:
    doc = tiny_doc()
    doc["phases"][0]["options"]["fractions"] = [(i + 1) / (n + 1) for i in range(n)]
    return doc


def _with_choices(key: str, n: int) -> dict[str, Any]:
    doc = tiny_doc()
    doc["phases"][1]["options"][key] = [2**i for i in range(n)]
    return doc


def _with_regions(n: int) -> dict[str, Any]:
    doc = tiny_doc()
    east = doc["regions"]["east"]
    doc["regions"] = {f"r{i}": copy.deepcopy(east) for i in range(n)}
    return doc


def _with_gpu_types(n: int) -> dict[str, Any]:
    doc = tiny_doc()
    a100 = doc["gpu_types"]["A100"]
    east = doc["regions"]["east"]
    for i in range(n - 2):
        doc["gpu_types"][f"G{i}"] = copy.deepcopy(a100)
        east["capacity"][f"G{i}"] = 8
        east["offers"][f"G{i}"] = {"on_demand": {"usd_per_gpu_hour": 1 + i / 100}}
    return doc


def _with_tiers(n: int) -> dict[str, Any]:
    doc = tiny_doc()
    doc["regions"]["east"]["storage"] = {
        f"t{i}": {"usd_per_gb_month": 0.01 * (i + 1)} for i in range(n)
    }
    return doc


def _with_pairs(n: int) -> dict[str, Any]:
    # 64 regions, each with capacity and offers of n // 64 GPU types, over three years
    doc = _with_gpu_types(n // 64)
    east = doc["regions"]["east"]
    for g in ("A100", "L4"):
        if g not in doc["gpu_types"]:
            del east["capacity"][g], east["offers"][g]
    doc["regions"] = {f"r{i}": copy.deepcopy(east) for i in range(64)}
    doc["horizon"]["hours"] = 24 * 366 * 3
    doc["phases"][1]["deadline"] = 24 * 366 * 3
    return doc


#: (what, builder, cap, the field of the error over the cap, the error)
CAPS: list[tuple[str, Callable[[int], dict[str, Any]], int, str, str]] = [
    (
        "gpu_counts",
        _with_gpu_counts,
        64,
        "phases[1] (finetune).options.gpu_counts",
        "expected at most 64 items (got a list of 65 items)",
    ),
    (
        "fractions",
        _with_fractions,
        32,
        "phases[0] (prep).options.fractions",
        "expected at most 32 items (got a list of 33 items)",
    ),
    (
        "tensor_parallel",
        lambda n: _with_choices("tensor_parallel", n),
        16,
        "phases[1] (finetune).options.tensor_parallel",
        "expected at most 16 items (got a list of 17 items)",
    ),
    (
        "pipeline_parallel",
        lambda n: _with_choices("pipeline_parallel", n),
        16,
        "phases[1] (finetune).options.pipeline_parallel",
        "expected at most 16 items (got a list of 17 items)",
    ),
    (
        "extra_spare_nodes",
        lambda n: _with_choices("extra_spare_nodes", n),
        16,
        "phases[1] (finetune).options.extra_spare_nodes",
        "expected at most 16 items (got a list of 17 items)",
    ),
    (
        "phases",
        _phase_chain,
        MAX_PHASES,
        "phases",
        f"expected at most {MAX_PHASES} items (got a list of {MAX_PHASES + 1} items)",
    ),
    ("regions", _with_regions, 64, "regions", "expected at most 64 entries (got 65)"),
    ("gpu_types", _with_gpu_types, 64, "gpu_types", "expected at most 64 entries (got 65)"),
    ("storage", _with_tiers, 16, "regions.east.storage", "expected at most 16 entries (got 17)"),
    (
        "pairs",
        _with_pairs,
        256,
        "regions",
        "expected at most 256 (region, GPU type) pairs with capacity or offers, over all "
        "regions (got 320)",
    ),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("what", "build", "cap", "field", "message"), CAPS, ids=[c[0] for c in CAPS]
)
def test_a_file_at_each_cap_checks_quickly(
    tmp_path: Path,
    what: str,
    build: Callable[[int], dict[str, Any]],
    cap: int,
    field: str,
    message: str,
) -> None:
    # at the cap: valid, read in well under a second and checked by `trainplan check` (every
    # configuration enumerated) in a few seconds. Before the caps: 100,000 gpu_counts took
    # check 289 s, 2,000 regions 23 s.
    f = tmp_path / f"{what}.json"
    f.write_text(json.dumps(build(cap), default=lambda o: o.isoformat()))
    m = measured(lambda: read(f))
    assert isinstance(m.value, Instance), repr(m.value)
    assert m.seconds < QUICK_S, f"read took {m.seconds:.2f} s"
    res, mc = run_check(f)
    assert res.exit_code in (0, 1), res.output
    assert "internal error" not in res.output
    # pairs: three years of hours, and `check` (planner/model/configs.py, hygiene.py) takes the
    # max and mean of hourly arrays per configuration: about 3.5 s alone on 2 cores
    bound = 2 * BIG_S if what == "pairs" else BIG_S
    assert mc.seconds < bound, f"check took {mc.seconds:.2f} s"
    # one over the cap (pairs: 64 regions of 9 GPU types): refused at once, naming the field
    over = cap + 64 if what == "pairs" else cap + 1
    g = tmp_path / f"{what}-over.json"
    g.write_text(json.dumps(build(over), default=lambda o: o.isoformat()))
    refused(g, message, field)


def test_caps_multiplied_in_one_file_are_refused_with_the_figures(tmp_path: Path) -> None:
    # found by the long fuzz run: 999 phases x 64 regions x 16 spare-node choices (each list
    # within its own cap) asked for tens of millions of configurations, and `check` ran past
    # the fuzz's 45 s deadline; such a file is refused at once, naming the phase asking most
    doc = _with_regions(64)
    chain = _phase_chain(999)["phases"]
    for p in chain:
        p["options"] = {"gpu_counts": [1, 2, 4, 8], "extra_spare_nodes": list(range(16))}
    doc["phases"] = chain
    f = tmp_path / "product.json"
    f.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    # 999 phases x 4 counts x 64 regions x 16 spare choices x the tiny's GPU types,
    # contracts and tiers: far over the 500,000 the reader allows
    err = refused(
        f, re.compile(r"the phases ask for about [\d,]+ configurations before layouts .*"), "phases"
    )
    assert (
        "64 regions" in err.errors[0].message and "16 spare-node choices" in err.errors[0].message
    )
    # one phase of the same shape is well within it (the benchmarks' 200-phase quarter asks
    # 36,000)
    doc["phases"] = chain[-1:]
    doc["phases"][0]["predecessors"] = []
    g = tmp_path / "one.json"
    g.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    assert isinstance(read(g), Instance)


def test_many_unknown_names_give_short_messages() -> None:
    # each message lists at most 10 names, each cut to 40 characters
    doc = _with_regions(64)
    doc["phases"][1]["regions"] = ["nowhere-" + "x" * 100]
    with pytest.raises(InstanceError) as e:
        from_dict(doc, "<test>", DATA)
    (fe,) = e.value.errors
    assert fe.message == (
        f"unknown region '{'nowhere-' + 'x' * 32}'...; known: ['r0', 'r1', 'r10', 'r11', "
        "'r12', 'r13', 'r14', 'r15', 'r16', 'r17', ... (54 more)]"
    )


def test_phase_lookups_are_indexed() -> None:
    # Instance.phase and .successors were linear scans (quadratic over all phases)
    inst = from_dict(_phase_chain(MAX_PHASES), "<test>", DATA)
    assert inst.phase("p42").name == "p42"
    assert inst.successors("p42") == ("p43",)
    assert inst.successors(f"p{MAX_PHASES - 1}") == ()
    with pytest.raises(KeyError):
        inst.phase("nope")
    back = pickle.loads(pickle.dumps(inst))
    assert back.successors("p42") == ("p43",) and back.phase("p7") == inst.phase("p7")
    # a done successor needs nothing handed on
    v = inst.replace({"phases.p43.done": True})
    assert v.successors("p42") == ()


def test_time_of_use_at_scale_matches_hour_by_hour_conversion() -> None:
    # The tariff is resolved with the zone's offset sampled once a day (every hour on days
    # with a change); it must equal converting every hour, across DST changes, half-hour
    # zones (Lord Howe changes by 30 minutes) and three years.
    from zoneinfo import ZoneInfo

    from planner.instance.series import local_clock

    start = datetime.fromisoformat("2023-01-01T00:30:00+00:00")
    hours = 24 * 366 * 3
    for tz in ("America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Africa/Casablanca"):
        zone = ZoneInfo(tz)
        day, weekday, hour = local_clock(start, hours, zone)
        for t in range(0, hours, 7):
            local = (start + timedelta(hours=t)).astimezone(zone)
            assert (int(weekday[t]), int(hour[t])) == (local.weekday(), local.hour), (tz, t)
            assert int(day[t]) == local.date().toordinal() - 719163, (tz, t)


@pytest.mark.timeout(60)
def test_time_of_use_in_every_region_is_quick() -> None:
    # 64 regions x 168 bands x 3 years of hours: before, 37 ms per region per 26,352 hours
    doc = _with_regions(64)
    doc["horizon"]["hours"] = 24 * 366 * 3
    doc["phases"][1]["deadline"] = 24 * 366 * 3
    zones = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]
    for i, r in enumerate(doc["regions"].values()):
        r["timezone"] = zones[i % 4]
        r["electricity"] = {
            "tou": {
                "default": 100,
                "bands": [
                    {
                        "start_hour": h % 24,
                        "end_hour": h % 24 + 1,
                        "price": 40 + h % 7,
                        "weekdays": [h // 24],
                    }
                    for h in range(168)
                ],
                "weekend": 20,
                "holidays": ["2024-12-25"],
                "holiday": 10,
            }
        }
    m = measured(lambda: from_dict(doc, "<test>", DATA))
    inst = m.value
    assert isinstance(inst, Instance), repr(inst)
    assert m.seconds < QUICK_S, f"{m.seconds:.2f} s"
    # spot checks by hand: 2023-06-05T00:00Z is Monday 02:00 in Berlin (CEST): band h = 2,
    # price 40 + 2 % 7 = 42; 2023-06-10T12:00Z is Saturday: the weekend price 20;
    # 2024-12-25T12:00Z is 13:00 in Berlin on Christmas: the holiday price 10
    p = inst.price["r0"]
    assert p[0] == 42 and p[5 * 24 + 12] == 20
    xmas = int(
        (datetime.fromisoformat("2024-12-25T12:00:00+00:00") - inst.start).total_seconds() // 3600
    )
    assert p[xmas] == 10


# ----------------------------------------------------------------------------- escaping

#: Names that a terminal or rich would interpret: markup, an emoji code, ANSI escapes.
TRICKY = ["[/]", "[bold red]x[/]", ":x:", ":warning: done"]
ESC_NAME = "\x1b[31mred\x1b[0m"


def test_field_errors_render_control_characters_escaped() -> None:
    from planner.instance.errors import FieldError

    fe = FieldError(f"phases[0] ({ESC_NAME})", "unknown phase '\x07\u202e'")
    assert str(fe) == "phases[0] (\\x1b[31mred\\x1b[0m): unknown phase '\\x07\\u202e'"
    err = InstanceError("dir/\x1b]0;title\x07.yaml", [fe])
    assert "\x1b" not in str(err) and "\x07" not in str(err)
    assert str(err).startswith("dir/\\x1b]0;title\\x07.yaml: phases[0]")
    # the attributes keep the text as given (for --json and programs)
    assert fe.path == f"phases[0] ({ESC_NAME})" and err.file.startswith("dir/\x1b")


def _no_terminal_codes(text: str) -> None:
    assert "\x1b" not in text, repr(text)
    assert not any(0x1F300 <= ord(c) <= 0x1FAFF or 0x2600 <= ord(c) <= 0x27BF for c in text), repr(
        text
    )


def test_tricky_names_print_as_text_through_check(tmp_path: Path) -> None:
    # valid names: the summary shows them literally, neither markup nor emoji
    doc = tiny_doc()
    doc["phases"][0]["name"] = TRICKY[0]
    doc["phases"][1]["name"] = TRICKY[2]
    doc["phases"][1]["predecessors"] = [TRICKY[0]]
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    res, _ = run_check(f)
    assert res.exit_code == 0, res.output
    assert f"  {TRICKY[0]} [data_preparation]" in res.stdout
    assert f"  {TRICKY[2]} [fine_tuning]" in res.stdout
    _no_terminal_codes(res.output)


@pytest.mark.parametrize("name", [*TRICKY, ESC_NAME])
def test_tricky_names_in_errors_print_as_text(tmp_path: Path, name: str) -> None:
    # an unknown predecessor named with markup, an emoji code or ANSI escapes: the error
    # names it, escaped, and nothing is interpreted
    doc = tiny_doc()
    doc["phases"][1]["predecessors"] = [name]
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    res, _ = run_check(f)
    assert res.exit_code == 2, res.output
    shown = repr(name)
    assert f"unknown phase {shown}; phases are ['prep', 'finetune']" in res.stderr, res.stderr
    _no_terminal_codes(res.output)
    assert "internal error" not in res.output


def test_a_phase_name_with_escapes_is_refused_and_shown_escaped(tmp_path: Path) -> None:
    doc = tiny_doc()
    doc["phases"][0]["name"] = ESC_NAME
    doc["phases"][1]["predecessors"] = [ESC_NAME]
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    res, _ = run_check(f)
    assert res.exit_code == 2, res.output
    assert "phases[0] (\\x1b[31mred\\x1b[0m).name: expected printable text" in res.stderr
    _no_terminal_codes(res.output)


@pytest.mark.skipif(not POSIX, reason="file names with brackets and ESC need POSIX")
def test_a_file_name_with_markup_is_printed_as_text(tmp_path: Path) -> None:
    # the file name is user text too: 'a[/]b.yaml' (a folder 'a[' holding ']b.yaml') was
    # parsed as rich markup, a closing tag with nothing open: an internal error
    from planner.instance.errors import printable

    (tmp_path / "a[").mkdir()
    for name in ("a[/]b.yaml", "[red]x.yaml", ":x:.yaml", "\x1b[31mred.yaml"):
        f = tmp_path / name
        f.write_text("phases: [")
        res, _ = run_check(f)
        assert res.exit_code == 2, res.output
        assert "internal error" not in res.output
        _no_terminal_codes(res.output)
        assert f"invalid instance {printable(str(f))}" in res.stderr, res.stderr
        assert f"{printable(str(f))}: cannot parse: " in res.stderr, res.stderr


def test_a_user_gpu_catalog_obeys_the_file_policy(tmp_path: Path) -> None:
    # gpu_catalog names a file like a csv series does: /proc and paths out of the folder are
    # refused before anything is read, with the field named
    for ref in ("/proc/self/environ", "../secret.yaml"):
        doc = load_document(TINY)
        doc["gpu_catalog"] = ref
        doc["gpu_types"]["H100"] = {"catalog": "H100-SXM"}
        with pytest.raises(InstanceError) as e:
            from_dict(doc, "<test>", tmp_path)
        (err,) = e.value.errors
        assert err.path == "gpu_catalog", err
        assert SECRET not in str(e.value)


# ----------------------------------------------------------------------------- found by fuzzing
# Found by the fuzz suite's file-reference family (tests/instance/test_fuzz.py, op_file_ref).


@pytest.mark.skipif(not POSIX, reason="symbolic links need POSIX")
def test_a_csv_name_linking_to_another_file_shows_no_first_line(tmp_path: Path) -> None:
    # prices.csv -> ../secret/key.txt, with the secret's folder allowed as the data root:
    # the file may be read, but its first line was shown as "columns are [...]" because the
    # name as written ends in .csv; the target's name decides
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text(f"{SECRET},time\nrow,1\n")
    folder = tmp_path / "inst"
    folder.mkdir()
    (folder / "prices.csv").symlink_to("../secret/key.txt")
    msg = _only_error(_csv_instance(folder, "prices.csv"), data_root=tmp_path)
    assert SECRET not in msg, msg
    assert msg.endswith(
        "has no column 'price' (its first line is not shown: the file it links to is not "
        "named .csv)"
    ), msg
    # a link to a .csv file still shows its header
    (tmp_path / "secret" / "other.csv").write_text("when,price\n")
    (folder / "other.csv").symlink_to("../secret/other.csv")
    msg = _only_error(_csv_instance(folder, "other.csv"), data_root=tmp_path)
    assert msg.endswith("has no column 'time'; columns are ['when', 'price']"), msg


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("a\x00b.csv", "contains a NUL character, which no file name may hold"),
        ("x" * 300 + ".csv", "is too long for a file name (304 bytes; at most 255 per file"),
        ("d/" * 2100 + "p.csv", "is too long for a file name (4,205 bytes; at most 255 per"),
    ],
    ids=["nul", "long name", "long path"],
)
def test_impossible_file_names_are_refused(tmp_path: Path, name: str, why: str) -> None:
    # before: ValueError (embedded null byte) and OSError (File name too long) from the
    # reader's path checks, "internal error" in the CLI
    f = _csv_instance(tmp_path, name)
    msg = _only_error(f)
    assert why in msg, msg
    assert len(msg) < 400  # the name is cut in the message
    res, _ = run_check(f)
    assert res.exit_code == 2, res.output
    assert "internal error" not in res.output and "Traceback" not in res.output


# ----------------------------------------------------------------------------- issue 26
# The third round: references a plan or a grid makes, output paths, crafted plan files,
# catalogs and vms.csv, each as the issue found it (exit 4, a key shown, a file overwritten).


def _trainplan(*args: str) -> Result:
    from planner.interfaces.cli import _register

    _register()
    return CliRunner().invoke(app, list(args), env={"TRAINPLAN_NO_PROGRESS": "1"})


@pytest.fixture(scope="module")
def solved_tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """tiny solved once into plans/plan.json (with its attribution), its instance in inst/,
    and a secret YAML of credentials beside them."""
    root = tmp_path_factory.mktemp("solved")
    (root / "inst").mkdir()
    (root / "plans").mkdir()
    (root / "secret").mkdir()
    inst = root / "inst" / "tiny.yaml"
    inst.write_text(TINY.read_text())
    (root / "secret" / "creds.yaml").write_text(
        f"aws_secret_access_key: {SECRET}\naws_access_key_id: {SECRET}\n"
    )
    res = _trainplan("solve", str(inst), "-o", str(root / "plans" / "plan.json"))
    assert res.exit_code == 0, res.output
    return {
        "root": root,
        "inst": inst,
        "plan": json.loads((root / "plans" / "plan.json").read_text()),
    }


def _plan_with(solved: dict[str, Any], tmp_path: Path, **changes: Any) -> Path:
    data = copy.deepcopy(solved["plan"])
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "ref",
    [
        {"instance": "SECRETFILE"},
        {"instance": "../secret/creds"},
        {"instance_file": {"path": "SECRETFILE", "sha256": "0" * 64}},
        {"instance_file": {"path": "../secret/creds.yaml", "sha256": "0" * 64}},
    ],
    ids=["instance absolute", "instance relative", "file absolute", "file relative"],
)
def test_a_plans_reference_reads_no_file_outside_its_folder(
    solved_tiny: dict[str, Any], tmp_path: Path, ref: dict[str, Any]
) -> None:
    # before: report read the file the plan named and printed its keys
    # ("aws_secret_access_key: unknown field") and some values
    secret = solved_tiny["root"] / "secret" / "creds.yaml"
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "creds.yaml").write_text(secret.read_text())
    work = tmp_path / "work"
    work.mkdir()
    changes = {
        k: json.loads(json.dumps(v).replace("SECRETFILE", str(secret))) for k, v in ref.items()
    }
    if "instance" in changes:
        changes["instance_file"] = None
    plan = _plan_with(solved_tiny, work, **changes)
    res = _trainplan("report", str(plan), "-o", str(work / "r.html"))
    assert res.exit_code == 0, res.output
    assert SECRET not in res.output and "aws_" not in res.output
    page = (work / "r.html").read_text()
    assert SECRET not in page and "aws_" not in page
    assert "not checked against an instance" in page or "not checked" in res.output


def test_a_plans_instance_outside_with_the_recorded_hash_is_read(
    solved_tiny: dict[str, Any], tmp_path: Path
) -> None:
    # a plan written to another folder than its instance: the file's bytes have the SHA-256
    # the plan records, so whoever wrote the plan knew its content; it is read
    plan = _plan_with(solved_tiny, tmp_path)
    data = json.loads(plan.read_text())
    data["instance_file"]["path"] = str(solved_tiny["inst"])
    plan.write_text(json.dumps(data))
    res = _trainplan("report", str(plan), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 0, res.output
    assert "Prices and capacity use are left out" not in res.output


def test_a_grids_base_outside_its_folder_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "creds.yaml").write_text(f"aws_secret_access_key: {SECRET}\n")
    (tmp_path / "grids").mkdir()
    for base in ("../secret/creds.yaml", str(tmp_path / "secret" / "creds.yaml"), "/etc/passwd"):
        grid = tmp_path / "grids" / "g.yaml"
        grid.write_text(yaml.safe_dump({"base": base, "axes": [{"path": "x", "values": [1]}]}))
        res = _trainplan("grid", str(grid), "--dry-run")
        assert res.exit_code == 2, res.output
        assert "base:" in res.output and SECRET not in res.output and "aws_" not in res.output
        assert "root:" not in res.output  # /etc/passwd's first line


def test_a_gpu_catalog_is_checked_when_every_gpu_is_complete(tmp_path: Path) -> None:
    # before: gpu_catalog was looked at only when some GPU type needed it; /etc/passwd passed
    for ref in ("/etc/passwd", "../secret.yaml", "missing.yaml"):
        doc = load_document(TINY)  # every GPU type of tiny gives its own figures
        doc["gpu_catalog"] = ref
        with pytest.raises(InstanceError) as e:
            from_dict(doc, "<test>", tmp_path)
        assert [fe.path for fe in e.value.errors] == ["gpu_catalog"], str(e.value)


@pytest.mark.skipif(not POSIX, reason="symbolic links need POSIX")
def test_outputs_are_never_written_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    out = tmp_path / "out"
    out.mkdir()
    (out / "plan.json").symlink_to(victim)
    (out / "schema.json").symlink_to(victim)
    (out / "r.html").symlink_to(victim)
    for args in (
        ("solve", str(TINY), "-o", str(out / "plan.json")),
        ("schema", "-o", str(out / "schema.json")),
        ("init", "-o", str(out / "plan.json"), "--model", "7B", "--force"),
    ):
        res = _trainplan(*args)
        assert res.exit_code == 2, res.output
        assert "symbolic link" in res.output
        assert "solver" not in res.output  # refused before any solve
    assert victim.read_text() == "untouched"


def test_a_missing_folder_is_created_before_solving(tmp_path: Path) -> None:
    # before: the plan was solved, then lost: "-o new/plan.json" ended in exit 4
    res = _trainplan("solve", str(TINY), "-o", str(tmp_path / "new" / "deeper" / "plan.json"))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "new" / "deeper" / "plan.json").is_file()
    (tmp_path / "file").write_text("x")
    res = _trainplan("solve", str(TINY), "-o", str(tmp_path / "file" / "plan.json"))
    assert res.exit_code == 2 and "is not a folder" in res.output
    assert "solver" not in res.output
    for args in (("schema",), ("init", "--model", "7B")):
        res = _trainplan(*args, "-o", str(tmp_path / "made" / args[0] / "x.yaml"))
        assert res.exit_code == 0, res.output


@pytest.mark.skipif(not POSIX, reason="symbolic links need POSIX")
def test_report_pngs_refuse_a_planted_link(solved_tiny: dict[str, Any], tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    plan = _plan_with(solved_tiny, tmp_path)
    data = json.loads(plan.read_text())
    data["instance_file"]["path"] = str(solved_tiny["inst"])
    plan.write_text(json.dumps(data))
    (tmp_path / "pngs").mkdir()
    (tmp_path / "pngs" / "gantt.png").symlink_to(victim)
    res = _trainplan(
        "report", str(plan), "-o", str(tmp_path / "r.html"), "--png", str(tmp_path / "pngs")
    )
    assert res.exit_code == 2, res.output
    assert "symbolic link" in res.output and victim.read_text() == "untouched"


# crafted segment figures and blocks: verify rejects them (1), report never prints them


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from builders import two_nights

    root = tmp_path_factory.mktemp("segments")
    inst = root / "seg.json"
    inst.write_text(json.dumps(two_nights()))
    res = _trainplan("solve", str(inst), "-o", str(root / "plan.json"), "--no-attribution")
    assert res.exit_code == 0, res.output
    return inst, json.loads((root / "plan.json").read_text())


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("work", -4.0, "segment 1 states it does -4 of the work"),
        ("work", 5.0, "segment 1 states it does 5 of the work"),
        ("migration.hours", 99.0, "states hours 99"),
        ("migration.from", "7", "comes from '7'"),
        # outside the horizon (10**12 is no hour at all: the plan reader refuses it, exit 2)
        ("hours", [100_000], "outside"),
    ],
)
def test_wrong_segment_figures_are_violations(
    segments: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    field: str,
    value: Any,
    expected: str,
) -> None:
    inst, plan = segments
    data = copy.deepcopy(plan)
    seg = data["phases"][0]["segments"][1]
    if "." in field:
        a, b = field.split(".")
        seg[a][b] = value
    else:
        seg[field] = value
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    res = _trainplan("verify", str(inst), str(path))
    assert res.exit_code == 1, res.output
    assert expected in " ".join(res.output.split()), res.output
    res = _trainplan("report", str(path), "--instance", str(inst), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 1, res.output
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("block", "value", "code"),
    [
        ("attribution", "x", 2),
        ("attribution", {"format": "trainplan-attribution/1"}, 2),
        ("replan", {"from_hour": 5, "changes": "x"}, 2),
        ("replan", {"from_hour": "x"}, 2),
        ("replan", [1, 2], 2),
        ("replan", {"from_hour": 9999}, 1),
    ],
)
def test_crafted_blocks_are_refused_not_internal_errors(
    solved_tiny: dict[str, Any], tmp_path: Path, block: str, value: Any, code: int
) -> None:
    # before: exit 4 (TypeError: string indices must be integers) or printed as given
    plan = _plan_with(solved_tiny, tmp_path, **{block: value})
    data = json.loads(plan.read_text())
    data["instance_file"]["path"] = str(solved_tiny["inst"])
    plan.write_text(json.dumps(data))
    res = _trainplan("report", str(plan), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == code, res.output
    assert block in res.output


def test_an_attribution_that_does_not_add_up_is_refused(
    solved_tiny: dict[str, Any], tmp_path: Path
) -> None:
    a = copy.deepcopy(solved_tiny["plan"]["attribution"])
    a["baseline"]["objective"] *= 10  # "saves 90%"
    plan = _plan_with(solved_tiny, tmp_path, attribution=a)
    data = json.loads(plan.read_text())
    data["instance_file"]["path"] = str(solved_tiny["inst"])
    plan.write_text(json.dumps(data))
    res = _trainplan("report", str(plan), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 1, res.output
    assert "attribution.levers[0]" in res.output
    # consistent but not the instance's baseline: refused too
    for step in a["levers"]:
        step["cost"] = step["cost"]  # unchanged chain: shift the whole baseline instead
    a = copy.deepcopy(solved_tiny["plan"]["attribution"])
    shift = 1000.0
    a["baseline"]["objective"] += shift
    a["baseline"]["costs"]["rental"] += shift
    a["baseline"]["costs"]["total"] += shift
    a["levers"][0]["saving"] += shift
    data["attribution"] = a
    plan.write_text(json.dumps(data))
    res = _trainplan("report", str(plan), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 1, res.output
    assert "lever-free baseline" in res.output


# catalogs and price lists


def test_import_skypilot_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    head = b"InstanceType,AcceleratorName,AcceleratorCount,Region,Price,SpotPrice\n"
    cases = {
        "overflow": head + b"p5,H100,1e-300,us-east-1,1e300,\n",
        "latin1": head + b"p5,H\xe9100,8,us-east-1,98,\n",
        "long field": head + b"p5," + b"A" * 140_000 + b",8,us,1,\n",
        "nan": head + b"p5,H100,8,us,nan,\n",
    }
    for name, body in cases.items():
        src = tmp_path / f"{name}.csv"
        src.write_bytes(body)
        res = _trainplan(
            "gpus", "import-skypilot", str(src), "--cloud", "aws", "-o", str(tmp_path / "c.yaml")
        )
        assert res.exit_code == 2, (name, res.output)
        assert "internal error" not in res.output


def test_a_catalog_price_of_nan_is_refused(tmp_path: Path) -> None:
    # before: gpus --json ended in exit 4 (ValueError: Out of range float values)
    cat = tmp_path / "c.yaml"
    cat.write_text(
        "format: trainplan-catalog/1\ngpus:\n  H100-SXM: {on_demand_usd_per_gpu_hour: .nan}\n"
    )
    res = _trainplan("gpus", "--catalog", str(cat), "--json")
    assert res.exit_code == 2 and "on_demand_usd_per_gpu_hour" in res.output, res.output


def test_a_catalogs_memory_unit_reaches_the_plan(tmp_path: Path) -> None:
    # before: gpus --catalog showed 80 GB, plans got 81.6 (80 GiB less headroom, in GB)
    from planner.model.configs import config_space

    (tmp_path / "cat.yaml").write_text(
        "format: trainplan-catalog/1\ngpus:\n  A100: {catalog: A100-SXM-80GB, memory_unit: GB}\n"
    )
    doc = load_document(TINY)
    doc["gpu_catalog"] = "cat.yaml"
    doc["gpu_types"]["A100"] = {"catalog": "A100"}
    inst = from_dict(doc, "<test>", tmp_path)
    g = inst.gpu("A100")
    assert (g.memory_gb, g.memory_unit) == (80, "GB")
    c = next(c for c in config_space(inst)["finetune"] if c.gpu == "A100")
    # usable memory per GPU: 80e9 bytes x (1 - headroom), in GB
    want = 80.0 * (1 - inst.spec.memory.headroom)
    assert c.memory.capacity_gb == pytest.approx(want, rel=1e-9)
