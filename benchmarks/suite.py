"""The hard-instance suite: does the solver get good plans where the problem is hard?

    .venv/bin/python benchmarks/suite.py [--family capacity crowded ...] [--time-limit 60]
        [--repeat 3] [--threads 1] [--reference] [--jsonl suite.jsonl] [--mem-limit-gb 8]

Instances come from ``benchmarks/generate.py`` (families ``size``, ``capacity``,
``crowded``, ``tight``, ``shipped``, ``long``, ``dag``; ``--family`` takes family or instance
names). Every solve runs in a fresh process (``--one``), so its peak memory is its own; the
parent samples the resident memory of that process and all its descendants (the HiGHS child
included) from /proc every 50 ms, and stops the process tree if it passes ``--mem-limit-gb``
(the machine is shared; the issue's target is 8 GB). The child also reports
``getrusage(RUSAGE_SELF)`` and ``getrusage(RUSAGE_CHILDREN)`` ``ru_maxrss``; the HiGHS child
is a direct subprocess of the solve (``python -m formulations.lp.highs_child``), reaped by it, so
RUSAGE_CHILDREN covers it (a fork server, which older versions used, is still reaped first).

Per instance (medians over ``--repeat``):

- time to the first plan and time to a proved 1% gap. When ``planner.solve`` takes an
  ``on_progress`` callback, both come from its events (elapsed_s, incumbent, bound) in the main
  solve. Otherwise: time to 1% is the run time of a separate solve with ``gap=0.01`` (if it
  reaches 1% within the time limit), and time to the first plan is the run time of the solve
  with the shortest time limit of ``--ladder`` that returns a plan (each in its own process);
- the gap at the time limit (the main solve: ``--time-limit``, default 60 s, at ``--gap``,
  default ``planner.solve``'s), its termination and status, and whether the plan verified
  (``planner.checker.verify``);
- peak memory of the process tree of the main solve (sampled), and ru_maxrss;
- how close the plan comes to capacity: peak use per (region, GPU) pool against capacity;
  and what removing every capacity limit would save (the instance solved again with every
  capacity x1000). An instance whose capacity never binds is labelled so: the plan found
  without capacity limits fits the real capacity, so capacity is not what is being measured;
- with ``--reference``: the plain hourly MILP (``solve_milp(prune=False, warm_start=False,
  backend="highs")`` at gap 1%), its time to 1% or final gap, and the ratio of its time to 1%
  to the main solver's.

Output: a table on stdout and one JSON line per run and per instance summary (``--jsonl``).
Times are wall seconds on the machine the suite runs on; a shared machine makes them noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

#: Time limits tried, shortest first, to find the time to the first plan without a progress
#: callback (each capped at --time-limit; the time limit itself is always the last).
LADDER = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
ONE_PCT = 0.01
#: Capacity multiplier of the "no capacity limits" variant.
FREE_FACTOR = 1000
SAMPLE_S = 0.05
#: Utilisation from which a pool counts as "at capacity" in an hour (GPU counts are exact).
AT_CAPACITY = 1.0 - 1e-9


# ----------------------------------------------------------------------------- memory


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process, from /proc/<pid>/stat (the 4th field, after the
    command name in parentheses, which may itself hold spaces or parentheses)."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            out[int(entry)] = int(fields[1])
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants that are alive now."""
    kids: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        kids.setdefault(parent, []).append(child)
    seen: list[int] = []
    stack = [pid]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.append(p)
        stack.extend(kids.get(p, []))
    return seen


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process tree every ``SAMPLE_S`` seconds; keeps the peak and
    the largest number of processes seen; kills the tree's process group (the child runs in
    its own session) once the sum passes ``limit_bytes``."""

    def __init__(self, pid: int, limit_bytes: float) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.limit = limit_bytes
        self.peak = 0
        self.processes = 0
        self.killed = False
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            tree = process_tree(self.pid)
            total = sum(rss_bytes(p) for p in tree)
            self.peak = max(self.peak, total)
            self.processes = max(self.processes, len(tree))
            if total > self.limit and not self.killed:
                self.killed = True
                _kill_group(self.pid)
            self._stop_event.wait(SAMPLE_S)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (our child and what it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- one solve


def _progress_supported() -> bool:
    import planner

    return "on_progress" in inspect.signature(planner.solve).parameters


def _default_gap() -> float:
    import planner

    default = inspect.signature(planner.solve).parameters["gap"].default
    return float(default) if isinstance(default, int | float) else 1e-4


def _event_fields(args: tuple[Any, ...]) -> tuple[float, float | None, float | None]:
    """(elapsed_s, incumbent, bound) from a progress event: an object with those attributes,
    a mapping with those keys, or a tuple in that order (or the three as arguments)."""
    ev: Any = args[0] if len(args) == 1 else args
    if isinstance(ev, Mapping):
        vals = (ev.get("elapsed_s"), ev.get("incumbent"), ev.get("bound"))
    elif hasattr(ev, "elapsed_s"):
        vals = (ev.elapsed_s, getattr(ev, "incumbent", None), getattr(ev, "bound", None))
    else:
        vals = tuple(ev)[:3]

    def num(x: Any) -> float | None:
        return None if x is None or not math.isfinite(float(x)) else float(x)

    elapsed = num(vals[0])
    return (math.nan if elapsed is None else elapsed), num(vals[1]), num(vals[2])


def _gap(incumbent: float | None, bound: float | None) -> float | None:
    if incumbent is None or bound is None:
        return None
    return max(0.0, incumbent - bound) / max(abs(incumbent), 1e-9)


def trace_times(
    events: Iterable[tuple[float, float | None, float | None]], tol: float = ONE_PCT
) -> tuple[float | None, float | None]:
    """(time to the first plan, time to a proved gap <= tol) from progress events."""
    first = to_tol = None
    for elapsed, inc, bnd in events:
        if inc is not None and first is None:
            first = elapsed
        g = _gap(inc, bnd)
        if g is not None and g <= tol + 1e-12 and to_tol is None:
            to_tol = elapsed
    return first, to_tol


def capacity_of(inst: Any) -> dict[tuple[str, str], Any]:
    """GPUs available per (region, GPU type) and hour (numpy arrays), from the instance."""
    import numpy as np

    return {k: np.asarray(v, dtype=float) for k, v in inst.capacity.items()}


def pool_use(inst: Any, plan: Any) -> list[dict[str, Any]]:
    """Per (region, GPU) pool the plan uses: its peak GPUs (working + spare) against the
    capacity in that hour, the highest utilisation and the hours at capacity, busiest first."""
    import numpy as np

    caps = capacity_of(inst)
    used: dict[tuple[str, str], Any] = {}
    for ph in plan.phases:
        key = (ph.region, ph.gpu)
        arr = used.setdefault(key, np.zeros(inst.hours))
        arr[list(ph.hours)] += float(ph.gpus) + float(ph.spare_gpus)
    rows: list[dict[str, Any]] = []
    for (r, g), arr in used.items():
        cap = caps.get((r, g), np.zeros(inst.hours))
        active = arr > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(cap > 0, arr / np.where(cap > 0, cap, 1), np.where(active, np.inf, 0))
        worst = int(np.argmax(util))
        peak = int(np.argmax(arr))
        rows.append(
            {
                "pool": f"{r}/{g}",
                "peak_gpus": float(arr[peak]),
                "capacity_at_peak": float(cap[peak]),
                "max_utilisation": float(util[worst]),
                "worst_hour": worst,
                "used_at_worst": float(arr[worst]),
                "capacity_at_worst": float(cap[worst]),
                "hours_at_capacity": int(np.sum(active & (util >= AT_CAPACITY))),
                "hours_used": int(np.sum(active)),
            }
        )
    rows.sort(key=lambda x: -x["max_utilisation"])
    return rows


def free_instance(inst: Any) -> Any:
    """The instance with every (region, GPU) capacity multiplied by FREE_FACTOR (hour by hour),
    as a validated variant (``inst.replace``)."""
    updates: dict[str, Any] = {}
    for rname, region in inst.spec.regions.items():
        for g, v in region.capacity.items():
            # a number stays a number; a list or any series form becomes the hourly list
            updates[f"regions.{rname}.capacity.{g}"] = (
                int(v) * FREE_FACTOR
                if isinstance(v, int)
                else [int(x) * FREE_FACTOR for x in inst.capacity[(rname, g)]]
            )
    return inst.replace(updates)


def reap_forkserver() -> bool:
    """Stop multiprocessing's fork server, if one runs, and wait for it: a child started
    through it is reaped by it, so only once the server itself is reaped does
    ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of this process cover that child (Linux propagates
    the largest reaped descendant's peak). The HiGHS child no longer goes through a fork server
    (``formulations/lp/highs_runner`` starts ``python -m formulations.lp.highs_child``); this stays
    for other multiprocessing users. Uses the private ``ForkServer._stop`` (CPython 3.8+); returns
    whether a server was stopped."""
    try:
        from multiprocessing import forkserver

        server = getattr(forkserver, "_forkserver", None)
        if server is None or getattr(server, "_forkserver_pid", None) is None:
            return False
        server._stop()
        return True
    except Exception:  # a benchmark aid: without it ru_maxrss children just reads lower
        return False


def _result_record(res: Any, wall: float) -> dict[str, Any]:
    def enum(x: Any) -> Any:
        return getattr(x, "value", x)

    return {
        "solver": getattr(res, "solver", None),
        "termination": enum(res.termination),
        "status": enum(res.status),
        "objective": res.objective,
        "bound": res.bound,
        "gap": res.gap,
        "runtime_s": res.runtime_s,
        "wall_s": wall,
        "message": (res.message or "")[:500],
        "stats": {k: v for k, v in (res.stats or {}).items() if isinstance(v, int | float)},
        "has_plan": res.plan is not None,
    }


def run_one(
    name: str,
    mode: str,
    time_limit: float,
    gap: float,
    threads: int,
    seed: int,
    partial: Path | None = None,
) -> dict[str, Any]:
    """One solve in this process (called in the child). Modes: main, to1, first (with the
    given time limit), reference, free. What is known before the solve (the instance's size,
    its load time) is written to ``partial`` first, so that a run stopped for memory still
    reports it."""
    from generate import load

    import planner
    from planner.checker import verify

    t_load = time.perf_counter()
    inst = load(name, seed)
    load_s = time.perf_counter() - t_load
    rec: dict[str, Any] = {
        "instance": name,
        "mode": mode,
        "time_limit": time_limit,
        "gap_asked": gap,
        "threads": threads,
        "seed": seed,
        "load_s": load_s,
        "phases": len(inst.phases),
        "hours": inst.hours,
        "regions": len(inst.spec.regions),
    }
    if partial is not None:
        partial.write_text(dumps(rec))
    events: list[tuple[float, float | None, float | None]] = []
    kwargs: dict[str, Any] = {"time_limit": time_limit, "gap": gap, "threads": threads}
    target = inst
    if mode == "main" and _progress_supported():

        def on_progress(*args: Any) -> None:
            events.append(_event_fields(args))

        kwargs["on_progress"] = on_progress
    if mode == "to1":
        kwargs["gap"] = ONE_PCT
    if mode == "free":
        target = free_instance(inst)
    t0 = time.perf_counter()
    if mode == "reference":
        from formulations.pipeline import solve_milp
        from planner.model.options import SolveOptions

        opts = SolveOptions(time_limit=time_limit, gap=ONE_PCT, threads=threads, backend="highs")
        res = solve_milp(target, opts, prune=False, warm_start=False)
    else:
        res = planner.solve(target, **kwargs)
    wall = time.perf_counter() - t0
    rec.update(_result_record(res, wall))
    if events:
        first, to1 = trace_times(events)
        rec.update(progress_events=len(events), first_plan_s=first, to_1pct_s=to1)
    if res.plan is not None:
        rec["verified"] = bool(verify(inst if mode != "free" else target, res.plan).ok)
        if mode == "free":
            fit = verify(inst, res.plan)
            rec["fits_real_capacity"] = "capacity" not in fit.kinds
            rec["pool_use_vs_real_capacity"] = pool_use(inst, res.plan)[:5]
        else:
            rec["pool_use"] = pool_use(inst, res.plan)
    rec["forkserver_reaped"] = reap_forkserver()
    rec["ru_maxrss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rec["ru_maxrss_children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return rec


# ----------------------------------------------------------------------------- parent


def spawn(
    name: str,
    mode: str,
    time_limit: float,
    gap: float,
    threads: int,
    seed: int,
    mem_limit_gb: float,
) -> dict[str, Any]:
    """Run ``run_one`` in a fresh process (its own session), sampling the tree's memory."""
    with tempfile.TemporaryDirectory(prefix="trainplan-suite-") as tmp:
        out = Path(tmp) / "result.json"
        log = Path(tmp) / "log.txt"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--one",
            name,
            "--mode",
            mode,
            "--time-limit",
            repr(time_limit),
            "--gap",
            repr(gap),
            "--threads",
            str(threads),
            "--seed",
            str(seed),
            "--result-file",
            str(out),
        ]
        wall_cap = 3 * time_limit + 180.0  # loading, building, a watchdog that failed
        t0 = time.perf_counter()
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
            sampler = TreeSampler(proc.pid, mem_limit_gb * 1024**3)
            sampler.start()
            timer = threading.Timer(wall_cap, _kill_group, args=(proc.pid,))
            timer.start()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            timer.cancel()
            _kill_group(proc.pid)  # anything the child left behind in its group
            sampler.stop()
        process_s = time.perf_counter() - t0
        rec: dict[str, Any]
        if out.exists() and proc.returncode == 0:
            rec = json.loads(out.read_text())
        else:
            tail = log.read_text(errors="replace")[-800:]
            why = (
                f"killed by the suite: process tree above {mem_limit_gb:g} GB"
                if sampler.killed
                else (
                    f"killed by the suite after {wall_cap:.0f} s (wall cap)"
                    if process_s >= wall_cap - 1
                    else f"exit status {proc.returncode}"
                )
            )
            before = out.with_suffix(".partial")
            rec = json.loads(before.read_text()) if before.exists() else {}
            rec |= {
                "instance": name,
                "mode": mode,
                "time_limit": time_limit,
                "termination": "killed_memory" if sampler.killed else "crashed",
                "status": "none",
                "objective": None,
                "bound": None,
                "gap": None,
                "has_plan": False,
                "message": f"{why}; output tail: {tail}",
            }
        rec.update(
            record="run",
            process_s=process_s,
            peak_tree_mb=sampler.peak / 1024**2,
            max_processes=sampler.processes,
            ru_maxrss_wait4_mb=usage.ru_maxrss / 1024,
            killed_memory=sampler.killed,
        )
        return rec


