"""The configuration space: for each phase, every feasible way to run it and its hourly rates.

A configuration fixes GPU type, region, contract, GPU count, spare nodes, precision, ZeRO stage,
recomputation, the parallel layout (tensor, context, pipeline, expert degrees, sequence
parallelism, micro-batches and interleaving, CPU offload), the checkpointing scheme and the
storage tier of the phase's working set. Per configuration this module computes, from
:mod:`planner.physics`:

- its throughput: the MFU at its reference scale, the scaling model relative to it and the
  layout's factors (:func:`throughput`);
- ``hours``: whole hours the phase runs, n = ceil(max(compute hours / (1 - checkpoint
  overhead), I/O hours)); every running hour is billed and powered in full;
- its rates per running hour: rental, running storage, facility power, expected failures,
  loss and downtime per failure, SLA terms; and its one-time, archive and resume costs.

What those rates cost in an hour is the cost model's (:mod:`planner.model.costs`). Configurations
that are dominated (another uses no more GPUs of the same pool, no more hours and costs no
more in every hour) are dropped. Phases without any feasible configuration get an
:class:`Infeasibility` that says why (``check``, ``solve`` and ``explain`` read it through
:mod:`planner.model.consistency`).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from planner.collector import fewer_collections
from planner.instance.model import Instance
from planner.instance.offers import energy_billing
from planner.instance.schema import SEGMENT_CHANGES, GpuType, Phase, Region, StorageTier
from planner.model.configtypes import (
    Config,
    ConfigSpace,
    Infeasibility,
    MemoryNeed,
    Throughput,
    plan_key,
)
from planner.model.costs import (
    HourlyTerms,
    Weights,
    archive_usd_per_h,
    deadline_confidence,
    enter_cost,
    facility_kw_of,
    hourly_terms,
    leave_cost,
    migration_cost,
    move_cost,
    one_time_usd,
    rental_usd_per_h,
    resume_usd,
    running_storage_usd_per_h,
    weights,
)
from planner.model.plan import CONFIG_FIELDS
from planner.model.workload import (
    checkpoint_gb_of,
    is_training,
    mfu_of,
    peak_tflops,
    phase_model,
    remaining_share,
    work_flops,
)
from planner.physics import compute, layout, reliability, storage
from planner.physics.layout import (
    Layout,
    moe_all_to_all_bytes_per_token,
    params_per_rank,
)
from planner.physics.memory import (
    ACTIVATION_BYTES,
    WEIGHT_BYTES,
    MemoryBreakdown,
    capacity_bytes,
    memory_per_gpu,
    offload_seconds_per_step,
)
from planner.physics.transformer import ModelDims, expert_params, flops_per_token

# ----------------------------------------------------------------------------- phase facts


def gpu_counts(p: Phase, g: GpuType) -> list[float]:
    """Counts to try: the phase's list, or 1, 2, 4 and whole nodes by powers of two, within
    [min_gpus, max_gpus]; plus fractional slices."""
    o = p.options
    if o.gpu_counts is not None:
        counts: set[float] = {float(c) for c in o.gpu_counts}
    else:
        counts = {1.0, 2.0, 4.0}
        n = g.gpus_per_node
        while n <= o.max_gpus:
            counts.add(float(n))
            n *= 2
        counts = {c for c in counts if o.min_gpus <= c <= o.max_gpus}
    counts |= set(o.fractions)
    return sorted(counts)


def layouts(
    p: Phase, m: ModelDims | None, g: GpuType, gpus: float, every: bool = False
) -> Iterator[Layout]:
    """The parallel layouts of a phase on ``gpus`` GPUs of type g (docs/cost-model.md,
    "Constraints"): tp within a node dividing the heads (and the kv heads of grouped-query
    attention), cp splitting the sequence into 2 cp chunks, pp up to the layers (uneven stages
    allowed), tp x cp x pp dividing the GPUs, ep dividing the experts of an MoE model and the
    GPUs of a stage, interleaving only with a pipeline, pp x v <= layers and micro-batches a
    multiple of pp, parameter offload only with ZeRO-3; every allowed ZeRO stage, precision
    and recomputation. With one data-parallel rank ZeRO shards nothing, so stages above 0 are
    left out when 0 is allowed (unless ``every``); sequence parallelism means nothing at
    tp = 1, so one value of it is kept there."""
    o = p.options
    if m is None or gpus < 1:
        for prec in o.precision:
            yield Layout(prec, 0, "none", 1, 1, dp=max(1, int(gpus)))
        return
    n = int(gpus)
    train = is_training(p)
    for tp in o.tensor_parallel:
        if tp > g.gpus_per_node or m.heads % tp or n % tp or kv_heads(m) % tp:
            continue
        for cp in o.context_parallel:
            if cp > 1 and m.seq_len % (2 * cp):
                continue
            for pp in o.pipeline_parallel:
                if pp > m.layers or n % (tp * cp * pp):
                    continue
                dp = n // (tp * cp * pp)
                for ep in o.expert_parallel:
                    if ep > 1 and (m.arch is None or m.arch.moe is None):
                        continue
                    if ep > 1 and (m.arch.moe.experts % ep or (n // pp) % ep):  # type: ignore[union-attr]
                        continue
                    for v, mb in itertools.product(o.interleave, o.microbatches):
                        if v > 1 and (pp == 1 or pp * v > m.layers or mb % pp):
                            continue
                        for zero in o.zero:
                            if dp * cp == 1 and zero > 0 and 0 in o.zero and not every:
                                continue
                            for off in o.offload:
                                if off != "none" and not train:
                                    continue
                                if off == "params" and zero != 3:
                                    continue
                                for sp in (
                                    o.sequence_parallel if tp > 1 else o.sequence_parallel[:1]
                                ):
                                    for prec, rc in itertools.product(o.precision, o.recompute):
                                        yield Layout(
                                            prec, zero, rc, tp, pp, sp, cp, ep, mb, v, off, dp
                                        )


def kv_heads(m: ModelDims) -> int:
    """Key/value heads tensor parallelism must divide: the architecture's kv heads (grouped-
    query attention), else the heads; 1 under multi-head latent attention (no such limit)."""
    if m.arch is None:
        return m.heads
    return 1 if m.arch.mla is not None else m.arch.kv


# ----------------------------------------------------------------------------- enumeration


def _offers(
    inst: Instance, rname: str, gname: str, p: Phase
) -> list[tuple[str, str, float, int, int, float]]:
    """(contract, term, price per GPU-hour, billing hours, min rental hours, preemptions/h) of
    every offer of a pool the phase may use; one entry per reserved term. Prices and
    preemption rates that vary by the hour enter as their reference value
    (:func:`planner.instance.offers.reference`: the value when constant, else the mean); the
    cost model prices each hour at its own value."""
    o = inst.region(rname).offers.get(gname)
    out: list[tuple[str, str, float, int, int, float]] = []
    if o is None:
        return out
    allowed = p.options.contracts
    if o.on_demand and "on_demand" in allowed:
        out.append(
            (
                "on_demand",
                "",
                inst.rates.price_ref[(rname, gname, "on_demand", "")],
                o.on_demand.billing_granularity_hours,
                o.on_demand.min_rental_hours,
                0.0,
            )
        )
    if o.spot and "spot" in allowed and p.preemptible:
        out.append(
            (
                "spot",
                "",
                inst.rates.price_ref[(rname, gname, "spot", "")],
                o.spot.billing_granularity_hours,
                o.spot.min_rental_hours,
                inst.rates.preemptions_ref.get((rname, gname), 0.0),
            )
        )
    if o.reserved and "reserved" in allowed:
        for t in inst.reserved_terms(rname, gname):
            price = inst.rates.price_ref[(rname, gname, "reserved", t.name)]
            out.append(("reserved", t.name, price, 1, 0, 0.0))
    return out


def layout_memory(
    inst: Instance, p: Phase, m: ModelDims | None, g: GpuType, count: float, lay: Layout
) -> MemoryBreakdown:
    """Memory per GPU of phase p on ``count`` GPUs of type g in layout ``lay``, under the
    instance's memory policy (convention, buffers, fragmentation, headroom), against the GPU's
    capacity in its vendor's unit."""
    run = (p.options.micro_batch, is_training(p), p.memory_gb, min(count, 1.0))
    return memory_per_gpu(m, (g.memory_gb, g.memory_unit), lay, lay.dp, run, inst.memory_allowances)


