"""A command line that starts at once (issue 27): wall seconds of the light commands, the
least of N runs each in a fresh process, against the issue's targets.

    .venv/bin/python benchmarks/startup.py [--runs 5]

The commands are those of the issue: ``trainplan --version`` (under 0.3 s), ``trainplan check
instances/week-7b.yaml`` (under 0.8 s) and ``trainplan solve instances/week-7b.yaml`` (under
1.0 s, the plan written to a temporary folder). The targets are for an idle machine: the load
average is printed before and after, and a figure taken under load is an upper one. This is a
benchmark, not a test: nothing here fails on a slow machine (tests/cli/test_cli_startup.py
checks what the light commands import instead).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEEK = ROOT / "instances" / "week-7b.yaml"
#: The issue's targets, seconds of wall time on an idle machine.
TARGETS = {"--version": 0.3, "check week-7b": 0.8, "solve week-7b": 1.0}


def least_wall(args: list[str], runs: int) -> float:
    """The least wall time of ``runs`` runs of ``args`` (each a fresh process)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(args, cwd=ROOT, capture_output=True, check=False, timeout=300)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    """Measure every command and print one line each: the least wall time, the target, met."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    exe = str(Path(sys.executable).with_name("trainplan"))
    print(f"# load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "--version": [exe, "--version"],
            "check week-7b": [exe, "check", str(WEEK)],
            "solve week-7b": [exe, "solve", str(WEEK), "-o", str(Path(tmp) / "plan.json")],
        }
        for name, cmd in commands.items():
            t = least_wall(cmd, args.runs)
            verdict = "met" if t < TARGETS[name] else "missed"
            print(f"{name}: {t:.2f} s (least of {args.runs}; target {TARGETS[name]} s: {verdict})")
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
