"""The command line's manners (issue 26): --quiet keeps results, solve says where its plan
went, tables fit the terminal when piped to a pager, ``gpus NAME`` filters, "did you mean"
for presets, GPUs and markets, help texts and README's command table current, no
nonsense percentages, init's names through a serializer, per_doubling needs a reference."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from planner.instance import InstanceError
from planner.instance.read import from_dict, load_document
from planner.interfaces.cli import COMMANDS, MODULE_OF, _register, app
from planner.interfaces.cli.app import PIPE_WIDTH, output_width
from planner.interfaces.cli.levers import saving_share

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "tiny.yaml"

_register()


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"TRAINPLAN_NO_PROGRESS": "1"})


def test_quiet_solve_saves_the_plan_and_prints_the_answer(tmp_path: Path) -> None:
    # before: `trainplan -q solve` printed nothing (and the issue saw nothing saved)
    out = tmp_path / "plan.json"
    res = cli("-q", "solve", str(TINY), "-o", str(out))
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("plan for tiny (") and "against the lever-free baseline" in lines[0]
    assert lines[1] == f"plan written to {out}"
    assert len(lines) == 2 and out.is_file()  # no tables, no notes
    loud = cli("solve", str(TINY), "-o", str(out))
    assert "schedule" in loud.stdout and "check it with: trainplan verify" in loud.stdout


def test_solve_without_output_says_nothing_was_written() -> None:
    res = cli("-q", "solve", str(TINY))
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines()[-1] == (
        "plan not saved: no file written (pass -o FILE to keep it)"
    )


def test_quiet_check_verify_and_levers_keep_their_verdicts(tmp_path: Path) -> None:
    res = cli("-q", "check", str(TINY))
    assert res.exit_code == 0 and res.stdout.startswith(f"{TINY}: ok: "), res.output
    plan = tmp_path / "p.json"
    assert cli("-q", "solve", str(TINY), "-o", str(plan), "--no-attribution").exit_code == 0
    res = cli("-q", "verify", str(TINY), str(plan))
    assert res.exit_code == 0 and res.stdout.strip() == f"{plan}: valid, 0 violation(s)"
    res = cli("-q", "levers", str(TINY), "--time-limit", "10", "--only", "contracts")
    assert res.exit_code == 0, res.output
    assert "all levers:" in res.stdout and "lever-free baseline:" not in res.stdout


def test_piped_tables_follow_the_terminal_on_stderr() -> None:
    # before: `trainplan gpus | less` was ~520 columns wide
    master, slave = pty.openpty()
    os.set_inheritable(slave, True)
    try:
        code = "from planner.interfaces.cli import main; main()"
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 90, 0, 0))
        res = subprocess.run(
            [sys.executable, "-c", code, "gpus"],
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
    finally:
        os.close(slave)
        os.close(master)
    assert res.returncode == 0
    assert max(len(line) for line in res.stdout.splitlines()) <= 90
    assert "…" not in res.stdout  # cells wrap; figures are never cut


def test_output_width_without_any_terminal_cuts_nothing() -> None:
    class NoTty:
        def isatty(self) -> bool:
            return False

    assert output_width(NoTty(), {}, NoTty()) == PIPE_WIDTH


def test_gpus_name_filters_and_suggests() -> None:
    res = cli("gpus", "H100", "L4")
    assert res.exit_code == 0, res.output
    rows = [ln.split("│")[1].strip() for ln in res.stdout.splitlines() if ln.startswith("│ ")]
    assert {r for r in rows if r} >= {"H100-SXM", "L4"} and "T4" not in rows
    res = cli("gpus", "H10O")
    assert res.exit_code == 2 and "did you mean" in res.output
    # a subcommand is still one
    assert "gpus import-skypilot [OPTIONS] {VMS_CSV}" in " ".join(
        cli("gpus", "import-skypilot", "-h").output.split()
    )


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (("--model", "llama-3-8b"), "did you mean llama-3.1-8b"),
        (("--model", "7B", "--region", "eu=DE-LUX"), "did you mean DE-LU?"),
        (("--model", "7B", "--gpu", "H10O:8"), "did you mean"),
    ],
)
def test_did_you_mean_for_presets_markets_and_gpus(
    tmp_path: Path, args: tuple[str, ...], suggestion: str
) -> None:
    res = cli("init", "-o", str(tmp_path / "x.yaml"), *args)
    assert res.exit_code == 2 and suggestion in res.output, res.output


def test_help_texts_are_current() -> None:
    text = " ".join(cli("verify", "-h").output.split())
    assert "trainplan-plan/2" in text and "/3" in text


def test_readme_lists_every_command() -> None:
    # before: grid-export was missing
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Commands") : readme.index("### Exit status")]
    listed = set(re.findall(r"^\| `trainplan ([a-z-]+)", table, re.M))
    names = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    names |= {g.name for g in app.registered_groups if g.name}
    assert names == set(COMMANDS) | set(MODULE_OF)
    assert names <= listed, names - listed


def test_a_component_share_says_something() -> None:
    # before: "-$39.47 (-236.2%)", "-1816.7%" for a failure cost 19x the baseline's
    assert saving_share(100.0, 84.0) == " (16.0%)"
    assert saving_share(16.71, 56.19) == " (3.4x the baseline)"
    assert saving_share(0.1, 1.9167) == " (19.2x the baseline)"
    assert saving_share(0.0, 5.0) == ""
    assert saving_share(10.0, 20.0) == " (-100.0%)"  # twice the baseline, still a share


def test_init_writes_names_through_a_serializer(tmp_path: Path) -> None:
    # before: a region 'a: b' or a cloud '{x}' went raw into YAML and added keys
    out = tmp_path / "i.yaml"
    res = cli("init", "-o", str(out), "--model", "7B", "--region", "a: b=DE-LU@{x}/y: z")
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(out.read_text())
    assert list(doc["regions"]) == ["a: b"]
    assert doc["regions"]["a: b"]["cloud"] == "{x}"
    assert doc["regions"]["a: b"]["cloud_region"] == "y: z"
    res = cli("init", "-o", str(out), "--force", "--model", "7B", "--region", "a\nb=DE-LU")
    assert res.exit_code == 2 and "printable" in res.output
    res = cli("init", "-o", str(out), "--force", "--model", "7B", "--tokens", "nan")
    assert res.exit_code == 2 and "--tokens" in res.output


def test_per_doubling_without_a_reference_is_refused() -> None:
    # before: silently nothing (the docs' own example)
    doc = load_document(TINY)
    doc["phases"][1]["scaling"] = {"per_doubling": 0.9}
    with pytest.raises(InstanceError) as e:
        from_dict(doc, "<t>", TINY.parent)
    assert "reference_gpus" in str(e.value) and "phases[1] (finetune).scaling" in str(e.value)
    doc["phases"][1]["scaling"] = {"per_doubling": 0.9, "reference_gpus": 8}
    from_dict(doc, "<t>", TINY.parent)
