"""Greedy list scheduling: the hand-made baseline plan and a warm start for the solvers.

Phases are placed one by one in topological order, each as one contiguous run that respects
release, deadline, predecessors and the capacity left by phases placed before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from formulations.costs import hourly_cost, weights
from planner.configs import Config, ConfigSpace
from planner.instance.model import Instance

Schedule = dict[str, tuple[Config, tuple[int, ...]]]


def _run_cost(
    inst: Instance, c: Config, start: int, wts: dict[str, float], hourly: np.ndarray
) -> float:
    end = start + c.hours
    cost = float(hourly[start:end].sum())
    if c.contract != "reserved" and c.billing_hours > 1:
        blocks = {t // c.billing_hours for t in range(start, end)}
        cost += (
            wts["rental"] * max(len(blocks) * c.billing_hours, c.min_rental_hours) * c.rental_per_h
        )
    elif c.contract != "reserved":
        cost += wts["rental"] * max(0, c.min_rental_hours - c.hours) * c.rental_per_h
    cost += wts["storage"] * (inst.hours - end) * c.archive_per_h
    return cost + wts["transfer"] * c.one_time_usd


def greedy(
    inst: Instance,
    space: ConfigSpace,
    allow: Callable[[Config], bool] = lambda c: c.contract != "reserved",
    first_start_only: bool = False,
) -> Schedule | None:
    """Place each phase, in topological order, on the configuration and contiguous start of
    least cost, inside its precedence-tightened window. With ``first_start_only`` each
    configuration is tried only at its earliest feasible start (no time shifting). None if
    some phase cannot be placed."""
    from formulations.milp.model import time_windows

    wts = weights(inst)
    win = time_windows(inst, space)
    used: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(inst.hours))
    ends: dict[str, int] = {}
    schedule: Schedule = {}
    for name in inst.order:
        if name not in space.by_phase:
            continue
        p = inst.phase(name)
        ready = max([win.start[name]] + [ends[q] for q in p.predecessors if q in ends])
        best: tuple[float, int, Config] | None = None
        for c in space.by_phase[name]:
            if not allow(c):
                continue
            free = inst.capacity[(c.region, c.gpu)] - used[(c.region, c.gpu)] >= c.total_gpus - 1e-9
            hourly = hourly_cost(inst, c, wts)
            # end by the latest time that still leaves successors their fastest run
            for start in range(ready, win.end[name] - c.hours + 1):
                if not free[start : start + c.hours].all():
                    continue
                cost = _run_cost(inst, c, start, wts, hourly)
                if best is None or (cost, start) < (best[0], best[1]):
                    best = (cost, start, c)
                if first_start_only:
                    break
        if best is None:
            return None
        _, start, c = best
        used[(c.region, c.gpu)][start : start + c.hours] += c.total_gpus
        ends[name] = start + c.hours
        schedule[name] = (c, tuple(range(start, start + c.hours)))
    return schedule


def hottest_tier(inst: Instance, region: str, allowed: tuple[str, ...] | None = None) -> str:
    """The dearest storage tier of a region (among ``allowed`` ones, when given)."""
    tiers = inst.region(region).storage
    names = [t for t in tiers if allowed is None or t in allowed] or list(tiers)
    return max(names, key=lambda t: tiers[t].usd_per_gb_month)


def baseline_schedule(inst: Instance, full_space: ConfigSpace) -> Schedule | None:
    """The plan a team would make by hand: every phase as soon as possible, on the cheapest
    on-demand configuration that fits (spot when the phase allows no on-demand), no time
    shifting, the hottest allowed storage tier, only the spare nodes the redundancy
    requirement demands. ``full_space`` should be unpruned."""

    def allow(c: Config) -> bool:
        p = inst.phase(c.phase)
        contract_ok = (
            c.contract == "on_demand"
            if "on_demand" in p.options.contracts
            else c.contract != "reserved"
        )
        return (
            contract_ok
            and c.tier == hottest_tier(inst, c.region, p.options.storage_tiers)
            and c.spare_gpus == p.redundancy.spare_nodes * inst.gpu(c.gpu).gpus_per_node
        )

    return greedy(inst, full_space, allow=allow, first_start_only=True)
