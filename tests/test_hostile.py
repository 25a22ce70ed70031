"""Hostile files: alias bombs, deep nesting, files at and past the size limits, CSV references
that are binary, huge, directories, FIFOs or symlink loops, and documents built to make the
reader or the planner do quadratic work.

Each must give a clear error (or a result) within bounded time and bounded memory, through
``planner.read`` and through ``trainplan check`` (exit 2, the error on stderr, no traceback).
Time is wall-clock; memory is the growth of the process's peak resident set (Linux: the peak
is reset through /proc/self/clear_refs before each measurement; elsewhere tracemalloc's peak
of Python allocations).

What tests/test_instance_errors.py already covers is not repeated here: the classic
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

import planner.cli.check  # noqa: F401  (registers the command)
from planner.cli.app import app
from planner.instance import Instance, InstanceError, read
from planner.instance.read import MAX_DEPTH, MAX_FILE_BYTES, from_dict
from planner.instance.series import MAX_CSV_BYTES

ROOT = Path(__file__).resolve().parents[1]
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
from planner.cli import main
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
    return copy.deepcopy(yaml.safe_load(tiny_text()))


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
        (b"time,price\n2023-06-05T00:00,\0\0\n", "line 2: 'price' is not a number: '\\x00\\x00'"),
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
    doc = _phase_chain(1000)
    with deadline(QUICK_S):
        inst = from_dict(doc, "<test>", DATA)
    assert inst.order[:3] == ("p0", "p1", "p2")
    f = tmp_path / "chain.json"
    f.write_text(json.dumps(doc, default=str))
    res = CliRunner().invoke(_cli(), ["check", str(f)])
    assert "internal error" not in res.output and res.exit_code in (0, 1), res.output


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

    doc = yaml.safe_load((DATA / "tiny.yaml").read_text())
    phase = doc["phases"][1]
    phase["options"] = {"gpu_counts": list(range(1, 25_201))}
    doc["phases"] = [phase] * 25_200
    t0 = _time.perf_counter()
    with pytest.raises(InstanceError, match="more than 2000000 values"):
        from_dict(doc, "<python>", DATA)
    assert _time.perf_counter() - t0 < 5
