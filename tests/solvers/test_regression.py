"""The cost model's figures on every shipped instance and benchmark size, against the ones
recorded in tests/regression/objectives.json (by tests/regression/snapshot.py, before the
cost model was consolidated into planner.model.costs): the configuration count, the separable lower
bound, the look-ahead and baseline objectives, and the stored solved plan re-costed from its
schedule, each to 1e-9 relative. A deliberate change of the cost model regenerates the file
(``snapshot.py --write``) in the same commit and says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from planner.checker import verify
from planner.model.configs import config_space
from planner.model.costs import cost_plan
from planner.model.plan import Plan
from planner.model.schedule import schedule_of

HERE = Path(__file__).parents[1] / "regression"
sys.path.insert(0, str(HERE))

import snapshot  # noqa: E402

RECORDED: dict[str, Any] = json.loads((HERE / "objectives.json").read_text())
REL = 1e-9


#: Instances whose figures take most of the time (15 s for xlarge): in the slow run.
SLOW = {"bench-large", "bench-xlarge"}
NAMES = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(RECORDED)]


class _Lazy(dict[str, Any]):
    """The snapshot's instances, each read or generated when first asked for."""

    def __missing__(self, name: str) -> Any:
        self[name] = snapshot.instance(name)
        return self[name]


@pytest.fixture(scope="module")
def instances() -> dict[str, Any]:
    return _Lazy()


@pytest.mark.parametrize("name", NAMES)
def test_figures_are_unchanged(name: str, instances: dict[str, Any]) -> None:
    want = RECORDED[name]
    got = snapshot.figures(instances[name])
    assert got["configs"] == want["configs"]
    for key in ("lower_bound", "lookahead", "baseline"):
        assert got[key] == pytest.approx(want[key], rel=REL), key


@pytest.mark.parametrize("name", NAMES)
def test_recorded_plan_costs_the_same(name: str, instances: dict[str, Any]) -> None:
    """The solved plan recorded before, re-costed from its configurations and hours, has the
    same objective and components, and the independent checker accepts it."""
    inst = instances[name]
    stored = Plan.from_dict(RECORDED[name]["plan"])
    space = config_space(inst)
    by_label = {(c.phase, c.label): c for cs in space.by_phase.values() for c in cs}
    sched = schedule_of(
        {p.name: (by_label[(p.name, p.info["config"])], p.hours) for p in stored.phases},
        {(r, g): n for r, g, n in stored.reserved},
    )
    plan = cost_plan(inst, sched)
    assert plan.objective == pytest.approx(stored.objective, rel=REL)
    for k, v in stored.costs.items():
        assert plan.costs[k] == pytest.approx(v, rel=REL, abs=1e-6), k
    assert verify(inst, plan).ok
