"""The constraints of docs/cost-model.md ("Constraints"), one function per family.

Each function returns the violations it finds; none raises on a bad plan. Hours of an entry
are used as a set: ``H`` distinct, ``n = |H|``, ``start = min H``, ``end = max H + 1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from planner.checker.recompute import (
    RECOMPUTE_FACTOR,
    PhaseFacts,
    data_parallel,
    failures_at,
    offer_terms,
    peak_tflops,
    phase_model,
    work_flops,
)
from planner.checker.violation import Violation
from planner.instance.model import Instance
from planner.instance.schema import Phase
from planner.model.plan import PhasePlan, Plan, SegmentPlan

CONTRACTS = ("on_demand", "spot", "reserved")

#: Slack on GPU counts against capacity and reserved pools (fractional GPUs add in floats).
GPU_EPS = 1e-9


@dataclass(frozen=True)
class Entry:
    """A plan entry matched to the active phase it runs; ``hours`` distinct and sorted.
    ``segment``: which segment of a phase in segments this entry stands for (None: the
    phase itself)."""

    phase: Phase
    plan: PhasePlan
    hours: tuple[int, ...]
    segment: int | None = None

    @property
    def name(self) -> str:
        """The name of the phase the entry plans."""
        return self.phase.name

    def parts(self) -> tuple[Entry, ...]:
        """One entry per segment (the entry itself for a phase on one configuration): its
        configuration and its own hours."""
        if not self.plan.segments:
            return (self,)
        return tuple(segment_entry(self, k, seg) for k, seg in enumerate(self.plan.segments))


def segment_entry(ent: Entry, k: int, seg: SegmentPlan) -> Entry:
    """Segment k of a phase as an entry of its own (its configuration, hours and term)."""
    plan = PhasePlan(
        name=ent.plan.name,
        **seg.config(),
        hours=seg.hours,
        costs=dict(seg.costs),
        info=dict(seg.info),
        term=seg.term,
    )
    return Entry(ent.phase, plan, tuple(sorted(set(seg.hours))), k)


def hour_ranges(hours: Iterable[int]) -> str:
    """``0-2, 5, 7-9``: compact hour lists for messages."""
    hs = sorted(set(hours))
    runs: list[str] = []
    i = 0
    while i < len(hs):
        j = i
        while j + 1 < len(hs) and hs[j + 1] == hs[j] + 1:
            j += 1
        runs.append(f"{hs[i]}" if i == j else f"{hs[i]}-{hs[j]}")
        i = j + 1
    return ", ".join(runs)


def check_entries(inst: Instance, plan: Plan) -> tuple[list[Violation], dict[str, Entry]]:
    """Every active phase has exactly one entry; no entry names an unknown or done phase."""
    out: list[Violation] = []
    names = [p.name for p in inst.phases]
    entries: dict[str, Entry] = {}
    for e in plan.phases:
        if e.name not in names:
            out.append(
                Violation(
                    "unknown_phase",
                    e.name,
                    f"the instance has no phase {e.name!r}; its phases are {names}",
                )
            )
            continue
        p = inst.phase(e.name)
        if p.done:
            out.append(
                Violation(
                    "unknown_phase",
                    e.name,
                    "the instance marks this phase done (its artifact exists); the "
                    "plan must not run it",
                )
            )
            continue
        if e.name in entries:
            out.append(
                Violation(
                    "unknown_phase",
                    e.name,
                    "the plan has more than one entry for this phase; the first is checked",
                )
            )
            continue
        entries[e.name] = Entry(p, e, tuple(sorted(set(e.hours))))
    for p in inst.active_phases:
        if p.name not in entries:
            out.append(
                Violation(
                    "missing_phase", p.name, "active phase (not done) has no entry in the plan"
                )
            )
    return out, entries


def _allowed_count(p: Phase, gpus: float) -> str | None:
    """Why a GPU count is not allowed, or None: a slice must be one of ``options.fractions``;
    whole counts one of ``options.gpu_counts`` when given, else in [min_gpus, max_gpus]."""
    o = p.options
    if gpus < 1:
        if not any(math.isclose(gpus, f, rel_tol=1e-9) for f in o.fractions):
            return f"{gpus:g} of a GPU is not one of the allowed fractions {list(o.fractions)}"
        return None
    if gpus != int(gpus):
        return f"{gpus:g} GPUs: a count of one GPU or more must be whole"
    if o.gpu_counts is not None:
        if int(gpus) not in o.gpu_counts:
            return f"{gpus:g} GPUs is not one of the allowed counts {list(o.gpu_counts)}"
    elif not o.min_gpus <= gpus <= o.max_gpus:
        return f"{gpus:g} GPUs is outside the allowed range [{o.min_gpus}, {o.max_gpus}]"
    return None


def check_configuration(inst: Instance, ent: Entry) -> tuple[list[Violation], bool]:
    """The configuration is allowed: GPU type, region, contract offered and allowed (spot only
    if preemptible), precision supported and allowed, storage tier, ZeRO, recomputation,
    tp | heads, tp <= gpus_per_node, pp | layers, tp x pp | gpus, tp and pp among the options,
    GPU count allowed, spare nodes >= redundancy.spare_nodes, region zones >= redundancy.zones.

    Returns the violations and whether the entry can still be priced (everything it names
    exists in the instance)."""
    p, e = ent.phase, ent.plan
    problems: list[str] = []
    costable = True
    o = p.options
    gpu_ok = e.gpu in inst.spec.gpu_types
    region_ok = e.region in inst.spec.regions
    if not gpu_ok:
        problems.append(f"unknown GPU type {e.gpu!r}; known: {sorted(inst.spec.gpu_types)}")
    elif p.gpu_types is not None and e.gpu not in p.gpu_types:
        problems.append(
            f"GPU type {e.gpu!r} is not among the phase's gpu_types {list(p.gpu_types)}"
        )
    if not region_ok:
        problems.append(f"unknown region {e.region!r}; known: {sorted(inst.spec.regions)}")
    elif p.regions is not None and e.region not in p.regions:
        problems.append(f"region {e.region!r} is not among the phase's regions {list(p.regions)}")
    if region_ok and p.data.residency is not None and e.region not in p.data.residency:
        problems.append(
            f"region {e.region!r}: the phase's data may stay only in "
            f"{list(p.data.residency)} (data.residency)"
        )
    if region_ok and inst.region(e.region).zones < p.redundancy.zones:
        problems.append(
            f"region {e.region!r} has {inst.region(e.region).zones} zone(s); the "
            f"phase needs {p.redundancy.zones}"
        )
    if e.contract not in CONTRACTS:
        problems.append(f"unknown contract {e.contract!r}; expected one of {list(CONTRACTS)}")
        costable = False
    else:
        if e.contract not in o.contracts:
            problems.append(f"contract {e.contract!r} is not among the allowed {list(o.contracts)}")
        if e.contract == "spot" and not p.preemptible:
            problems.append("spot capacity needs a preemptible phase")
        if e.term and e.contract != "reserved":
            problems.append(f"term {e.term!r} is stated for a {e.contract} contract")
            costable = False
        elif (
            gpu_ok and region_ok and offer_terms(inst, e.region, e.gpu, e.contract, e.term) is None
        ):
            what = f"{e.contract} term {e.term!r}" if e.term else e.contract
            problems.append(f"region {e.region!r} does not offer {e.gpu} under {what}")
            costable = False
    if e.precision not in o.precision:
        problems.append(f"precision {e.precision!r} is not among the allowed {list(o.precision)}")
    if gpu_ok and peak_tflops(inst, e.gpu, e.precision) is None:
        problems.append(f"{e.gpu} has no peak throughput at precision {e.precision!r}")
        costable = False
    if region_ok:
        tiers = inst.region(e.region).storage
        if e.tier not in tiers:
            problems.append(
                f"region {e.region!r} has no storage tier {e.tier!r}; it has {list(tiers)}"
            )
            costable = False
        if o.storage_tiers is not None and e.tier not in o.storage_tiers:
            problems.append(
                f"storage tier {e.tier!r} is not among the allowed {list(o.storage_tiers)}"
            )
    if not (math.isfinite(e.gpus) and e.gpus > 0):
        problems.append(f"expected a positive GPU count, got {e.gpus!r}")
        costable = False
    else:
        why = _allowed_count(p, e.gpus)
        if why:
            problems.append(why)
    if e.spare_gpus < 0:
        problems.append(f"expected spare_gpus >= 0, got {e.spare_gpus}")
        costable = False
    elif gpu_ok:
        gpn = inst.gpu(e.gpu).gpus_per_node
        if e.spare_gpus % gpn:
            problems.append(f"{e.spare_gpus} spare GPUs is not a whole number of {gpn}-GPU nodes")
        elif e.spare_gpus // gpn < p.redundancy.spare_nodes:
            problems.append(
                f"{e.spare_gpus // gpn} spare node(s); redundancy.spare_nodes "
                f"requires {p.redundancy.spare_nodes}"
            )
    layout_problems, layout_costable = _check_layout(inst, p, e)
    problems.extend(layout_problems)
    costable = costable and layout_costable and gpu_ok and region_ok
    where = "" if ent.segment is None else f"segment {ent.segment}: "
    return [Violation("configuration", p.name, where + m) for m in problems], costable


def _check_layout(inst: Instance, p: Phase, e: PhasePlan) -> tuple[list[str], bool]:
    """ZeRO, recomputation and the parallel layout (docs/cost-model.md, "Constraints"): each
    choice among the phase's options; tp | heads and kv heads, tp <= GPUs per node, pp <=
    layers, 2 cp | sequence, ep | experts and the GPUs of a stage, tp x cp x pp | GPUs,
    interleaving only with a pipeline (pp x v <= layers, pp | micro-batches), parameter
    offload only with ZeRO-3; the checkpointing scheme allowed. A phase without a model has no
    layout: it must state ZeRO 0, recompute none and one rank of everything."""
    problems: list[str] = []
    m = phase_model(inst, p)
    o = p.options
    problems.extend(_check_scheme(inst, p, e))
    if m is None:
        got = (e.zero, e.recompute, e.tp, e.pp, e.cp, e.ep, e.virtual, e.offload)
        if got != (0, "none", 1, 1, 1, 1, 1, "none"):
            problems.append(
                f"a phase without a model has no parallel layout; expected ZeRO 0, "
                f"recompute none, tp 1, pp 1, cp 1, ep 1, no interleaving or offload, got "
                f"ZeRO {e.zero}, recompute {e.recompute}, tp {e.tp}, pp {e.pp}, cp {e.cp}, "
                f"ep {e.ep}, interleave {e.virtual}, offload {e.offload}"
            )
        # the memory and speed of a model-less phase still read these: price only known ones
        known = (
            e.zero in (0, 1, 2, 3)
            and e.recompute in RECOMPUTE_FACTOR
            and e.offload in ("none", "optimizer", "params")
        )
        return problems, e.tp >= 1 and e.pp >= 1 and known
    costable = True
    if e.zero not in (0, 1, 2, 3):
        problems.append(f"ZeRO stage must be 0-3, got {e.zero}")
        costable = False
    if e.recompute not in RECOMPUTE_FACTOR:
        problems.append(
            f"unknown recomputation {e.recompute!r}; expected one of {list(RECOMPUTE_FACTOR)}"
        )
        costable = False
    elif e.recompute not in o.recompute:
        problems.append(
            f"recomputation {e.recompute!r} is not among the allowed {list(o.recompute)}"
        )
    if min(e.tp, e.pp, e.cp, e.ep, e.microbatches, e.virtual) < 1:
        problems.append(
            f"expected tp, pp, cp, ep, micro-batches and interleave >= 1, got tp {e.tp}, "
            f"pp {e.pp}, cp {e.cp}, ep {e.ep}, micro-batches {e.microbatches}, "
            f"interleave {e.virtual}"
        )
        return problems, False
    for what, value, allowed in (
        ("tp", e.tp, o.tensor_parallel),
        ("pp", e.pp, o.pipeline_parallel),
        ("cp", e.cp, o.context_parallel),
        ("ep", e.ep, o.expert_parallel),
        ("micro-batches", e.microbatches, o.microbatches),
        ("interleave", e.virtual, o.interleave),
        ("offload", e.offload, o.offload),
    ):
        if value not in allowed:
            problems.append(f"{what} {value} is not among the allowed {list(allowed)}")
    if e.tp > 1 and e.sp not in o.sequence_parallel:
        problems.append(
            f"sequence parallelism {e.sp} is not among the allowed {list(o.sequence_parallel)}"
        )
    if m.heads % e.tp:
        problems.append(f"tp {e.tp} does not divide the model's {m.heads} heads")
    kv = m.heads if m.arch is None else (1 if m.arch.mla is not None else m.arch.kv)
    if kv % e.tp:
        problems.append(f"tp {e.tp} does not divide the model's {kv} key/value heads")
    if e.gpu in inst.spec.gpu_types and e.tp > inst.gpu(e.gpu).gpus_per_node:
        problems.append(
            f"tp {e.tp} is more than the {inst.gpu(e.gpu).gpus_per_node} GPUs of a node"
        )
    if e.pp > m.layers or e.pp * e.virtual > m.layers:
        problems.append(
            f"pp {e.pp} x interleave {e.virtual} exceeds the model's {m.layers} layers "
            "(a stage would be empty)"
        )
        costable = False
    if e.cp > 1 and m.seq_len % (2 * e.cp):
        problems.append(f"cp {e.cp}: the sequence of {m.seq_len} does not split into 2 x cp chunks")
    moe = m.arch.moe if m.arch is not None else None
    if e.ep > 1 and moe is None:
        problems.append(f"ep {e.ep}: expert parallelism needs a mixture-of-experts model")
    elif moe is not None and moe.experts % e.ep:
        problems.append(f"ep {e.ep} does not divide the model's {moe.experts} experts")
    if e.virtual > 1 and (e.pp == 1 or e.microbatches % e.pp):
        problems.append(
            f"interleave {e.virtual} needs a pipeline (pp {e.pp} > 1) and micro-batches "
            f"({e.microbatches}) a multiple of pp"
        )
    if e.offload not in ("none", "optimizer", "params"):
        problems.append(f"unknown offload {e.offload!r}; expected none, optimizer or params")
        costable = False
    elif e.offload == "params" and e.zero != 3:
        problems.append("parameter offload needs ZeRO stage 3")
        costable = False
    elif e.offload != "none" and p.work.passes != "train":
        problems.append("CPU offload of optimizer states needs a training phase")
    mp = e.tp * e.cp * e.pp
    if 0 < e.gpus < 1:
        if mp != 1:
            problems.append(f"a GPU slice ({e.gpus:g}) cannot be split: expected tp, cp, pp 1")
    elif e.gpus >= 1 and e.gpus == int(e.gpus):
        if int(e.gpus) % mp:
            problems.append(f"tp x cp x pp = {mp} does not divide {e.gpus:g} GPUs")
        elif (int(e.gpus) // e.pp) % e.ep:
            problems.append(f"ep {e.ep} does not divide the {int(e.gpus) // e.pp} GPUs of a stage")
    dp = data_parallel(p, m, max(e.gpus, 0.0), e.tp * e.cp, e.pp) * e.cp
    if e.zero in (0, 1, 2, 3) and e.zero not in o.zero and not (e.zero == 0 and dp == 1):
        problems.append(f"ZeRO stage {e.zero} is not among the allowed {list(o.zero)}")
    return problems, costable


def checkpoint_scheme(inst: Instance, p: Phase, e: PhasePlan) -> str:
    """The entry's checkpointing scheme: as stated, else the instance's default."""
    return e.checkpoint if e.checkpoint is not None else inst.spec.failure.checkpoint


def _check_scheme(inst: Instance, p: Phase, e: PhasePlan) -> list[str]:
    """The checkpointing scheme is among ``options.checkpoint`` (default: the instance's
    ``failure.checkpoint``)."""
    allowed = p.options.checkpoint or (inst.spec.failure.checkpoint,)
    scheme = checkpoint_scheme(inst, p, e)
    if scheme not in allowed:
        return [f"checkpointing {scheme!r} is not among the allowed {list(allowed)}"]
    return []


def check_work_defined(inst: Instance, p: Phase) -> list[Violation]:
    """The work of a phase in GPU-hours needs a peak of its reference GPU at its precision."""
    if work_flops(inst, p) is not None:
        return []
    return [
        Violation(
            "work",
            p.name,
            f"work is {p.work.gpu_hours:g} GPU-hours on {p.work.gpu}, which has no peak "
            f"at precision {p.work.precision!r}: the work is undefined",
        )
    ]


def check_memory(ent: Entry, f: PhaseFacts) -> list[Violation]:
    """``(states + activations)(1 + fragmentation) + buffer_gb + phase.memory_gb <= memory_gb x
    min(gpus, 1) x (1 - headroom)``."""
    e, mem = ent.plan, f.memory
    if mem.fits:
        return []
    where = "" if ent.segment is None else f"segment {ent.segment}: "
    return [
        Violation(
            "memory",
            ent.name,
            f"{where}{e.gpus:g} x {e.gpu} ({e.precision}, ZeRO-{e.zero}, recompute "
            f"{e.recompute}, tp {e.tp}, pp {e.pp}, dp {f.dp}) needs {mem.total_gb:.2f} "
            f"GB per GPU (model states {mem.model_states_gb:.2f}, activations "
            f"{mem.activations_gb:.2f}, buffers {mem.buffers_gb:.2f}, plus "
            f"fragmentation and the phase's own need) but {mem.capacity_gb:.2f} GB "
            "is usable",
        )
    ]


def check_work(ent: Entry, f: PhaseFacts) -> list[Violation]:
    """``n`` equals the recomputed hours ``max(1, ceil(max(compute h, I/O h) - 1e-9))``."""
    n = len(ent.hours)
    if n == f.hours:
        return []
    relation = "too few" if n < f.hours else "more than needed"
    return [
        Violation(
            "work",
            ent.name,
            f"runs {n} hour(s) ({relation}); the work needs {f.hours} h (compute "
            f"{f.compute_h:.4f} h = {f.work_flops:.4g} FLOPs at "
            f"{f.flops_per_s / 1e12:.2f} TFLOP/s with {f.overhead:.4%} checkpoint "
            f"overhead; I/O {f.io_h:.4f} h)",
        )
    ]


def check_window(inst: Instance, plan: Plan, entries: Mapping[str, Entry]) -> list[Violation]:
    """The plan's horizon is the instance's; hours are distinct and in [release, deadline)."""
    out: list[Violation] = []
    if plan.horizon_start != inst.start:
        out.append(
            Violation(
                "window",
                None,
                f"the plan's hours count from {plan.horizon_start.isoformat()} but "
                f"the instance's horizon starts at {inst.start.isoformat()}",
            )
        )
    for ent in entries.values():
        e = ent.plan
        if len(e.hours) != len(ent.hours):
            repeated = sorted({h for h in e.hours if e.hours.count(h) > 1})
            out.append(
                Violation(
                    "window", ent.name, f"hours listed more than once: {hour_ranges(repeated)}"
                )
            )
        rel, dl = inst.release[ent.name], inst.deadline[ent.name]
        outside = [h for h in ent.hours if not rel <= h < dl]
        if outside:
            out.append(
                Violation(
                    "window",
                    ent.name,
                    f"runs outside its window [{rel}, {dl}) from release to "
                    f"deadline, in hours {hour_ranges(outside)}",
                )
            )
    return out


def confidence_of(inst: Instance, p: Phase) -> float | None:
    """The probability p's deadline is to be met with: ``phases[].deadline_confidence``, else
    the instance's; none for a phase without a ``deadline``."""
    if p.deadline is None:
        return None
    own = p.deadline_confidence
    return own if own is not None else inst.spec.deadline_confidence