def throughput(
    inst: Instance,
    p: Phase,
    m: ModelDims | None,
    g: GpuType,
    gname: str,
    count: float,
    lay: Layout,
    peak: float,
) -> Throughput:
    """Sustained model FLOP/s = GPUs x peak x MFU x R x eff_scale x eff_layout
    (docs/cost-model.md, "Per configuration").

    ``eff_scale``: the phase's scaling model relative to the MFU's reference scale
    (:func:`planner.physics.compute.relative_scaling`; 1 without a reference); for
    ``interconnect`` a step is ``microbatches`` x ``micro_batch`` sequences per model replica
    and the gradients of the rank's parameters are all-reduced over dp x cp ranks at the GPU
    type's ``inter_node_gb_per_s``. With ``scaling.layout: modeled`` (a model phase):
    R(recompute) and eff_layout = the tensor-parallel, pipeline (bubble, uneven stages) and
    ZeRO-3 factors (:func:`planner.physics.compute.layout_efficiency`) x the expert
    all-to-all (:func:`planner.physics.compute.all_to_all_efficiency`, over NVLink one way
    when ep fits in a node) x CPU offload's PCIe time per step
    (:func:`planner.physics.memory.offload_seconds_per_step`); with ``in_mfu`` both are 1."""
    sc = p.scaling
    mfu = mfu_of(p, gname)
    modeled = m is not None and sc.layout == "modeled"
    r = compute.RECOMPUTE_THROUGHPUT[lay.recompute] if modeled else 1.0
    per_gpu = peak * 1e12 * mfu * r
    eff_layout = 1.0
    step_s = grad_bytes = 0.0
    if m is not None:
        mp = lay.tp * lay.cp * lay.pp
        tokens = p.options.micro_batch * m.seq_len * lay.microbatches
        per_token = flops_per_token(m, p.work.flops_convention)
        step_s = per_token * tokens / mp / per_gpu
        rank_params = params_per_rank(m.params, lay.tp, lay.pp, m.layers, expert_params(m), lay.ep)
        grad_bytes = WEIGHT_BYTES[lay.precision] * rank_params
    if modeled:
        assert m is not None
        multi = count > g.gpus_per_node
        eff_layout = compute.layout_efficiency(
            lay.tp,
            lay.pp,
            lay.zero,
            lay.dp * lay.cp,
            multi,
            microbatches=lay.microbatches,
            virtual=lay.virtual,
            layers=m.layers,
        )
        if lay.ep > 1 and m.arch is not None and m.arch.moe is not None:
            a2a = moe_all_to_all_bytes_per_token(
                m.hidden,
                m.arch.moe.top_k,
                m.arch.moe_layers,
                lay.ep,
                ACTIVATION_BYTES[lay.precision],
            )
            bw = g.intra_node_gb_per_s / 2 if lay.ep <= g.gpus_per_node else g.inter_node_gb_per_s
            eff_layout *= compute.all_to_all_efficiency(a2a, per_token, per_gpu, bw)
        if lay.offload != "none":
            owned = rank_params / (lay.dp * lay.cp)
            off_s = offload_seconds_per_step(
                owned, g.host_gb_per_s, lay.precision, lay.offload == "params"
            )
            eff_layout *= compute.serial_efficiency(step_s, off_s)
    model = compute.ScalingModel(sc.kind, sc.per_doubling, sc.reference_gpus, sc.overlap)
    report = compute.relative_scaling(
        model,
        count,
        g.gpus_per_node,
        step_compute_s=step_s,
        grad_bytes=grad_bytes,
        dp_of=max(1, lay.dp * lay.cp),
        gb_per_s=g.inter_node_gb_per_s,
    )
    fps = count * per_gpu * report.efficiency * eff_layout
    return Throughput(fps, report.efficiency, eff_layout, r, report)


def enumerate_phase(
    inst: Instance, p: Phase, every: bool = False
) -> tuple[list[Config], Infeasibility | None]:
    """All feasible configurations of one phase (before dominance), or why it has none.
    With ``every`` (``trainplan estimate``), every combination of the phase's options is
    kept, whether it fits in memory, in its window and in capacity or not."""
    configs, why, _ = _enumerate(inst, p, every, prefilter=False)
    return configs, why


def layout_class(p: Phase, lay: Layout) -> tuple[object, ...]:
    """Layouts whose configurations differ only in speed: the same precision (checkpoint
    size, hence storage, failures and migrations), and for a phase in segments whose
    boundaries may not change the layout, the same segment layout attributes too
    (:func:`segment_attribute`). Every cost per running hour of a configuration, its GPUs,
    one-time, archive, resume and migration costs follow its precision, not the rest of its
    layout (ZeRO, recomputation, parallel degrees change the throughput only), so within a
    class the configuration of least work hours dominates the others
    (:func:`dominates`; the first in enumeration order among equals, as :func:`_prune`
    keeps it)."""
    o = p.options
    if o.max_segments > 1 and "layout" not in o.segment_changes:
        return (lay.precision, lay.zero, lay.recompute, lay.tp, lay.pp)
    return (lay.precision,)


@dataclass
class _Seen:
    """What the enumeration of one phase met on its way (:func:`_infeasibility` says from it
    why a phase has no configuration): whether any layout had a supported precision or fit
    in memory, whether any region held the phase's GPU types in enough zones and offered them,
    the least memory need, the layout closest to fitting, the fewest hours and the fewest
    hours plus deadline reserve (with that reserve)."""

    precision: bool = False
    fit: bool = False
    region: bool = False
    offer: bool = False
    best_need: tuple[float, str] | None = None
    closest: MemoryNeed | None = None
    fastest: int | None = None
    tightest: tuple[int, int] | None = None


@dataclass(frozen=True)
class _Slot:
    """One (GPU type and count, layout class, region, offer) to build configurations for:
    ``cands`` are the layouts of one :func:`layout_class` (in enumeration order) with their
    memory and throughput; ``window``: runs longer than it plus ten years are not built
    (None: all are); the offer's fields as :func:`_offers` lists them (contract, reserved
    term, price per GPU-hour, billing hours, minimum rental hours, preemptions per hour);
    ``every_layout``: each of ``cands`` is built (the unpruned space), not only the one
    :func:`_prune` would keep."""

    p: Phase
    g: GpuType
    gname: str
    r: Region
    rname: str
    count: float
    cands: tuple[tuple[Layout, MemoryBreakdown, Throughput], ...]
    flops: float
    window: int | None
    contract: str
    term: str
    price: float
    bill_h: int
    min_h: int
    preempt: float
    every_layout: bool = False

    @property
    def offer(self) -> tuple[str, str, float, int, int]:
        """What :func:`_rates` reads of the offer: contract, term, price, billing and
        minimum rental hours."""
        return (self.contract, self.term, self.price, self.bill_h, self.min_h)