def ladder(time_limit: float, steps: Iterable[float]) -> list[float]:
    """The ladder's limits below ``time_limit``, then ``time_limit`` itself."""
    return [s for s in steps if s < time_limit] + [time_limit]


def _reached_1pct(rec: Mapping[str, Any]) -> bool:
    g = rec.get("gap")
    return bool(rec.get("has_plan")) and g is not None and g <= ONE_PCT + 1e-9


def measure(name: str, args: argparse.Namespace, progress: bool) -> list[dict[str, Any]]:
    """All runs of one instance for one repeat: main, and the to-1% / first-plan solves
    when there is no progress callback, and the reference if asked."""
    run = lambda mode, limit: spawn(  # noqa: E731
        name, mode, limit, args.gap, args.threads, args.seed, args.mem_limit_gb
    )
    main = run("main", args.time_limit)
    runs = [main]
    if not progress:
        main["to_1pct_s"] = main["first_plan_s"] = main["first_plan_limit"] = None
        if main.get("termination") not in ("infeasible", "no_configuration"):
            to1 = run("to1", args.time_limit)
            runs.append(to1)
            if _reached_1pct(to1):
                main["to_1pct_s"] = to1["runtime_s"]
            # a solve that returned a plan after r seconds bounds the time to the first plan
            known = [r["runtime_s"] for r in (main, to1) if r.get("has_plan")]
            cap = min(known, default=math.inf)
            # no plan at the full time limit, twice, and not stopped for memory: shorter
            # limits will not find one either (a run stopped for memory may have lost a plan
            # that a shorter limit returns)
            stopped = any(r.get("killed_memory") for r in (main, to1))
            for limit in ladder(args.time_limit, args.ladder) if known or stopped else []:
                if limit >= cap:
                    main["first_plan_s"], main["first_plan_limit"] = cap, None
                    break
                first = run("first", limit)
                runs.append(first)
                if first.get("has_plan"):
                    main["first_plan_s"] = min(first["runtime_s"], cap)
                    main["first_plan_limit"] = limit
                    break
    if args.reference:
        ref = run("reference", args.time_limit)
        ref["to_1pct_s"] = ref["runtime_s"] if _reached_1pct(ref) else None
        runs.append(ref)
    return runs


