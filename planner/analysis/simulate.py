"""``trainplan simulate PLAN --runs N``: replay a plan many times against random failures and
spot preemptions, with recovery from its checkpoints, and see what cost and finish times it
really promises and how likely each deadline holds.

The replay reads the instance and the plan only. The physics of every plan entry (or
segment) come from the independent checker (:func:`planner.checker.recompute.derive`): the
job failure rate per running hour ``lambda_t = gpus x f + preempt_t`` (spot: the offer's
preemption series), the checkpoint interval ``tau`` and stall ``delta`` (Daly), the lag of
the scheme, the downtime ``D`` (detect, restart or spare swap, reload), rental ``rho_t`` and
facility power.

The model replayed is the plan's own (docs/cost-model.md, "Per configuration"): in every
planned hour failures arrive as a Poisson process of rate ``lambda_t``; a failure loses the
work since the last checkpoint, a uniform share of the checkpoint cycle ``U (tau + delta)``,
plus the lag and the downtime, ``l = U (tau + delta) + lag + D`` hours (``D`` alone without
checkpoints), during which more failures may arrive at the same rate (a branching process:
each lost hour draws ``Poisson(lambda_t l)`` failures of its own, generation by generation).
Each hour lost costs the hour's rental and energy ``rho_t + kW_paid x price_t / 1000`` (no
energy when the offer's rental includes the power: docs/cost-model.md, "Who pays the power"); the
provider's share of failures (an SLA, not on spot) earns the capped credit ``min(mult x D,
L) x rho_t``; a preemptible phase pays a resume per planned pause. The expected value of
this replay is the plan's analytic failure cost ``sum_t lambda_t / (1 - lambda_t L) x (L
(rho_t + e_t) - credit)`` (renewal: ``E[failures per hour] = lambda / (1 - lambda E[l])``
with ``E[l] = L``), which the tests check against ``planner/model/costs.py``.

Time: a phase's lost hours push its end; a phase starts no earlier than its planned start
and no earlier than its predecessors' simulated ends (its planned shape shifted). A
deadline holds in a run when the phase's simulated end is at most its deadline hour.
Everything is vectorised over the runs (numpy), seeded, and needs no solver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.checker.recompute import PhaseFacts, derive
from planner.instance.model import Instance
from planner.model.plan import COST_KEYS, Plan, SegmentPlan

SIM_FORMAT = "trainplan-simulation/1"
#: z of a two-sided 99% confidence interval of a mean (normal approximation).
Z99 = 2.5758293035489004
#: Generations of failures during lost time followed at most (lambda L < 1: each generation
#: is expected lambda L times the one before, so 200 leaves nothing measurable).
MAX_GENERATIONS = 200
#: Bins of the histograms a simulation file carries for the report.
BINS = 30


class SimulationError(ValueError):
    """A plan that cannot be replayed (its instance cannot price an entry)."""


@dataclass(frozen=True)
class PhaseSim:
    """One phase over the runs: failure cost, cost and simulated end (horizon hours)."""

    name: str
    failure_usd: np.ndarray
    cost_usd: np.ndarray
    end_hour: np.ndarray
    failures: np.ndarray
    deadline: int
    planned_end: int
    analytic_failure_usd: float


@dataclass(frozen=True)
class Simulation:
    """The replay of a plan: per phase and in total, over ``runs`` runs drawn with ``seed``."""

    runs: int
    seed: int
    phases: tuple[PhaseSim, ...]
    total_usd: np.ndarray
    failure_usd: np.ndarray
    plan_total_usd: float
    plan_failure_usd: float
    instance: str = ""
    notes: tuple[str, ...] = field(default=())

    def mean_ci(self, x: np.ndarray) -> tuple[float, float]:
        """The mean of ``x`` and the half-width of its 99% confidence interval."""
        sd = float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
        return float(np.mean(x)), Z99 * sd / math.sqrt(len(x))

    def deadline_probability(self, phase: PhaseSim) -> float:
        """The share of simulated runs in which ``phase`` finishes by its deadline."""
        return float(np.mean(phase.end_hour <= phase.deadline + 1e-9))

    def to_dict(self) -> dict[str, Any]:
        """A summary for files and the report: quantiles, means with their 99% intervals,
        deadline probabilities and histograms (no samples)."""

        def stats(x: np.ndarray) -> dict[str, Any]:
            mean, half = self.mean_ci(x)
            q = np.quantile(x, [0.05, 0.5, 0.95]) if len(x) else np.zeros(3)
            counts, edges = np.histogram(x, bins=BINS)
            return {
                "mean": mean,
                "ci99": half,
                "std": float(np.std(x, ddof=1)) if len(x) > 1 else 0.0,
                "p5": float(q[0]),
                "p50": float(q[1]),
                "p95": float(q[2]),
                "min": float(np.min(x)),
                "max": float(np.max(x)),
                "histogram": {"counts": counts.tolist(), "edges": edges.tolist()},
            }

        return {
            "format": SIM_FORMAT,
            "instance": self.instance,
            "runs": self.runs,
            "seed": self.seed,
            "plan_total_usd": self.plan_total_usd,
            "plan_failure_usd": self.plan_failure_usd,
            "total_usd": stats(self.total_usd),
            "failure_usd": stats(self.failure_usd),
            "phases": [
                {
                    "name": p.name,
                    "deadline_hour": p.deadline,
                    "planned_end_hour": p.planned_end,
                    "deadline_probability": self.deadline_probability(p),
                    "analytic_failure_usd": p.analytic_failure_usd,
                    "failure_usd": stats(p.failure_usd),
                    "cost_usd": stats(p.cost_usd),
                    "end_hour": stats(p.end_hour),
                    "failures": stats(p.failures.astype(float)),
                }
                for p in self.phases
            ],
            "notes": list(self.notes),
        }


def _lost_hours(
    rng: np.random.Generator,
    lam: np.ndarray,
    runs: int,
    cycle_h: float,
    fixed_h: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per run and planned hour: the hours lost to failures and their number. ``lam``: the
    job failure rate of each hour; a failure loses ``U x cycle_h + fixed_h`` hours, during
    which failures arrive at the hour's rate too."""
    rate = np.broadcast_to(lam, (runs, len(lam))).ravel()
    lost = np.zeros(rate.shape)
    count = np.zeros(rate.shape, dtype=np.int64)
    exposure: np.ndarray = np.ones(rate.shape)
    for _ in range(MAX_GENERATIONS):
        n = rng.poisson(rate * exposure)
        total = int(n.sum())
        if total == 0:
            break
        cells = np.repeat(np.arange(rate.size), n)
        each = fixed_h + rng.random(total) * cycle_h
        exposure = np.bincount(cells, weights=each, minlength=rate.size)
        lost += exposure
        count += n
    return lost.reshape(runs, len(lam)), count.reshape(runs, len(lam))


