"""The command line's conventions: --version, -h, -q/-v anywhere, the width of output (the
terminal's, COLUMNS, or uncut in a pipe), progress on a terminal only, the exit-code table
(README's is the code's), internal errors exit 4, "did you mean", and `check` on a grid."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.interfaces.cli import _register, app
from planner.interfaces.cli.app import (
    PIPE_WIDTH,
    hoist_global_options,
    output_width,
    progress_shown,
)
from planner.interfaces.cli.exits import EXIT_CODES, EXIT_INTERNAL

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "tiny.yaml"
TRAINPLAN = Path(sys.executable).with_name("trainplan")

_register()


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command, its output piped (not a terminal)."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TRAINPLAN_DEBUG")}
    return subprocess.run(
        [str(TRAINPLAN), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
        cwd=ROOT,
    )


def test_version_and_short_help() -> None:
    from importlib.metadata import version

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"trainplan {version('trainplan')}"
    for args in (["-h"], ["solve", "-h"], ["gpus", "-h"], ["export", "-h"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0 and "Usage" in res.output, args


def test_readme_exit_codes_are_the_codes() -> None:
    """README's table of exit codes has exactly the rows of
    planner.interfaces.cli.exits.EXIT_CODES."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Exit status", 1)[1].split("\n#", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
    assert {int(k): v for k, v in rows.items()} == EXIT_CODES


def test_an_internal_error_exits_4_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import planner.analysis.summary  # the check command loads it when it runs

    def boom(*_a: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(planner.analysis.summary, "summarize", boom)
    res = CliRunner().invoke(app, ["check", str(TINY)])
    assert res.exit_code == EXIT_INTERNAL == 4
    assert "internal error: RuntimeError: a bug" in res.output
    assert "Traceback" not in res.output
    # bad input stays 2, distinct from the bug
    res = CliRunner().invoke(app, ["check", str(TINY.with_name("missing.yaml"))])
    assert res.exit_code == 2


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_output_width_follows_columns_then_the_terminal() -> None:
    no_tty = _Stream(False)
    assert output_width(_Stream(False), {"COLUMNS": "72"}, no_tty) == 72
    assert output_width(_Stream(True), {"COLUMNS": "72"}, no_tty) == 72
    assert output_width(_Stream(True), {}, no_tty) is None  # rich asks the terminal
    # a pipe with no terminal anywhere (a log, CI): nothing is cut
    assert output_width(_Stream(False), {}, no_tty) == PIPE_WIDTH
    assert output_width(_Stream(False), {"COLUMNS": "junk"}, no_tty) == PIPE_WIDTH


def test_piped_output_is_never_cut_and_columns_is_followed() -> None:
    wide = _run("solve", str(TINY))
    assert wide.returncode == 0, wide.stderr
    assert "…" not in wide.stdout
    # the cost table carries every figure whole: the baseline's total in dollars and cents
    assert re.search(r"│ total +│ +\$\d[\d,]*\.\d\d │", wide.stdout)
    narrow = _run("solve", str(TINY), env={"COLUMNS": "60"})
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60
    assert "…" not in narrow.stdout  # cells fold rather than end in an ellipsis


def test_quiet_anywhere_on_the_line_and_verbose() -> None:
    assert hoist_global_options(["check", "x.yaml", "-q"]) == ["-q", "check", "x.yaml"]
    assert hoist_global_options(["solve", "--", "-q"]) == ["solve", "--", "-q"]
    quiet = _run("check", str(TINY), "--quiet")
    # the verdict only: a result, kept by --quiet; the summary is detail
    assert quiet.returncode == 0 and quiet.stdout.strip().splitlines() == [
        f"{TINY}: ok: {quiet.stdout.split('ok: ')[1].strip()}"
    ]
    loud = _run("check", str(TINY))
    assert "ok:" in loud.stdout
    res = CliRunner().invoke(app, ["-v", "check", str(TINY)])
    assert res.exit_code == 0


def test_progress_only_on_a_terminal() -> None:
    # pytest captures stderr: not a terminal, so nothing is drawn
    assert progress_shown() is False
    res = _run("solve", str(TINY))
    assert "\r" not in res.stderr and "⠋" not in res.stderr


def test_check_on_a_grid_points_to_grid() -> None:
    res = CliRunner().invoke(app, ["check", str(ROOT / "tests" / "data" / "grid_small.yaml")])
    assert res.exit_code == 2
    assert "is a scenario grid" in res.output and "trainplan grid" in res.output
