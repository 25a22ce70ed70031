"""Re-derive the physics of one plan entry from the instance alone (docs/cost-model.md,
"Per configuration").

Written from the contract, not from ``planner.model.configs``: a bug in the planner's configuration
space then shows up as a disagreement. Only the published formulas of :mod:`planner.physics`
(FLOPs per token, ZeRO/Korthikanti memory, checkpoint bytes, the expert all-to-all volume,
offload's PCIe bytes) are shared; the short formulas (scaling and layout efficiency, sharded
checkpoint bandwidth and the schemes, Daly's interval, the renewal model of failures, power,
storage and rental rates) are written out here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from planner.instance.model import Instance
from planner.instance.schema import DEFAULT_MFU, Phase, Region, StorageTier
from planner.model.plan import PhasePlan, SegmentPlan
from planner.physics.layout import moe_all_to_all_bytes_per_token, params_per_rank
from planner.physics.memory import (
    ACTIVATION_BYTES,
    WEIGHT_BYTES,
    MemoryBreakdown,
    memory_per_gpu,
    offload_seconds_per_step,
)
from planner.physics.storage import checkpoint_gb as raw_checkpoint_gb
from planner.physics.transformer import ModelDims, expert_params, flops_per_token

#: A plan entry or one of its segments: both state a configuration.
Configured = PhasePlan | SegmentPlan

#: Throughput factor R of activation recomputation (docs/cost-model.md: none 1, selective
#: 1/1.04, full 0.75; Korthikanti et al. 2022 Table 4, and 6ND against 8ND hardware FLOPs).
RECOMPUTE_FACTOR: dict[str, float] = {"none": 1.0, "selective": 1.0 / 1.04, "full": 0.75}

#: Hours per month for prices per GB-month (8760 / 12).
HOURS_PER_MONTH = 730.0


def is_training(p: Phase) -> bool:
    """A training phase: a model and ``work.passes: train`` (docs/cost-model.md)."""
    return p.model is not None and p.work.passes == "train"


def phase_model(inst: Instance, p: Phase) -> ModelDims | None:
    """The dimensions of the phase's model, None for a phase whose work is not given through a
    model."""
    return inst.models[p.model] if p.model is not None else None


def mfu_of(p: Phase, gpu: str) -> float:
    """The phase's model FLOPs utilisation on a GPU type; a GPU type a per-GPU mapping leaves
    out runs at the schema's ``DEFAULT_MFU`` (no key is a fallback)."""
    if isinstance(p.mfu, dict):
        return float(p.mfu.get(gpu, DEFAULT_MFU))
    return float(p.mfu)


def peak_tflops(inst: Instance, gpu: str, precision: str) -> float | None:
    """Dense peak TFLOP/s of a GPU type at a precision, None when it has none."""
    value = inst.gpu(gpu).peak_tflops.get(precision)  # type: ignore[call-overload]
    return float(value) if value else None


def work_flops(inst: Instance, p: Phase) -> float | None:
    """W in FLOPs: tokens x FLOPs per token under ``work.flops_convention`` (``6nd``: 6N per
    training token, 2N forward, N the active parameters; ``kaplan``, ``palm``, ``megatron``
    add their attention terms), ``flops`` as given, or ``gpu_hours x 3600 x peak(ref gpu,
    work.precision) x 1e12 x mfu(ref gpu)``. None when the reference GPU has no peak at the
    work's precision (the work is then undefined)."""
    w = p.work
    if w.flops is not None:
        return float(w.flops)
    if w.gpu_hours is not None:
        assert w.gpu is not None
        ref = peak_tflops(inst, w.gpu, w.precision)
        if ref is None:
            return None
        return w.gpu_hours * 3600.0 * ref * 1e12 * mfu_of(p, w.gpu)
    m = phase_model(inst, p)
    assert m is not None and w.tokens is not None
    return w.tokens * flops_per_token(m, w.flops_convention, w.passes == "train")


def checkpoint_gb_of(inst: Instance, p: Phase, precision: str) -> float:
    """ck: ``phase.checkpoint_gb``, else ``(w + K) P / 1e9`` for a training phase, else 0;
    divided by ``storage.compression_ratio``."""
    if p.checkpoint_gb is not None:
        raw = float(p.checkpoint_gb)
    else:
        m = phase_model(inst, p)
        raw = (
            0.0
            if m is None or not is_training(p)
            else raw_checkpoint_gb(m.params, precision, m.optimizer, True)
        )
    return raw / inst.spec.storage.compression_ratio


