"""A command line that starts at once (issue 27): wall seconds of the light commands, the
median (and the least) of N runs each in a fresh process, against the issue's targets.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--quarter]

The commands are those of the issue: ``trainplan --version`` (under 0.3 s), ``trainplan check
instances/week-7b.yaml`` (under 0.8 s), ``trainplan solve instances/week-7b.yaml`` (under
1.0 s, the plan written to a temporary folder) and, with ``--quarter``, ``trainplan check`` on
the 100-phase lab quarter of ``benchmarks/generate.py`` (under 5 s; written as JSON into the
repository root for the run, since its price files are named from there, and removed after).
The targets are for an idle machine: the load average is printed before and after, and a
figure taken under load is an upper one. This is a benchmark, not a test: nothing here fails
on a slow machine (tests/cli/test_cli_startup.py checks what the light commands import
instead).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEEK = ROOT / "instances" / "week-7b.yaml"
#: The issue's targets, seconds of wall time on an idle machine.
TARGETS = {"--version": 0.3, "check week-7b": 0.8, "solve week-7b": 1.0, "check quarter-100": 5.0}


def walls(args: list[str], runs: int) -> list[float]:
    """The wall times of ``runs`` runs of ``args`` (each a fresh process)."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(args, cwd=ROOT, capture_output=True, check=False, timeout=300)
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure every command and print one line each: the median wall time (the target is
    judged on it) and the least, the target, met."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quarter", action="store_true", help="also check the 100-phase quarter")
    args = ap.parse_args(argv)
    exe = str(Path(sys.executable).with_name("trainplan"))
    print(f"# load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "--version": [exe, "--version"],
            "check week-7b": [exe, "check", str(WEEK)],
            "solve week-7b": [exe, "solve", str(WEEK), "-o", str(Path(tmp) / "plan.json")],
        }
        quarter = ROOT / ".startup-quarter-100.json"
        if args.quarter:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from generate import document

            quarter.write_text(json.dumps(document("quarter-100", 0)), encoding="utf-8")
            commands["check quarter-100"] = [exe, "check", str(quarter)]
        try:
            for name, cmd in commands.items():
                ts = walls(cmd, args.runs)
                t = statistics.median(ts)
                verdict = "met" if t < TARGETS[name] else "missed"
                print(
                    f"{name}: median {t:.2f} s, least {min(ts):.2f} s of {args.runs} runs "
                    f"(target {TARGETS[name]} s: {verdict})"
                )
        finally:
            quarter.unlink(missing_ok=True)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
