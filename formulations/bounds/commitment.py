"""What a bound charges a reserved GPU-hour: the pool's commitment spread over the hours in
which a plan can use it.

A reserved pool k (region, GPU type, term) bought at R GPUs costs ``R P_k`` (``P_k`` what
one committed GPU costs the plan, :func:`planner.model.costs.pool_usd_per_gpu`), used or not.
In hour t the plan runs ``u_k(t) <= R`` reserved GPUs on it, and ``u_k(t) = 0`` outside
``U_k``: the hours of the term in which some configuration on the pool is open (inside its
phase's time window, the pool's capacity able to host it). So

    R P_k  >=  sum over t in U_k of u_k(t) P_k / |U_k|,

and charging every reserved GPU-hour ``P_k / |U_k|`` instead of the commitment keeps a
lower bound: the same rule as the Lagrangian's reserved prices ``mu_k(t) = P_k / |U_k|`` on
``U_k`` (:meth:`formulations.bounds.lagrange.Relaxation.zero_prices`). Charging the reserved
price per GPU-hour used (``P_k / T`` for a whole-horizon term) is the weaker case ``U_k`` =
every hour of the term: on the lab's quarter, whose fine-tunes and pre-trainings can use a
pool in 1,601 of its 2,190 hours, that said 0.65 of the on-demand price where the commitment
says at least 0.89, and the bound rose from 2,038,630 to 2,649,791.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import Weights, hourly_cost, pool_usd_per_gpu
from planner.model.schedule import ReservedKey


def open_hours(inst: Instance, c: Config, e: int, l_: int) -> np.ndarray:
    """The hours of ``[e, l_)`` whose pool capacity alone can host c."""
    return np.asarray(inst.capacity[(c.region, c.gpu)][e:l_] >= c.total_gpus - 1e-9)


def usable_hours(
    inst: Instance,
    space: ConfigSpace,
    windows_start: Mapping[str, int],
    windows_end: Mapping[str, int],
) -> dict[ReservedKey, int]:
    """Per reserved pool of the space, ``|U_k|`` (module docstring)."""
    usable: dict[ReservedKey, np.ndarray] = {}
    for name, configs in space.by_phase.items():
        e, l_ = windows_start[name], windows_end[name]
        for c in configs:
            if c.contract != "reserved" or l_ - e < c.hours:
                continue
            key = (c.region, c.gpu, c.term)
            u = usable.setdefault(key, np.zeros(inst.hours, dtype=bool))
            u[e:l_] |= open_hours(inst, c, e, l_)
    out: dict[ReservedKey, int] = {}
    for key, u in usable.items():
        t = inst.term(*key)
        assert t is not None, key
        out[key] = int(u[t.first : t.end].sum())
    return out


def reserved_rates(
    inst: Instance,
    space: ConfigSpace,
    windows_start: Mapping[str, int],
    windows_end: Mapping[str, int],
) -> dict[ReservedKey, float]:
    """Per reserved pool of the space, ``P_k / |U_k|`` in USD per GPU-hour used (module
    docstring); a pool no plan can use is left out."""
    return {
        key: pool_usd_per_gpu(inst, *key) / n
        for key, n in usable_hours(inst, space, windows_start, windows_end).items()
        if n > 0
    }


def bound_hourly(
    inst: Instance,
    c: Config,
    w: Weights,
    e: int,
    l_: int,
    rates: Mapping[ReservedKey, float] | None,
) -> np.ndarray:
    """c's weighted cost of each hour of ``[e, l_)`` for the bounds: the cost model's hourly
    cost with a reserved GPU-hour charged its pool's rate (``rates``, :func:`reserved_rates`;
    None: the reserved price per GPU-hour used); inf where the pool's capacity cannot host
    c."""
    if c.contract == "reserved" and rates is not None:
        rate = rates.get((c.region, c.gpu, c.term), 0.0)
        h = hourly_cost(inst, c, w, "billed")[e:l_] + w.rental * c.total_gpus * rate
    else:
        h = hourly_cost(inst, c, w, "as_used")[e:l_]
    return np.where(open_hours(inst, c, e, l_), h, np.inf)
