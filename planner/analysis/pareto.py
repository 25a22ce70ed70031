"""``trainplan pareto``: the cost frontier against completion time or against emissions.

The article closes on the balance of performance, training time and cost; this module draws
that trade-off on the user's instance, by the epsilon-constraint method (Haimes, Lasdon &
Wismer 1971): one objective (cost) is minimised while the other is capped, for a sweep of
caps.

- ``vs="deadline"``: cap the makespan at D, i.e. give every active phase the deadline
  ``min(deadline_p, D)``, for D from the fastest feasible makespan (:func:`min_makespan`,
  the hourly MILP minimising the last finishing hour) to the horizon end. At D = horizon end
  the instance is unchanged: the last point is the unconstrained optimum.
- ``vs="carbon"``: cap the emissions (``objective.carbon_cap_tonnes``) at E, for E from the
  emissions of the min-emission plan (the MILP with every cost weight 0 and carbon priced) to
  those of the min-cost plan (no cap). Every region a phase may use needs a
  ``carbon_intensity`` series.

Each point is a solve of :func:`planner.solve.solve` (the hourly MILP). A plan feasible under
a cap stays feasible under every looser cap, so when a solver stops at its time limit with a
plan dearer than the previous (tighter) point's, that point's plan is kept instead and the
point says so (``kept_from``): the frontier is then non-increasing by construction and honest
about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.instance.model import Instance
from planner.jsonable import record
from planner.model.configs import build_config_space
from planner.model.plan import Plan

VS = ("deadline", "carbon")

#: Relative slack on an emissions cap, so the min-emission plan itself meets it despite
#: rounding (the checker allows the same relative tolerance).
CAP_SLACK = 1e-6


class ParetoError(ValueError):
    """The frontier cannot be computed for this instance; the message says why."""


@dataclass(frozen=True)
class ParetoPoint:
    """One point: the cap (``x``: a makespan hour, or tonnes CO2), the cheapest plan found
    under it and its figures."""

    vs: str
    x: float
    plan: Plan | None
    instance: Instance
    cost: float | None
    makespan_h: int | None
    emissions_t: float | None
    termination: str
    gap: float | None
    kept_from: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The frontier point as ``pareto --json`` writes it, with its plan."""
        out = record(self, {"makespan_h": "makespan_hours"}, skip=("instance", "plan"))
        return {**out, "plan": self.plan.to_dict() if self.plan is not None else None}


def _makespan(plan: Plan | None) -> int | None:
    if plan is None or not plan.phases:
        return None
    return max(p.end_hour for p in plan.phases)


def _solve(
    inst: Instance, time_limit: float, backend: str
) -> tuple[Plan | None, str, float | None]:
    """The hourly MILP (it discards a heuristic start that breaks a carbon cap)."""
    from planner.solve import solve

    res = solve(inst, solver="milp", time_limit=time_limit, backend=backend)
    return res.plan, res.termination.value, res.gap


def _point(
    vs: str,
    x: float,
    inst: Instance,
    plan: Plan | None,
    term: str,
    gap: float | None,
    kept_from: float | None = None,
) -> ParetoPoint:
    return ParetoPoint(
        vs,
        x,
        plan,
        inst,
        plan.objective if plan is not None else None,
        _makespan(plan),
        plan.emissions_t if plan is not None else None,
        term,
        gap,
        kept_from,
    )


def _sweep(lo: float, hi: float, points: int, integer: bool) -> list[float]:
    if points < 1:
        raise ParetoError(f"--points: expected at least 1, got {points}")
    if hi <= lo or points == 1:
        return [hi]
    xs = np.linspace(lo, hi, points)
    if integer:
        return sorted({round(float(x)) for x in xs})
    return [float(x) for x in xs]


def _names_ok(inst: Instance) -> None:
    for p in inst.phases:
        if "." in p.name:
            raise ParetoError(
                f"{inst.source}: phase {p.name!r}: pareto variants address phases "
                "by dotted paths; rename it without a '.'"
            )