def check_deadline_reserve(inst: Instance, ent: Entry, f: PhaseFacts) -> list[Violation]:
    """A phase with a deadline confidence q keeps, after its (segment's) last hour and before
    its deadline, ``r = ceil(K x L - 1e-9)`` hours: K the least count with P(count <= K) >= q
    for ``lambda n`` failures expected in the n hours its configuration needs for the work,
    each bringing ``lambda L`` more while its L hours are lost (:func:`failures_at`); lambda
    the job's failures per hour (spot preemptions included), L the hours a failure costs
    (docs/cost-model.md, "Deadlines with a confidence")."""
    q = confidence_of(inst, ent.phase)
    lam = f.job_failure_rate
    if q is None or not ent.hours or lam <= 0.0 or not math.isfinite(f.failure_rate):
        return []
    k = failures_at(lam * f.hours, lam * f.loss_h, q)
    reserve = max(0, math.ceil(k * f.loss_h - 1e-9))
    end, deadline = ent.hours[-1] + 1, inst.deadline[ent.name]
    if end + reserve <= deadline:
        return []
    expected = lam * f.hours / (1.0 - lam * f.loss_h)
    return [
        Violation(
            "window",
            ent.name,
            f"ends at hour {end}, but at deadline_confidence {q:g} it keeps {reserve} h "
            f"before its deadline (hour {deadline}) for {k} interruptions of "
            f"{f.loss_h:.3g} h (expected {expected:.3g}): it must end by "
            f"hour {deadline - reserve}",
        )
    ]