def _enumerate(
    inst: Instance, p: Phase, every: bool, prefilter: bool
) -> tuple[list[Config], Infeasibility | None, int]:
    """:func:`enumerate_phase`; with ``prefilter``, of the layouts of one :func:`layout_class`
    only the configuration :func:`_prune` would keep is built per (region, offer, tier,
    scheme, spares), and the number of the others that would have been built is returned
    (they are dominated: counted as dropped). Building each configuration and comparing it
    with the others of its class was most of ``check``'s time on large instances (a
    100-phase quarter: 430k configurations built, 7.6k kept)."""
    m = phase_model(inst, p)
    flops = work_flops(inst, p) * remaining_share(inst, p)
    window = inst.deadline[p.name] - inst.release[p.name]
    gnames = p.gpu_types or tuple(inst.spec.gpu_types)
    rnames = p.regions or tuple(inst.spec.regions)
    if p.data.residency is not None:
        rnames = tuple(r for r in rnames if r in p.data.residency)
    cut = None if every else window
    seen = _Seen()
    out: list[Config] = []
    skipped = [0]
    memo: dict[tuple[object, ...], Any] = {}
    most_cache: dict[tuple[str, str], float] = {}
    for gname in gnames:
        g = inst.gpu(gname)
        for count in gpu_counts(p, g):
            classes = _layout_classes(inst, p, m, gname, count, every, prefilter, seen)
            for cands in classes.values():
                for rname in rnames:
                    r = inst.region(rname)
                    if (rname, gname) not in inst.capacity or r.zones < p.redundancy.zones:
                        continue
                    seen.region = True
                    most = _most_capacity(inst, p, rname, gname, most_cache)
                    for offer in _offers(inst, rname, gname, p):
                        seen.offer = True
                        slot = _Slot(
                            p,
                            g,
                            gname,
                            r,
                            rname,
                            count,
                            tuple(cands),
                            flops,
                            cut,
                            *offer,
                            every_layout=not prefilter,
                        )
                        out += _slot_configs(inst, slot, every, most, memo, skipped, seen)
    if out:
        return out, None, skipped[0]
    return [], _infeasibility(inst, p, seen, gnames, rnames), 0


def _layout_classes(
    inst: Instance,
    p: Phase,
    m: ModelDims | None,
    gname: str,
    count: float,
    every: bool,
    prefilter: bool,
    seen: _Seen,
) -> dict[tuple[object, ...], list[tuple[Layout, MemoryBreakdown, Throughput]]]:
    """The layouts of ``count`` GPUs of ``gname`` that fit in memory (all of them with
    ``every``) with their memory and throughput, grouped by :func:`layout_class` (with
    ``every`` each its own group; without ``prefilter`` every one of a group is built:
    :attr:`_Slot.every_layout`, which makes a phase's unpruned configurations in one pass
    over its regions, offers and tiers per group, not per layout); ``seen``
    records the least memory need and the layout closest to fitting for the phase's
    :class:`Infeasibility`."""
    g = inst.gpu(gname)
    classes: dict[tuple[object, ...], list[tuple[Layout, MemoryBreakdown, Throughput]]] = {}
    for lay in layouts(p, m, g, count, every):
        peak = peak_tflops(g, lay.precision)
        if peak is None:
            continue
        seen.precision = True
        mem = layout_memory(inst, p, m, g, count, lay)
        if seen.best_need is None or mem.total_gb < seen.best_need[0]:
            seen.best_need = (
                mem.total_gb,
                f"{lay.precision}, ZeRO-{lay.zero}, "
                f"{lay.recompute} recompute, tp{lay.tp} pp{lay.pp}"
                f"{' ' + lay.extras() if lay.extras() else ''}, {count:g} GPUs",
            )
        if seen.closest is None or mem.total_gb - mem.capacity_gb < seen.closest.short_gb:
            setting = f"{count:g} GPU{'' if count == 1 else 's'}, {lay.precision}"
            if m is not None:
                setting += f", ZeRO-{lay.zero}, {lay.recompute} recompute, tp{lay.tp} pp{lay.pp}"
            seen.closest = MemoryNeed(mem.total_gb, mem.capacity_gb, gname, setting)
        if not mem.fits and not every:
            continue
        seen.fit = True
        speed = throughput(inst, p, m, g, gname, count, lay, peak)
        # every (the estimate's, in its order) keeps each layout a group of its own
        key = (len(classes),) if every else layout_class(p, lay)
        classes.setdefault(key, []).append((lay, mem, speed))
    return classes


def _slot_configs(
    inst: Instance,
    s: _Slot,
    every: bool,
    most: float,
    memo: dict[tuple[object, ...], Any],
    skipped: list[int],
    seen: _Seen,
) -> list[Config]:
    """The configurations of one slot that :func:`_admitted` keeps (its reserved term and the
    phase's window, its pool's most GPUs ``most``); ``seen`` records the fewest hours and the
    fewest hours plus reserve of every one built."""
    p = s.p
    lo, hi = inst.release[p.name], inst.deadline[p.name]
    if s.term:
        t = inst.term(s.rname, s.gname, s.term)
        assert t is not None
        lo, hi = max(t.first, lo), min(t.end, hi)
    segmented = p.options.max_segments > 1
    admit = functools.partial(_admitted, every, segmented, lo, hi, inst.deadline[p.name], most)
    out: list[Config] = []
    for cfg in _configs_for(inst, s, memo, admit, skipped):
        seen.fastest = cfg.hours if seen.fastest is None else min(seen.fastest, cfg.hours)
        need = (cfg.hours + cfg.reserve_h, cfg.reserve_h)
        seen.tightest = need if seen.tightest is None else min(seen.tightest, need)
        if admit(cfg.hours, cfg.total_gpus, cfg.reserve_h):
            out.append(cfg)
    return out


def _infeasibility(
    inst: Instance, p: Phase, seen: _Seen, gnames: tuple[str, ...], rnames: tuple[str, ...]
) -> Infeasibility:
    """Why the phase has no configuration, from what its enumeration met (``seen``): the
    first of precision, memory, zones, region, offer, window (with and without the deadline
    reserve) and capacity that rules every configuration out."""
    window = inst.deadline[p.name] - inst.release[p.name]

    def no(kind: str, reason: str) -> Infeasibility:
        return Infeasibility(p.name, f"{p.name}: {reason}", kind, seen.closest)

    if not seen.precision:
        return no(
            "precision",
            "none of the allowed GPU types supports the allowed precisions "
            f"{list(p.options.precision)}",
        )
    if not seen.fit and seen.best_need is not None:
        largest = max(
            gnames, key=lambda n: capacity_bytes(inst.gpu(n).memory_gb, inst.gpu(n).memory_unit)
        )
        big = inst.gpu(largest)
        largest_gb = capacity_bytes(big.memory_gb, big.memory_unit) / 1e9
        return no(
            "memory",
            f"needs {seen.best_need[0]:.1f} GB per GPU at best ({seen.best_need[1]}); the "
            f"largest allowed GPU has {big.memory_gb:g} {big.memory_unit} ({largest_gb:.1f} GB), "
            f"{largest_gb * (1 - inst.spec.memory.headroom):.1f} GB usable after headroom",
        )
    if not seen.region:
        if any(inst.region(r).zones < p.redundancy.zones for r in rnames):
            return no(
                "zones",
                f"needs {p.redundancy.zones} availability zones; no allowed "
                f"region with capacity for its GPU types has that many",
            )
        if not rnames:
            return no(
                "region",
                f"the data may stay only in {list(p.data.residency or ())} (data.residency), "
                f"and none of them is among the phase's regions {list(p.regions or ())}",
            )
        return no(
            "region",
            f"no allowed region {list(rnames)} has capacity for the allowed "
            f"GPU types {list(gnames)}",
        )
    if not seen.offer:
        return no(
            "offer",
            f"no region among {list(rnames)} offers the allowed GPU types "
            f"{list(gnames)} under the allowed contracts {list(p.options.contracts)}"
            + ("" if p.preemptible else " (spot needs a preemptible phase)"),
        )
    tightest, fastest = seen.tightest, seen.fastest
    if tightest is not None and tightest[1] > 0 and tightest[0] > window:
        q = deadline_confidence(inst, p)
        return no(
            "window",
            f"the quickest configuration needs {tightest[0] - tightest[1]} h and keeps "
            f"{tightest[1]} h before its deadline for the interruptions expected at "
            f"deadline_confidence {q:g}: {tightest[0]} h, but the window from release (hour "
            f"{inst.release[p.name]}) to deadline (hour {inst.deadline[p.name]}) is {window} h",
        )
    if fastest is not None and fastest > window:
        return no(
            "window",
            f"the fastest configuration needs {fastest} h but the window from "
            f"release (hour {inst.release[p.name]}) to deadline (hour "
            f"{inst.deadline[p.name]}) is {window} h",
        )
    return no(
        "capacity",
        "every configuration that fits in memory and time needs more GPUs "
        "than the capacity of its region in the phase's window",
    )