def _median(values: list[float | None], missing: float = math.inf) -> float | None:
    """Median with ``None`` counted as ``missing`` (not reached: beyond the time limit)."""
    if not values:
        return None
    vals = [missing if v is None else float(v) for v in values]
    m = statistics.median(vals)
    return None if math.isinf(m) else m


def binding_label(main: Mapping[str, Any], free: Mapping[str, Any] | None) -> dict[str, Any]:
    """Whether capacity binds, from the main plan and the plan found with capacity x1000."""
    out: dict[str, Any] = {"free_objective": None, "saving_without_capacity": None}
    if main.get("termination") in ("infeasible", "no_configuration"):
        out["capacity"] = "infeasible"
        return out
    if free is None:
        out["capacity"] = "not measured"
        return out
    if not free.get("has_plan"):
        out["capacity"] = "unknown (no plan without capacity limits)"
        return out
    fobj = free.get("objective")
    out["free_objective"] = fobj
    obj, bound = main.get("objective"), main.get("bound")
    if not main.get("has_plan"):
        out["capacity"] = "no plan with capacity" + (
            "; the plan without limits fits it" if free.get("fits_real_capacity") else ""
        )
        return out
    if obj is not None and fobj is not None:
        out["saving_without_capacity"] = (obj - fobj) / max(abs(obj), 1e-9)
    if free.get("fits_real_capacity"):
        out["capacity"] = "NOT BINDING (the plan found without capacity limits fits)"
    elif bound is not None and fobj is not None and bound > fobj + 1e-6 * abs(fobj):
        out["capacity"] = "binds (proved: bound with capacity > cost without)"
    else:
        out["capacity"] = "binds (the plan without capacity limits breaks capacity)"
    return out


