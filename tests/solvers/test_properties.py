"""Properties over random instances (issue 22, "a plan is never wrong").

For small random instances across every feature (:mod:`properties`: segments, reserved terms,
hourly prices, carbon caps, spares, progress and running configurations, ...):

- **every solver's plan verifies**: the independent checker accepts it, and it is the
  solver's own plan (``planner.solve``'s verification net never had to step in:
  no ``rejected_plans``, never ``check_failed``);
- **the bound never exceeds the objective**, a plan called optimal is proved within the gap,
  and no solver's plan is below another solver's proved bound (the hourly MILP's bound holds
  for the contiguous models and the baseline; an exact contiguous model's bound holds for the
  hourly MILP where every phase runs without pauses);
- an instance one solver proves infeasible has no plan in any other;
- **the path of the largest models is sound**: with the size thresholds set to 0, a tiny
  instance takes the lab quarter's path (the longer ascent, the component descent with its
  ejections, the large-neighbourhood search, no reduced MILP): its plan verifies, its bound
  stays at or below the exact MILP's optimum, and it finds no plan where the MILP proves
  none;
- **metamorphic relations**: a tighter carbon cap, deadline or capacity never lowers the
  optimum; scaling every price by k scales the optimum by k; a solver restricted to
  contiguous runs never beats the hourly MILP.

The default run tries :data:`EXAMPLES` instances per property (derandomised: the same ones
every run, a fixed budget). ``pytest -m properties_long tests/solvers/test_properties.py -s`` runs
:data:`LONG_EXAMPLES` random ones and prints how many ended in each outcome.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from properties import instances, scale_money, several_pipelines, tighter

import formulations.pipeline as pipeline
from planner.checker import verify
from planner.instance.model import Instance
from planner.instance.read import from_dict
from planner.model.result import Result, SolutionStatus, Termination, within_gap
from planner.solve import solve

#: Instances per property in the default run, and in the long run (``-m properties_long``).
EXAMPLES = 25
#: ... and for the largest models' path (it runs to its limit where it cannot prove the gap)
LARGE_PATH_EXAMPLES = 30
LONG_EXAMPLES = int(os.environ.get("TRAINPLAN_PROPERTY_EXAMPLES", "10000"))
#: Every solve: a limit no tiny instance comes near, a gap small enough to compare optima.
GAP = 1e-6
SOLVE: dict[str, Any] = {"time_limit": 20.0, "gap": GAP, "threads": 1}
SOLVERS = ("milp", "auto", "starttime", "cpsat", "baseline")
_SETTINGS: dict[str, Any] = {
    "deadline": None,
    # shrinking a failure of several solves takes minutes; the first failing case is printed
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
OUTCOMES: Counter[str] = Counter()


def tol(x: float | None) -> float:
    """Slack when comparing objectives and bounds: the gap asked for, the checker's cent
    rounding and CP-SAT's integer costs."""
    return 2 * GAP * max(1.0, abs(x or 0.0)) + 1e-5 * max(1.0, abs(x or 0.0)) + 1e-6


def build(d: dict[str, Any]) -> Instance:
    return from_dict(d, "<property>", None)


def sound(inst: Instance, res: Result) -> None:
    """One result on its own: its plan is the solver's and verifies, its bound is below it,
    "optimal" is proved, and nothing failed."""
    note(f"{res.solver}: {res.summary()} | {res.message} | {res.notes}")
    assert res.termination not in (Termination.CHECK_FAILED, Termination.ERROR), res.message
    assert "rejected_plans" not in res.stats, res.notes
    assert "inconsistent_bound" not in res.stats, res.message
    if res.plan is None:
        return
    v = verify(inst, res.plan)
    assert v.ok, [str(x) for x in v.violations]
    if res.bound is not None:
        assert res.bound <= res.objective + tol(res.objective), res.summary()  # type: ignore[operator]
    if res.status == SolutionStatus.OPTIMAL and res.solver != "baseline":
        assert within_gap(res.objective, res.bound, GAP), res.summary()