def _most_capacity(
    inst: Instance, p: Phase, rname: str, gname: str, cache: dict[tuple[str, str], float]
) -> float:
    """The most GPUs the pool holds in any hour of the phase's window (once per pool)."""
    key = (rname, gname)
    if key not in cache:
        cap = inst.capacity[key][inst.release[p.name] : inst.deadline[p.name]]
        cache[key] = float(cap.max()) if len(cap) else 0.0
    return cache[key]


def _admitted(
    every: bool,
    segmented: bool,
    lo: int,
    hi: int,
    deadline: int,
    most: float,
    hours: int,
    total_gpus: float,
    reserve_h: int,
) -> bool:
    """Whether a configuration of ``hours``, ``total_gpus`` and deadline reserve ``reserve_h``
    is kept: it runs within the hours it may run in (``[lo, hi)``: the phase's window within
    its reserved term, before the deadline less its reserve:
    :func:`planner.model.costs.term_hours`), or, in
    segments, those hours are not empty; and the pool holds its GPUs in some hour of the
    window; every one is kept with ``every``."""
    if every:
        return True
    open_h = max(0, min(hi, deadline - reserve_h) - lo)
    return (hours <= open_h or (segmented and open_h > 0)) and total_gpus <= most


def _configs_for(
    inst: Instance,
    s: _Slot,
    memo: dict[tuple[object, ...], Any],
    admit: Callable[[int, float, int], bool],
    skipped: list[int],
) -> Iterator[Config]:
    """The configurations of one slot (:class:`_Slot`: GPU count, layout class, region,
    offer): one per storage tier, checkpointing scheme and spare-node choice. Of the slot's
    layouts only the one of least work hours (non-segmented: least whole hours; the first
    among equals) is built, unless a longer run could cost less (an hour's cost below 0 at
    the window's lowest or highest price: then every one is). ``skipped[0]`` counts the
    others that ``admit`` would have kept. ``memo`` holds the failure figures per (tier,
    scheme, spares), shared by the phase's regions and layout classes.

    Failures (docs/cost-model.md): the checkpoint is sharded over the job's nodes
    (:func:`planner.physics.storage.checkpoint_cost`: per-node tier bandwidth up to the
    tier's aggregate; the scheme's stall, persist and reload); the interval is Daly's optimum
    for the stall, no shorter than the time a snapshot needs to become durable; the downtime
    is detection + (swap with a spare, else restart) + reload; expected failures per running
    hour lambda / (1 - lambda L) (:func:`planner.physics.reliability.failures_per_running_hour`);
    a configuration whose failures come faster than its work can be saved is never built."""
    p, g, r, count = s.p, s.g, s.r, s.count
    required = p.redundancy.spare_nodes
    spare_choices = sorted({required + e for e in p.options.extra_spare_nodes})
    ck_gb = checkpoint_gb_of(inst, p, s.cands[0][0].precision)
    # without a checkpoint to write the scheme changes nothing: the default one only
    schemes = inst.spec.checkpoint_schemes(p) if ck_gb > 0 else (inst.spec.default_checkpoint(p),)
    nodes = layout.nodes_for(count, g.gpus_per_node)
    compute_hs = [compute.hours_for(s.flops, speed.flops_per_s) for _, _, speed in s.cands]
    share = remaining_share(inst, p)
    for tier_name in p.options.storage_tiers or tuple(r.storage):
        if tier_name not in r.storage:
            continue
        tier = r.storage[tier_name]
        io_bw = storage.sharded_bandwidth_gb_per_s(
            nodes, tier.read_gb_per_s, tier.aggregate_gb_per_s
        )
        io_h = p.data.size_gb * p.data.read_passes / io_bw / 3600.0 * share
        tier_key = (_TIER_FIELDS, s.rname, tier_name, ck_gb)
        per_tier = memo.get(tier_key)
        if per_tier is None:
            per_tier = memo[tier_key] = {
                "tier": tier_name,
                "storage_per_h": running_storage_usd_per_h(inst, p, ck_gb, tier),
                "one_time_usd": one_time_usd(inst, p, s.rname, tier),
                "archive_per_h": archive_usd_per_h(inst, p, r),
            }
        for scheme in schemes:
            for spare_nodes in spare_choices:
                if spare_nodes > 0 and count < g.gpus_per_node:
                    continue
                fig = _failure_figures(
                    inst,
                    g,
                    s.gname,
                    tier,
                    scheme,
                    ck_gb,
                    count,
                    nodes,
                    spare_nodes,
                    s.preempt,
                    memo,
                )
                if fig is None:
                    continue  # checkpoints or failures take all the time: no progress
                runs = _runs(compute_hs, fig[3], io_h, s.window)
                if not runs:
                    continue
                spare_gpus = spare_nodes * g.gpus_per_node
                rates_key = (_RATES, s.rname, s.gname, s.count, *s.offer, spare_gpus, scheme, fig)
                rates = memo.get(rates_key)
                if rates is None:
                    rates = memo[rates_key] = _rates(inst, s, spare_gpus, scheme, fig)
                common = {**rates, **per_tier}
                yield from _built(inst, s, common, compute_hs, runs, admit, skipped)


#: Keys of the figures :func:`_configs_for` shares between the slots of one phase (every
#: layout is a slot of its own in the unpruned space), apart from :func:`_failure_figures`':
#: a tier's (per region, tier and checkpoint size) and :func:`_rates` (per region, GPU
#: type, count, offer, spares, scheme and failure figures: nothing of the layout).
_TIER_FIELDS = object()
_RATES = object()


def _rates(
    inst: Instance, s: _Slot, spare_gpus: int, scheme: str, fig: tuple[float, ...]
) -> dict[str, Any]:
    """The fields a slot's configurations on ``spare_gpus`` spares and checkpointing
    ``scheme`` share but their tier's and archive's: where and on what they run, their rates
    per running hour (:mod:`planner.model.costs`), failure figures ``fig``
    (:func:`_failure_figures`) and SLA."""
    p, r = s.p, s.r
    lam, down, tau, _, loss, failures, stall, persist, stored, reload = fig
    rental = rental_usd_per_h(p, s.count, spare_gpus, s.price)
    kw = facility_kw_of(p, s.g, s.count, spare_gpus, r)
    billing = energy_billing(r, s.gname, s.contract)
    paid_kw = kw if billing == "metered" else 0.0
    sla = r.sla
    return {
        "phase": p.name,
        "index": -1,
        "gpu": s.gname,
        "region": s.rname,
        "contract": s.contract,
        "gpus": s.count,
        "spare_gpus": spare_gpus,
        "rental_per_h": rental,
        "facility_kw": kw,
        "job_failure_rate": lam,
        "failure_rate": failures,
        "loss_h": loss,
        "downtime_h": down,
        "checkpoint": scheme,
        "checkpoint_interval_s": tau,
        "checkpoint_write_s": stall,
        "checkpoint_persist_s": persist,
        "checkpoint_stored_s": stored,
        "checkpoint_reload_s": reload,
        "sla_share": sla.provider_fault_share if (sla and s.contract != "spot") else 0.0,
        "sla_multiplier": sla.credit_multiplier if sla else 0.0,
        "billing_hours": s.bill_h,
        "min_rental_hours": s.min_h,
        "resume_usd": resume_usd(inst, p, s.rname, rental, paid_kw),
        "term": s.term,
        "energy": billing,
    }


