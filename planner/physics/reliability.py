"""Reliability: failure rate of a job, the optimal checkpoint interval and expected loss."""

from __future__ import annotations

import math
from dataclasses import dataclass


def job_failure_rate(gpus: float, per_gpu_hour: float, preemptions_per_hour: float = 0.0) -> float:
    """Job failures per hour: lambda_job = N_gpus x lambda_gpu (+ spot preemptions per hour).

    Independent exponential failures: the job fails at the first failure of any of its GPUs
    (Llama 3: 419 interruptions in 54 days on 16,384 GPUs, Dubey et al. 2024 §3.3.4)."""
    return gpus * per_gpu_hour + preemptions_per_hour


def per_gpu_hour_from_node_days(failures_per_1000_node_days: float, gpus_per_node: int) -> float:
    """failures per GPU-hour = (f / 1000) / (24 x GPUs per node)."""
    return failures_per_1000_node_days / 1000.0 / 24.0 / gpus_per_node


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young 1974: tau = sqrt(2 delta M)."""
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly 2006, "A higher order estimate of the optimum checkpoint interval", eq. (37):
    tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / (2M)) + (1/9)(delta / (2M))] - delta
    for delta < 2M, and tau = M otherwise."""
    if math.isinf(mtbf_s):
        return math.inf
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    r = checkpoint_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1 + math.sqrt(r) / 3 + r / 9) - checkpoint_s


def checkpoint_overhead(checkpoint_s: float, interval_s: float) -> float:
    """Fraction of wall time spent writing checkpoints: delta / (tau + delta)."""
    if math.isinf(interval_s):
        return 0.0
    return checkpoint_s / (interval_s + checkpoint_s)


def loss_hours_per_failure(interval_s: float, checkpoint_s: float, downtime_h: float) -> float:
    """Expected hours lost per failure: half an interval of work redone (Daly 2006: failures
    fall uniformly within a segment of length tau + delta) plus the downtime before work
    resumes (restart, or swap to a spare)."""
    if math.isinf(interval_s):
        return downtime_h
    return (interval_s + checkpoint_s) / 2.0 / 3600.0 + downtime_h


def downtime_hours(spare_nodes: int, restart_h: float, swap_h: float, reload_h: float) -> float:
    """Downtime per failure: with a hot spare node the job swaps it in (``swap_h``); without,
    it waits for the failed node to be drained and replaced (``restart_h``). Both reload the
    last checkpoint (``reload_h``)."""
    return (swap_h if spare_nodes > 0 else restart_h) + reload_h


def expected_failure_cost_per_hour(
    rate_per_h: float,
    loss_h: float,
    hourly_cost: float,
    sla_share: float = 0.0,
    credit_multiplier: float = 0.0,
    downtime_h: float = 0.0,
    rental_per_h: float = 0.0,
) -> float:
    """Expected failure-restart cost per running hour:
    lambda x L x (rental + energy per hour)  -  lambda x share x min(m x downtime, L) x rental
    per hour, the second term being the provider's SLA credit (m times the downtime, for the
    share of failures that are the provider's fault), capped at the L hours of rental a
    failure loses: a credit refunds rental, it never pays out more than was lost."""
    credit_h = sla_share * min(credit_multiplier * downtime_h, loss_h)
    return rate_per_h * (loss_h * hourly_cost - credit_h * rental_per_h)


# ----------------------------------------------------------------------------- fleets at scale


@dataclass(frozen=True)
class FailurePreset:
    """A failure rate measured on a published fleet, with its source."""

    name: str
    per_gpu_hour: float
    gpus_per_node: int
    source: str

    @property
    def per_1000_node_days(self) -> float:
        return self.per_gpu_hour * 1000.0 * 24.0 * self.gpus_per_node


#: Failure rates of published fleets. Llama 3 (Dubey et al. 2024, §3.3.4): 419 unexpected
#: interruptions in a 54-day snapshot of 405B pre-training on 16,384 H100 (Table 5; 78%
#: hardware), i.e. 419 / (16,384 x 54 x 24) per GPU-hour = 3.79 per 1,000 node-days.
#: Meta's research clusters (Kokolis et al. 2024, "Revisiting Reliability in Large-Scale
#: Machine Learning Research Clusters", arXiv:2410.21680, HPCA 2025): 6.50 (RSC-1, 16K A100)
#: and 2.34 (RSC-2, 8K A100) failures per 1,000 node-days over 11 months; their fit projects a
#: mean time to failure of 1.8 h for a 16,384-GPU job on RSC-1.
FAILURE_PRESETS: dict[str, FailurePreset] = {
    "llama3": FailurePreset(
        "llama3",
        419 / (16384 * 54 * 24),
        8,
        "Dubey et al. 2024 (Llama 3) §3.3.4, Table 5: 419 unexpected interruptions, 54 days, "
        "16,384 H100",
    ),
    "rsc1": FailurePreset(
        "rsc1",
        per_gpu_hour_from_node_days(6.50, 8),
        8,
        "Kokolis et al. 2024 (arXiv:2410.21680): RSC-1, 6.50 failures per 1,000 node-days",
    ),
    "rsc2": FailurePreset(
        "rsc2",
        per_gpu_hour_from_node_days(2.34, 8),
        8,
        "Kokolis et al. 2024 (arXiv:2410.21680): RSC-2, 2.34 failures per 1,000 node-days",
    ),
}