#: Seconds within which "proved at once" must happen.
AT_ONCE_S = 1.0


def target_met(expect: str | None, mains: list[dict[str, Any]]) -> bool | None:
    """Whether the main runs meet an instance's stated expectation (generate.EXPECT):
    "infeasible (proved at once)" needs every run to end "infeasible" within AT_ONCE_S."""
    if expect is None:
        return None
    if expect.startswith("infeasible"):
        return all(
            r.get("termination") == "infeasible" and float(r.get("runtime_s") or 1e9) <= AT_ONCE_S
            for r in mains
        )
    raise ValueError(f"no check for the expectation {expect!r}")


def summarise(name: str, runs: list[dict[str, Any]], free: dict[str, Any] | None) -> dict[str, Any]:
    from generate import EXPECT, family_of

    mains = [r for r in runs if r["mode"] == "main"]
    refs = [r for r in runs if r["mode"] == "reference"]
    m0 = mains[-1]
    s: dict[str, Any] = {
        "record": "summary",
        "instance": name,
        "family": family_of(name),
        "repeats": len(mains),
        "phases": m0.get("phases"),
        "hours": m0.get("hours"),
        "regions": m0.get("regions"),
        "first_plan_s": _median([r.get("first_plan_s") for r in mains]),
        "to_1pct_s": _median([r.get("to_1pct_s") for r in mains]),
        "gap_at_limit": _median([r.get("gap") for r in mains]),
        "gap_at_limit_worst": max(
            (r["gap"] for r in mains if r.get("gap") is not None), default=None
        ),
        "termination": sorted({str(r.get("termination")) for r in mains}),
        "status": sorted({str(r.get("status")) for r in mains}),
        "objective": _median([r.get("objective") for r in mains]),
        "bound": _median([r.get("bound") for r in mains], missing=-math.inf),
        "runtime_s": _median([r.get("runtime_s") for r in mains]),
        "peak_tree_mb": _median([r.get("peak_tree_mb") for r in mains]),
        "ru_maxrss_self_mb": _median([r.get("ru_maxrss_self_mb") for r in mains]),
        "ru_maxrss_children_mb": _median([r.get("ru_maxrss_children_mb") for r in mains]),
        "verified": all(bool(r.get("verified")) for r in mains if r.get("has_plan"))
        if any(r.get("has_plan") for r in mains)
        else None,
        "pool_use": m0.get("pool_use", [])[:8],
        "expect": EXPECT.get(name),
        "target_met": target_met(EXPECT.get(name), mains),
        # messages of runs that found no plan or failed (the others are solver chatter)
        "messages": sorted(
            {
                r.get("message", "")[:300]
                for r in mains
                if r.get("message") and (not r.get("has_plan") or r.get("termination") == "error")
            }
        ),
    }
    if refs:
        s["reference_to_1pct_s"] = _median([r.get("to_1pct_s") for r in refs])
        s["reference_gap"] = _median([r.get("gap") for r in refs])
        s["reference_termination"] = sorted({str(r.get("termination")) for r in refs})
        s["reference_peak_tree_mb"] = _median([r.get("peak_tree_mb") for r in refs])
        a, b = s["reference_to_1pct_s"], s["to_1pct_s"]
        limit = refs[0]["time_limit"]
        if a is not None and b:
            s["reference_ratio"] = a / b
            s["reference_ratio_text"] = f"{a / b:.1f}x"
        elif a is None and all(r.get("killed_memory") for r in refs):
            # stopped for memory, not by the clock: no ratio to speak of
            s["reference_ratio"] = None
            s["reference_ratio_text"] = "over the memory cap"
        elif a is None and b:
            s["reference_ratio"] = None
            s["reference_ratio_text"] = f">{limit / b:.1f}x"
        else:
            s["reference_ratio"] = None
            s["reference_ratio_text"] = "n/a"
    s.update(binding_label(m0, free))
    if free is not None:
        s["free_pool_use"] = free.get("pool_use_vs_real_capacity", [])[:3]
        s["free_gap"] = free.get("gap")
    return s