def _built(
    inst: Instance,
    s: _Slot,
    common: dict[str, Any],
    compute_hs: list[float],
    runs: list[tuple[int, float, int]],
    admit: Callable[[int, float, int], bool],
    skipped: list[int],
) -> Iterator[Config]:
    """The configurations of the slot's layouts ``runs`` (:func:`_runs`) sharing ``common``:
    the one of least work hours in segments, else of least whole hours (the first among
    equals); the others too when a longer run may cost less (:func:`_longer_never_cheaper`),
    else counted in ``skipped[0]`` as far as ``admit`` would have kept them."""
    confidence = deadline_confidence(inst, s.p)
    lam, loss = common["job_failure_rate"], common["loss_h"]

    def reserve(hours: int) -> int:
        return reliability.deadline_reserve(lam, hours, loss, confidence).hours

    def build(k: int, work_h: float, hours: int) -> Config:
        lay, mem, speed = s.cands[k]
        return Config.built(
            {
                **common,
                "layout": lay,
                "memory": mem,
                "throughput": speed,
                "compute_hours": compute_hs[k],
                "work_hours": work_h,
                "hours": hours,
                "reserve_h": reserve(hours),
            }
        )

    if s.every_layout:
        for x in runs:
            yield build(*x)
        return
    segmented = s.p.options.max_segments > 1
    best = runs[0]
    for x in runs:
        if (x[1] < best[1]) if segmented else (x[2] < best[2]):
            best = x
    first = build(*best)
    yield first
    if len(runs) == 1:
        return
    if _longer_never_cheaper(inst, first):
        # the class's others that would have been kept (GPUs alike, so the hours decide; in
        # hours order, so those up to the last admitted)
        gpus = first.total_gpus
        if admit(best[2], gpus, first.reserve_h):
            skipped[0] += len(runs) - 1
            longest = max(x[2] for x in runs)
            if not admit(longest, gpus, reserve(longest)):
                skipped[0] -= sum(1 for x in runs if not admit(x[2], gpus, reserve(x[2])))
    else:
        for x in runs:
            if x is not best:
                yield build(*x)


def _runs(
    compute_hs: list[float], overhead: float, io_h: float, window: int | None
) -> list[tuple[int, float, int]]:
    """(candidate, work hours, whole hours) of each layout that makes progress: work hours
    ``max(compute / (1 - checkpoint overhead), I/O hours)``, at least one whole hour, and no
    run longer than the window plus ten years (None: any)."""
    cut = math.inf if window is None else window + 10 * 24 * 365
    out: list[tuple[int, float, int]] = []
    for k, compute_h in enumerate(compute_hs):
        work_h = max(compute_h / (1.0 - overhead), io_h)
        if not math.isfinite(work_h):
            continue
        hours = max(1, math.ceil(work_h - 1e-9))
        if hours <= cut:
            out.append((k, work_h, hours))
    return out


def _failure_figures(
    inst: Instance,
    g: GpuType,
    gname: str,
    tier: StorageTier,
    scheme: str,
    ck_gb: float,
    count: float,
    nodes: int,
    spare_nodes: int,
    preempt: float,
    memo: dict[tuple[object, ...], Any],
) -> tuple[float, ...] | None:
    """(job failure rate, downtime, checkpoint interval, overhead, loss per failure, failures
    per running hour, stall, persist, stored, reload) of a configuration (:func:`_configs_for`'s
    failure model), or None when checkpoints or failures leave no progress; ``memo`` keys
    them by what they depend on (the same tier figures in several regions, the same GPU
    count in several layout classes)."""
    key = (
        gname,
        tier.write_gb_per_s,
        tier.read_gb_per_s,
        tier.aggregate_gb_per_s,
        scheme,
        ck_gb,
        count,
        spare_nodes,
        preempt,
    )
    if key in memo:
        return memo[key]
    fail = inst.spec.failure
    if ck_gb > 0:
        ck = storage.checkpoint_cost(
            scheme,
            ck_gb * 1e9,
            max(1, int(count)),
            nodes,
            tier.write_gb_per_s,
            tier.read_gb_per_s,
            tier.aggregate_gb_per_s,
            g.host_gb_per_s,
            g.inter_node_gb_per_s,
            fail.checkpoint_write_s,
            fail.in_memory_replicas,
        )
    else:
        ck = storage.CheckpointCost(scheme, 0.0, 0.0, 0.0)
    restart = reliability.RestartModel(fail.detect_hours, fail.restart_hours, fail.spare_swap_hours)
    lam = reliability.job_failure_rate(count, inst.failures_per_gpu_hour[gname], preempt)
    down = restart.downtime_h(ck.reload_s / 3600.0, spare_nodes)
    if ck_gb > 0 and lam > 0:
        tau = reliability.checkpoint_interval_s(ck.stall_s, 3600.0 / lam, ck.lag_s)
        overhead = reliability.checkpoint_overhead(ck.stall_s, tau)
        loss = reliability.loss_hours_per_failure(tau, ck.stall_s, down, ck.lag_s)
    else:
        tau, overhead, loss = math.inf, 0.0, down
    failures = reliability.failures_per_running_hour(lam, loss)
    out: tuple[float, ...] | None = None
    if overhead < 1.0 and math.isfinite(failures):
        out = (
            lam,
            down,
            tau,
            overhead,
            loss,
            failures,
            ck.stall_s,
            ck.persist_s,
            ck.stored_s,
            ck.reload_s,
        )
    memo[key] = out
    return out


def _longer_never_cheaper(inst: Instance, c: Config) -> bool:
    """Whether a running hour of c costs at least 0 at the lowest and at the highest price of
    its region in the phase's window: then a run of more hours of the same hourly costs is
    never cheaper (the condition under which :func:`dominates` lets a shorter run dominate a
    longer one)."""
    prices = _window_prices(inst, c.region, c.phase)
    if prices is None:
        return False
    t = hourly_terms(inst, c, weights(inst), "all")
    return all(_le(0.0, t.fixed + t.per_mwh * pr) for pr in prices)


def _window_prices(inst: Instance, region: str, phase: str) -> tuple[float, float] | None:
    """The lowest and highest electricity price of a region in a phase's window (None for an
    empty window), once per instance."""
    cache = _WINDOW_PRICES.setdefault(inst, {})
    key = (region, phase)
    if key not in cache:
        window = inst.price[region][inst.release[phase] : inst.deadline[phase]]
        cache[key] = (float(np.min(window)), float(np.max(window))) if len(window) else None
    return cache[key]


_WINDOW_PRICES: weakref.WeakKeyDictionary[
    Instance, dict[tuple[str, str], tuple[float, float] | None]
]
_WINDOW_PRICES = weakref.WeakKeyDictionary()


# ----------------------------------------------------------------------------- dominance


def segment_attribute(c: Config, change: str) -> tuple[object, ...]:
    """The values of one attribute a segment boundary may change (``options.segment_changes``):
    region (with the tier), gpu_type, gpus (with spares), contract (with the reserved term and
    billing terms), layout (precision, ZeRO, recomputation, tp, pp)."""
    lay = c.layout
    return {
        "region": (c.region, c.tier),
        "gpu_type": (c.gpu,),
        "gpus": (c.gpus, c.spare_gpus),
        "contract": (c.contract, c.term, c.billing_hours, c.min_rental_hours),
        "layout": (lay.precision, lay.zero, lay.recompute, lay.tp, lay.pp),
    }[change]


def fixed_attributes(inst: Instance, c: Config) -> tuple[object, ...]:
    """What every segment of c's phase shares with c: the attributes its
    ``options.segment_changes`` does not list (() for a phase in one segment)."""
    o = inst.phase(c.phase).options
    if o.max_segments <= 1:
        return ()
    return tuple(
        v for ch in SEGMENT_CHANGES if ch not in o.segment_changes for v in segment_attribute(c, ch)
    )


def _signature(inst: Instance, c: Config) -> tuple[object, ...]:
    """Configurations compete directly only within one pool and contract terms (and one
    reserved term): their prices and preemption rates then follow the same hourly series. A
    phase in segments whose boundaries may not change some attribute compares only
    configurations that agree in it (one may replace the other in any segment)."""
    return (
        c.gpu,
        c.region,
        c.contract,
        c.term,
        c.billing_hours,
        c.min_rental_hours,
        *fixed_attributes(inst, c),
    )


