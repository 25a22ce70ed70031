"""CP-SAT vs the start-time MILP (HiGHS) on generated non-preemptive instances.

For each size, one seeded instance: pipelines of prep -> train -> eval phases over several
regions with hourly prices, time-varying capacity (maintenance dips), block billing, a
reserved offer and transfer costs. Each solver gets the same time limit (building included)
and reports: build seconds, seconds to the first solution, seconds until the incumbent is
within 1% of the best objective any run found ("1% primal"), seconds until its own proved
gap is <= 1% ("1% gap"), seconds until it stopped ("end": proof or time limit), and the
final objective and gap. Both solvers start from the look-ahead heuristic's schedule (CP-SAT
as a hint, HiGHS as a MIP start), as solve_cpsat and solve_starttime do.

Run:  .venv/bin/python benchmarks/cpsat_vs_milp.py [--sizes S M L XL] [--time-limit 60]
      [--threads 2] [--modes literal element] [--highs off on] [--portfolio] [--seed 1]

"starttime-highs" runs HiGHS with presolve off (as the start-time MILP asks for),
"starttime-highs+pre" with HiGHS's default presolve; "portfolio" is CP-SAT for 30% of the
limit (at most 20 s), then HiGHS from CP-SAT's schedule.

Times are wall seconds on the machine it runs on; "-" means never reached.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formulations.choose import choose
from formulations.exact.cpsat import Progress, solve_cpsat
from formulations.exact.starttime.data import (
    build_data,
    choice_of,
    estimate_nonzeros,
    least_reserved,
    objective_of,
)
from formulations.exact.starttime.model import build as build_starttime
from formulations.exact.starttime.model import choice_of_point, point_of
from formulations.lp.highs_runner import use_threads
from formulations.lp.linear import LinearProgram
from formulations.pipeline import heuristic_schedule
from formulations.portfolio import PORTFOLIO_FIRST_MAX_S, PORTFOLIO_SHARE
from planner.instance.model import Instance
from planner.instance.read import from_dict
from planner.model.configs import build_config_space
from planner.model.options import SolveOptions
from planner.model.plan import Plan

#: (pipelines of prep -> train -> eval, horizon hours)
SIZES: dict[str, tuple[int, int]] = {
    "XS": (1, 120),
    "S": (2, 120),
    "M": (4, 168),
    "L": (8, 336),
    "XL": (12, 720),
}

GPUS: dict[str, dict[str, Any]] = {
    "H100": {
        "memory_gb": 80,
        "peak_tflops": {"fp32": 67, "tf32": 495, "bf16": 989, "fp16": 989, "fp8": 1979},
        "board_power_w": 700,
        "idle_power_w": 90,
        "gpus_per_node": 8,
        "node_overhead_w": 2000,
    },
    "A100": {
        "memory_gb": 80,
        "peak_tflops": {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
        "board_power_w": 400,
        "idle_power_w": 50,
        "gpus_per_node": 8,
        "node_overhead_w": 1600,
        "family": "nvidia",
    },
    "L4": {
        "memory_gb": 24,
        "peak_tflops": {"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242},
        "board_power_w": 72,
        "idle_power_w": 16,
        "gpus_per_node": 8,
        "node_overhead_w": 400,
    },
}
LIST_PRICE = {"H100": 4.0, "A100": 2.0, "L4": 0.8}
ZONES = ["America/New_York", "Europe/Berlin", "Asia/Tokyo", "America/Los_Angeles"]


def generate(pipelines: int, hours: int, seed: int) -> dict[str, Any]:
    """A seeded non-preemptive instance document (see the module docstring)."""
    rng = np.random.default_rng(seed)
    regions: dict[str, Any] = {}
    for i, tz in enumerate(ZONES[:3]):
        t = np.arange(hours)
        price = 80 + 45 * np.cos(2 * np.pi * (t - 6 * i) / 24) + rng.normal(0, 8, hours)
        ci = 350 + 150 * np.cos(2 * np.pi * (t - 6 * i - 3) / 24) + rng.normal(0, 20, hours)
        cap: dict[str, Any] = {}
        for g, base in (("H100", 32), ("A100", 16), ("L4", 16)):
            arr = np.full(hours, base)
            for _ in range(max(1, hours // 96)):  # maintenance dips
                a = int(rng.integers(0, hours - 8))
                arr[a : a + int(rng.integers(4, 12))] = base // 2
            cap[g] = arr.tolist()
        offers: dict[str, Any] = {}
        for g in GPUS:
            od: dict[str, Any] = {
                "usd_per_gpu_hour": round(LIST_PRICE[g] * rng.uniform(0.85, 1.15), 3)
            }
            if g == "A100" and i == 1:
                od.update(billing_granularity_hours=4, min_rental_hours=8)
            offers[g] = {"on_demand": od}
        if i == 0:
            offers["H100"]["reserved"] = {"usd_per_gpu_hour": 2.6, "min_gpus": 8, "max_gpus": 16}
        regions[f"r{i}"] = {
            "timezone": tz,
            "pue": round(float(rng.uniform(1.1, 1.5)), 2),
            "electricity": {"values": np.round(np.maximum(price, 5), 2).tolist()},
            "carbon_intensity": {"values": np.round(np.maximum(ci, 20), 1).tolist()},
            "capacity": cap,
            "offers": offers,
            "default_transfer_usd_per_gb": 0.02,
        }
    phases: list[dict[str, Any]] = []
    for k in range(pipelines):
        rel = int(rng.integers(0, max(1, hours // 3)))
        dl = min(hours, rel + int(rng.integers(hours // 2, hours - rel + 1)))
        home = f"r{int(rng.integers(0, 3))}"
        common: dict[str, Any] = {"release": rel, "deadline": dl}
        phases.append(
            {
                "name": f"prep{k}",
                "kind": "data_preparation",
                **common,
                "work": {"gpu_hours": float(rng.integers(20, 120)), "gpu": "A100"},
                "gpu_types": ["A100", "L4"],
                "output_gb": 200,
                "data": {"size_gb": 500, "home_region": home},
                "options": {"gpu_counts": [1, 2, 4, 8], "extra_spare_nodes": [0]},
            }
        )
        phases.append(
            {
                "name": f"train{k}",
                "kind": "fine_tuning",
                **common,
                "predecessors": [f"prep{k}"],
                "output_gb": 60,
                "work": {"gpu_hours": float(rng.integers(200, 900)), "gpu": "H100"},
                "gpu_types": ["H100", "A100"],
                "options": {
                    "gpu_counts": [8, 16, 32],
                    "extra_spare_nodes": [0],
                    "contracts": ["on_demand", "reserved"],
                },
            }
        )
        phases.append(
            {
                "name": f"eval{k}",
                "kind": "evaluation",
                **common,
                "predecessors": [f"train{k}"],
                "work": {"gpu_hours": float(rng.integers(8, 60)), "gpu": "A100"},
                "gpu_types": ["A100", "L4"],
                "options": {"gpu_counts": [1, 2, 4], "extra_spare_nodes": [0]},
            }
        )
    return {
        "name": f"bench-{pipelines}x3-{hours}h-s{seed}",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": hours},
        "gpu_types": GPUS,
        "regions": regions,
        "phases": phases,
        "families": {"nvidia": {"porting_usd": 0.0}},
    }


def instance(size: str, seed: int) -> Instance:
    pipes, hours = SIZES[size]
    return from_dict(generate(pipes, hours, seed), f"<bench {size}>", Path.cwd())


@dataclass
class Run:
    solver: str
    build_s: float = math.nan
    first_s: float = math.nan
    objective: float = math.nan
    bound: float = math.nan
    total_s: float = math.nan
    trace: list[tuple[float, float, float]] = field(default_factory=list)  # (s, obj, bound)
    note: str = ""
    plan: Plan | None = None

    def to_primal(self, best: float, tol: float = 0.01) -> float:
        for s, obj, _ in self.trace:
            if obj <= best + tol * abs(best):
                return s
        return math.nan

    def to_gap(self, tol: float = 0.01) -> float:
        for s, obj, b in self.trace:
            if math.isfinite(obj) and math.isfinite(b) and obj - b <= tol * abs(obj):
                return s
        return math.nan

    @property
    def gap(self) -> float:
        if not (math.isfinite(self.objective) and math.isfinite(self.bound)):
            return math.nan
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1e-9)


def run_cpsat(inst: Instance, limit: float, threads: int, mode: str) -> Run:
    t0 = time.perf_counter()
    prog: list[Progress] = []
    res = solve_cpsat(
        inst, SolveOptions(time_limit=limit, gap=0.0, threads=threads), mode=mode, progress=prog
    )
    build = res.stats.get("build_s", math.nan)
    run = Run(f"cpsat-{mode}", build_s=build, total_s=time.perf_counter() - t0)
    # progress seconds count from the start of the search; shift by the build time
    run.trace = [(p.seconds + build, p.objective, p.bound) for p in prog]
    if res.objective is not None:
        run.objective = res.objective
        run.first_s = run.trace[0][0] if run.trace else math.nan
    run.bound = res.bound if res.bound is not None else math.nan
    if run.trace and res.bound is not None:
        run.trace.append((run.total_s, run.trace[-1][1], res.bound))
    run.note = res.termination.value
    run.plan = res.plan
    return run


def _highs_progress(
    lp: LinearProgram,
    limit: float,
    threads: int,
    trace: list[tuple[float, float, float]],
    t0: float,
    presolve: bool,
    start: np.ndarray | None = None,
) -> Any:
    """HiGHS on the arrays (as formulations.lp.highs_runner.solve_highs, plus the presolve
    switch), sampling (objective, bound) through its MIP callbacks."""
    from formulations.lp.highs_runner import load_arrays, new_highs

    a = lp.arrays()
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "on" if presolve else "off")
    h.setOptionValue("time_limit", float(max(limit, 0.05)))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("threads", use_threads(threads))
    load_arrays(h, a, lp.offset, start)

    def sample(e: Any) -> None:
        d = e.data_out
        obj, bnd = float(d.mip_primal_bound), float(d.mip_dual_bound)
        if (
            math.isfinite(obj)
            and obj < 1e20
            and (not trace or obj < trace[-1][1] - 1e-9 or bnd > trace[-1][2] + 1e-6)
        ):
            trace.append((time.perf_counter() - t0, obj, bnd))

    h.cbMipInterrupt.subscribe(sample)
    h.cbMipImprovingSolution.subscribe(sample)
    h.run()
    return h


def run_highs(
    inst: Instance,
    limit: float,
    threads: int,
    presolve: bool,
    start: dict[str, tuple[int, int]] | None = None,
    t0: float | None = None,
    name: str = "",
) -> Run:
    t0 = time.perf_counter() if t0 is None else t0
    space = build_config_space(inst)
    data = build_data(inst, space)
    sm = build_starttime(data)
    run = Run(
        name or ("starttime-highs" + ("+pre" if presolve else "")), build_s=time.perf_counter() - t0
    )
    left = limit - (time.perf_counter() - t0)
    if left <= 0.05:
        run.note = "not built in time"
        run.total_s = time.perf_counter() - t0
        return run
    if start is None:  # as solve_starttime: the look-ahead (else greedy) schedule
        sched, _ = heuristic_schedule(data)
        start = choice_of(data, sched) if sched is not None else None
    x0 = point_of(sm, start, least_reserved(data, start)) if start is not None else None
    h = _highs_progress(sm.lp, left, threads, run.trace, t0, presolve, x0)
    run.total_s = time.perf_counter() - t0
    info = h.getInfo()
    if info.primal_solution_status == 2:
        x = np.asarray(h.getSolution().col_value)
        choice, reserved = choice_of_point(sm, x)
        run.objective = objective_of(data, choice, reserved)
        run.first_s = run.trace[0][0] if run.trace else math.nan
    if math.isfinite(info.mip_dual_bound):
        run.bound = float(info.mip_dual_bound)
        if run.trace:
            run.trace.append((run.total_s, run.trace[-1][1], run.bound))
    run.note = h.modelStatusToString(h.getModelStatus())
    run.note += f", {sm.lp.num_nonzeros / 1e6:.2f}M nz"
    return run


def run_portfolio(inst: Instance, limit: float, threads: int) -> Run:
    """CP-SAT for a share of the time, then HiGHS (presolve off) from its schedule, as
    solve_nonpreemptive(portfolio=True) does for "starttime"."""
    t0 = time.perf_counter()
    share = min(PORTFOLIO_SHARE * limit, PORTFOLIO_FIRST_MAX_S)
    cp = run_cpsat(inst, share, threads, "literal")
    start = None
    data = build_data(inst, build_config_space(inst))
    if cp.plan is not None:
        sched = {
            p.name: (next(c for c in data.space[p.name] if c.label == p.info["config"]), p.hours)
            for p in cp.plan.phases
        }
        start = choice_of(data, sched)
    hs = run_highs(inst, limit, threads, False, start, t0, "portfolio")
    run = Run("portfolio", build_s=cp.build_s, total_s=time.perf_counter() - t0)
    run.trace = sorted(cp.trace[:-1] + hs.trace) if cp.trace else hs.trace
    objs = [x for x in (cp.objective, hs.objective) if math.isfinite(x)]
    run.objective = min(objs) if objs else math.nan
    bounds = [x for x in (cp.bound, hs.bound) if math.isfinite(x)]
    run.bound = max(bounds) if bounds else math.nan
    run.first_s = run.trace[0][0] if run.trace else math.nan
    # the combined trace: best objective so far against best bound so far
    best_o, best_b, merged = math.inf, -math.inf, []
    for s_, o, b in run.trace:
        best_o, best_b = min(best_o, o), max(best_b, b)
        merged.append((s_, best_o, best_b))
    run.trace = merged
    run.note = f"cp-sat {share:.0f} s, then {hs.note}"
    return run


def fmt(x: float, spec: str = ".1f") -> str:
    return "-" if not math.isfinite(x) else format(x, spec)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--modes", nargs="+", default=["literal", "element"], choices=["literal", "element"]
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--highs",
        nargs="*",
        default=["off"],
        choices=["off", "on"],
        help="HiGHS runs of the start-time MILP, by presolve setting",
    )
    ap.add_argument(
        "--portfolio", action="store_true", help="also run CP-SAT then HiGHS from its schedule"
    )
    args = ap.parse_args(argv)
    header = (
        f"{'size':4} {'solver':19} {'build':>6} {'first':>6} {'1%prim':>7} {'1%gap':>6} "
        f"{'end':>6} {'objective':>12} {'gap':>8}  note"
    )
    print(f"time limit {args.time_limit:g} s, {args.threads} threads, seed {args.seed}")
    for size in args.sizes:
        inst = instance(size, args.seed)
        space = build_config_space(inst)
        nvar, nnz = estimate_nonzeros(inst, space)
        _, why = choose(inst)
        print(
            f"\n[{size}] {inst.name}: {len(inst.active_phases)} phases, "
            f"{space.size} configurations, {nvar:,} starts, {nnz:,} capacity nonzeros"
        )
        print(f"  auto -> {why}")
        print(header)
        runs = [run_cpsat(inst, args.time_limit, args.threads, m) for m in args.modes]
        for pre in args.highs:
            runs.append(run_highs(inst, args.time_limit, args.threads, pre == "on"))
        if args.portfolio:
            runs.append(run_portfolio(inst, args.time_limit, args.threads))
        best = min((r.objective for r in runs if math.isfinite(r.objective)), default=math.nan)
        for r in runs:
            print(
                f"{size:4} {r.solver:19} {fmt(r.build_s):>6} {fmt(r.first_s):>6} "
                f"{fmt(r.to_primal(best)):>7} {fmt(r.to_gap()):>6} {fmt(r.total_s):>6} "
                f"{fmt(r.objective, ',.2f'):>12} {fmt(100 * r.gap, '.3f') + '%':>8}  "
                f"{r.note}"
            )


if __name__ == "__main__":
    main()
