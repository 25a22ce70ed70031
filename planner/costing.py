"""Turn a schedule (a configuration and running hours per phase) into a costed :class:`Plan`.

Every solver ends here, so all plans state their costs the same way (docs/cost-model.md).
The independent checker recomputes the same figures without this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from planner.configs import (
    Config,
    ConfigSpace,
    checkpoint_gb_of,
    output_gb_of,
    transfer_price,
)
from planner.instance.model import Instance
from planner.plan import COST_KEYS, PhasePlan, Plan


def segments(hours: tuple[int, ...]) -> int:
    """Maximal runs of consecutive hours."""
    hs = sorted(hours)
    return sum(1 for i, h in enumerate(hs) if i == 0 or h != hs[i - 1] + 1)


def phase_costs(
    inst: Instance,
    space: ConfigSpace,
    c: Config,
    hours: tuple[int, ...],
    region_of: Mapping[str, str],
    reserved_price: float = 0.0,
) -> dict[str, float]:
    """Costs of one phase (docs/cost-model.md, "Plan costs"), unweighted."""
    p = inst.phase(c.phase)
    H = np.asarray(sorted(hours), dtype=int)
    price = inst.price[c.region][H]
    e = c.energy_usd(price)
    if c.contract == "reserved":
        rental = len(hours) * (c.rental_per_h - c.total_gpus * reserved_price)
    else:
        blocks = {int(h) // c.billing_hours for h in H}
        rental = max(len(blocks) * c.billing_hours, c.min_rental_hours) * c.rental_per_h
    fail = float(np.sum(c.failure_usd(price)))
    start, end = int(H.min()), int(H.max()) + 1
    stor = len(hours) * c.storage_per_h + (inst.hours - end) * c.archive_per_h
    if p.preemptible:
        fail += (segments(hours) - 1) * c.resume_usd
        stor += (end - start - len(hours)) * space.pause_usd_per_h.get(p.name, 0.0)
    out_gb = output_gb_of(inst, p)
    transfer = c.one_time_usd + sum(
        out_gb * transfer_price(inst, c.region, region_of[q])
        for q in inst.successors(p.name)
        if q in region_of
    )
    ci = inst.carbon[c.region]
    carbon_t = float(np.sum(c.carbon_t(ci[H]))) if ci is not None else 0.0
    return {
        "rental": float(rental),
        "energy": float(np.sum(e)),
        "storage": float(stor),
        "failure": fail,
        "transfer": float(transfer),
        "porting": 0.0,
        "carbon": inst.spec.objective.carbon_usd_per_tonne * carbon_t,
        "_emissions_t": carbon_t,
        "_kwh": c.facility_kw * len(hours),
    }


def make_plan(
    inst: Instance,
    space: ConfigSpace,
    schedule: Mapping[str, tuple[Config, tuple[int, ...]]],
    reserved: Mapping[tuple[str, str], int],
    solver: str,
    status: str,
    termination: str,
    bound: float | None,
    runtime_s: float,
    notes: tuple[str, ...] = (),
) -> Plan:
    """Cost a schedule; ``objective`` is the weighted total, ``gap`` against ``bound``."""
    region_of = {name: c.region for name, (c, _) in schedule.items()}
    totals = dict.fromkeys(COST_KEYS, 0.0)
    kwh = emis = 0.0
    phases: list[PhasePlan] = []
    for name in inst.order:
        if name not in schedule:
            continue
        c, hours = schedule[name]
        rp = 0.0
        if c.contract == "reserved":
            offer = inst.region(c.region).offers[c.gpu].reserved
            rp = offer.usd_per_gpu_hour if offer else 0.0
        pc = phase_costs(inst, space, c, hours, region_of, rp)
        kwh += pc.pop("_kwh")
        emis += pc.pop("_emissions_t")
        for k in COST_KEYS:
            totals[k] += pc[k]
        lay = c.layout
        p = inst.phase(name)
        expected_failures = c.failure_rate * len(hours)
        phases.append(
            PhasePlan(
                name=name,
                gpu=c.gpu,
                region=c.region,
                contract=c.contract,
                gpus=c.gpus,
                spare_gpus=c.spare_gpus,
                precision=lay.precision,
                zero=lay.zero,
                recompute=lay.recompute,
                tp=lay.tp,
                pp=lay.pp,
                tier=c.tier,
                hours=tuple(sorted(hours)),
                costs={k: round(v, 6) for k, v in pc.items()},
                info={
                    "config": c.label,
                    "dp": lay.dp,
                    "memory_gb": round(c.memory.total_gb, 3),
                    "model_states_gb": round(c.memory.model_states_gb, 3),
                    "activations_gb": round(c.memory.activations_gb, 3),
                    "memory_capacity_gb": round(c.memory.capacity_gb, 3),
                    "work_hours": round(c.work_hours, 4),
                    "facility_kw": round(c.facility_kw, 4),
                    "checkpoint_gb": round(checkpoint_gb_of(inst, p, lay.precision), 3),
                    "checkpoint_interval_s": (
                        None
                        if math.isinf(c.checkpoint_interval_s)
                        else round(c.checkpoint_interval_s, 1)
                    ),
                    "expected_failures": round(expected_failures, 4),
                    "failure_rate_per_h": c.failure_rate,
                    "tflops_per_gpu": round(c.flops_per_s / max(c.gpus, 1e-9) / 1e12, 2),
                    "kind": p.kind,
                    "preemptible": p.preemptible,
                },
            )
        )
    for (r, g), n in reserved.items():
        if n > 0:
            offer = inst.region(r).offers[g].reserved
            assert offer is not None
            totals["rental"] += n * offer.usd_per_gpu_hour * inst.hours
    families = {inst.gpu(c.gpu).family for c, _ in schedule.values()}
    totals["porting"] = sum(
        inst.spec.families[f].porting_usd for f in families if f in inst.spec.families
    )
    totals["total"] = sum(totals[k] for k in COST_KEYS)
    w = inst.spec.objective.weights
    objective = sum(w.get(k, 1.0) * totals[k] for k in COST_KEYS)  # type: ignore[call-overload]
    gap = None
    if bound is not None:
        gap = max(0.0, (objective - bound)) / max(abs(objective), 1e-9)
    return Plan(
        instance=inst.name,
        horizon_start=inst.start,
        solver=solver,
        status=status,
        termination=termination,
        objective=objective,
        bound=bound,
        gap=gap,
        runtime_s=runtime_s,
        costs={k: round(v, 6) for k, v in totals.items()},
        phases=tuple(phases),
        reserved=tuple((r, g, int(n)) for (r, g), n in sorted(reserved.items()) if n > 0),
        energy_kwh=kwh,
        emissions_t=emis,
        notes=notes,
    )