def contiguous_exact(inst: Instance, res: Result) -> bool:
    """The contiguous models (start-time MILP, CP-SAT) solved this instance exactly: they kept
    their bound (no phase may pause, change segments or run under a term they leave out)."""
    return res.bound is not None and not any("left out" in n for n in res.notes)


def cross_check(inst: Instance, results: dict[str, Result]) -> None:
    """Results of several solvers on one instance against each other (module docstring)."""
    m = results["milp"]
    # the bounds that hold for every plan: the hourly MILP's, and an exact contiguous model's
    bounds = {
        n: r.bound
        for n, r in results.items()
        if r.bound is not None and (n == "milp" or (n != "baseline" and contiguous_exact(inst, r)))
    }
    for name, r in results.items():
        for other, b in bounds.items():
            if r.plan is not None:
                assert r.objective >= b - tol(b), f"{name} plan {r.objective} < {other} bound {b}"  # type: ignore[operator]
        # an instance proved infeasible has no plan anywhere
        if r.termination == Termination.INFEASIBLE:
            found = {n: x.objective for n, x in results.items() if x.plan is not None}
            assert not found, f"{name} proved infeasible, but {found}"
    for name in ("starttime", "cpsat"):
        r = results[name]
        if (
            m.status == SolutionStatus.OPTIMAL
            and r.status == SolutionStatus.OPTIMAL
            and contiguous_exact(inst, r)
        ):
            assert abs(r.objective - m.objective) <= tol(m.objective), (  # type: ignore[operator]
                f"{name} {r.objective} != milp {m.objective}"
            )


def solve_all(d: dict[str, Any]) -> tuple[Instance, dict[str, Result]]:
    inst = build(d)
    results = {s: solve(inst, solver=s, **SOLVE) for s in SOLVERS}
    for r in results.values():
        sound(inst, r)
    cross_check(inst, results)
    m = results["milp"]
    OUTCOMES[f"milp:{m.termination.value}"] += 1
    dump = os.environ.get("TRAINPLAN_PROPERTY_DUMP")
    if dump and m.termination == Termination.TIME_LIMIT:  # tiny instances the MILP cannot close
        import json

        n = OUTCOMES[f"milp:{m.termination.value}"]
        (Path(dump) / f"time_limit_{n}.json").write_text(json.dumps(d))
    return inst, results


def check_every_solver(d: dict[str, Any]) -> None:
    solve_all(d)


def optimum(d: dict[str, Any]) -> Result:
    """The hourly MILP's result, checked on its own."""
    inst = build(d)
    res = solve(inst, solver="milp", **SOLVE)
    sound(inst, res)
    return res


#: The thresholds that send a model down the largest models' path (formulations.pipeline), and
#: that path's time limit per solve: it proves nothing exactly, so it runs to its limit
#: wherever its bound does not meet its plan.
#: The size thresholds, and the least time the packed commitments need (stage 5a), at 0.
LARGE_PATH = (
    "SMALL_MODEL_NONZEROS",
    "ASCENT_ONLY_NONZEROS",
    "FULL_MILP_MAX_NONZEROS",
    "PACKING_MIN_LEFT",
)
LARGE_PATH_LIMIT_S = 3.0


