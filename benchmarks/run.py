"""Benchmark the MILP pipeline on generated instances of named sizes.

    .venv/bin/python benchmarks/run.py [small medium large xlarge] [--repeat 3]

Each run is a fresh process (so peak memory is its own): generate the instance
(benchmarks/generate.py, seed 0), solve it with ``solve_milp`` at the size's target gap and
time limit, verify the plan with the independent checker, and solve the ``--baseline``.
Printed per size (medians over repeats): configurations, the full hourly model's x count,
the built model's variables / constraints / nonzeros, build and total seconds, proved gap,
peak memory, plan cost vs baseline.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

#: size -> (target gap, time limit s), the targets of the scale issue.
TARGETS = {
    "small": (0.01, 60.0),
    "medium": (0.01, 10.0),
    "large": (0.01, 60.0),
    "xlarge": (0.02, 300.0),
}


def one(size: str, gap_override: float | None = None, seed: int = 0) -> dict[str, object]:
    from generate import ROOT, generate

    from formulations.pipeline import solve_milp
    from planner.checker import verify
    from planner.instance.read import from_dict
    from planner.model.configs import build_config_space
    from planner.model.options import SolveOptions
    from planner.model.windows import time_windows
    from planner.solve import solve

    gap, limit = TARGETS[size]
    gap = gap if gap_override is None else gap_override
    inst = from_dict(generate(size, seed), f"<{size}>", ROOT)
    t0 = time.perf_counter()
    space = build_config_space(inst)
    win = time_windows(inst, space.fewest_hours())
    full_x = sum(max(0, win.end[p] - win.start[p]) * len(cs) for p, cs in space.by_phase.items())
    res = solve_milp(inst, SolveOptions(time_limit=limit, gap=gap, backend="highs"), space=space)
    total = time.perf_counter() - t0
    # the solve's own peak: the lever-free baseline below builds variants of its own
    peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    base = solve(inst, solver="baseline")
    ok = verify(inst, res.plan).ok if res.plan is not None else False
    st = res.stats
    return {
        "size": size,
        "phases": len(space.by_phase),
        "configs_per_phase": round(space.size / max(1, len(space.by_phase)), 1),
        "hours": inst.hours,
        "full_x_vars": full_x,
        "variables": int(st.get("variables", 0)),
        "constraints": int(st.get("constraints", 0)),
        "nonzeros": int(st.get("nonzeros", 0)),
        "build_s": round(float(st.get("build_s", 0.0)), 3),
        "total_s": round(total, 2),
        "gap": res.gap,
        "termination": res.termination.value,
        "verified": ok,
        "peak_mb": peak_mb,
        "cost": res.objective,
        "baseline": base.objective,
        "saving": (
            None
            if base.objective is None or res.objective is None
            else 1 - res.objective / base.objective
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("sizes", nargs="*", default=["small", "medium", "large", "xlarge"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--gap",
        type=float,
        default=None,
        help="override the target gap (e.g. 0.001 to exercise branching)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.gap, args.seed)))
        return
    rows = []
    for size in args.sizes:
        runs = []
        for _ in range(args.repeat):
            extra = ["--seed", str(args.seed)] + (
                [] if args.gap is None else ["--gap", str(args.gap)]
            )
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--one", size, *extra],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            runs.append(json.loads(out))
        row = dict(runs[0])
        for key in ("build_s", "total_s", "peak_mb"):
            row[key] = statistics.median(float(r[key]) for r in runs)
        row["gap"] = max(float(r["gap"] or 0.0) for r in runs)
        row["verified"] = all(bool(r["verified"]) for r in runs)
        rows.append(row)
    head = (
        "size",
        "phases x configs x hours",
        "full x vars",
        "vars",
        "cons",
        "nnz",
        "build s",
        "total s",
        "gap",
        "peak MB",
        "cost",
        "baseline",
        "saving",
        "verified",
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for r in rows:
        saving = "n/a" if r["saving"] is None else f"{float(r['saving']):.1%}"
        print(
            " | ".join(
                str(x)
                for x in (
                    r["size"],
                    f"{r['phases']} x {r['configs_per_phase']} x {r['hours']}",
                    r["full_x_vars"],
                    r["variables"],
                    r["constraints"],
                    r["nonzeros"],
                    f"{float(r['build_s']):.2f}",
                    f"{float(r['total_s']):.2f}",
                    f"{float(r['gap']):.2%}",
                    r["peak_mb"],
                    f"{float(r['cost']):,.0f}" if r["cost"] is not None else "none",
                    f"{float(r['baseline']):,.0f}" if r["baseline"] is not None else "none",
                    saving,
                    r["verified"],
                )
            )
        )
    print(f"\nrepeats per size: {args.repeat}; times are medians, gap the worst of the runs")


if __name__ == "__main__":
    main()