def in_horizon(inst: Instance, ent: Entry) -> bool:
    """Every hour of the entry and of each of its segments lies in the horizon (only then
    can its costs be recomputed)."""
    return all(
        bool(e.hours) and e.hours[0] >= 0 and e.hours[-1] < inst.hours for e in (ent, *ent.parts())
    )


def check_contiguity(ent: Entry) -> list[Violation]:
    """A non-preemptible phase runs one block of consecutive hours."""
    if ent.phase.preemptible or not ent.hours:
        return []
    hs = ent.hours
    gaps = [(a + 1, b) for a, b in pairwise(hs) if b != a + 1]
    if not gaps:
        return []
    # each gap as its first and last hour, never hour by hour (a gap may be long)
    shown = ", ".join(str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in gaps)
    return [
        Violation(
            "contiguity",
            ent.name,
            f"not preemptible, but pauses in hours {shown} (runs hours {hour_ranges(hs)})",
        )
    ]


def check_precedence(inst: Instance, entries: Mapping[str, Entry]) -> list[Violation]:
    """Every predecessor that is not done ends before its successor starts: ``end_q <= start_p``."""
    out: list[Violation] = []
    for ent in entries.values():
        if not ent.hours:
            continue
        start = ent.hours[0]
        for q in ent.phase.predecessors:
            pred = entries.get(q)
            if inst.phase(q).done or pred is None or not pred.hours:
                continue
            end_q = pred.hours[-1] + 1
            if end_q > start:
                out.append(
                    Violation(
                        "precedence",
                        ent.name,
                        f"starts at hour {start} but its predecessor {q!r} ends at hour {end_q}",
                    )
                )
    return out


