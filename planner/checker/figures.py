"""The derived figures a plan entry states in ``info`` (memory, throughput, checkpoints and
failures), recomputed from the instance and the plan and compared (docs/cost-model.md, "What a
plan entry states").

A plan written by the planner states them; a hand-written plan may leave any of them out (only
the figures present are compared). Each is rounded in the plan to ``digits`` decimals, so a
stated figure matches when ``|stated - recomputed| <= 10^-digits + 1e-6 x |recomputed|``.
"""

from __future__ import annotations

import math

from planner.checker.constraints import Entry
from planner.checker.recompute import PhaseFacts
from planner.checker.violation import Violation

#: info key -> decimals it is stated to.
DIGITS: dict[str, int] = {
    "memory_gb": 3,
    "model_states_gb": 3,
    "activations_gb": 3,
    "gather_gb": 3,
    "cpu_offload_gb": 3,
    "memory_capacity_gb": 3,
    "compute_hours": 6,
    "work_hours": 6,
    "layout_efficiency": 6,
    "recompute_factor": 6,
    "checkpoint_stall_s": 6,
    "checkpoint_persist_s": 6,
    "checkpoint_reload_s": 6,
    "checkpoint_interval_s": 1,
    "checkpoint_hours": 6,
    "downtime_h": 6,
    "loss_per_failure_h": 6,
    "expected_failures": 6,
    "lost_hours": 6,
    "lost_gpu_hours": 4,
    "lost_kwh": 4,
    "lost_usd": 6,
    "effective_training_time": 6,
}


def recomputed(ent: Entry, f: PhaseFacts, failure_usd: float) -> dict[str, float | None]:
    """The figures of one entry (n = its running hours):

    - memory per GPU: total, states (with ZeRO-3's gathered layer), activations, gathered
      layer, CPU offload, usable capacity (GB);
    - ``compute_hours = W / FLOP/s / 3600``; ``work_hours = max(compute / (1 - overhead), I/O)``;
      ``layout_efficiency``, ``recompute_factor``;
    - the checkpoint's stall, persist and reload seconds, interval τ (None if infinite),
      ``checkpoint_hours = compute x overhead / (1 - overhead)``;
    - ``downtime_h = D``, ``loss_per_failure_h = L``, ``expected_failures = f n``,
      ``lost_hours = f n L``, ``lost_gpu_hours = lost x (gpus + spare_gpus)``,
      ``lost_kwh = lost x kW``, ``lost_usd`` = the phase's failure cost,
      ``effective_training_time = (1 - overhead)(1 - λ L)``."""
    e, mem = ent.plan, f.memory
    n = len(ent.hours)
    lost = f.failure_rate * n * f.loss_h
    return {
        "memory_gb": mem.total_gb,
        "model_states_gb": mem.model_states_gb,
        "activations_gb": mem.activations_gb,
        "gather_gb": mem.gather_gb,
        "cpu_offload_gb": mem.cpu_gb,
        "memory_capacity_gb": mem.capacity_gb,
        "compute_hours": f.compute_only_h,
        "work_hours": max(f.compute_h, f.io_h),
        "layout_efficiency": f.eff_layout,
        "recompute_factor": f.recompute_factor,
        "checkpoint_stall_s": f.write_s,
        "checkpoint_persist_s": f.persist_s,
        "checkpoint_reload_s": f.reload_s,
        "checkpoint_interval_s": None if math.isinf(f.interval_s) else f.interval_s,
        "checkpoint_hours": f.compute_only_h * f.overhead / (1.0 - f.overhead),
        "downtime_h": f.downtime_h,
        "loss_per_failure_h": f.loss_h,
        "expected_failures": f.failure_rate * n,
        "lost_hours": lost,
        "lost_gpu_hours": lost * (e.gpus + e.spare_gpus),
        "lost_kwh": lost * f.facility_kw,
        "lost_usd": failure_usd,
        "effective_training_time": f.effective_training_time,
    }


def check_figures(ent: Entry, f: PhaseFacts, failure_usd: float | None) -> list[Violation]:
    """One ``figure`` violation per stated ``info`` figure that differs from its
    recomputation (a number where none is due, or none where one is, differs too);
    ``lost_usd`` is compared only when ``failure_usd`` (the entry's recomputed failure cost)
    is given."""
    out: list[Violation] = []
    info = ent.plan.info
    for key, want in recomputed(ent, f, failure_usd or 0.0).items():
        if key not in info or (key == "lost_usd" and failure_usd is None):
            continue
        got = info[key]
        if want is None or got is None:
            if (want is None) != (got is None):
                out.append(_differs(ent.name, key, got, want))
            continue
        if not isinstance(got, int | float) or isinstance(got, bool):
            out.append(_differs(ent.name, key, got, want))
            continue
        tol = 10.0 ** -DIGITS[key] + 1e-6 * abs(want)
        if not (math.isfinite(got) and abs(got - want) <= tol):
            out.append(_differs(ent.name, key, got, want))
    stated = info.get("energy")
    if stated is not None and stated != f.energy:
        out.append(
            Violation(
                "figure",
                ent.name,
                f"info.energy: the plan states {stated!r} but the offer's power is {f.energy!r}",
            )
        )
    return out


def _differs(phase: str, key: str, got: object, want: float | None) -> Violation:
    shown = "none" if want is None else f"{want:,.6g}"
    return Violation(
        "figure",
        phase,
        f"info.{key}: the plan states {got!r} but the recomputation gives {shown}",
    )