@dataclass(frozen=True)
class RestartModel:
    """What a failure costs before work resumes, by component (hours).

    ``detect_h``: until the failure is noticed (NCCL/collective timeouts, health checks;
    Kokolis et al. run health checks every 5 minutes); ``restart_h``: reschedule and relaunch
    the job on healthy nodes (or ``swap_h`` with a hot spare node in the allocation); reload
    time comes from the checkpoint tier (:func:`planner.physics.storage.sharded_read_seconds`)
    or from peer memory (:func:`planner.physics.storage.in_memory_checkpoint`). Defaults are
    stated assumptions for an automated stack (Llama 3 §3.3.4: "the majority of interruptions
    were handled automatically"; only three needed significant manual intervention):
    3 minutes to detect, 6 to restart, 3 to swap in a spare."""

    detect_h: float = 0.05
    restart_h: float = 0.10
    swap_h: float = 0.05

    def downtime_h(self, reload_h: float, spare_nodes: int = 0) -> float:
        """detection + (swap with a spare, else restart) + reload."""
        return self.detect_h + (self.swap_h if spare_nodes > 0 else self.restart_h) + reload_h


@dataclass(frozen=True)
class FailureOutcome:
    """What failures and checkpoints cost a run, in every unit the planner reports.

    ``compute_hours``: wall hours of useful work; ``wall_hours``: with checkpoint stalls,
    recomputed work and downtime; ``effective_training_time``: compute / wall (Llama 3's
    "effective training time", Kokolis et al.'s ETTR)."""

    failures: float
    compute_hours: float
    wall_hours: float
    lost_hours: float
    checkpoint_hours: float
    lost_gpu_hours: float
    lost_kwh: float
    lost_usd: float
    interval_s: float
    loss_per_failure_h: float

    @property
    def effective_training_time(self) -> float:
        return self.compute_hours / self.wall_hours if self.wall_hours > 0 else 1.0


def effective_training_time(
    rate_per_h: float, interval_s: float, stall_s: float, downtime_h: float
) -> float:
    """Share of wall time spent on useful work under periodic checkpoints and failures:

    u = tau / (tau + delta) x (1 - lambda ((tau + delta) / 2 + D))

    with tau the compute between checkpoints, delta the stall per checkpoint (the whole write
    when synchronous, the snapshot to host memory when asynchronous), lambda failures per wall
    hour and D the downtime per failure: first-order renewal model of Young 1974 / Daly 2006
    (half a segment lost per failure on average), the form of Kokolis et al.'s ETTR estimate.
    Clamped at 0 when failures come faster than work can be saved."""
    if math.isinf(interval_s):
        return max(0.0, 1.0 - rate_per_h * downtime_h)
    seg_h = (interval_s + stall_s) / 3600.0
    return (
        interval_s / (interval_s + stall_s) * max(0.0, 1.0 - rate_per_h * (seg_h / 2 + downtime_h))
    )


def failure_outcome(
    compute_hours: float,
    gpus: float,
    per_gpu_hour: float,
    stall_s: float,
    downtime_h: float,
    *,
    interval_s: float | None = None,
    kw_per_gpu: float = 0.0,
    usd_per_gpu_hour: float = 0.0,
    preemptions_per_hour: float = 0.0,
) -> FailureOutcome:
    """Failures, lost time and their cost for a run of ``compute_hours`` of useful work.

    lambda = gpus x per-GPU rate (+ preemptions); the checkpoint interval is Daly's optimum
    for the stall (``interval_s`` to fix it); wall = compute / u
    (:func:`effective_training_time`); failures = lambda x wall; lost = wall - compute, split
    into checkpoint stalls and failure losses; lost GPU-hours = lost x gpus; kWh and dollars at
    ``kw_per_gpu`` (all-in facility kW per GPU) and ``usd_per_gpu_hour``."""
    lam = job_failure_rate(gpus, per_gpu_hour, preemptions_per_hour)
    if interval_s is None:
        interval_s = daly_interval_s(stall_s, 3600.0 / lam) if lam > 0 else math.inf
    u = effective_training_time(lam, interval_s, stall_s, downtime_h)
    wall = compute_hours / u if u > 0 else math.inf
    lost = wall - compute_hours
    ck_h = 0.0 if math.isinf(interval_s) else compute_hours * stall_s / interval_s
    per_failure = downtime_h + (
        0.0 if math.isinf(interval_s) else (interval_s + stall_s) / 2 / 3600.0
    )
    return FailureOutcome(
        failures=lam * wall,
        compute_hours=compute_hours,
        wall_hours=wall,
        lost_hours=lost,
        checkpoint_hours=ck_h,
        lost_gpu_hours=lost * gpus,
        lost_kwh=lost * gpus * kw_per_gpu,
        lost_usd=lost * gpus * usd_per_gpu_hour,
        interval_s=interval_s,
        loss_per_failure_h=per_failure,
    )
