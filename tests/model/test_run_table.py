"""The greedy baselines' configurations costed at once (planner.model.costs.RunTable) and
placed at once (formulations.heuristics.greedy with ``first_start_only``).

The table must give :func:`run_costs`'s figure to the bit for every configuration and start
(reserved terms, a deadline's reserve, coarse billing and minimum rentals, hourly offer
prices, carbon, re-planned phases' entries), and the greedy plan must be the one of the
obvious loop below, which tries each configuration at its first fitting start with
:func:`run_costs` and keeps the first of least (cost, start): the same configurations on the
same hours, with the same reservations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from properties import instances

from formulations.heuristics.greedy import Usage, greedy, list_schedule
from planner.instance.model import Instance
from planner.instance.read import from_dict
from planner.model.configs import Config, config_space, full_config_space
from planner.model.costs import run_costs, run_table, weights
from planner.model.schedule import Assignment, Schedule, reservations_for
from planner.model.windows import time_windows

_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def _loop_greedy(inst: Instance, space: Any, allow: Callable[[Config], bool]) -> Schedule | None:
    """The definition: every allowed configuration at its first start that fits the capacity
    left, the first finite one when that is outside its hours; least (cost, start) first."""
    w = weights(inst)
    win = time_windows(inst, space.fewest_hours())

    def place(name: str, ready: int, used: Usage) -> Assignment | None:
        best: tuple[float, int, Config] | None = None
        for c in space.by_phase[name]:
            if not allow(c):
                continue
            pool = (c.region, c.gpu)
            free = inst.capacity[pool] - used[pool] >= c.total_gpus - 1e-9
            starts = [
                s
                for s in range(ready, max(ready, win.end[name] - c.hours + 1))
                if free[s : s + c.hours].all()
            ]
            costs = run_costs(inst, c, np.asarray(starts, dtype=np.int64), w)
            ok = [k for k in range(len(starts)) if np.isfinite(costs[k])]
            if not ok:
                continue
            cand = (float(costs[ok[0]]), starts[ok[0]], c)
            if best is None or cand[:2] < best[:2]:
                best = cand
        if best is None:
            return None
        _, s, c = best
        return Assignment(c, tuple(range(s, s + c.hours)))

    out = list_schedule(inst, space, win.start, place)
    if out is None:
        return None
    reserved = reservations_for(inst, out)
    return None if reserved is None else Schedule(out, reserved)


def _same(a: Schedule | None, b: Schedule | None) -> bool:
    if a is None or b is None:
        return a is b
    return {n: (x.config.index, x.hours) for n, x in a.items()} == {
        n: (x.config.index, x.hours) for n, x in b.items()
    } and dict(a.reserved) == dict(b.reserved)


def _table_matches(inst: Instance) -> int:
    """Every configuration of the unpruned space at every start: the table's figure is
    run_costs's, to the bit (infinite in the same runs). Returns how many were compared."""
    w = weights(inst)
    compared = 0
    for cs in full_config_space(inst).by_phase.values():
        table = run_table(inst, cs, w)
        which = [k for k, c in enumerate(cs) for _ in range(inst.hours - c.hours + 1)]
        starts = [s for c in cs for s in range(inst.hours - c.hours + 1)]
        if not which:
            continue
        got = table.costs(np.asarray(which), np.asarray(starts))
        want = np.concatenate(
            [run_costs(inst, c, np.arange(inst.hours - c.hours + 1), w) for c in cs]
        )
        assert got.tobytes() == want.tobytes()
        compared += len(which)
    return compared


@settings(max_examples=60, **_SETTINGS)
@given(instances())
def test_the_table_and_the_vectorised_greedy_agree_with_their_definitions(
    d: dict[str, Any],
) -> None:
    inst = from_dict(d, "<property>", None)  # every document the strategy draws is valid
    _table_matches(inst)  # some draws have no configuration at all
    for space in (config_space(inst), full_config_space(inst)):
        if space.infeasible:
            continue
        for allow in (lambda c: c.contract != "reserved", lambda c: True):
            want = _loop_greedy(inst, space, allow)
            got = greedy(inst, space, allow=allow, first_start_only=True)
            assert _same(got, want)


def test_the_table_covers_the_hand_cases_edges() -> None:
    # hourly offer prices and preemption rates go to run_costs itself; reserved terms, coarse
    # billing, carbon and re-planned entries through the arrays: both paths, to the bit
    import hand_advanced  # noqa: F401  (registers its cases)
    import hand_basic  # noqa: F401
    from hand_cases import CASES

    special = plain = compared = 0
    for case in CASES:
        inst = case.instance()
        compared += _table_matches(inst)
        w = weights(inst)
        for cs in full_config_space(inst).by_phase.values():
            t = run_table(inst, cs, w)
            special += int(t.special.sum())
            plain += int((~t.special).sum())
        space = full_config_space(inst)
        if not space.infeasible:
            want = _loop_greedy(inst, space, lambda c: True)
            assert _same(greedy(inst, space, allow=lambda c: True, first_start_only=True), want)
    assert compared > 1000 and special > 0 and plain > 10 * special


def test_a_table_is_built_once_per_space_and_phase() -> None:
    from builders import instance_from, tiny_dict

    from formulations.heuristics import greedy as module

    inst = instance_from(tiny_dict())
    space = full_config_space(inst)
    greedy(inst, space, first_start_only=True)
    built = [k for k in space.memo if isinstance(k, tuple) and k[0] == "run_table"]
    assert len(built) == len(space.by_phase)
    tables = {k: space.memo[k] for k in built}
    greedy(inst, space, allow=lambda c: True, first_start_only=True)
    assert all(space.memo[k] is tables[k] for k in built)
    assert module._phase_table(inst, space, built[0][1], weights(inst)) is tables[built[0]]


@pytest.mark.parametrize("seed", range(3))
def test_the_used_capacity_is_what_the_loop_leaves(seed: int) -> None:
    # pools that bind: generated instances whose phases crowd one another
    from builders import generated, instance_from

    inst = instance_from(generated(seed))
    space = full_config_space(inst)
    want = _loop_greedy(inst, space, lambda c: c.contract != "reserved")
    assert _same(greedy(inst, space, first_start_only=True), want)
    used: defaultdict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(inst.hours))
    if want is not None:
        for a in want.values():
            used[(a.config.region, a.config.gpu)][list(a.hours)] += a.config.total_gpus
        for pool, u in used.items():
            assert (u <= np.asarray(inst.capacity[pool]) + 1e-9).all()
