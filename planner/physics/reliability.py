"""Reliability: failure rate of a job, the optimal checkpoint interval and expected loss."""

from __future__ import annotations

import math


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
    lambda x L x (rental + energy per hour)  -  lambda x share x m x downtime x rental per hour,
    the second term being the provider's SLA credit (m times the downtime, for the share of
    failures that are the provider's fault)."""
    return rate_per_h * (
        loss_h * hourly_cost - sla_share * credit_multiplier * downtime_h * rental_per_h
    )