def output_gb_of(inst: Instance, p: Phase) -> float:
    """Output GB: ``phase.output_gb``, else the trained weights ``2 P / 1e9 / compression``
    for a training phase with a model, else 0 for other model phases, else ``data.size_gb``."""
    if p.output_gb is not None:
        return float(p.output_gb)
    m = phase_model(inst, p)
    if m is not None and is_training(p):
        return 2.0 * m.params / 1e9 / inst.spec.storage.compression_ratio
    return 0.0 if m is not None else float(p.data.size_gb)


def archive_tier(region: Region, policy: str) -> tuple[str, StorageTier]:
    """The region's cheapest tier per GB-month (``cheapest``) or dearest (``hottest``); on a tie
    the tier listed first."""
    names = list(region.storage)
    prices = [region.storage[n].usd_per_gb_month for n in names]
    target = min(prices) if policy == "cheapest" else max(prices)
    name = names[prices.index(target)]
    return name, region.storage[name]


def transfer_usd_per_gb(inst: Instance, src: str, dst: str) -> float:
    """``regions.src.transfer_usd_per_gb[dst]`` or ``default_transfer_usd_per_gb``; 0 if same."""
    if src == dst:
        return 0.0
    r = inst.region(src)
    return float(r.transfer_usd_per_gb.get(dst, r.default_transfer_usd_per_gb))


def pause_usd_per_h(inst: Instance, p: Phase) -> float:
    """Parking while paused: ``(retention x max over allowed precisions of ck + data.size_gb) x
    min over the allowed regions' tiers of usd_per_gb_month / 730``."""
    regions = p.regions or tuple(inst.spec.regions)
    price = min(t.usd_per_gb_month for r in regions for t in inst.region(r).storage.values())
    ck = max(checkpoint_gb_of(inst, p, pr) for pr in p.options.precision)
    return (inst.spec.storage.retention * ck + p.data.size_gb) * price / HOURS_PER_MONTH


def daly_interval_s(delta_s: float, mtbf_s: float) -> float:
    """Daly 2006 eq. 37: ``sqrt(2 δ M)(1 + sqrt(δ/2M)/3 + (δ/2M)/9) - δ``; ``M`` if δ >= 2M."""
    if delta_s >= 2.0 * mtbf_s:
        return mtbf_s
    r = delta_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * delta_s * mtbf_s) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - delta_s


def offer_terms(
    inst: Instance, region: str, gpu: str, contract: str, term: str = ""
) -> tuple[np.ndarray, int, int, np.ndarray] | None:
    """(USD per GPU-hour in every horizon hour, billing granularity h, minimum rental h,
    preemptions per hour in every horizon hour) of the region's offer for the GPU type under
    the contract (and reserved term), or None when it is not offered."""
    offers = inst.region(region).offers.get(gpu)
    if offers is None:
        return None
    zeros = np.zeros(inst.hours)
    if contract == "reserved":
        if offers.reserved is None or inst.term(region, gpu, term) is None:
            return None
        return inst.offer_price(region, gpu, contract, term), 1, 0, zeros
    o = {"on_demand": offers.on_demand, "spot": offers.spot}.get(contract)
    if o is None or term:
        return None
    preempt = inst.preemptions(region, gpu) if contract == "spot" else zeros
    price = inst.offer_price(region, gpu, contract)
    return price, o.billing_granularity_hours, o.min_rental_hours, preempt


def power_billing(inst: Instance, region: str, gpu: str, contract: str) -> str:
    """Who pays the power of an offer (docs/cost-model.md, "Who pays the power"): the
    offer's ``energy`` when given; otherwise ``included`` at a cloud site (``site: cloud``,
    or no ``site`` and a ``cloud`` named) and ``metered`` at any other."""
    r = inst.region(region)
    offers = r.offers.get(gpu)
    offer = None if offers is None else getattr(offers, contract, None)
    if offer is not None and offer.energy is not None:
        return str(offer.energy)
    site = r.site if r.site is not None else ("cloud" if r.cloud else "colocation")
    return "included" if site == "cloud" else "metered"


