"""Record (or check) the cost model's figures on every shipped instance and benchmark size.

    .venv/bin/python tests/regression/snapshot.py --write   # regenerate objectives.json

For each instance: the configuration-space size, the separable lower bound, the look-ahead
and baseline plans' objectives, and the plan ``planner.solve`` returns (one HiGHS thread,
fixed time limit), stored whole so the regression test can re-cost it. A deliberate change of
the cost model regenerates this file in the same commit and says why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

OUT = Path(__file__).with_name("objectives.json")
SHIPPED = ("small-finetune", "week-7b", "month-70b")
SIZES = ("small", "medium", "large", "xlarge")


def instances() -> dict[str, Any]:
    return {name: instance(name) for name in [*SHIPPED, *(f"bench-{s}" for s in SIZES)]}


def instance(name: str) -> Any:
    """One instance of the snapshot: a shipped one by name, or ``bench-SIZE`` generated."""
    from generate import generate

    import planner
    from planner.instance.read import from_dict

    if name.startswith("bench-"):
        size = name.removeprefix("bench-")
        return from_dict(generate(size, 0), f"<{size}>", ROOT)
    return planner.read(ROOT / "instances" / f"{name}.yaml")


def figures(inst: Any) -> dict[str, Any]:
    from formulations.bounds.separable import lower_bound, phase_bounds
    from formulations.heuristics.lookahead import lookahead_schedule
    from planner.model.configs import build_config_space
    from planner.model.costs import cost_plan
    from planner.model.windows import time_windows
    from planner.solve import solve

    space = build_config_space(inst)
    win = time_windows(inst, space.fewest_hours())
    lb = lower_bound(phase_bounds(inst, space, win.start, win.end))
    la = lookahead_schedule(inst, space, win)
    la_obj = None if la is None else cost_plan(inst, la).objective
    base = solve(inst, solver="baseline")
    return {
        "configs": space.size,
        "lower_bound": lb,
        "lookahead": la_obj,
        "baseline": base.objective,
    }


def main() -> None:
    from planner.solve import solve

    write = "--write" in sys.argv
    data: dict[str, Any] = {}
    for name, inst in instances().items():
        f = figures(inst)
        limit = 120.0 if name in ("month-70b", "bench-xlarge") else 60.0
        res = solve(inst, time_limit=limit, threads=1)
        f["solve_objective"] = res.objective
        f["solve_termination"] = str(res.termination)
        f["plan"] = res.plan.to_dict() if res.plan is not None else None
        if not write:
            f.pop("plan")
        data[name] = f
        print(name, {k: v for k, v in f.items() if k != "plan"}, flush=True)
    if write:
        OUT.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
