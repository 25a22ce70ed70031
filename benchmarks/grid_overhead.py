"""Overhead of the grid machinery over the bare solves it runs.

Solves N variants of a base instance (default 1,000: ``--base tiny``: tests/data/tiny.yaml,
east PUE x east price multiplier x west price multiplier, 10 values each; ``--base
week-7b``: instances/week-7b.yaml, Texas PUE x Texas price x Germany price) with the
``--executor`` (local or ray) on W workers (default 2) and reports

- ``sum(solve_s)``: the time spent inside ``planner.solve.solve``, measured in the workers;
- ``wall x W``: the worker-seconds the grid took, from the call to ``solve_grid`` (grid
  validation, worker start-up, dispatch, storing every result, reading the table back);
- overhead = ``(wall x W - sum(solve_s)) / sum(solve_s)``, the target being under 5%, and
  per scenario ``(wall x W - sum(solve_s)) / N`` seconds (issue 27's target for week-7b's
  variants: at most 0.3 s: process start, dispatch, store);
- the same over the steady state only (first scenario started to last finished, worker
  clocks), which leaves out start-up and the final read-back;
- medians per scenario of ``solve_s``, the variant build time and the worker-side time
  outside the solve (``finished - started - solve_s``: build, plan JSON, test hooks);
- per scenario, its slot on its worker beyond its solve (from the worker's previous
  scenario finishing, or its own start for a worker's first, to its finish, minus
  ``solve_s``): median and mean, start-up and read-back left out;
- the expansion and validation of the grid per scenario (before the call, not in the wall);
- every stored plan checked again, after the run and outside the wall time, by the
  independent checker (``planner.checker.verify``) against its scenario's instance.

The grid itself runs no attribution (``trainplan solve``'s baseline solves), so the
overhead holds none. With ``--executor ray`` the benchmark starts a private Ray cluster of
``--workers`` CPUs itself (``ray.init(address="local")``, never attaching to a cluster
another process runs), times that start-up apart from the wall time, checks that the Ray
workers import the same ``planner`` as this process, and shuts the cluster down with its
own handle at the end.

``cpu_s`` (the worker's CPU time inside the solve) against ``solve_s`` shows contention:
on a machine busy with other work, solves wait for a CPU and both figures move.

Run (with ``PYTHONPATH=.`` so that the checkout's code is the one imported, here and in
the workers): ``.venv/bin/python benchmarks/grid_overhead.py [--n 1000] [--workers 2]
[--base week-7b] [--executor ray]``; ``--json FILE`` appends the figures as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import planner
from planner.checker import plan_from_dict, verify
from planner.instance import read
from planner.interfaces.grid import solve_grid
from planner.interfaces.grid.spec import GridSpec, grid_from_instance

ROOT = Path(__file__).resolve().parents[1]


#: Base instance and the three regions whose PUE and prices vary: (file, pue region, price
#: region, price region).
BASES: dict[str, tuple[Path, str, str, str]] = {
    "tiny": (ROOT / "tests" / "data" / "tiny.yaml", "east", "east", "west"),
    "week-7b": (ROOT / "instances" / "week-7b.yaml", "us-tex", "us-tex", "eu-de"),
}


def axes(n: int, base: str = "tiny") -> list[dict[str, object]]:
    """Three axes whose product has at least n scenarios (cube root per axis)."""
    _, pue, first, second = BASES[base]
    k = max(1, round(n ** (1 / 3)))
    while k**3 < n:
        k += 1
    return [
        {"path": f"regions.{pue}.pue", "values": [round(1.1 + 0.05 * i, 3) for i in range(k)]},
        {
            "multiply": f"regions.{first}.electricity",
            "values": [round(0.5 + 0.1 * i, 2) for i in range(k)],
        },
        {
            "multiply": f"regions.{second}.electricity",
            "values": [round(0.5 + 0.1 * i, 2) for i in range(k)],
        },
    ]


def start_ray(workers: int, niceness: int | None = None) -> tuple[ModuleType, float]:
    """A private Ray cluster of ``workers`` CPUs on this machine and the seconds it took to
    start (``address="local"``: never a cluster another process started). Ray runs its
    workers at niceness 15 (``worker_niceness``); ``niceness`` sets another, so that on a
    machine shared with other work they compete for the cores as local workers (niceness
    0) do."""
    import ray

    t0 = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        _system_config=None if niceness is None else {"worker_niceness": niceness},
    )
    return ray, time.perf_counter() - t0


def ray_worker_facts(ray: ModuleType) -> tuple[str, int]:
    """Where a Ray worker imports ``planner`` from (it must be this process's code) and the
    worker's niceness."""

    def where() -> tuple[str, int]:
        import planner

        return str(planner.__file__), os.nice(0)

    file, nice = ray.get(ray.remote(num_cpus=1)(where).remote())
    return str(file), int(nice)


def verify_plans(spec: GridSpec, df: Any) -> tuple[int, int, list[str]]:
    """Plans stored, plans the independent checker accepts against their scenario's
    instance, and the IDs of the scenarios without an accepted plan."""
    by_id = {sc.id: sc for sc in spec.scenarios}
    plans, good, bad = 0, 0, []
    for sid, text in zip(df["id"], df["plan"], strict=True):
        if not isinstance(text, str):
            bad.append(sid)
            continue
        plans += 1
        inst = spec.base.replace(spec.updates_of(by_id[sid]))
        if verify(inst, plan_from_dict(json.loads(text), sid)).ok:
            good += 1
        else:
            bad.append(sid)
    return plans, good, bad


def slot_overheads(df: Any) -> list[float]:
    """Per scenario, the time its worker spent on it beyond its solve: from the worker's
    previous scenario finishing (its own start for a worker's first) to its finish, minus
    ``solve_s`` (dispatch, build, plan JSON, and waiting for the driver)."""
    out: list[float] = []
    for _, w in df.sort_values("started_at").groupby("worker_pid"):
        prev: datetime | None = None
        for s, f, v in zip(w["started_at"], w["finished_at"], w["solve_s"], strict=True):
            fin = datetime.fromisoformat(f)
            out.append((fin - (prev or datetime.fromisoformat(s))).total_seconds() - float(v))
            prev = fin
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="scenarios (rounded up to a cube)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--solver", default="auto")
    ap.add_argument("--store", type=Path, default=None, help="keep the store here")
    ap.add_argument("--base", choices=sorted(BASES), default="tiny")
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    ap.add_argument(
        "--ray-niceness",
        type=int,
        default=None,
        help="the Ray workers' niceness (default: Ray's, 15); 0 as local workers",
    )
    ap.add_argument("--json", type=Path, default=None, help="append the figures here")
    args = ap.parse_args()
    load_before = os.getloadavg()

    base = read(BASES[args.base][0])
    t0 = time.perf_counter()
    spec = grid_from_instance(base, axes(args.n, args.base), name="overhead")
    t_valid = time.perf_counter() - t0
    store = args.store or Path(tempfile.mkdtemp()) / "overhead.sqlite"
    if store.exists():
        raise SystemExit(f"{store} exists; the benchmark needs a fresh store")
    ray, ray_start, ray_file, ray_nice = None, 0.0, None, None
    if args.executor == "ray":
        ray, ray_start = start_ray(args.workers, args.ray_niceness)
    try:
        called = datetime.now(UTC)
        t1 = time.perf_counter()
        df = solve_grid(
            spec,
            workers=args.workers,
            executor=args.executor,
            store=store,
            solver=args.solver,
            time_limit=60,
        )
        wall = time.perf_counter() - t1
        load_after = os.getloadavg()
        if ray is not None:
            ray_file, ray_nice = ray_worker_facts(ray)
    finally:
        if ray is not None:
            ray.shutdown()
    if ray_file is not None and ray_file != planner.__file__:
        raise SystemExit(f"the Ray workers ran {ray_file}, not {planner.__file__}")
    t2 = time.perf_counter()
    plans, verified, unverified = verify_plans(spec, df)
    t_verify = time.perf_counter() - t2

    n = len(df)
    solve_s = df["solve_s"].astype(float)
    busy = wall * args.workers
    total = float(solve_s.sum())
    start = min(datetime.fromisoformat(s) for s in df["started_at"])
    end = max(datetime.fromisoformat(s) for s in df["finished_at"])
    steady = (end - start).total_seconds() * args.workers
    per = [
        (datetime.fromisoformat(f) - datetime.fromisoformat(s)).total_seconds() - v
        for s, f, v in zip(df["started_at"], df["finished_at"], solve_s, strict=True)
    ]
    gaps: list[float] = []  # a worker's idle time between two scenarios (dispatch, IPC)
    for _, w in df.sort_values("started_at").groupby("worker_pid"):
        ends = [datetime.fromisoformat(x) for x in w["finished_at"]]
        starts = [datetime.fromisoformat(x) for x in w["started_at"]]
        gaps += [(b - a).total_seconds() for a, b in zip(ends, starts[1:], strict=False)]
    slots = slot_overheads(df)
    counts = {str(k): int(v) for k, v in df["status"].value_counts().items()}
    print(
        f"scenarios: {n} ({counts}), base: {args.base}, executor: {args.executor}, "
        f"workers: {args.workers}, solver: {args.solver}, load average (1 min) "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} CPUs"
    )
    print(
        f"expand + validate {n} scenarios: {t_valid:.2f} s, {t_valid / n * 1e3:.2f} ms per "
        "scenario (not in the wall time below)"
    )
    if ray is not None:
        print(
            f"Ray cluster start-up: {ray_start:.2f} s (not in the wall time below); Ray "
            f"workers' niceness: {ray_nice}"
        )
    print(f"wall (solve_grid): {wall:.2f} s -> {busy:.1f} worker-s")
    print(f"sum solve_s: {total:.1f} s; sum cpu_s: {float(df['cpu_s'].sum()):.1f} s")
    print(
        f"median solve_s: {statistics.median(solve_s) * 1e3:.1f} ms, median build_s: "
        f"{statistics.median(df['build_s']) * 1e3:.2f} ms, median worker time outside the "
        f"solve: {statistics.median(per) * 1e3:.2f} ms"
    )
    print(
        f"start-up (call to first scenario started): {(start - called).total_seconds():.2f} s;"
        f" wind-down (last finished to return): "
        f"{wall - (end - called).total_seconds():.2f} s"
    )
    print(
        f"gaps between a worker's scenarios: median {statistics.median(gaps) * 1e3:.2f} ms, "
        f"sum {sum(gaps):.2f} worker-s"
    )
    print(
        f"overhead, whole call: {(busy - total) / total:.1%} "
        f"((wall x workers - sum solve_s) / sum solve_s)"
    )
    print(f"overhead, steady state (first start to last finish): {(steady - total) / total:.1%}")
    print(f"overhead per scenario: {(busy - total) / n:.3f} s (target for week-7b: <= 0.3 s)")
    print(
        f"slot beyond the solve per scenario: median {statistics.median(slots) * 1e3:.2f} ms,"
        f" mean {statistics.mean(slots) * 1e3:.2f} ms"
    )
    missing = f"; no verified plan: {', '.join(unverified[:5])}" if unverified else ""
    print(
        f"plans verified by the checker: {verified} of {plans} plans, {n} scenarios "
        f"({t_verify:.1f} s, after the run){missing}"
    )
    print(f"store: {store}")
    if args.json is not None:
        figures = {
            "base": args.base,
            "executor": args.executor,
            "workers": args.workers,
            "scenarios": n,
            "status": counts,
            "validate_s": t_valid,
            "validate_per_scenario_s": t_valid / n,
            "ray_start_s": ray_start if ray is not None else None,
            "ray_worker_niceness": ray_nice,
            "wall_s": wall,
            "sum_solve_s": total,
            "median_solve_s": statistics.median(solve_s),
            "startup_s": (start - called).total_seconds(),
            "wind_down_s": wall - (end - called).total_seconds(),
            "overhead_per_scenario_s": (busy - total) / n,
            "overhead_share": (busy - total) / total,
            "slot_overhead_median_s": statistics.median(slots),
            "slot_overhead_mean_s": statistics.mean(slots),
            "plans": plans,
            "plans_verified": verified,
            "load_before": load_before,
            "load_after": load_after,
        }
        with args.json.open("a") as fh:
            fh.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