def failures_at(primary: float, secondary: float, q: float) -> int:
    """The least k with P(K <= k) >= q (within 1e-12) for the interruptions of a run:
    ``primary`` expected in its planned hours (Poisson), each bringing ``Poisson(secondary)``
    more during the time it loses, and so on. Given n primary failures the total is
    Borel-Tanner (Tanner 1953): ``P(K = k | n) = (n / k) (m k)^(k - n) e^(-m k) / (k - n)!``
    for k >= n, so ``P(K = k) = sum_n Poisson(n; primary) P(K = k | n)``, summed here term by
    term in log space (with ``secondary`` 0: Poisson)."""
    if primary <= 0.0 or q <= 0.0:
        return 0
    m = secondary
    top = int(primary / (1.0 - m) + 80.0 * math.sqrt(primary / (1.0 - m) ** 3) + 80.0)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 2)))])  # ln i!
    total = math.exp(-primary)
    k = 0
    while total < q - 1e-12 and k < top:
        k += 1
        if m <= 0.0:
            total += math.exp(k * math.log(primary) - primary - log_fact[k])
            continue
        n = np.arange(1, k + 1)
        log_term = (
            n * math.log(primary)
            - primary
            - log_fact[n]
            + np.log(n / k)
            + (k - n) * math.log(m * k)
            - m * k
            - log_fact[k - n]
        )
        total += float(np.sum(np.exp(log_term)))
    return k


def one_value(values: np.ndarray) -> float:
    """A series as one number where one is needed (Daly's interval, resume and migration
    time, owed minimum rental): its value when constant, else its mean over the horizon."""
    first = float(values[0])
    return first if bool(np.all(values == first)) else float(np.mean(values))


def remaining_share(inst: Instance, p: Phase) -> float:
    """Share of the work still to do: ``1 - progress`` (a fraction; tokens done / work tokens;
    FLOPs done / W), at least 1e-9; 1 without progress."""
    pr = p.progress
    if pr is None:
        return 1.0
    if pr.fraction is not None:
        done = float(pr.fraction)
    elif pr.tokens is not None:
        done = pr.tokens / float(p.work.tokens or math.inf)
    else:
        w = work_flops(inst, p)
        done = float(pr.flops or 0.0) / w if w else 0.0
    return max(1e-9, 1.0 - done)


@dataclass(frozen=True)
class PhaseFacts:
    """Everything docs/cost-model.md derives from one plan entry, per running hour unless
    named otherwise."""

    phase: str
    train: bool
    work_flops: float
    dp: int
    eff_scale: float
    eff_layout: float
    recompute_factor: float
    flops_per_s: float
    memory: MemoryBreakdown
    checkpoint_gb: float
    output_gb: float
    scheme: str
    write_s: float
    persist_s: float
    #: seconds until a checkpoint is in the storage tier (what leaving waits for)
    stored_s: float
    reload_s: float
    job_failure_rate: float
    failure_rate: float
    interval_s: float
    overhead: float
    downtime_h: float
    loss_h: float
    compute_only_h: float
    compute_h: float
    io_h: float
    hours: int
    offer_usd_per_gpu_hour: float
    billing_hours: int
    min_rental_hours: int
    rental_per_h: float
    facility_kw: float
    storage_per_h: float
    archive_tier: str
    archive_per_h: float
    sla_share: float
    sla_multiplier: float
    resume_usd: float
    pause_per_h: float
    #: Fractional hours of the (remaining) work, max(compute h, I/O h): a segment of h hours
    #: does h / work_h of the phase.
    work_h: float = 0.0
    #: Per horizon hour: the rental (gpus + spares)(price_t + licence) and the job failure
    #: rate gpus f + preempt_t.
    rental_t: np.ndarray | None = None
    failure_t: np.ndarray | None = None
    #: Hours to read the checkpoint from the tier, sharded over the nodes (a migration's).
    read_h: float = 0.0
    term: str = ""
    #: Facility kW the plan pays at the electricity price: ``facility_kw`` when the offer
    #: meters power, 0 when its rental includes it (``energy``).
    paid_kw: float = 0.0
    energy: str = "metered"

    @property
    def effective_training_time(self) -> float:
        """``(1 - overhead)(1 - λ L)``."""
        return (1.0 - self.overhead) * (1.0 - self.job_failure_rate * self.loss_h)