def _pool_usage(
    inst: Instance, entries: Iterable[Entry]
) -> dict[tuple[str, str], tuple[np.ndarray, list[Entry]]]:
    """GPUs (working + spare) per (region, GPU type) and hour, and the entries using each."""
    usage: dict[tuple[str, str], tuple[np.ndarray, list[Entry]]] = {}
    for ent in (part for whole in entries for part in whole.parts()):
        e = ent.plan
        if (
            e.gpu not in inst.spec.gpu_types
            or e.region not in inst.spec.regions
            or not in_horizon(inst, ent)
        ):
            continue
        arr, users = usage.setdefault((e.region, e.gpu), (np.zeros(inst.hours), []))
        arr[list(ent.hours)] += e.gpus + e.spare_gpus
        users.append(ent)
    return usage


def _involved(users: list[Entry], over: np.ndarray) -> list[str]:
    """Names of the entries running in any of the hours ``over``."""
    hours = {int(t) for t in over}
    return [u.name for u in users if hours.intersection(u.hours)]


def check_capacity(inst: Instance, entries: Mapping[str, Entry]) -> list[Violation]:
    """Per (region, GPU type, hour): Σ over phases of (gpus + spare_gpus) <= capacity; a pool
    without a capacity entry has capacity 0."""
    out: list[Violation] = []
    for (r, g), (used, users) in sorted(_pool_usage(inst, entries.values()).items()):
        cap = inst.capacity.get((r, g))
        cap_arr = np.zeros(inst.hours) if cap is None else np.asarray(cap, dtype=float)
        over = np.flatnonzero(used > cap_arr + GPU_EPS)
        if over.size == 0:
            continue
        worst = int(over[np.argmax(used[over] - cap_arr[over])])
        names = _involved(users, over)
        phase = names[0] if len(names) == 1 else None
        out.append(
            Violation(
                "capacity",
                phase,
                f"{g} in {r}: phases {names} hold more GPUs than the capacity in "
                f"hours {hour_ranges(int(t) for t in over)}; worst hour {worst}: "
                f"{used[worst]:g} GPUs (working + spare) against {cap_arr[worst]:g}",
            )
        )
    return out


