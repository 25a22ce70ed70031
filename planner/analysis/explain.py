"""``trainplan explain``: why an instance has no plan, and the smallest change that gives one.

Two kinds of evidence, reported as :class:`~planner.model.consistency.Finding` objects:

1. **Pre-checks** (:mod:`planner.model.consistency`) hold for every plan, whatever the solver does:

   - *memory*: the smallest memory need of any (GPU type, GPU count, layout) the phase may
     use against that GPU's usable memory, ``memory_gb`` in its ``memory_unit`` x (1 - headroom)
     (:func:`planner.physics.memory.memory_per_gpu`); amount in GB short;
   - *deadline*: the earliest finish through the precedence graph with each phase's fastest
     configuration (the critical-path forward pass, Kelley & Walker 1959:
     ``EF(p) = max(release(p), max_q EF(q)) + fastest(p)``, fastest over configurations that
     fit capacity in ``[release, horizon end)``), against each deadline; amount in hours;
   - *capacity*: the compulsory parts of phases bound to one (region, GPU) pool (Lahrichi
     1982; the timetable rule of cumulative scheduling): a non-preemptible phase with window
     ``[e, l)`` (tightened through the precedence graph) and ``n`` hours must run in
     ``[l - n, e + n)`` whatever its start; the phase needs at least ``min_c G_c`` GPUs then.
     Hours where those needs add up above the pool's capacity are a conflict; amount in GPUs;
   - *configuration*: every other reason :mod:`planner.model.configs` gives for a phase without a
     configuration (no offer, precision not supported, too few zones).

2. **The smallest relaxation** (:mod:`planner.analysis.elastic`): the hourly MILP of a relaxed
   instance (deadlines at the horizon end, capacities raised, carbon cap lifted, phases that
   can never run marked done) with penalised slack for hours past each original deadline,
   GPUs above each original capacity and tonnes above the cap. The weighted slack is
   minimised first (one hour late = one GPU-hour over capacity = one tonne over the cap, by
   default), the cost second. When the smallest relaxation uses one kind of slack and the
   other kind could also restore feasibility, that alternative is solved and reported too.

The instance is feasible when no pre-check fires and the smallest relaxation is zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formulations.heuristics.greedy import greedy
from planner.analysis.elastic import (
    KINDS,
    ElasticModel,
    ElasticSolution,
    ElasticWeights,
    build_elastic,
    cheapest_within,
    earliest_finish_schedule,
    minimise_slack,
)
from planner.instance.model import Instance
from planner.instance.schema import Phase
from planner.model.configs import ConfigSpace, build_config_space, gpu_counts
from planner.model.consistency import (
    Finding,
    capacity_findings,
    deadline_findings,
    hour_ranges,
    memory_finding,
    span,
    when,
)
from planner.model.costs import cost_plan, emissions_t
from planner.model.plan import Plan
from planner.model.schedule import Schedule


class ExplainError(ValueError):
    """The explanation cannot be computed for this instance; the message says why."""


@dataclass(frozen=True)
class Relaxation:
    """A solved elastic model: which slack it may use, the weighted slack, what changes."""

    name: str
    allow: tuple[str, ...]
    status: str
    proven: bool
    penalty: float | None
    findings: tuple[Finding, ...]
    plan: Plan | None = None
    #: The relaxed instance the plan is valid for (deadlines, capacity and cap relaxed).
    instance: Instance | None = field(default=None, repr=False, compare=False)
    schedule: Schedule | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The relaxation as ``explain --json`` writes it: what it allows, its status, penalty,
        findings and cost."""
        return {
            "name": self.name,
            "allow": list(self.allow),
            "status": self.status,
            "proven": self.proven,
            "penalty": self.penalty,
            "findings": [f.to_dict() for f in self.findings],
            "cost": self.plan.objective if self.plan is not None else None,
        }