def check_large_path(d: dict[str, Any], exact: Result | None = None) -> None:
    """The instance solved as if it were over every size threshold (the lab quarter's path)
    against the exact hourly MILP (``exact``: its result when the caller has it): the path's
    result is sound on its own, its bound is at most the proved optimum, its plan at least the
    MILP's bound, and neither has a plan where the other proves the instance infeasible."""
    exact = optimum(d) if exact is None else exact
    inst = build(d)
    with pytest.MonkeyPatch.context() as mp:
        for name in LARGE_PATH:
            mp.setattr(pipeline, name, 0)
        res = solve(inst, solver="milp", **{**SOLVE, "time_limit": LARGE_PATH_LIMIT_S})
    sound(inst, res)
    stages = (
        "long_ascent_iterations",
        "components_tried",
        "ejections_tried",
        "lns_tried",
        "packings",
        "packings_kept",
    )
    OUTCOMES.update(f"large-path:{k}" for k in stages if res.stats.get(k))
    if exact.status == SolutionStatus.OPTIMAL and res.bound is not None:
        assert res.bound <= exact.objective + tol(exact.objective), (  # type: ignore[operator]
            f"large path bound {res.bound} > optimum {exact.objective}"
        )
    if res.plan is not None and exact.bound is not None:
        assert res.objective >= exact.bound - tol(exact.bound), (  # type: ignore[operator]
            f"large path plan {res.objective} < MILP bound {exact.bound}"
        )
    if exact.termination == Termination.INFEASIBLE:
        assert res.plan is None, "the large path has a plan, the MILP proved infeasibility"
    if res.termination == Termination.INFEASIBLE:
        assert exact.plan is None, "the large path proved infeasibility, the MILP has a plan"


def check_metamorphic(d: dict[str, Any], draw: Callable[..., Any]) -> None:
    base = optimum(d)
    # scaling every price by k scales the optimum by k (same plans, every cost x k)
    k = draw(st.sampled_from([0.5, 3.0]))
    scaled = optimum(scale_money(d, k))
    assert (scaled.plan is None) == (base.plan is None), (base.summary(), scaled.summary())
    if base.plan is not None and base.bound is not None and scaled.bound is not None:
        assert scaled.objective >= k * base.bound - tol(k * base.bound)  # type: ignore[operator]
        assert k * base.objective >= scaled.bound - tol(scaled.bound)  # type: ignore[operator]
        OUTCOMES["scaled"] += 1
    # a tighter cap, deadline or capacity never lowers the optimum
    what = draw(st.sampled_from(["cap", "deadline", "capacity"]))
    t = tighter(d, what, draw)
    if t is None:
        return
    tight = optimum(t)
    note(f"tighter {what}: {tight.summary()}")
    if base.termination == Termination.INFEASIBLE:
        assert tight.plan is None, "tighter instance has a plan, the looser is infeasible"
    if tight.plan is not None and base.bound is not None:
        assert tight.objective >= base.bound - tol(base.bound), (  # type: ignore[operator]
            f"tighter {what}: {tight.objective} < looser bound {base.bound}"
        )
        OUTCOMES[f"tighter-{what}"] += 1


# ----------------------------------------------------------------------------- the runs


pytestmark = pytest.mark.filterwarnings("ignore::planner.model.consistency.NumericWarning")


@settings(max_examples=EXAMPLES, derandomize=True, **_SETTINGS)
@given(instances())
def test_every_solver_returns_a_verified_sound_plan(d: dict[str, Any]) -> None:
    check_every_solver(d)


@settings(max_examples=EXAMPLES, derandomize=True, **_SETTINGS)
@given(instances(), st.data())
def test_metamorphic_relations(d: dict[str, Any], data: st.DataObject) -> None:
    check_metamorphic(d, data.draw)


@settings(max_examples=LARGE_PATH_EXAMPLES, derandomize=True, **_SETTINGS)
@given(several_pipelines())
def test_the_largest_models_path_is_sound(d: dict[str, Any]) -> None:
    check_large_path(d)


@pytest.mark.properties_long
@pytest.mark.timeout(0)  # hours: each case is checked on its own
@settings(max_examples=LONG_EXAMPLES, **_SETTINGS)
@given(instances(), st.data())
def test_properties_long(d: dict[str, Any], data: st.DataObject) -> None:
    _, results = solve_all(d)
    check_metamorphic(d, data.draw)
    check_large_path(d, results["milp"])
    OUTCOMES["cases"] += 1
    if OUTCOMES["cases"] % 250 == 0:
        print(f"{OUTCOMES['cases']} cases: {dict(sorted(OUTCOMES.items()))}", flush=True)


@pytest.fixture(autouse=True, scope="module")
def _print_outcomes() -> Any:
    yield
    if OUTCOMES:
        print("\nproperty outcomes:", dict(sorted(OUTCOMES.items())))