def dominates(
    inst: Instance,
    a: Config,
    b: Config,
    prices: tuple[float, float],
    w: Weights,
    segmented: bool | None = None,
    terms: dict[int, HourlyTerms] | None = None,
) -> bool:
    """a is never worse than b, whatever hours b would run in: a needs no more GPUs of the
    same pool and no more hours, and running a in the first ``a.hours`` of b's hours costs
    no more. With the cost model's split of an hour's cost
    (:func:`planner.model.costs.hourly_terms`, full rental), ``fixed + per_mwh x price_t + per_gco2
    x ci_t``, linear in the price: a's hour costs no more than b's at every price in ``prices`` =
    (lowest, highest) price of the region in the phase's window (the hours it may run) when it does
    at both ends; no more facility power (carbon, ci >= 0); no more one-time, archive and resume
    cost. When ``a.hours < b.hours`` the hours b runs beyond a must cost >= 0: b's hour cost at both
    price ends is >= 0. When the offer's price or preemption rate varies by the hour the
    fixed terms are arrays and are compared hour by hour (both configurations share the
    offer, so the same series); no more entry cost, and for a phase in segments no dearer to
    leave or enter. A running configuration is never dominated (going on with it costs
    nothing). ``terms`` caches each configuration's hourly terms by ``id`` (one pruning pass
    compares each configuration with many)."""
    eps = 1e-12
    if a.total_gpus > b.total_gpus or a.hours > b.hours or b.continues:
        return False
    if a.reserve_h > b.reserve_h:
        return False  # a must end earlier before the deadline than b
    if terms is None:
        ta, tb = hourly_terms(inst, a, w, "all"), hourly_terms(inst, b, w, "all")
    else:
        ta = terms.get(id(a)) or terms.setdefault(id(a), hourly_terms(inst, a, w, "all"))
        tb = terms.get(id(b)) or terms.setdefault(id(b), hourly_terms(inst, b, w, "all"))

    def at(t: HourlyTerms, price: float) -> float | np.ndarray:
        return t.fixed + t.per_mwh * price

    if a.hours < b.hours and not all(_le(0.0, at(tb, pr)) for pr in prices):
        return False
    return (
        all(
            _le(at(ta, pr), at(tb, pr) + eps * np.maximum(1.0, np.abs(at(tb, pr)))) for pr in prices
        )
        and a.facility_kw <= b.facility_kw + eps
        and a.one_time_usd <= b.one_time_usd + eps
        and a.archive_per_h <= b.archive_per_h + eps
        and a.resume_usd <= b.resume_usd + eps
        and a.billing_hours == b.billing_hours
        and a.min_rental_hours == b.min_rental_hours
        and _enters_no_dearer(a, b, eps)
        and _migrates_no_worse(inst, a, b, segmented)
    )


def _le(a: float | np.ndarray, b: float | np.ndarray) -> bool:
    """a <= b, hour by hour when either varies by the hour."""
    if isinstance(a, float | int) and isinstance(b, float | int):
        return a <= b
    return bool(np.all(a <= b))


def _migrates_no_worse(inst: Instance, a: Config, b: Config, segmented: bool | None = None) -> bool:
    """For a phase that may run in segments: a is no dearer to leave and to enter than b
    (write, restart, checkpoint and data moves; docs/cost-model.md, "Segments")."""
    if segmented is None:
        segmented = inst.phase(a.phase).options.max_segments > 1
    if not segmented:
        return True
    eps = 1e-9
    if a.work_hours > b.work_hours + eps:
        return False  # a does less work per hour: a segment of b's hours would fall short
    la, lb = leave_cost(inst, a), leave_cost(inst, b)
    ea, eb = enter_cost(inst, a), enter_cost(inst, b)
    if la.total > lb.total + eps or ea.total > eb.total + eps:
        return False
    return all(
        move_cost(inst, r, a).total <= move_cost(inst, r, b).total + eps for r in inst.spec.regions
    )


@fewer_collections()
def build_config_space(inst: Instance, prune: bool = True) -> ConfigSpace:
    """Enumerate every active phase's configurations and drop dominated ones. For a phase
    running on a configuration (``running``), each configuration carries the migration from it
    (:attr:`Config.entry`) before dominance is decided. The enumeration is done once per
    instance (an Instance is frozen) and kind: the pruned space of the solvers builds only
    the configuration :func:`_prune` keeps of each :func:`layout_class` (the others counted
    as dropped); the unpruned one of the baseline and the attribution
    (:func:`full_config_space`) builds every one."""
    enumerated, infeasible = _enumerated(inst, prefilter=prune)
    return _space(inst, enumerated, infeasible, prune)


def _space(
    inst: Instance,
    enumerated: dict[str, tuple[tuple[Config, ...], int]],
    infeasible: tuple[Infeasibility, ...],
    prune: bool,
) -> ConfigSpace:
    """The space of enumerated configurations: dominated ones dropped with ``prune``, each
    phase's sorted (region, GPU type, contract, GPUs, hours, label) and numbered."""
    by_phase: dict[str, tuple[Config, ...]] = {}
    dropped: dict[str, int] = {}
    w = weights(inst)
    for name, (found, skipped) in enumerated.items():
        configs = list(found)
        kept = _prune(inst, configs, w) if prune and configs else configs
        if configs:
            dropped[name] = len(configs) - len(kept) + skipped
        kept.sort(key=lambda c: (c.region, c.gpu, c.contract, c.gpus, c.hours, c.label))
        by_phase[name] = tuple(c.but(index=i) for i, c in enumerate(kept))
    return ConfigSpace(by_phase, infeasible, dropped)


#: Per active phase, its configurations and how many a prefilter skipped; the infeasible.
_Enumerated = tuple[dict[str, tuple[tuple[Config, ...], int]], tuple["Infeasibility", ...]]


#: From this many active phases on, and when a second core is spare
#: (:func:`planner.beside.may_fork`), every other phase is enumerated in a forked child
#: while this process enumerates the rest: the phases' configurations never
#: depend on one another (:func:`_phase_enumerated`), and a child that cannot answer is made
#: good here, so the space is the same either way. The lab's quarter re-planned from its
#: middle hour (104 phases, 26,712 configurations before pruning): 4.4 s on one core.
BESIDE_PHASES = 40


def _enumerate_all(inst: Instance, prefilter: bool) -> _Enumerated:
    """Every active phase's configurations (with the entry migration of a running phase),
    in enumeration order, the number a prefilter skipped, and why the phases without any
    have none (half of them on a second core: :data:`BESIDE_PHASES`)."""
    phases = inst.active_phases
    done: dict[str, tuple[tuple[Config, ...], int, Infeasibility | None]] = {}
    later = None
    if len(phases) >= BESIDE_PHASES:
        from planner.beside import Beside, may_fork

        if may_fork():
            # every other phase, so that each side gets its share of every kind and of the
            # running phases (no prefilter and entry migrations: the dearest)
            half = phases[1::2]
            later = Beside(lambda: {p.name: _phase_enumerated(inst, p, prefilter) for p in half})
            phases = phases[0::2]
    t0 = time.perf_counter()
    try:
        for p in phases:
            done[p.name] = _phase_enumerated(inst, p, prefilter)
    except BaseException:
        if later is not None:
            later.cancel()
        raise
    if later is not None:
        from planner.beside import patience

        done.update(later.result(wait=patience(time.perf_counter() - t0)))
    out: dict[str, tuple[tuple[Config, ...], int]] = {}
    infeasible: list[Infeasibility] = []
    for p in inst.active_phases:
        configs, skipped, why = done[p.name]
        if why is not None:
            infeasible.append(why)
        out[p.name] = (configs, skipped)
    return out, tuple(infeasible)


def _phase_enumerated(
    inst: Instance, p: Phase, prefilter: bool
) -> tuple[tuple[Config, ...], int, Infeasibility | None]:
    """One phase's configurations (with the entry migration of a running phase) in
    enumeration order, the number a prefilter skipped, and why it has none (None when it
    has some). They depend on the phase ``p`` and on the instance's sites, offers, prices and
    capacity, never on the other phases (:func:`variant_space` relies on it)."""
    # a running configuration must stay among its layouts' (with_entry looks for it)
    configs, why, skipped = _enumerate(inst, p, False, prefilter and p.running is None)
    if why is not None:
        return (), 0, why
    if p.running is not None:
        if running_config(inst, p) is None:
            r = p.running
            return (
                (),
                0,
                Infeasibility(
                    p.name,
                    f"{p.name}: the running configuration ({r.gpus:g} x {r.gpu} "
                    f"{r.contract} in {r.region}, {r.precision}, ZeRO-{r.zero}, tp{r.tp} "
                    f"pp{r.pp}, tier {r.tier}) is not one the instance can run "
                    "(precision, layout or offer), so leaving it cannot be priced",
                ),
            )
        configs = with_entry(inst, p, configs)
    return tuple(configs), skipped, None


