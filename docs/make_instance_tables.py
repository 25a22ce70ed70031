"""Print the cost table of instances/README.md ("Optimised plan against the lever-free
baseline"): every shipped instance solved by the lever-free baseline and by ``solve``, both
plans checked by the independent checker, costs by component.

    .venv/bin/python docs/make_instance_tables.py            # the table, in Markdown
    .venv/bin/python docs/make_instance_tables.py --limit 60 # seconds per solve (month-70b x2)

tests/instance/test_instances.py checks that the README's totals are the regression snapshot's
(tests/regression/objectives.json), so the table cannot drift from the cost model unnoticed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The shipped instances in the README's order, and the solve's time limit factor.
INSTANCES = {"week-7b": 1, "month-70b": 2, "small-finetune": 1}
COMPONENTS = ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon")


def _usd(x: float) -> str:
    return "0" if abs(x) < 5e-3 else f"{x:,.2f}"


def rows(limit: float) -> list[str]:
    from planner.checker import verify
    from planner.instance import read
    from planner.solve import solve

    out = [
        "| instance | plan | " + " | ".join(COMPONENTS) + " | **total** |",
        "|---|---|" + "---:|" * (len(COMPONENTS) + 1),
    ]
    for name, factor in INSTANCES.items():
        inst = read(ROOT / "instances" / f"{name}.yaml")
        base = solve(inst, solver="baseline")
        t0 = time.perf_counter()
        best = solve(inst, time_limit=limit * factor)
        wall = time.perf_counter() - t0
        assert base.plan is not None and best.plan is not None, (name, best.message)
        for res in (base, best):
            v = verify(inst, res.plan)  # type: ignore[arg-type]
            if not v.ok:
                raise SystemExit(f"{name}: the checker refused the {res.solver} plan: {v}")
        b = base.plan.objective
        for label, res in (("baseline", base), (f"optimised ({best.termination})", best)):
            plan = res.plan
            assert plan is not None
            cells = [_usd(plan.costs[k]) for k in COMPONENTS]
            total = f"**{plan.objective:,.2f}**"
            if res is best:
                total += f" ({(plan.objective - b) / b:+.1%})".replace("%", " %")
            out.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {total} |")
        print(f"{name}: solve {wall:.1f} s, {best.termination}, gap {best.gap}", file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per solve")
    args = ap.parse_args()
    print("\n".join(rows(args.limit)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
