"""What the commands print is text (issue 16): names with rich markup (``[/]``, ``[bold]``,
``[red]``), emoji codes (``:x:``) and ANSI escapes (``\\x1b[31m``) come out literally, or
escaped (``\\x1b``), through every command that prints user text: solve, check, estimate
(instance mode), levers, explain, pareto, grid and verify; never a crash (a phase called
``[/]`` crashed ``solve`` after the plan file was written), an emoji or an ESC byte.

And internal errors have their own exit status (``EXIT_INTERNAL``) and a short "please
report" line with the exception's type and message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import tiny_dict
from typer.testing import CliRunner
from typer.testing import Result as CliResult

from planner.instance.errors import printable
from planner.interfaces.cli import COMMANDS
from planner.interfaces.cli.app import app
from planner.interfaces.cli.exits import EXIT_INPUT, EXIT_INTERNAL

for _name in COMMANDS:  # register every command on app
    __import__(f"planner.interfaces.cli.{_name}")

ESC = "\x1b[31m"
#: tiny.yaml's names, renamed everywhere to ones a terminal or rich would interpret.
NAMES = {
    "tiny": "[bold]plan[/] :x:",
    "prep": "[/]",
    "finetune": ":x:",
    "east": "[bold]",
    "A100": "[red]A100",
    "m1b": "m:x:1b",
}


def _rename(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {names.get(k, k): _rename(v, names) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename(v, names) for v in node]
    return names.get(node, node) if isinstance(node, str) else node


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc, default=lambda o: o.isoformat()))
    return path


@pytest.fixture(scope="module")
def tricky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("tricky") / "tricky.json", _rename(tiny_dict(), NAMES))


def _no_terminal_codes(text: str) -> None:
    assert "\x1b" not in text, repr(text)
    emoji = [c for c in text if 0x1F300 <= ord(c) <= 0x1FAFF or 0x2600 <= ord(c) <= 0x27BF]
    assert not emoji, repr(text)


def run(*args: str) -> CliResult:
    res = CliRunner().invoke(app, list(args))
    _no_terminal_codes(res.output)
    assert "Traceback" not in res.output and "internal error" not in res.output, res.output
    return res


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_solve_prints_the_names_as_text(tricky: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    res = run("solve", str(tricky), "--time-limit", "20", "-o", str(out))
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert f"plan for {NAMES['tiny']}" in text
    for name in ("[/]", ":x:", "[bold]", "[red]A100"):
        assert name in text, name
    assert out.exists()
    # the plan file keeps the names as given, and verifies
    assert {p["name"] for p in json.loads(out.read_text())["phases"]} == {"[/]", ":x:"}
    v = run("verify", str(tricky), str(out))
    assert v.exit_code == 0, v.output
    # a plan whose '[/]' states a wrong rental: the violation names the phase, as text
    doc = json.loads(out.read_text())
    doc["phases"][0]["costs"]["rental"] += 1.0
    out.write_text(json.dumps(doc))
    v = run("verify", str(tricky), str(out))
    assert v.exit_code == 1, v.output
    assert "│ [/]" in v.stdout


def test_check_prints_the_names_as_text(tricky: Path) -> None:
    res = run("check", str(tricky))
    assert res.exit_code == 0, res.output
    assert f"instance {NAMES['tiny']}" in res.stdout
    assert "  [/] [data_preparation]" in res.stdout and "  :x: [fine_tuning]" in res.stdout
    assert "  [red]A100 [nvidia]" in res.stdout and "  [bold]  America/New_York" in res.stdout


def test_estimate_prints_the_names_as_text(tricky: Path) -> None:
    res = run("estimate", str(tricky), "--phase", ":x:", "--top", "5")
    assert res.exit_code == 0, res.output
    assert ":x:" in res.stdout and "[red]A100" in res.stdout and "[bold]" in res.stdout
    # a phase that does not exist is named in the error, as text
    bad = run("estimate", str(tricky), "--phase", "[/]x")
    assert bad.exit_code == EXIT_INPUT
    assert "[/]x" in bad.stderr


def test_levers_prints_the_names_as_text(tricky: Path) -> None:
    res = run("levers", str(tricky), "--time-limit", "10", "--only", "contracts")
    assert res.exit_code in (0, 1), res.output
    assert f"levers for {NAMES['tiny']}" in res.stdout
    # phase and GPU names in the baseline's rules and its configurations, as text
    assert "[red]A100 for :x:, the largest phase" in _flat(res.stdout)
    assert "per phase: [/]: [red]A100 @west 1 GPUs" in _flat(res.stdout)
    assert "spot and reserved contracts" in res.stdout


def test_explain_prints_the_names_as_text(tricky: Path, tmp_path: Path) -> None:
    doc = json.loads(tricky.read_text())
    doc["phases"][1]["deadline"] = 2  # ':x:' needs 3 h: infeasible
    late = _write(tmp_path / "late.json", doc)
    res = run("explain", str(late), "--time-limit", "10")
    assert res.exit_code == 1, res.output
    text = _flat(res.stdout)
    assert f"{NAMES['tiny']}: infeasible" in text
    assert ":x:" in text


def test_pareto_prints_the_names_as_text(tricky: Path) -> None:
    res = run("pareto", str(tricky), "--vs", "deadline", "--points", "2", "--time-limit", "10")
    assert res.exit_code == 0, res.output
    assert f"cost frontier of {NAMES['tiny']} vs deadline" in _flat(res.stdout)


def test_grid_prints_the_names_as_text(tricky: Path, tmp_path: Path) -> None:
    grid = {
        "name": f"g[bold]:x:{ESC}",
        "base": tricky.name,  # beside the grid: a grid's base obeys the file-access policy
        "solve": {"time_limit": 10},
        "axes": [
            {
                "name": "[bold]fleet",
                "alternatives": {"[/]": {}, f":x:{ESC}": {"regions.[bold].pue": 1.5}},
            }
        ],
    }
    f = tmp_path / "grid.yaml"
    f.write_text(yaml.safe_dump(grid, allow_unicode=True))
    (tmp_path / tricky.name).write_bytes(tricky.read_bytes())
    store = tmp_path / "g.sqlite"
    res = run("grid", str(f), "-o", str(store), "--workers", "1", "--no-chart")
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert f"grid g[bold]:x:{printable(ESC)}: 2 scenarios" in _flat(text)
    assert "[bold]fleet" in text and printable(ESC) in text
    dry = run("grid", str(f), "--dry-run")
    assert dry.exit_code == 0 and "[bold]fleet" in dry.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["solve"],
        ["check"],
        ["estimate", "--phase", "finetune"],
        ["levers", "--only", "contracts"],
        ["explain"],
        ["pareto", "--vs", "deadline", "--points", "2"],
    ],
    ids=lambda c: c[0],
)
def test_an_escape_in_a_name_is_refused_and_shown_escaped(
    tmp_path: Path, command: list[str]
) -> None:
    d = tiny_dict()
    d["phases"][0]["name"] = f"{ESC}prep"
    d["phases"][1]["predecessors"] = [f"{ESC}prep"]
    f = _write(tmp_path / "esc.json", d)
    res = run(command[0], str(f), *command[1:])
    assert res.exit_code == EXIT_INPUT, res.output
    assert "phases[0] (\\x1b[31mprep).name: expected printable text" in res.stderr


def test_markup_in_a_message_is_text() -> None:
    # a message whose text carries markup and an ESC (as a CSV header or a plan file could):
    # printed as text, whichever way it is printed
    from planner.interfaces.cli.app import err_console, say_plain

    with err_console.capture() as cap:
        say_plain(f"[bold red]x[/] :x: {ESC}y")
        err_console.print(f"[/] :warning: {ESC}")
    got = cap.get()
    assert got == "[bold red]x[/] :x: \\x1b[31my\n[/] :warning: \\x1b[31m\n"


# ----------------------------------------------------------------------------- internal errors


def test_an_internal_error_has_its_own_exit_status(
    monkeypatch: pytest.MonkeyPatch, tricky: Path
) -> None:
    import planner.analysis.summary  # the check command loads it when it runs

    def broken(inst: Any) -> Any:
        raise KeyError(f"[/] {ESC}bug")

    monkeypatch.delenv("TRAINPLAN_DEBUG", raising=False)
    monkeypatch.setattr(planner.analysis.summary, "summarize", broken)
    res = CliRunner().invoke(app, ["check", str(tricky)])
    assert res.exit_code == EXIT_INTERNAL == 4, res.output
    _no_terminal_codes(res.output)
    lines = res.stderr.strip().splitlines()
    assert lines[0] == "internal error: KeyError: '[/] \\x1b[31mbug'"
    assert "please report" in lines[1] and "TRAINPLAN_DEBUG=1" in lines[1]
    assert "Traceback" not in res.output
    # with TRAINPLAN_DEBUG the exception propagates (the traceback is the point)
    monkeypatch.setenv("TRAINPLAN_DEBUG", "1")
    res = CliRunner().invoke(app, ["check", str(tricky)])
    assert isinstance(res.exception, KeyError)


def test_the_exit_codes_are_distinct() -> None:
    import importlib

    app_module = importlib.import_module("planner.interfaces.cli.app")
    codes = {
        k: v for k, v in vars(app_module).items() if k.startswith("EXIT_") and isinstance(v, int)
    }
    assert codes["EXIT_INTERNAL"] == 4
    assert len(set(codes.values())) == len(codes), codes