ReservedKey = tuple[str, str, str]


def reserved_pools(inst: Instance, plan: Plan) -> tuple[list[Violation], dict[ReservedKey, int]]:
    """The plan's reserved commitments: each names a pool with a reserved offer (and one of
    its terms, when it names a term), once, with R = 0 or min_gpus <= R <= max_gpus of the
    term (the offer's without terms)."""
    out: list[Violation] = []
    pools: dict[ReservedKey, int] = {}
    listed = [(r, g, "", n) for r, g, n in plan.reserved] + list(plan.reserved_terms)
    for r, g, term, n in listed:
        key = (r, g, term)
        what = f"({r}, {g})" + (f" term {term!r}" if term else "")
        if key in pools:
            out.append(
                Violation("reserved", None, f"the reserved pool {what} is listed more than once")
            )
            continue
        if r not in inst.spec.regions or g not in inst.spec.gpu_types:
            out.append(
                Violation(
                    "reserved",
                    None,
                    f"reserved pool {what} names an unknown region or GPU type",
                )
            )
            continue
        offers = inst.region(r).offers.get(g)
        res = offers.reserved if offers is not None else None
        if res is None:
            out.append(
                Violation(
                    "reserved", None, f"region {r!r} offers no reserved {g}; the plan commits {n}"
                )
            )
            continue
        t = inst.term(r, g, term)
        if t is None:
            names = [x.name for x in inst.reserved_terms(r, g)]
            out.append(
                Violation(
                    "reserved",
                    None,
                    f"reserved {g} in {r}: no term {term!r} (the offer's terms: {names})",
                )
            )
            continue
        pools[key] = n
        if n < 0:
            out.append(Violation("reserved", None, f"reserved {what}: negative commitment {n}"))
        elif n > 0 and (n < t.min_gpus or (t.max_gpus is not None and n > t.max_gpus)):
            hi = "unbounded" if t.max_gpus is None else str(t.max_gpus)
            out.append(
                Violation(
                    "reserved",
                    None,
                    f"reserved {what}: R = {n} must be 0 or within [{t.min_gpus}, {hi}]",
                )
            )
    return out, pools


