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
    time_value,
)
from planner.checker.figures import check_figures
from planner.checker.recompute import PhaseFacts, derive, running_facts
from planner.checker.segments import check_segment_work, check_segments, check_work_across
from planner.checker.violation import Verification, Violation
from planner.instance.model import Instance
from planner.model.plan import COST_KEYS, Plan


def verify(
    inst: Instance, plan: Plan, rel_tol: float = 1e-6, abs_tol: float = 0.01
) -> Verification:
    """Check every constraint and recompute every cost of docs/cost-model.md.

    Families are checked in a fixed order: entries (missing and unknown phases), then per
    phase its segments' shape, defined work, contiguity, and per segment the configuration
    and memory, then the hours needed (the work across segments); then precedence, capacity,
    reserved pools and terms, the carbon cap; last the stated costs and migrations, and the
    derived figures of each entry's ``info`` (:mod:`planner.checker.figures`). A stated
    figure matches when ``|stated - recomputed| <= abs_tol + rel_tol x |recomputed|``.
    Costs are compared only when every entry could be priced (``Verification.costed``)."""
    violations: list[Violation] = []
    found, entries = c.check_entries(inst, plan)
    violations.extend(found)
    violations.extend(c.check_window(inst, plan, entries))

    facts: dict[str, PhaseFacts] = {}
    part_facts: dict[str, list[PhaseFacts]] = {}
    running: dict[str, PhaseFacts] = {}
    costable_all = True
    for name in inst.order:
        ent = entries.get(name)
        if ent is None:
            continue
        violations.extend(check_segments(ent))
        work_v = c.check_work_defined(inst, ent.phase)
        violations.extend(work_v)
        violations.extend(c.check_contiguity(ent))
        parts = ent.parts()
        found_facts: list[PhaseFacts] = []
        costable = not work_v
        for part in parts:
            config_v, part_costable = c.check_configuration(inst, part)
            violations.extend(config_v)
            if not part_costable or work_v:
                costable = False
                continue
            f = derive(inst, ent.phase, part.plan)
            found_facts.append(f)
            violations.extend(c.check_memory(part, f))
            violations.extend(c.check_deadline_reserve(inst, part, f))
        if not costable:
            costable_all = False
            continue
        facts[name] = found_facts[0]
        part_facts[name] = found_facts
        if len(parts) == 1:
            violations.extend(c.check_work(parts[0], found_facts[0]))
        else:
            violations.extend(check_work_across(ent, found_facts))
        if ent.plan.segments:
            violations.extend(check_segment_work(ent, found_facts))
        run = running_facts(inst, ent.phase)
        if run is not None:
            running[name] = run
        if not c.in_horizon(inst, ent):
            costable_all = False

    violations.extend(c.check_precedence(inst, entries))
    violations.extend(c.check_capacity(inst, entries))
    pool_v, pools = c.reserved_pools(inst, plan)
    violations.extend(pool_v)
    violations.extend(c.check_reserved(inst, pools, entries))

    region_of = {name: ent.parts()[0].plan.region for name, ent in entries.items()}
    by_phase: dict[str, PhaseCosts] = {}
    for name, fs in part_facts.items():
        ent = entries[name]
        if c.in_horizon(inst, ent):
            by_phase[name] = phase_costs(inst, ent, fs, region_of, running.get(name))
    totals = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emissions = 0.0
    for pc in by_phase.values():
        for k in COST_KEYS:
            totals[k] += pc.costs[k]
        kwh += pc.kwh
        emissions += pc.emissions_t
    totals["rental"] += pool_rental(inst, pools)
    totals["porting"] = porting_usd(
        inst, {part.plan.gpu for n in facts for part in entries[n].parts()}
    )
    totals["total"] = sum(totals[k] for k in COST_KEYS)
    ends = {n: entries[n].hours[-1] + 1 for n in by_phase}
    totals["time"] = time_value(inst, ends)
    objective = objective_of(inst, totals) + totals["time"]
    violations.extend(c.check_carbon_cap(inst, emissions, rel_tol))
    if costable_all:
        violations.extend(
            compare(plan, totals, objective, kwh, emissions, by_phase, rel_tol, abs_tol)
        )
    for name, pc in by_phase.items():
        parts = entries[name].parts()
        if len(parts) == 1:
            violations.extend(check_figures(parts[0], facts[name], pc.costs["failure"]))
        else:  # each segment states its own figures (its failure cost is a segment's share)
            for part, f in zip(parts, part_facts[name], strict=True):
                violations.extend(check_figures(part, f, None))
    costs = {k: totals[k] for k in (*ALL_KEYS, "time")}
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