@dataclass(frozen=True)
class Explanation:
    instance: str
    feasible: bool
    #: ``feasible`` is proved (a plan exists, or a pre-check or an optimal relaxation shows
    #: none does). False when the relaxation stopped at its time limit undecided.
    proven: bool
    findings: list[Finding]
    relaxations: list[Relaxation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plan: Plan | None = None
    weights: ElasticWeights = field(default_factory=ElasticWeights)

    def to_dict(self) -> dict[str, Any]:
        """The explanation as ``explain --json`` writes it (trainplan-explain/1)."""
        return {
            "format": "trainplan-explain/1",
            "instance": self.instance,
            "feasible": self.feasible,
            "proven": self.proven,
            "findings": [f.to_dict() for f in self.findings],
            "relaxations": [r.to_dict() for r in self.relaxations],
            "notes": list(self.notes),
            "weights": {
                "late_hour": self.weights.late_hour,
                "gpu_hour": self.weights.gpu_hour,
                "tonne": self.weights.tonne,
            },
            "plan_cost": self.plan.objective if self.plan is not None else None,
        }

    def lines(self) -> list[str]:
        """The explanation as text, one string per line."""
        out: list[str] = []
        if self.feasible:
            cost = (
                f"; the cheapest plan found costs ${self.plan.objective:,.2f}"
                if self.plan is not None and self.plan.objective is not None
                else ""
            )
            out.append(
                f"{self.instance} is feasible: a plan meets every deadline, capacity "
                f"and cap{cost}. Nothing to explain."
            )
            out.extend(f"note: {n}" for n in self.notes)
            return out
        verdict = "infeasible" if self.proven else "no plan found (not proved infeasible)"
        out.append(f"{self.instance}: {verdict}")
        pre = [f for f in self.findings if f.source == "pre-check"]
        if pre:
            out.append("conflicts that hold for any plan:")
            out.extend(f"  {f.kind}: {f.message}" for f in pre)
        w = self.weights
        for r in self.relaxations:
            head = "smallest relaxation" if r.name == "smallest" else f"{r.name}"
            if r.name == "smallest":
                head += (
                    f" (1 h past a deadline = {w.late_hour / w.gpu_hour:g} GPU-hour over "
                    f"capacity = {w.late_hour / w.tonne:g} t CO2 over the cap)"
                )
            if r.status == "infeasible":
                out.append(f"{head}: not possible this way")
                continue
            if r.penalty is None:
                out.append(f"{head}: no answer in time ({r.status})")
                continue
            proof = "" if r.proven else ", not proved smallest (time limit)"
            out.append(f"{head}{proof}:")
            out.extend(f"  {f.message}" for f in r.findings)
            if not r.findings:
                out.append("  no further change: every other phase fits as given")
            if r.plan is not None and r.plan.objective is not None:
                out.append(f"  the cheapest plan under it costs ${r.plan.objective:,.2f}")
        out.extend(f"note: {n}" for n in self.notes)
        return out


# ----------------------------------------------------------------------------- helpers


def _pool_need(inst: Instance, p: Phase) -> int:
    """The most GPUs (working + spare) any configuration of the phase could hold."""
    most = 0.0
    for gname in p.gpu_types or tuple(inst.spec.gpu_types):
        g = inst.gpu(gname)
        spare = (p.redundancy.spare_nodes + max(p.options.extra_spare_nodes)) * g.gpus_per_node
        most = max(most, max(gpu_counts(p, g)) + spare)
    return math.ceil(most)


def relaxed_instance(
    inst: Instance,
    deadlines: bool = True,
    capacity: bool = True,
    carbon: bool = True,
    done: tuple[str, ...] = (),
) -> Instance:
    """``inst`` with deadlines at the horizon end, capacities raised above any possible need,
    the carbon cap lifted and the phases in ``done`` marked done."""
    for name in (*[p.name for p in inst.phases], *inst.spec.regions, *inst.spec.gpu_types):
        if "." in name:
            raise ExplainError(
                f"{inst.source}: explain builds variants by dotted paths; rename "
                f"{name!r} without a '.'"
            )
    ups: dict[str, Any] = {}
    if deadlines:
        for p in inst.active_phases:
            if inst.deadline[p.name] < inst.hours:
                ups[f"phases.{p.name}.deadline"] = inst.hours
    if capacity:
        need = sum(_pool_need(inst, p) for p in inst.active_phases)
        for (r, g), cap in inst.capacity.items():
            ups[f"regions.{r}.capacity.{g}"] = math.ceil(float(np.max(cap))) + need
    if carbon and inst.spec.objective.carbon_cap_tonnes is not None:
        ups["objective.carbon_cap_tonnes"] = None
    for name in done:
        ups[f"phases.{name}.done"] = True
    return inst.replace(ups) if ups else inst


def relaxation_findings(inst: Instance, schedule: Schedule) -> list[Finding]:
    """What a schedule of the relaxed instance breaks in ``inst``: hours past deadlines, GPUs
    above capacity (per pool and run of hours), tonnes above the carbon cap."""
    out: list[Finding] = []
    for name in inst.order:
        if name not in schedule:
            continue
        _c, hours = schedule[name]
        end, d = max(hours) + 1, inst.deadline[name]
        if end > d:
            out.append(
                Finding(
                    "deadline",
                    name,
                    float(end - d),
                    "h",
                    f"{name}: deadline +{end - d} h (hour {d} -> {end}, "
                    f"{when(inst, d)} -> {when(inst, end)})",
                    "relaxation",
                )
            )
    usage: dict[tuple[str, str], np.ndarray] = {}
    users: dict[tuple[str, str], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name, (c, hours) in schedule.items():
        u = usage.setdefault((c.region, c.gpu), np.zeros(inst.hours))
        for t in hours:
            u[t] += c.total_gpus
            users[(c.region, c.gpu)][t].add(name)
    for (r, g), u in sorted(usage.items()):
        cap = inst.capacity.get((r, g), np.zeros(inst.hours))
        over = [t for t in range(inst.hours) if u[t] > cap[t] + 1e-9]
        for run in hour_ranges(over):
            extra = [float(u[t] - cap[t]) for t in run]
            names = tuple(sorted({n for t in run for n in users[(r, g)][t]}))
            gpu_h = sum(extra)
            out.append(
                Finding(
                    "capacity",
                    None,
                    max(extra),
                    "GPUs",
                    f"capacity {r}/{g}: +{max(extra):g} GPUs in {span(inst, run)}, "
                    f"{gpu_h:g} GPU-hours (used by {', '.join(names)})",
                    "relaxation",
                    region=r,
                    gpu=g,
                    hours=tuple(run),
                    phases=names,
                )
            )
    cap_t = inst.spec.objective.carbon_cap_tonnes
    if cap_t is not None:
        emis = sum(emissions_t(inst, c, hours) for c, hours in schedule.values())
        if emis > cap_t * (1 + 1e-9) + 1e-12:
            out.append(
                Finding(
                    "carbon",
                    None,
                    emis - cap_t,
                    "t",
                    f"carbon cap: +{emis - cap_t:.4g} t CO2 ({emis:.4g} t against "
                    f"a cap of {cap_t:g} t)",
                    "relaxation",
                )
            )
    return out


def _relaxation(
    inst: Instance,
    em: ElasticModel,
    name: str,
    allow: tuple[str, ...],
    time_limit: float,
    second_stage: bool,
    space: ConfigSpace,
    costed: Instance,
    first: ElasticSolution | None = None,
) -> Relaxation:
    """Solve one elastic variant (stage 1, and stage 2 when ``second_stage``; ``first`` is a
    stage-1 solution already found) and read what it changes in ``inst``."""
    if first is None:
        first = minimise_slack(em, time_limit, allow, starts=_starts(inst, em, space))
    sol = cheapest_within(em, first, time_limit, allow=allow) if second_stage else first
    if sol.schedule is None:
        return Relaxation(name, allow, sol.status, False, None, ())
    found = tuple(relaxation_findings(inst, sol.schedule))
    plan = cost_plan(costed, sol.schedule) if second_stage else None
    proven = sol.proven or (
        sol.penalty_bound is not None
        and sol.penalty is not None
        and sol.penalty - sol.penalty_bound <= 1e-6
    )
    return Relaxation(
        name,
        allow,
        sol.status,
        proven,
        sol.penalty,
        found,
        plan,
        costed,
        sol.schedule,
    )


def _starts(inst: Instance, em: ElasticModel, space: ConfigSpace) -> tuple[Schedule, ...]:
    """Seeds for stage 1: earliest finish within capacity, as soon as possible, cheapest."""
    relaxed = em.mm.inst
    return tuple(
        s
        for s in (
            earliest_finish_schedule(inst, relaxed, space),
            greedy(relaxed, space, first_start_only=True),
            greedy(relaxed, space),
        )
        if s is not None
    )


# ----------------------------------------------------------------------------- explain


def explain(
    inst: Instance, time_limit: float = 60.0, weights: ElasticWeights | None = None
) -> Explanation:
    """Pre-checks, then the smallest relaxation (and the alternatives); ``time_limit`` is per
    MILP solve (at most two stages for the smallest relaxation and one per alternative)."""
    w = weights or ElasticWeights()
    notes: list[str] = []
    space = build_config_space(inst)
    findings: list[Finding] = []
    inst_dl = relaxed_instance(inst, capacity=False, carbon=False)
    space_dl = build_config_space(inst_dl)
    inst_rel = relaxed_instance(inst)
    space_rel = build_config_space(inst_rel)
    impossible: list[str] = []
    for inf in space.infeasible:
        p = inst.phase(inf.phase)
        if space_rel.by_phase.get(p.name):
            if not space_dl.by_phase.get(p.name):
                cfgs = space_rel.by_phase[p.name]
                best = min(cfgs, key=lambda c: (c.total_gpus, c.hours))
                cap = float(np.max(inst.capacity[(best.region, best.gpu)][inst.release[p.name] :]))
                findings.append(
                    Finding(
                        "capacity",
                        p.name,
                        best.total_gpus - cap,
                        "GPUs",
                        f"{p.name}: every configuration that finishes within the horizon needs at "
                        f"least {best.total_gpus:g} GPUs ({best.label}); its pool {best.region}/"
                        f"{best.gpu} has at most {cap:g}",
                        region=best.region,
                        gpu=best.gpu,
                    )
                )
            continue
        impossible.append(p.name)
        mem = memory_finding(inst, inf)
        findings.append(mem or Finding("configuration", p.name, None, "", inf.reason))
    fastest = {n: (min(c.hours for c in cs) if cs else None) for n, cs in space_dl.by_phase.items()}
    findings.extend(deadline_findings(inst, fastest))
    findings.extend(capacity_findings(inst, space))

    relaxations: list[Relaxation] = []
    plan: Plan | None = None
    possible = [p.name for p in inst.active_phases if p.name not in impossible]
    if impossible:
        notes.append(
            f"{', '.join(impossible)} can never run; the relaxation treats "
            f"{'them' if len(impossible) > 1 else 'it'} as done"
        )
    if not possible:
        return Explanation(inst.name, False, True, findings, relaxations, notes, None, w)
    inst_el = relaxed_instance(inst, done=tuple(impossible)) if impossible else inst_rel
    space_el = build_config_space(inst_el) if impossible else space_rel
    base = inst.replace({f"phases.{n}.done": True for n in impossible}) if impossible else inst
    em = build_elastic(base, inst_el, space_el, w)
    first = minimise_slack(em, time_limit, KINDS, starts=_starts(base, em, space_el))
    if first.penalty is not None and first.penalty <= 1e-6 and not findings:
        # feasible: the cheapest plan is the MILP's on the instance as given
        from planner.solve import solve

        res = solve(inst, solver="milp", time_limit=time_limit, backend="highs")
        plan = res.plan
        if plan is None and first.schedule is not None:
            plan = cost_plan(inst, first.schedule)
        return Explanation(inst.name, True, True, [], [], notes, plan, w)
    smallest = _relaxation(base, em, "smallest", KINDS, time_limit, True, space_el, inst_el, first)
    relaxations.append(smallest)
    kinds = {f.kind for f in smallest.findings}
    if "deadline" in kinds and em.over:
        relaxations.append(
            _relaxation(
                base, em, "capacity only", ("capacity",), time_limit, False, space_el, inst_el
            )
        )
    if "capacity" in kinds and em.late:
        relaxations.append(
            _relaxation(base, em, "deadlines only", ("late",), time_limit, False, space_el, inst_el)
        )
    findings.extend(smallest.findings)
    proven = (
        any(f.source == "pre-check" for f in findings)
        or smallest.status == "infeasible"
        or (smallest.proven and smallest.penalty is not None and smallest.penalty > 1e-6)
    )
    if smallest.penalty is None and smallest.status != "infeasible":
        notes.append(
            f"the relaxation found no answer in time ({smallest.status}); raise --time-limit"
        )
    if smallest.status == "infeasible":
        notes.append(
            "even the relaxed instance (deadlines at the horizon end, capacities "
            "raised, no carbon cap) has no plan: the horizon is too short for the "
            "precedence chain, or a reserved pool's limits rule every plan out"
        )
    return Explanation(inst.name, False, proven, findings, relaxations, notes, None, w)
