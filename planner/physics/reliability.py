"""Reliability: failure rate of a job, the optimal checkpoint interval and expected loss."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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


def loss_hours_per_failure(
    interval_s: float, checkpoint_s: float, downtime_h: float, lag_s: float = 0.0
) -> float:
    """Expected hours lost per failure: half a segment of work redone (Daly 2006: failures
    fall uniformly within a segment of length tau + delta), the ``lag_s`` until a snapshot is
    durable (asynchronous write, peer copies: a failure before it lands sends the job back one
    more segment, with probability lag / segment, i.e. lag_s on average; 0 for a synchronous
    checkpoint) and the downtime before work resumes (restart, or swap to a spare)."""
    if math.isinf(interval_s):
        return downtime_h
    return (interval_s + checkpoint_s) / 2.0 / 3600.0 + lag_s / 3600.0 + downtime_h


def checkpoint_interval_s(stall_s: float, mtbf_s: float, lag_s: float = 0.0) -> float:
    """Compute time between checkpoints: Daly's optimum for the stall, but no shorter than
    the ``lag_s`` a snapshot needs to become durable (the next one waits for the previous
    write; PyTorch DCP and Megatron keep one asynchronous save in flight). Infinite without
    failures."""
    if math.isinf(mtbf_s):
        return math.inf
    return max(daly_interval_s(stall_s, mtbf_s), lag_s)


def failures_per_running_hour(rate_per_h: float, loss_h: float) -> float:
    """Expected failures per hour the job runs: lambda / (1 - lambda L). Failures also strike
    the redone work and the downtime, so over a run of n hours of work the wall time is
    n / (1 - lambda L) and the failures lambda n / (1 - lambda L) (the renewal model of
    :func:`effective_training_time`). Infinite when lambda L >= 1: the run never finishes."""
    if rate_per_h * loss_h >= 1.0:
        return math.inf
    return rate_per_h / (1.0 - rate_per_h * loss_h)


# ----------------------------------------------------------------------------- confidence


def poisson_quantile(mean: float, q: float) -> int:
    """The q-quantile of a Poisson count with this mean: the least k with P(K <= k) >= q.

    Failures of independent components at a constant rate arrive as a Poisson process
    (exponential times between failures, the model behind Young 1974 and Daly 2006, and
    Kokolis et al. 2024's fits of job failures), so the number of interruptions of a run with
    ``mean`` expected interruptions is Poisson(mean). The CDF is summed term by term in log
    space, ``log p_k = k log(mean) - mean - log k!``, from ``k0 = mean - 12 sqrt(mean) - 12``
    (the mass below it is under 1e-30, beyond a float's view of 1 - q); 0 for a mean of 0."""
    if not 0.0 <= q < 1.0:
        raise ValueError(f"a quantile must be in [0, 1), got {q}")
    if mean <= 0.0 or q <= 0.0:
        return 0
    if not math.isfinite(mean):
        raise ValueError("the mean of a Poisson count must be finite")
    k = max(0, math.floor(mean - 12.0 * math.sqrt(mean) - 12.0))
    log_mean = math.log(mean)
    total = math.exp(k * log_mean - mean - math.lgamma(k + 1))
    top = mean + 40.0 * math.sqrt(mean) + 40.0  # the sum reaches any q a float holds below 1
    while total < q and k < top:
        k += 1
        total += math.exp(k * log_mean - mean - math.lgamma(k + 1))
    return k


def failure_count_quantile(primary: float, secondary: float, q: float) -> int:
    """The q-quantile of the number of interruptions of a run: the least k with
    P(K <= k) >= q, where ``primary`` interruptions are expected in its planned hours
    (Poisson: failures of independent components at a constant rate, Young 1974, Daly 2006)
    and each one brings ``Poisson(secondary)`` more during the time it loses, and so on
    (``secondary`` = lambda L, the failures expected while one failure's loss L is redone;
    the renewal model behind ``f = lambda / (1 - lambda L)``). A failure with its descendants
    is a Borel(m) cluster (a Galton-Watson tree with Poisson(m) offspring: P(T = j) =
    e^(-m j) (m j)^(j-1) / j!), so K is compound Poisson with Borel clusters, mean
    ``primary / (1 - secondary)``: heavier-tailed than a Poisson count of that mean. Its
    probabilities follow Panjer's recursion (Panjer 1981), ``p_0 = e^-mu``, ``p_k = (mu / k)
    sum_j j b_j p_(k-j)``, rescaled as it runs (``mu`` may be far beyond e^-745); with
    ``secondary`` 0 it is Poisson(``primary``)."""
    if not 0.0 <= q < 1.0:
        raise ValueError(f"a quantile must be in [0, 1), got {q}")
    if primary <= 0.0 or q <= 0.0:
        return 0
    m = max(0.0, secondary)
    if not (math.isfinite(primary) and m < 1.0):
        raise ValueError("expected finite failures and fewer than one per lost hour's loss")
    if m == 0.0:
        return poisson_quantile(primary, q)
    top = int(primary / (1.0 - m) + 60.0 * math.sqrt(primary / (1.0 - m) ** 3) + 60.0)
    j = np.arange(1, top + 1, dtype=float)
    log_b = -m * j + (j - 1) * np.log(m * j) - np.array([math.lgamma(x + 1) for x in j])
    jb = j * np.exp(log_b)  # j b_j, j = 1 .. top
    p = np.zeros(top + 1)
    p[0], log_scale, log_q = 1.0, -primary, math.log(q)
    cdf = 1.0
    if log_scale >= log_q:
        return 0  # no interruption at all is likely enough
    for k in range(1, top + 1):
        p[k] = primary / k * float(np.dot(jb[:k], p[k - 1 :: -1][:k]))
        cdf += p[k]
        if cdf > 1e250:  # rescale: the true values are p x e^log_scale
            p[: k + 1] /= 1e250
            cdf /= 1e250
            log_scale += math.log(1e250)
        if math.log(cdf) + log_scale >= log_q:
            return k
    return top


@dataclass(frozen=True)
class DeadlineReserve:
    """The time a run keeps before its deadline for the interruptions its model expects at a
    confidence ``q``: ``count`` = the q-quantile of the run's interruptions
    (:func:`failure_count_quantile`, ``expected`` of them on average), each costing ``loss_h``
    hours, rounded up to ``hours`` whole hours."""

    expected: float
    count: int
    loss_h: float
    hours: int


def deadline_reserve(
    failures_per_hour: float, run_hours: float, loss_h: float, q: float | None
) -> DeadlineReserve:
    """Hours a run of ``run_hours`` planned hours keeps before its deadline so that it meets
    it with probability ``q`` under the failure model (docs/cost-model.md, "Deadlines with a
    confidence"):

        primary failures        mu = lambda n       (lambda the job's failures per wall hour,
                                                     spot preemptions included)
        failures per loss       m = lambda L        (more while a failure's L hours are lost)
        count at q              K_q = q-quantile of compound Poisson(mu) with Borel(m)
                                clusters (:func:`failure_count_quantile`; mean mu / (1 - m)
                                = f n, the count the cost model charges)
        reserve                 r = ceil(K_q x L - 1e-9) hours

    with L the expected hours each interruption costs (redone work, the lag until a
    checkpoint is durable, the downtime: :func:`loss_hours_per_failure`). A plan that ends
    at its deadline with no reserve keeps time for no failure, and one that keeps ``f n L``
    meets it only about half the time. ``q`` None (no confidence asked): no reserve. The
    replay of ``trainplan simulate`` (planner.analysis.simulate: failures as Poisson processes, more
    during lost time) draws the same count."""
    if q is None or failures_per_hour <= 0.0 or run_hours <= 0.0:
        return DeadlineReserve(0.0, 0, loss_h, 0)
    mu, m = failures_per_hour * run_hours, failures_per_hour * loss_h
    k = failure_count_quantile(mu, m, q)
    return DeadlineReserve(mu / (1.0 - m), k, loss_h, max(0, math.ceil(k * loss_h - 1e-9)))


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
        """The preset's rate as failures per 1,000 node-days, the unit fleets publish."""
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
    time comes from the checkpoint tier (:func:`planner.physics.storage.sharded_seconds`)
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
        """Compute hours over wall hours (1 for an empty run)."""
        return self.compute_hours / self.wall_hours if self.wall_hours > 0 else 1.0


def effective_training_time(
    rate_per_h: float, interval_s: float, stall_s: float, downtime_h: float, lag_s: float = 0.0
) -> float:
    """Share of wall time spent on useful work under periodic checkpoints and failures:

    u = tau / (tau + delta) x (1 - lambda L),  L = (tau + delta) / 2 + lag + D

    with tau the compute between checkpoints, delta the stall per checkpoint (the whole write
    when synchronous, the snapshot to host memory when asynchronous), lambda failures per wall
    hour and L the loss per failure (:func:`loss_hours_per_failure`): first-order renewal
    model of Young 1974 / Daly 2006 (half a segment lost per failure on average), the form of
    Kokolis et al.'s ETTR estimate. Clamped at 0 when failures come faster than work can be
    saved."""
    loss = loss_hours_per_failure(interval_s, stall_s, downtime_h, lag_s)
    share = 1.0 if math.isinf(interval_s) else interval_s / (interval_s + stall_s)
    return share * max(0.0, 1.0 - rate_per_h * loss)


def failure_outcome(
    compute_hours: float,
    gpus: float,
    per_gpu_hour: float,
    stall_s: float,
    downtime_h: float,
    *,
    interval_s: float | None = None,
    lag_s: float = 0.0,
    kw_per_gpu: float = 0.0,
    usd_per_gpu_hour: float = 0.0,
    preemptions_per_hour: float = 0.0,
) -> FailureOutcome:
    """Failures, lost time and their cost for a run of ``compute_hours`` of useful work.

    lambda = gpus x per-GPU rate (+ preemptions); the checkpoint interval is Daly's optimum
    for the stall, at least ``lag_s`` (:func:`checkpoint_interval_s`; ``interval_s`` to fix
    it); wall = compute / u
    (:func:`effective_training_time`); failures = lambda x wall; lost = wall - compute, split
    into checkpoint stalls and failure losses; lost GPU-hours = lost x gpus; kWh and dollars at
    ``kw_per_gpu`` (all-in facility kW per GPU) and ``usd_per_gpu_hour``."""
    lam = job_failure_rate(gpus, per_gpu_hour, preemptions_per_hour)
    if interval_s is None:
        interval_s = checkpoint_interval_s(stall_s, 3600.0 / lam if lam > 0 else math.inf, lag_s)
    u = effective_training_time(lam, interval_s, stall_s, downtime_h, lag_s)
    wall = compute_hours / u if u > 0 else math.inf
    lost = wall - compute_hours
    ck_h = 0.0 if math.isinf(interval_s) else compute_hours * stall_s / interval_s
    per_failure = loss_hours_per_failure(interval_s, stall_s, downtime_h, lag_s)
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