def _fmt_s(x: float | None, limit: float) -> str:
    return f">{limit:g}" if x is None else f"{x:.2f}"


def _fmt_mem(s: Mapping[str, Any]) -> str:
    if s.get("peak_tree_mb") is None:
        return "-"
    own, kids = s.get("ru_maxrss_self_mb"), s.get("ru_maxrss_children_mb")
    extra = "" if own is None else f" ({own:.0f}/{kids or 0:.0f})"
    return f"{s['peak_tree_mb']:.0f}{extra}"


def _fmt_pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2%}"


def _fmt_pools(rows: list[dict[str, Any]], n: int = 2) -> str:
    parts = []
    for r in rows[:n]:
        parts.append(
            f"{r['pool']} {r['used_at_worst']:g}/{r['capacity_at_worst']:g}"
            f" ({r['max_utilisation']:.0%}, {r['hours_at_capacity']} h full)"
        )
    return "; ".join(parts) or "-"


def print_table(summaries: list[dict[str, Any]], args: argparse.Namespace) -> None:
    tl = args.time_limit
    head = [
        "instance",
        "phases x h",
        "first plan s",
        "to 1% s",
        f"gap @{tl:g}s",
        "termination / status",
        "peak MB tree (maxrss self/children)",
        "verified",
    ]
    if args.reference:
        head += ["ref to 1% s", "ref gap", "ratio"]
    head += ["busiest pools (used/cap at worst hour)", "capacity", "saving w/o cap"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for s in summaries:
        term = "/".join(s["termination"]) + " / " + "/".join(s["status"])
        if s.get("expect"):
            term += f" (target {s['expect']}: {'met' if s['target_met'] else 'MISSED'})"
        row = [
            s["instance"],
            f"{s['phases']} x {s['hours']}",
            _fmt_s(s["first_plan_s"], tl),
            _fmt_s(s["to_1pct_s"], tl),
            _fmt_pct(s["gap_at_limit"]),
            term,
            _fmt_mem(s),
            str(s["verified"]),
        ]
        if args.reference:
            row += [
                _fmt_s(s.get("reference_to_1pct_s"), tl),
                _fmt_pct(s.get("reference_gap")),
                s.get("reference_ratio_text", "n/a"),
            ]
        row += [
            _fmt_pools(s["pool_use"]),
            s["capacity"],
            _fmt_pct(s.get("saving_without_capacity")),
        ]
        print("| " + " | ".join(row) + " |")
    print()
    print("Pool use of the plan found (GPUs used / capacity in the hour of highest utilisation):")
    for s in summaries:
        if s["pool_use"]:
            print(f"  {s['instance']}: {_fmt_pools(s['pool_use'], 5)}")
    print()
    for s in summaries:
        if s.get("free_pool_use") and not str(s["capacity"]).startswith("NOT"):
            print(
                f"{s['instance']}: the plan without capacity limits would use "
                f"{_fmt_pools(s['free_pool_use'], 3)} of the real capacity"
            )
        if s.get("messages"):
            print(f"{s['instance']}: {' | '.join(s['messages'])}")


def main(argv: list[str] | None = None) -> int:
    from generate import names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", nargs="*", default=[], help="families or instance names")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per solve, seconds")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reference", action="store_true", help="also run the plain hourly MILP")
    ap.add_argument("--gap", type=float, default=None, help="main solve's gap (solve's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--ladder",
        type=lambda s: [float(x) for x in s.split(",")],
        default=list(LADDER),
        help="time limits tried for the time to the first plan (comma-separated)",
    )
    ap.add_argument("--mem-limit-gb", type=float, default=8.0)
    ap.add_argument("--no-free", action="store_true", help="skip the capacity x1000 solves")
    ap.add_argument("--jsonl", type=Path, default=Path("suite.jsonl"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="main", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.gap is None:
        args.gap = _default_gap()
    if args.one:
        partial = None if args.result_file is None else args.result_file.with_suffix(".partial")
        rec = run_one(
            args.one, args.mode, args.time_limit, args.gap, args.threads, args.seed, partial
        )
        text = dumps(rec)
        if args.result_file:
            args.result_file.write_text(text)
        else:
            print(text)
        return 0
    try:
        selected = names(args.family)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    progress = _progress_supported()
    how = (
        "first plan and 1% from planner.solve's on_progress events"
        if progress
        else (
            "no on_progress in planner.solve: time to 1% = run time of a solve with gap=0.01; "
            "time to the first plan = run time of the solve with the shortest time limit of "
            f"{ladder(args.time_limit, args.ladder)} s that returns a plan"
        )
    )
    meta = {
        "record": "meta",
        "started": datetime.now(UTC).isoformat(),
        "argv": sys.argv,
        "instances": selected,
        "time_limit": args.time_limit,
        "gap": args.gap,
        "repeat": args.repeat,
        "threads": args.threads,
        "reference": args.reference,
        "progress_callback": progress,
        "method": how,
        "loadavg_start": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    print(f"# {how}", flush=True)
    print(
        f"# time limit {args.time_limit:g} s, gap {args.gap:g}, threads {args.threads}, "
        f"repeat {args.repeat}, load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} CPUs",
        flush=True,
    )
    summaries = []
    with args.jsonl.open("w") as jl:
        jl.write(dumps(meta) + "\n")
        for name in selected:
            runs: list[dict[str, Any]] = []
            for rep in range(args.repeat):
                for r in measure(name, args, progress):
                    r["repeat"] = rep
                    runs.append(r)
                    jl.write(dumps(r) + "\n")
                    jl.flush()
            free = None
            if not args.no_free and runs[0].get("termination") not in (
                "infeasible",
                "no_configuration",
            ):
                free = spawn(
                    name,
                    "free",
                    args.time_limit,
                    args.gap,
                    args.threads,
                    args.seed,
                    args.mem_limit_gb,
                )
                jl.write(dumps(free) + "\n")
            s = summarise(name, runs, free)
            summaries.append(s)
            jl.write(dumps(s) + "\n")
            jl.flush()
            print(
                f"# {name}: {'/'.join(s['termination'])}, gap {_fmt_pct(s['gap_at_limit'])}, "
                f"first plan {_fmt_s(s['first_plan_s'], args.time_limit)} s, 1% "
                f"{_fmt_s(s['to_1pct_s'], args.time_limit)} s, capacity: {s['capacity']}",
                flush=True,
            )
        jl.write(dumps({"record": "end", "loadavg_end": os.getloadavg(), "ended": _now()}) + "\n")
    print()
    print_table(summaries, args)
    print(
        f"\n{how}.\nMedians over {args.repeat} repeat(s); peak MB = summed RSS of the solve's "
        f"process tree (HiGHS child included), sampled every {SAMPLE_S * 1000:.0f} ms. "
        f"Load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs: on a "
        f"shared machine the times are noisy. JSON lines: {args.jsonl}"
    )
    return 0


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _json_default(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def _clean(x: Any) -> Any:
    """JSON-safe: non-finite floats become None (JSON has no Infinity)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def dumps(x: Any) -> str:
    return json.dumps(_clean(x), default=_json_default, allow_nan=False)


if __name__ == "__main__":
    sys.exit(main())