_ENUMERATED: weakref.WeakKeyDictionary[Instance, dict[bool, _Enumerated]] = (
    weakref.WeakKeyDictionary()
)


def _enumerated(inst: Instance, prefilter: bool) -> _Enumerated:
    """:func:`_enumerate_all`, once per instance object and ``prefilter``; the prefiltered
    kind is the full one when that is built already (pruning it keeps the same
    configurations: the prefilter only skips building what :func:`_prune` drops)."""
    cache = _ENUMERATED.setdefault(inst, {})
    if prefilter and prefilter not in cache and False in cache:
        return cache[False]
    if prefilter not in cache:
        cache[prefilter] = _enumerate_all(inst, prefilter)
    return cache[prefilter]


def running_config(inst: Instance, p: Phase) -> Config | None:
    """The configuration a phase is running on (``phases.<p>.running``), with its rates under
    the instance as it is now (whether or not it still fits its window or capacity); None
    when it has none or the instance cannot run it at all (e.g. no peak at its precision)."""
    run = p.running
    if run is None:
        return None
    return config_with(inst, p, {k: getattr(run, k) for k in (*CONFIG_FIELDS, "term")})


def config_with(inst: Instance, p: Phase, fields: Mapping[str, Any]) -> Config | None:
    """Phase p's configuration with the plan fields ``fields`` (:data:`CONFIG_FIELDS` and
    ``term``: a running configuration, a plan entry or a segment), with its rates under the
    instance as it is now, whether or not it fits its window, capacity or data residency;
    None when the instance cannot build it. Only that configuration's choices are
    enumerated (each configuration is built from its own choices alone, so it is the one
    the whole phase's enumeration holds)."""
    g = inst.gpu(str(fields["gpu"]))
    count = float(fields["gpus"])
    opts = p.options.model_copy(
        update={
            "precision": (fields["precision"],),
            "zero": (fields["zero"],),
            "recompute": (fields["recompute"],),
            "tensor_parallel": (fields["tp"],),
            "pipeline_parallel": (fields["pp"],),
            "gpu_counts": (int(count),) if count >= 1 else None,
            "fractions": (count,) if count < 1 else (),
            "min_gpus": 1,
            "max_gpus": max(1, int(count)),
            "contracts": (fields["contract"],),
            "storage_tiers": (fields["tier"],),
            "sequence_parallel": (fields["sp"],),
            "context_parallel": (fields["cp"],),
            "expert_parallel": (fields["ep"],),
            "microbatches": (fields["microbatches"],),
            "interleave": (fields["virtual"],),
            "offload": (fields["offload"],),
            "checkpoint": (fields["checkpoint"],),
            "extra_spare_nodes": (
                max(0, int(fields["spare_gpus"]) // g.gpus_per_node - p.redundancy.spare_nodes),
            ),
        }
    )
    variant = p.model_copy(
        update={
            "gpu_types": (fields["gpu"],),
            "regions": (fields["region"],),
            "options": opts,
            "data": p.data.model_copy(update={"residency": None}),
        }
    )
    configs, _ = enumerate_phase(inst, variant, every=True)
    want = {k: fields[k] for k in (*CONFIG_FIELDS, "term")}
    want["gpus"] = count
    for c in configs:
        if plan_key(c.plan_fields()) == plan_key(want):
            return c
    return None


def with_entry(inst: Instance, p: Phase, configs: list[Config]) -> list[Config]:
    """The configurations of a phase running on ``p.running``, each with the migration from
    the running configuration into it; the running configuration itself (when it is among
    them) ``continues`` and costs a write and a restart only if it does not go on from the
    release."""
    run = running_config(inst, p)
    if run is None:
        return configs
    key = plan_key(run.plan_fields())
    out: list[Config] = []
    for c in configs:
        same = plan_key(c.plan_fields()) == key
        m = (leave_cost(inst, run) + enter_cost(inst, c)) if same else migration_cost(inst, run, c)
        out.append(c.but(entry=m.parts(), entry_hours=m.hours, continues=same))
    return out


def _enters_no_dearer(a: Config, b: Config, eps: float) -> bool:
    """a's entry from the running configuration costs no more than b's in every component
    (both None when the phase is not running anywhere)."""
    if a.entry is None or b.entry is None:
        return a.entry == b.entry
    return all(x <= y + eps for x, y in zip(a.entry, b.entry, strict=True))


def _prune(inst: Instance, configs: list[Config], w: Weights) -> list[Config]:
    groups: dict[tuple[object, ...], list[Config]] = {}
    for c in configs:
        groups.setdefault(_signature(inst, c), []).append(c)
    kept: list[Config] = []
    for group in groups.values():
        c0 = group[0]
        prices = _window_prices(inst, c0.region, c0.phase)
        assert prices is not None  # a configuration runs at least one hour of its window
        seg = inst.phase(c0.phase).options.max_segments > 1
        # identical (hours, gpus) with different layouts: keep the cheapest per hour first
        group.sort(
            key=lambda c: (c.hours, c.total_gpus, c.rental_per_h + c.storage_per_h, c.facility_kw)
        )
        survivors: list[Config] = []
        terms: dict[int, HourlyTerms] = {}
        for c in group:
            if any(dominates(inst, s, c, prices, w, seg, terms) for s in survivors):
                continue
            survivors = [s for s in survivors if not dominates(inst, c, s, prices, w, seg, terms)]
            survivors.append(c)
        kept.extend(survivors)
    return kept


_SPACES: weakref.WeakKeyDictionary[Instance, ConfigSpace] = weakref.WeakKeyDictionary()
_FULL_SPACES: weakref.WeakKeyDictionary[Instance, ConfigSpace] = weakref.WeakKeyDictionary()


def full_config_space(inst: Instance) -> ConfigSpace:
    """The unpruned configuration space of an instance, built once per instance object: the
    lever-free baseline, the attribution of a plan's saving and the levers match plans in it
    (:func:`formulations.heuristics.baseline.rematch`), and share the enumeration with
    :func:`config_space`."""
    space = _FULL_SPACES.get(inst)
    if space is None:
        space = build_config_space(inst, prune=False)
        _FULL_SPACES[inst] = space
    return space


_VARIANT_PHASES: weakref.WeakKeyDictionary[
    Instance, dict[str, tuple[tuple[Config, ...], int, Infeasibility | None]]
] = weakref.WeakKeyDictionary()


def variant_space(inst: Instance, phases: Mapping[str, Phase]) -> ConfigSpace:
    """The unpruned configuration space of ``inst`` with the phases named in ``phases``
    replaced by those values: what :func:`full_config_space` gives on
    ``inst.replace(...)`` of the same phase fields (the lever-free baseline's restrictions),
    without rebuilding the instance. A phase's configurations depend only on the phase and
    the instance's sites, offers, prices and capacity (:func:`_phase_enumerated`), so the
    phases not in ``phases`` keep :func:`full_config_space`'s. A phase in it that only
    narrows choices the enumeration makes one by one (:func:`_narrowing`) keeps those of its
    unpruned configurations that have the values left (its count of skipped ones stays the
    unpruned phase's); any other is enumerated alone, once per instance and phase value."""
    full = full_config_space(inst)
    if not phases:
        return full
    cache = _VARIANT_PHASES.setdefault(inst, {})
    changed: dict[str, tuple[tuple[Config, ...], int]] = {}
    narrowed: dict[str, tuple[Config, ...]] = {}
    positions: dict[str, tuple[int, ...]] = {}
    why: dict[str, Infeasibility] = {}
    for name, q in phases.items():
        keep = _narrowing(inst, inst.phase(name), q)
        if keep is not None:
            mine = full.by_phase.get(name, ())
            at = tuple(np.flatnonzero(_kept(full, name, keep)).tolist())
            if len(at) == len(mine) and at:
                continue  # it keeps every one: the unpruned phase's, numbered as they are
            if at:
                # a subsequence of a sorted phase is sorted: only the numbers change
                narrowed[name] = tuple(mine[k].but(index=i) for i, k in enumerate(at))
                positions[name] = at
                continue
        key = q.model_dump_json()  # some phase fields are mappings: no hash
        if key not in cache:
            cache[key] = _phase_enumerated(inst, q, prefilter=False)
        configs, skipped, no = cache[key]
        changed[name] = (configs, skipped)
        if no is not None:
            why[name] = no
    enumerated = _space(inst, changed, (), prune=False)
    by_phase = {
        n: narrowed.get(n) or enumerated.by_phase.get(n, cs) for n, cs in full.by_phase.items()
    }
    infeasible = [i for i in full.infeasible if i.phase not in phases]
    infeasible += [why[p.name] for p in inst.active_phases if p.name in why]
    dropped = {**full.dropped, **enumerated.dropped}
    return ConfigSpace(by_phase, tuple(infeasible), dropped, full, positions)


#: The phase fields and options whose narrowing narrows the unpruned space to the
#: configurations that have the values left (:func:`_narrowing`).
_NARROWING_FIELDS = frozenset({"gpu_types", "regions", "options"})
_NARROWING_OPTIONS = frozenset(
    {
        "contracts",
        "storage_tiers",
        "extra_spare_nodes",
        "gpu_counts",
        "fractions",
        "precision",
        "zero",
        "recompute",
    }
)


#: What :func:`_narrowing` tests of a configuration, by name, and its values of them.
_NARROWED = (
    "gpu",
    "region",
    "contract",
    "tier",
    "spares",
    "count",
    "precision",
    "zero",
    "recompute",
)
_NARROWED_OF = operator.attrgetter(
    "gpu",
    "region",
    "contract",
    "tier",
    "spare_gpus",
    "gpus",
    "layout.precision",
    "layout.zero",
    "layout.recompute",
)


def _kept(full: ConfigSpace, name: str, keep: Mapping[str, Callable[[Any], bool]]) -> np.ndarray:
    """Which of phase ``name``'s configurations in the unpruned space ``full`` pass every
    test of ``keep`` (:func:`_narrowing`) with their value of it (:data:`_NARROWED`): a
    boolean mask. Each test is asked once per distinct value: a phase's configurations are
    coded once per space (in its memo) by their distinct tuples of values, and each tuple's
    values by field."""
    key = ("narrowing codes", name)
    hit = cast("tuple[np.ndarray, list[tuple[np.ndarray, list[Any]]]] | None", full.memo.get(key))
    if hit is None:
        configs = full.by_phase.get(name, ())
        rows: dict[tuple[Any, ...], int] = {}
        of_config = np.fromiter(
            (rows.setdefault(r, len(rows)) for r in map(_NARROWED_OF, configs)),
            np.int64,
            len(configs),
        )
        columns: list[tuple[np.ndarray, list[Any]]] = []
        for k in range(len(_NARROWED)):
            seen: dict[Any, int] = {}
            codes = [seen.setdefault(_narrowed_value(r, k), len(seen)) for r in rows]
            columns.append((np.asarray(codes, dtype=np.int64), list(seen)))
        hit = (of_config, columns)
        full.memo[key] = hit
    of_config, columns = hit
    ok = np.ones(len(columns[0][0]), dtype=bool)
    for (of_row, values), field_ in zip(columns, _NARROWED, strict=True):
        test = keep[field_]
        ok &= np.fromiter((test(v) for v in values), bool, len(values))[of_row]
    return ok[of_config]


def _narrowed_value(row: tuple[Any, ...], k: int) -> Any:
    """Field ``k`` of :data:`_NARROWED` from a configuration's values (:data:`_NARROWED_OF`):
    spares and counts go with the GPU type (their allowed values depend on it)."""
    if k == 4 or k == 5:
        return (row[0], row[k])
    return row[k]


def _narrowing(inst: Instance, p: Phase, q: Phase) -> dict[str, Callable[[Any], bool]] | None:
    """When phase ``q`` only narrows choices of ``p`` that the unpruned enumeration makes
    independently of one another (GPU types, regions, contracts, storage tiers, spare nodes,
    GPU counts, precision, ZeRO stage, recomputation: loops of :func:`_enumerate`,
    :func:`layouts` and :func:`_configs_for` that build each value's configurations alone,
    every layout its own class without the prefilter), the test that keeps, of ``p``'s
    unpruned configurations, exactly those ``q`` enumerates, in the same order: per value
    of :data:`_NARROWED`, a test of the values left (for :func:`_kept`); else None.
    One exception is kept out: :func:`layouts` leaves ZeRO stages above 0 out of a single
    data-parallel rank when 0 is allowed, so a ``q`` that takes stage 0 away from ``p`` is
    enumerated; so is a phase running on a configuration (``running``: its entry migrations
    start from that configuration as ``q`` can run it, which a narrower ``q`` may not)."""
    if p.running is not None:
        return None
    a, b = p.model_dump(), q.model_dump()
    if {k for k in a if a[k] != b[k]} - _NARROWING_FIELDS:
        return None
    po, qo = a["options"], b["options"]
    if {k for k in po if po[k] != qo[k]} - _NARROWING_OPTIONS:
        return None

    def within(mine: Any, theirs: Any) -> bool:  # None: every value
        return theirs is None or (mine is not None and set(mine) <= set(theirs))

    o, n = p.options, q.options
    if not (
        within(q.gpu_types or tuple(inst.spec.gpu_types), p.gpu_types)
        and within(q.regions or tuple(inst.spec.regions), p.regions)
        and within(n.contracts, o.contracts)
        and within(n.storage_tiers or None, o.storage_tiers or None)
        and within(n.extra_spare_nodes, o.extra_spare_nodes)
        and within(n.precision, o.precision)
        and within(n.zero, o.zero)
        and within(n.recompute, o.recompute)
        and (0 in n.zero or 0 not in o.zero)
    ):
        return None
    counts: dict[str, frozenset[float]] = {}
    for gname in q.gpu_types or inst.spec.gpu_types:
        g = inst.gpu(gname)
        mine = frozenset(gpu_counts(q, g))
        if not mine <= frozenset(gpu_counts(p, g)):
            return None
        counts[gname] = mine
    gpus, regions = set(counts), set(q.regions or inst.spec.regions)
    contracts, tiers = set(n.contracts), set(n.storage_tiers or ()) or None
    required = q.redundancy.spare_nodes
    spares = {
        gname: {(required + e) * inst.gpu(gname).gpus_per_node for e in n.extra_spare_nodes}
        for gname in gpus
    }
    allowed: dict[str, set[Any] | None] = {
        "gpu": gpus,
        "region": regions,
        "contract": contracts,
        "tier": tiers,
        "spares": {(gname, x) for gname, xs in spares.items() for x in xs},
        "count": {(gname, x) for gname, xs in counts.items() for x in xs},
        "precision": set(n.precision),
        "zero": set(n.zero),
        "recompute": set(n.recompute),
    }
    return {k: _member_of(ok) for k, ok in allowed.items()}


def _member_of(allowed: set[Any] | None) -> Callable[[Any], bool]:
    """The test that a value is in ``allowed`` (None: every value passes)."""
    if allowed is None:
        return lambda _v: True
    return allowed.__contains__


def config_space(inst: Instance) -> ConfigSpace:
    """The (pruned) configuration space of an instance, built once per instance object (an
    Instance is frozen, so its space never changes): the solvers, ``check`` and the numeric
    checks of one solve share it."""
    space = _SPACES.get(inst)
    if space is None:
        space = build_config_space(inst)
        _SPACES[inst] = space
    return space