def data_parallel(p: Phase, m: ModelDims | None, gpus: float, tp: int, pp: int) -> int:
    """dp = gpus / (tp pp) for a model phase on whole GPUs, else 1 (a slice) or the GPU count
    (a phase without a model)."""
    if gpus < 1:
        return 1
    if m is None:
        return int(gpus)
    return max(1, int(gpus) // (tp * pp))


def scale_efficiency(
    p: Phase, gpus: float, gpn: int, step_s: float, grad_bytes: float, dp: int, gb_per_s: float
) -> float:
    """``eff_scale = eff(n) / eff(reference)``, 1 without ``scaling.reference_gpus`` or with
    kind ``none``. ``per_doubling``: ``eff(n) = per_doubling ** log2(ceil(n / gpus_per_node))``
    for more than one node, else 1. ``interconnect``: within a node 1, else ``t_c / (t_c + (1 -
    overlap) t_ar)`` with ``t_ar = 2 (d - 1) / d x gradient bytes / (inter_node_gb_per_s x
    1e9)``, d the data-parallel ring at n (dp x cp) and ``d x reference / n`` at the reference."""
    sc = p.scaling
    ref = gpus if sc.reference_gpus is None else float(sc.reference_gpus)
    if sc.kind == "none" or ref == gpus:
        return 1.0

    def eff(n: float, d: float) -> float:
        nodes = math.ceil(n / gpn)
        if sc.kind == "per_doubling":
            return sc.per_doubling ** math.log2(nodes) if nodes > 1 else 1.0
        d = int(d)
        if n <= gpn or d <= 1 or step_s <= 0:
            return 1.0
        t_ar = 2.0 * (d - 1) / d * grad_bytes / (gb_per_s * 1e9)
        return step_s / (step_s + (1.0 - sc.overlap) * t_ar)

    return eff(gpus, dp) / eff(ref, dp * ref / gpus)


def layout_efficiency(
    inst: Instance, p: Phase, e: Configured, m: ModelDims, dp: int, per_gpu: float, step_s: float
) -> float:
    """``eff_layout`` with ``scaling.layout: modeled``: ``0.98 ** log2(tp)`` x (pp > 1:
    ``v m / (v m + pp - 1)`` x ``(L / pp) / ceil(L / pp)``) x (ZeRO-3, dp x cp > 1, more GPUs than a
    node: 0.95) x (ep > 1: ``t_c / (t_c + t_a2a)`` per token, ``t_c = F / (peak x mfu x R)``,
    ``t_a2a = 4 k h B L_moe (ep - 1) / ep / bw``, bw ``intra_node_gb_per_s / 2`` when ep fits
    in a node else ``inter_node_gb_per_s``) x (offload: ``t_step / (t_step + t_pcie)``, the
    owned parameters' PCIe bytes per step at ``host_gb_per_s``)."""
    g = inst.gpu(e.gpu)
    eff = 0.98 ** math.log2(e.tp)
    if e.pp > 1:
        vm = e.virtual * e.microbatches
        eff *= vm / (vm + e.pp - 1)
        eff *= (m.layers / e.pp) / math.ceil(m.layers / e.pp)
    if e.zero == 3 and dp * e.cp > 1 and e.gpus > g.gpus_per_node:
        eff *= 0.95
    moe = m.arch.moe if m.arch is not None else None
    if e.ep > 1 and moe is not None and m.arch is not None:
        nbytes = moe_all_to_all_bytes_per_token(
            m.hidden, moe.top_k, m.arch.moe_layers, e.ep, ACTIVATION_BYTES[e.precision]
        )
        bw = g.intra_node_gb_per_s / 2 if e.ep <= g.gpus_per_node else g.inter_node_gb_per_s
        t_c = flops_per_token(m, p.work.flops_convention) / per_gpu
        eff *= t_c / (t_c + nbytes / (bw * 1e9))
    if e.offload != "none":
        owned = rank_params(m, e) / (dp * e.cp)
        t_off = offload_seconds_per_step(owned, g.host_gb_per_s, e.precision, e.offload == "params")
        eff *= step_s / (step_s + t_off) if step_s > 0 else 1.0
    return eff


def rank_params(m: ModelDims, e: Configured) -> float:
    """Parameters of the most loaded rank: dense / tp and experts / ep on ceil(L / pp) layers."""
    return params_per_rank(m.params, e.tp, e.pp, m.layers, expert_params(m), e.ep)


def checkpoint_times(
    inst: Instance, e: Configured, scheme: str, ck_gb: float, tier: StorageTier
) -> tuple[float, float, float, float]:
    """(stall δ, persist, reload, stored) seconds of one checkpoint of ``ck`` GB. Sharded over
    the job's nodes ``N = ceil(gpus / gpus_per_node)``: write ``W = ck / min(write_gb_per_s x
    N, aggregate)`` (or ``failure.checkpoint_write_s``), read ``R = ck / min(read_gb_per_s x
    N, aggregate)``. ``sync``: (W, W, R, W); ``async``: the shard ``ck / gpus`` to host at
    ``host_gb_per_s`` blocks, (s, s + W, R, s + W); ``in_memory``: (s, s + (replicas - 1)
    shard / inter_node_gb_per_s, shard / inter_node_gb_per_s, s + W). ``stored``: until the
    checkpoint is in the tier, what leaving the configuration waits for."""
    g = inst.gpu(e.gpu)
    fail = inst.spec.failure
    if ck_gb <= 0:
        return 0.0, 0.0, 0.0, 0.0
    nodes = max(1, math.ceil(e.gpus / g.gpus_per_node))
    agg = tier.aggregate_gb_per_s

    def bandwidth(per_node: float) -> float:
        return min(per_node * nodes, agg) if agg is not None else per_node * nodes

    shard = ck_gb / max(1, int(e.gpus))
    snapshot = shard / g.host_gb_per_s
    write = (
        float(fail.checkpoint_write_s)
        if fail.checkpoint_write_s is not None
        else ck_gb / bandwidth(tier.write_gb_per_s)
    )
    if scheme == "in_memory":
        peer = g.inter_node_gb_per_s
        replicate = (fail.in_memory_replicas - 1) * shard / peer
        return snapshot, snapshot + replicate, shard / peer, snapshot + write
    read = ck_gb / bandwidth(tier.read_gb_per_s)
    if scheme == "sync":
        return write, write, read, write
    return snapshot, snapshot + write, read, snapshot + write


def _speed(
    inst: Instance, p: Phase, e: Configured, m: ModelDims | None, dp: int, pk: float
) -> tuple[float, float, float, float]:
    """(R, eff_scale, eff_layout, sustained FLOP/s) of entry ``e``: FLOP/s = gpus x peak x
    1e12 x mfu x R x eff_scale x eff_layout (R and eff_layout 1 unless the layout is
    modelled)."""
    g = inst.gpu(e.gpu)
    gpus = float(e.gpus)
    modeled = m is not None and p.scaling.layout == "modeled"
    r_factor = RECOMPUTE_FACTOR[e.recompute] if modeled else 1.0
    per_gpu = pk * 1e12 * mfu_of(p, e.gpu) * r_factor
    step_s = grad_bytes = 0.0
    if m is not None:
        tokens = p.options.micro_batch * m.seq_len * e.microbatches
        step_s = flops_per_token(m, p.work.flops_convention) * tokens / (e.tp * e.cp * e.pp)
        step_s /= per_gpu
        grad_bytes = WEIGHT_BYTES[e.precision] * rank_params(m, e)
    eff_layout = 1.0
    if modeled:
        assert m is not None
        eff_layout = layout_efficiency(inst, p, e, m, dp, per_gpu, step_s)
    eff_scale = scale_efficiency(
        p, gpus, g.gpus_per_node, step_s, grad_bytes, max(1, dp * e.cp), g.inter_node_gb_per_s
    )
    return r_factor, eff_scale, eff_layout, gpus * per_gpu * eff_scale * eff_layout


class _Reliability(NamedTuple):
    """An entry's checkpoint times (s) and failure figures: job failure rate ``lam`` per
    wall hour, downtime and loss per failure (h), interval ``tau`` (s), overhead, failures
    per running hour."""

    write_s: float
    persist_s: float
    reload_s: float
    stored_s: float
    lam: float
    downtime: float
    tau: float
    overhead: float
    loss: float
    failures: float


def _reliability(
    inst: Instance, e: Configured, scheme: str, ck: float, tier: StorageTier, preempt: float
) -> _Reliability:
    """Reliability of entry ``e``: λ, the scheme's stall δ / persist / reload, interval
    τ = max(Daly, lag), overhead δ/(τ+δ), downtime D, loss per failure L, failures per
    running hour f = λ / (1 - λ L)."""
    fail = inst.spec.failure
    gpus = float(e.gpus)
    write_s, persist_s, reload_s, stored_s = checkpoint_times(inst, e, scheme, ck, tier)
    lag = persist_s - write_s
    lam = gpus * inst.failures_per_gpu_hour[e.gpu] + (preempt if e.contract == "spot" else 0.0)
    spare_nodes = float(e.spare_gpus) / inst.gpu(e.gpu).gpus_per_node
    downtime = (
        fail.detect_hours
        + (fail.spare_swap_hours if spare_nodes > 0 else fail.restart_hours)
        + reload_s / 3600.0
    )
    if ck > 0 and lam > 0:
        tau = max(daly_interval_s(write_s, 3600.0 / lam), lag)
        overhead = write_s / (tau + write_s)
        loss = (tau + write_s) / 2.0 / 3600.0 + lag / 3600.0 + downtime
    else:
        tau, overhead, loss = math.inf, 0.0, downtime
    failures = lam / (1.0 - lam * loss) if lam * loss < 1.0 else math.inf
    return _Reliability(
        write_s, persist_s, reload_s, stored_s, lam, downtime, tau, overhead, loss, failures
    )


def facility_kw_of(inst: Instance, p: Phase, e: Configured) -> float:
    """Facility kW of entry ``e``: working GPUs at ``idle + (board - idle) x power_load``,
    spares idle, every node's host overhead (a fractional GPU its share of one node's), times
    the region's PUE."""
    g = inst.gpu(e.gpu)
    gpus, spare = float(e.gpus), float(e.spare_gpus)
    gpn = g.gpus_per_node
    nodes = math.ceil(gpus / gpn) if gpus >= 1 else gpus / gpn
    watts = (
        gpus * (g.idle_power_w + (g.board_power_w - g.idle_power_w) * p.power_load)
        + spare * g.idle_power_w
        + (nodes + spare / gpn) * g.node_overhead_w
    )
    return watts / 1000.0 * inst.region(e.region).effective_pue


def derive(inst: Instance, p: Phase, e: Configured) -> PhaseFacts:
    """The configuration physics of entry ``e`` of phase ``p``.

    Requires a configuration the instance can price: known GPU type and region, the tier in
    the region, the contract offered, a peak at the precision, defined work, ``gpus > 0``,
    ``tp, pp >= 1``, ZeRO 0-3 and a known recomputation (the constraint checks establish it)."""
    g = inst.gpu(e.gpu)
    r = inst.region(e.region)
    tier = r.storage[e.tier]
    terms = offer_terms(inst, e.region, e.gpu, e.contract, e.term)
    pk = peak_tflops(inst, e.gpu, e.precision)
    flops = work_flops(inst, p)
    if terms is None or pk is None or flops is None or e.gpus <= 0:
        raise ValueError(f"phase {p.name}: configuration cannot be priced")
    flops = flops * remaining_share(inst, p)
    price_t, bill_h, min_h, preempt_t = terms
    price, preempt = one_value(price_t), one_value(preempt_t)
    m = phase_model(inst, p)
    train = is_training(p)
    gpus, spare = float(e.gpus), float(e.spare_gpus)
    gpn = g.gpus_per_node
    dp = data_parallel(p, m, gpus, e.tp * e.cp, e.pp)
    nodes_ceil = math.ceil(gpus / gpn)

    r_factor, eff_scale, eff_layout, fps = _speed(inst, p, e, m, dp, pk)

    run = (p.options.micro_batch, train, p.memory_gb, min(gpus, 1.0))
    mem = memory_per_gpu(m, (g.memory_gb, g.memory_unit), e, dp, run, inst.memory_allowances)

    ck = checkpoint_gb_of(inst, p, e.precision)
    scheme = e.checkpoint if e.checkpoint is not None else inst.spec.failure.checkpoint
    rl = _reliability(inst, e, scheme, ck, tier, preempt)
    write_s, persist_s, reload_s, stored_s = rl.write_s, rl.persist_s, rl.reload_s, rl.stored_s
    lam, downtime, tau, overhead, loss = rl.lam, rl.downtime, rl.tau, rl.overhead, rl.loss
    failures = rl.failures

    # hours n = max(1, ceil(max(compute h / (1 - overhead), I/O h) - 1e-9)), the data read
    # sharded like the checkpoint
    compute_only = flops / fps / 3600.0
    compute_h = compute_only / (1.0 - overhead)
    read_bw = tier.read_gb_per_s * max(1, nodes_ceil)
    if tier.aggregate_gb_per_s is not None:
        read_bw = min(read_bw, tier.aggregate_gb_per_s)
    io_h = p.data.size_gb * p.data.read_passes / read_bw / 3600.0 * remaining_share(inst, p)
    hours = max(1, math.ceil(max(compute_h, io_h) - 1e-9))

    rental = (gpus + spare) * (price + p.licence_usd_per_gpu_hour)
    rental_t = (gpus + spare) * (price_t + p.licence_usd_per_gpu_hour)
    job_t = gpus * inst.failures_per_gpu_hour[e.gpu] + (
        preempt_t if e.contract == "spot" else 0.0
    ) * np.ones(inst.hours)
    failure_t = job_t / (1.0 - job_t * loss)  # expected failures per running hour, by hour
    kw = facility_kw_of(inst, p, e)
    billing = power_billing(inst, e.region, e.gpu, e.contract)
    paid_kw = kw if billing == "metered" else 0.0
    storage_h = (
        (inst.spec.storage.retention * ck + p.data.size_gb)
        * tier.usd_per_gb_month
        / HOURS_PER_MONTH
    )
    out = output_gb_of(inst, p)
    arch_name, arch = archive_tier(r, inst.spec.storage.archive)
    sla = r.sla
    share = sla.provider_fault_share if (sla is not None and e.contract != "spot") else 0.0
    mult = sla.credit_multiplier if sla is not None else 0.0
    mean_price = float(np.mean(inst.price[e.region]))
    resume = p.resume_overhead_hours * (rental + paid_kw * mean_price / 1000.0)
    return PhaseFacts(
        phase=p.name,
        train=train,
        work_flops=flops,
        dp=dp,
        eff_scale=eff_scale,
        eff_layout=eff_layout,
        recompute_factor=r_factor,
        flops_per_s=fps,
        memory=mem,
        checkpoint_gb=ck,
        output_gb=out,
        scheme=scheme,
        write_s=write_s,
        persist_s=persist_s,
        stored_s=stored_s,
        reload_s=reload_s,
        job_failure_rate=lam,
        failure_rate=failures,
        interval_s=tau,
        overhead=overhead,
        downtime_h=downtime,
        loss_h=loss,
        compute_only_h=compute_only,
        compute_h=compute_h,
        io_h=io_h,
        hours=hours,
        offer_usd_per_gpu_hour=price,
        billing_hours=bill_h,
        min_rental_hours=min_h,
        rental_per_h=rental,
        facility_kw=kw,
        storage_per_h=storage_h,
        archive_tier=arch_name,
        archive_per_h=out * arch.usd_per_gb_month / HOURS_PER_MONTH,
        sla_share=share,
        sla_multiplier=mult,
        resume_usd=resume,
        pause_per_h=pause_usd_per_h(inst, p) if p.preemptible else 0.0,
        work_h=max(compute_h, io_h),
        rental_t=rental_t,
        failure_t=failure_t,
        read_h=ck / read_bw / 3600.0,
        term=e.term,
        paid_kw=paid_kw,
        energy=billing,
    )


def running_facts(inst: Instance, p: Phase) -> PhaseFacts | None:
    """The physics of the configuration a re-planned phase runs on now (``running``), or None
    (none, or one the instance cannot price)."""
    run = p.running
    if run is None:
        return None
    entry = SegmentPlan.from_dict({**run.model_dump(), "hours": ()})
    try:
        return derive(inst, p, entry)
    except ValueError:
        return None
