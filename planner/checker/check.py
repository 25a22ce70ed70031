"""``verify``: judge a plan against its instance, from the two alone."""

from __future__ import annotations

from planner.checker import constraints as c
from planner.checker.costs import (
    ALL_KEYS,
    PhaseCosts,
    compare,
    objective_of,
    phase_costs,
    pool_rental,
    porting_usd,
)
from planner.checker.figures import check_figures
from planner.checker.recompute import PhaseFacts, derive
from planner.checker.violation import Verification, Violation
from planner.instance.model import Instance
from planner.plan import COST_KEYS, Plan


def verify(
    inst: Instance, plan: Plan, rel_tol: float = 1e-6, abs_tol: float = 0.01
) -> Verification:
    """Check every constraint and recompute every cost of docs/cost-model.md.

    Families are checked in a fixed order: entries (missing and unknown phases), then per
    phase the configuration, defined work, memory, hours needed, window and contiguity; then
    precedence, capacity, reserved pools, the carbon cap; last the stated costs and the derived
    figures of each entry's ``info`` (:mod:`planner.checker.figures`). A stated
    figure matches when ``|stated - recomputed| <= abs_tol + rel_tol x |recomputed|``.
    Costs are compared only when every entry could be priced (``Verification.costed``)."""
    violations: list[Violation] = []
    found, entries = c.check_entries(inst, plan)
    violations.extend(found)
    violations.extend(c.check_window(inst, plan, entries))

    facts: dict[str, PhaseFacts] = {}
    costable_all = True
    for name in inst.order:
        ent = entries.get(name)
        if ent is None:
            continue
        config_v, costable = c.check_configuration(inst, ent)
        violations.extend(config_v)
        work_v = c.check_work_defined(inst, ent.phase)
        violations.extend(work_v)
        violations.extend(c.check_contiguity(ent))
        if not costable or work_v:
            costable_all = False
            continue
        f = derive(inst, ent.phase, ent.plan)
        facts[name] = f
        violations.extend(c.check_memory(ent, f))
        violations.extend(c.check_work(ent, f))
        if not c.in_horizon(inst, ent):
            costable_all = False

    violations.extend(c.check_precedence(inst, entries))
    violations.extend(c.check_capacity(inst, entries))
    pool_v, pools = c.reserved_pools(inst, plan)
    violations.extend(pool_v)
    violations.extend(c.check_reserved(inst, pools, entries))

    region_of = {name: ent.plan.region for name, ent in entries.items()}
    by_phase: dict[str, PhaseCosts] = {}
    for name, f in facts.items():
        ent = entries[name]
        if c.in_horizon(inst, ent):
            by_phase[name] = phase_costs(inst, ent, f, region_of)
    totals = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emissions = 0.0
    for pc in by_phase.values():
        for k in COST_KEYS:
            totals[k] += pc.costs[k]
        kwh += pc.kwh
        emissions += pc.emissions_t
    totals["rental"] += pool_rental(inst, pools)
    totals["porting"] = porting_usd(inst, {entries[n].plan.gpu for n in facts})
    totals["total"] = sum(totals[k] for k in COST_KEYS)
    objective = objective_of(inst, totals)
    violations.extend(c.check_carbon_cap(inst, emissions, rel_tol))
    if costable_all:
        violations.extend(
            compare(plan, totals, objective, kwh, emissions, by_phase, rel_tol, abs_tol)
        )
    for name, pc in by_phase.items():
        violations.extend(check_figures(entries[name], facts[name], pc.costs["failure"]))
    costs = {k: totals[k] for k in ALL_KEYS}
    return Verification(
        violations=tuple(violations),
        costs=costs,
        objective=objective,
        energy_kwh=kwh,
        emissions_t=emissions,
        phase_costs={k: dict(v.costs) for k, v in by_phase.items()},
        facts=facts,
        costed=costable_all,
    )