def check_reserved(
    inst: Instance, pools: Mapping[ReservedKey, int], entries: Mapping[str, Entry]
) -> list[Violation]:
    """Per reserved pool, term and hour: reserved-contract GPUs (working + spare) under the
    term <= R (0 when the plan commits nothing to it); and no reserved GPU runs outside its
    term's hours."""
    out: list[Violation] = []
    by_term: dict[ReservedKey, list[Entry]] = {}
    for ent in (part for whole in entries.values() for part in whole.parts()):
        e = ent.plan
        if e.contract != "reserved" or e.region not in inst.spec.regions:
            continue
        t = inst.term(e.region, e.gpu, e.term)
        if t is None:
            continue  # a configuration violation already
        outside = [h for h in ent.hours if not t.covers(h)]
        if outside:
            out.append(
                Violation(
                    "reserved",
                    ent.name,
                    f"{e.gpus + e.spare_gpus:g} reserved {e.gpu} in {e.region} run in hours "
                    f"{hour_ranges(outside)}, outside their term "
                    f"{e.term or '(whole horizon)'!s} (hours {t.first}-{t.end - 1})",
                )
            )
        by_term.setdefault((e.region, e.gpu, e.term), []).append(ent)
    for (r, g, term), ents in sorted(by_term.items()):
        usage = _pool_usage(inst, ents)
        if (r, g) not in usage:
            continue
        used, users = usage[(r, g)]
        committed = pools.get((r, g, term), 0)
        over = np.flatnonzero(used > committed + GPU_EPS)
        if over.size == 0:
            continue
        worst = int(over[np.argmax(used[over])])
        names = _involved(users, over)
        phase = names[0] if len(names) == 1 else None
        what = f"{g} in {r}" + (f" (term {term})" if term else "")
        out.append(
            Violation(
                "reserved",
                phase,
                f"{what}: reserved-contract phases {names} use up to "
                f"{used[worst]:g} GPUs (hour {worst}) but the plan reserves "
                f"R = {committed}; hours over: {hour_ranges(int(t) for t in over)}",
            )
        )
    return out


def check_carbon_cap(inst: Instance, emissions_t: float, rel_tol: float) -> list[Violation]:
    """``emissions_t <= objective.carbon_cap_tonnes`` (within ``rel_tol``)."""
    cap = inst.spec.objective.carbon_cap_tonnes
    if cap is None or emissions_t <= cap * (1 + rel_tol) + 1e-12:
        return []
    return [
        Violation(
            "carbon_cap", None, f"emissions {emissions_t:.6g} tCO2 exceed the cap of {cap:g} t"
        )
    ]