def _part(
    rng: np.random.Generator,
    inst: Instance,
    name: str,
    part: SegmentPlan,
    preemptible: bool,
    runs: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Failure cost, lost hours and failures of one segment, per run."""
    try:
        f: PhaseFacts = derive(inst, inst.phase(name), part)
    except ValueError as e:
        raise SimulationError(str(e)) from None
    hours = np.asarray(sorted(set(part.hours)), dtype=int)
    assert f.failure_t is not None and f.rental_t is not None
    per_hour = f.failure_t[hours]
    lam = per_hour / (1.0 + per_hour * f.loss_h)  # f = lambda / (1 - lambda L), inverted
    checkpoints = math.isfinite(f.interval_s)
    cycle_h = (f.interval_s + f.write_s) / 3600.0 if checkpoints else 0.0
    lag_h = (f.persist_s - f.write_s) / 3600.0 if checkpoints else 0.0
    fixed_h = f.downtime_h + lag_h
    lost, count = _lost_hours(rng, lam, runs, cycle_h, fixed_h)
    rho = f.rental_t[hours]
    energy = f.paid_kw * inst.price[part.region][hours] / 1000.0  # 0: the rental includes it
    cost = lost @ (rho + energy)
    if f.sla_share > 0:
        # each failure is the provider's with probability share and earns the capped credit
        credit_h = min(f.sla_multiplier * f.downtime_h, f.loss_h)
        provider = rng.binomial(count, f.sla_share)
        cost = cost - (provider * credit_h) @ rho
    if preemptible:
        pauses = int(np.count_nonzero(np.diff(hours) != 1))
        cost = cost + pauses * f.resume_usd
    return cost, lost.sum(axis=1), count.sum(axis=1)


def simulate(inst: Instance, plan: Plan, runs: int = 1000, seed: int = 0) -> Simulation:
    """Replay ``plan`` (admitted against ``inst``: :func:`planner.analysis.admit.admit`) ``runs``
    times with the random generator seeded by ``seed``."""
    if runs < 2:
        raise SimulationError("--runs: expected at least 2 runs")
    rng = np.random.default_rng(seed)
    rank = {n: i for i, n in enumerate(inst.order)}
    order = sorted(plan.phases, key=lambda p: (p.start_hour, rank.get(p.name, len(rank))))
    ends: dict[str, np.ndarray] = {}
    out: list[PhaseSim] = []
    for p in order:
        phase = inst.phase(p.name)
        fail = np.zeros(runs)
        lost = np.zeros(runs)
        count = np.zeros(runs, dtype=np.int64)
        for part in p.parts():
            c, lo, n = _part(rng, inst, p.name, part, phase.preemptible, runs)
            fail += c
            lost += lo
            count += n
        start = np.full(runs, float(p.start_hour))
        for q in phase.predecessors:
            if q in ends:
                start = np.maximum(start, ends[q])
        end = start + (p.end_hour - p.start_hour) + lost
        ends[p.name] = end
        planned = sum(p.costs.get(k, 0.0) for k in COST_KEYS)
        analytic = float(p.costs.get("failure", 0.0))
        out.append(
            PhaseSim(
                p.name,
                fail,
                planned - analytic + fail,
                end,
                count,
                inst.deadline[p.name],
                p.end_hour,
                analytic,
            )
        )
    failure = np.sum([x.failure_usd for x in out], axis=0) if out else np.zeros(runs)
    plan_fail = float(plan.costs.get("failure", 0.0))
    total = plan.costs.get("total", 0.0) - plan_fail + failure
    return Simulation(
        runs,
        seed,
        tuple(out),
        np.asarray(total, dtype=float),
        np.asarray(failure, dtype=float),
        float(plan.costs.get("total", 0.0)),
        plan_fail,
        plan.instance,
    )