def _repair(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Points are ordered from the tightest cap to the loosest; a point without a plan or with
    a dearer plan than an earlier (tighter) point keeps that earlier plan."""
    out: list[ParetoPoint] = []
    best: ParetoPoint | None = None
    for pt in points:
        if (
            best is not None
            and best.cost is not None
            and (pt.cost is None or pt.cost > best.cost * (1 + 1e-9) + 1e-9)
        ):
            pt = ParetoPoint(
                pt.vs,
                pt.x,
                best.plan,
                pt.instance,
                best.cost,
                best.makespan_h,
                best.emissions_t,
                pt.termination,
                pt.gap,
                best.x,
            )
        out.append(pt)
        if pt.cost is not None and (best is None or best.cost is None or pt.cost <= best.cost):
            best = pt
    return out


def deadline_frontier(
    inst: Instance, points: int = 8, time_limit: float = 60.0, backend: str = "highs"
) -> list[ParetoPoint]:
    """Cost against a cap D on the makespan, D from the fastest feasible makespan to the
    horizon end (the unconstrained optimum)."""
    from planner.analysis.elastic import min_makespan

    _names_ok(inst)
    space = build_config_space(inst)
    if space.infeasible:
        raise ParetoError(
            f"{inst.source}: "
            + "; ".join(i.reason for i in space.infeasible)
            + " (run `trainplan explain`)"
        )
    d_min, status = min_makespan(inst, space, time_limit)
    if d_min is None:
        if status == "infeasible":
            raise ParetoError(f"{inst.source}: the instance has no plan; run `trainplan explain`")
        raise ParetoError(
            f"{inst.source}: no plan found in {time_limit:g} s ({status}); raise --time-limit"
        )
    out: list[ParetoPoint] = []
    for d in _sweep(d_min, inst.hours, points, integer=True):
        D = int(d)
        ups = {
            f"phases.{p.name}.deadline": D for p in inst.active_phases if inst.deadline[p.name] > D
        }
        variant = inst.replace(ups) if ups else inst
        plan, term, gap = _solve(variant, time_limit, backend)
        out.append(_point("deadline", D, variant, plan, term, gap))
    return _repair(out)


def _carbon_regions(inst: Instance) -> list[str]:
    used = sorted({r for p in inst.active_phases for r in (p.regions or inst.spec.regions)})
    return [r for r in used if inst.carbon[r] is None]


def carbon_frontier(
    inst: Instance, points: int = 8, time_limit: float = 60.0, backend: str = "highs"
) -> list[ParetoPoint]:
    """Cost against a cap E on emissions, E from the min-emission plan's to the min-cost
    plan's emissions (the instance's own carbon cap, if any, is lifted for the sweep)."""
    missing = _carbon_regions(inst)
    if missing:
        raise ParetoError(
            f"{inst.source}: "
            + "; ".join(
                f"regions.{r}.carbon_intensity: required for --vs carbon (a series in gCO2/kWh, "
                "e.g. {constant: 400})"
                for r in missing
            )
        )
    base = inst
    if inst.spec.objective.carbon_cap_tonnes is not None:
        base = inst.replace({"objective.carbon_cap_tonnes": None})
    cheapest, term, gap = _solve(base, time_limit, backend)
    if cheapest is None:
        raise ParetoError(
            f"{inst.source}: no plan without a carbon cap ({term}); run `trainplan explain`"
        )
    zero = {k: 0.0 for k in ("rental", "energy", "storage", "failure", "transfer", "porting")}
    greenest_inst = base.replace(
        {"objective.weights": {**zero, "carbon": 1.0}, "objective.carbon_usd_per_tonne": 1000.0}
    )
    greenest, _t, _g = _solve(greenest_inst, time_limit, backend)
    e_max = cheapest.emissions_t
    e_min = greenest.emissions_t if greenest is not None else e_max
    out: list[ParetoPoint] = []
    caps = _sweep(e_min, e_max, points, integer=False)
    for i, cap in enumerate(caps):
        if i == len(caps) - 1:
            # the loosest cap is the min-cost plan's own emissions: the unconstrained optimum
            out.append(_point("carbon", cap, base, cheapest, term, gap))
            continue
        limit = cap * (1 + CAP_SLACK) + 1e-12
        variant = base.replace({"objective.carbon_cap_tonnes": limit})
        plan, t, g = _solve(variant, time_limit, backend)
        out.append(_point("carbon", cap, variant, plan, t, g))
    return _repair(out)


def frontier(
    inst: Instance, vs: str, points: int = 8, time_limit: float = 60.0, backend: str = "highs"
) -> list[ParetoPoint]:
    """The cost frontier of ``inst`` against ``vs`` ("deadline" or "carbon"), from the
    tightest cap to the loosest. ``time_limit`` applies to each solve."""
    if vs == "deadline":
        return deadline_frontier(inst, points, time_limit, backend)
    if vs == "carbon":
        return carbon_frontier(inst, points, time_limit, backend)
    raise ParetoError(f"--vs: expected one of {', '.join(VS)}, got {vs!r}")
