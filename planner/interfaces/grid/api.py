"""Run a grid: expand and validate it, skip what the store already holds, solve the rest on
an executor, and store every result the moment it arrives."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from planner.interfaces.grid.spec import (
    SOLVE_KEYS,
    GridSpec,
    base_fingerprint,
    grid_from_dict,
    load_grid,
)
from planner.interfaces.grid.store import Store
from planner.interfaces.grid.task import BasePayload, GridOptions, Task, hooks_from_env
from planner.model.options import BACKENDS
from planner.terminal import TextConsole

if TYPE_CHECKING:
    import pandas as pd  # loaded by the functions that return frames (the CLI starts at once)

EXECUTORS = ("local", "ray")
DEFAULT_GRACE_S = 60.0


class Executor(Protocol):
    """Where a grid's scenarios are solved: local worker processes
    (:class:`planner.interfaces.grid.runner.LocalExecutor`) or a Ray cluster
    (:class:`planner.interfaces.grid.ray_executor.RayExecutor`)."""

    name: str

    @property
    def workers(self) -> int:
        """Scenarios the executor solves at once."""
        ...

    def run(
        self,
        base: BasePayload,
        opts: GridOptions,
        tasks: list[Task],
        on_result: Callable[[dict[str, Any]], None],
    ) -> None:
        """Solve every task and call ``on_result`` once per task, in this process, as each
        finishes; return when every task has an outcome."""
        ...


@dataclass
class RunReport:
    """What one invocation did."""

    spec: GridSpec
    store: Path
    run: int
    options: GridOptions
    executor: str
    workers: int
    total: int
    skipped: int
    solved: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def pending(self) -> int:
        """Scenarios this run solves (those not already stored)."""
        return self.total - self.skipped


def resolve_grid(grid: str | Path | GridSpec | Mapping[str, Any]) -> GridSpec:
    """A :class:`GridSpec` from a grid file path, a parsed grid document (its ``base``
    relative to the working directory) or a spec."""
    if isinstance(grid, GridSpec):
        return grid
    if isinstance(grid, Mapping):
        return grid_from_dict(dict(grid), "<grid>", Path.cwd())
    return load_grid(grid)


def default_store(spec: GridSpec) -> Path:
    """``<grid name>.sqlite`` beside the grid file."""
    return spec.directory / f"{spec.name}.sqlite"


def resolve_options(
    spec: GridSpec,
    solver: str | None = None,
    time_limit: float | None = None,
    gap: float | None = None,
    backend: str | None = None,
) -> GridOptions:
    """Explicit arguments, else the grid file's ``solve`` block, else the defaults. Raises
    ``ValueError`` naming the option when a value is not allowed."""
    from planner.solve import RENAMED, SOLVERS

    d = spec.defaults
    name = solver or str(d.get("solver") or "auto")
    opts = GridOptions(
        solver=RENAMED.get(name, name),  # the old name "highs" is "starttime"
        time_limit=float(time_limit if time_limit is not None else d.get("time_limit") or 60.0),
        gap=float(gap if gap is not None else d.get("gap", 1e-4)),
        backend=backend or str(d.get("backend") or "auto"),
        threads=1,
        hooks=hooks_from_env(),
    )
    if opts.solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {name!r}")
    if opts.backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {opts.backend!r}")
    if not opts.time_limit > 0:
        raise ValueError(
            f"time limit: expected a positive number of seconds, got {opts.time_limit!r}"
        )
    return opts


def make_executor(
    executor: str,
    workers: int | None = None,
    address: str | None = None,
    memory_gb: float | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> Executor:
    """The executor called ``executor`` (``local`` processes or a ``ray`` cluster, which fails early
    with the install hint when Ray is missing); ValueError for another name."""
    if executor == "local":
        from planner.interfaces.grid.runner import LocalExecutor

        return LocalExecutor(workers, memory_gb, grace_s)
    if executor == "ray":
        from planner.interfaces.grid.ray_executor import RayExecutor, import_ray

        import_ray()  # fail early with the install hint
        return RayExecutor(workers, address, memory_gb, grace_s)
    raise ValueError(f"executor: expected one of {', '.join(EXECUTORS)}, got {executor!r}")


def run_grid(
    spec: GridSpec,
    store_path: str | Path,
    executor: Executor,
    opts: GridOptions,
    retry_failed: bool = False,
    on_start: Callable[[RunReport], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> RunReport:
    """Solve every scenario of ``spec`` not yet in the store (with ``retry_failed``, failed
    and timed-out ones too), persisting each outcome as it arrives. ``on_start`` sees the
    report before solving starts; ``on_result`` each outcome after it is stored."""
    store_path = Path(store_path)
    with Store(store_path) as store:
        store.bind(spec.name, base_fingerprint(spec.base), spec.base.source)
        warnings: list[str] = []
        last = store.last_options()
        now_opts = {k: getattr(opts, k) for k in SOLVE_KEYS}
        if last is not None and {k: last.get(k) for k in now_opts} != now_opts:
            warnings.append(
                f"the store's previous run used {last}; results stored then are "
                "kept (use --retry-failed to redo failures)"
            )
        done = store.done_ids(retry_failed)
        todo = [sc for sc in spec.scenarios if sc.id not in done]
        tasks = [
            Task(id=sc.id, params=dict(sc.params), updates=dict(spec.updates_of(sc))) for sc in todo
        ]
        by_id = {t.id: t for t in tasks}
        workers = executor.workers if tasks else 0
        run = store.start_run(
            executor.name,
            workers,
            {**now_opts, "retry_failed": retry_failed},
            len(spec.scenarios),
            len(tasks),
        )
        report = RunReport(
            spec=spec,
            store=store_path,
            run=run,
            options=opts,
            executor=executor.name,
            workers=workers,
            total=len(spec.scenarios),
            skipped=len(spec.scenarios) - len(tasks),
            warnings=warnings,
        )
        if on_start is not None:
            on_start(report)

        def persist(outcome: dict[str, Any]) -> None:
            task = by_id[outcome["id"]]
            store.put(outcome, task.params, task.updates)
            report.solved[str(outcome.get("status"))] += 1
            if on_result is not None:
                on_result(outcome)

        t0 = time.perf_counter()
        state = "interrupted"
        try:
            if tasks:
                executor.run(BasePayload.of(spec.base), opts, tasks, persist)
            state = "finished"
        finally:
            report.wall_s = time.perf_counter() - t0
            store.finish_run(state)
    return report


def grid_frame(spec: GridSpec, store_path: str | Path, with_plan: bool = True) -> pd.DataFrame:
    """The stored rows of the grid's scenarios, in expansion order."""
    with Store(store_path, readonly=True) as store:
        df = store.frame([sc.id for sc in spec.scenarios], with_plan=with_plan)
    first = [f"param.{a}" for a in spec.axis_names if f"param.{a}" in df.columns]
    rest = [c for c in df.columns if c not in first and c != "id"]
    return df[["id", *first, *rest]]


def solve_grid(
    grid: str | Path | GridSpec | Mapping[str, Any],
    workers: int | None = None,
    executor: str = "local",
    store: str | Path | None = None,
    *,
    solver: str | None = None,
    time_limit: float | None = None,
    gap: float | None = None,
    backend: str | None = None,
    memory_gb: float | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    retry_failed: bool = False,
    address: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Solve every scenario of a grid and return one row per scenario (expansion order):
    ``id``, ``param.<axis>`` columns, ``status``, ``error``, ``objective``, ``bound``,
    ``gap``, ``cost_<component>``, ``plan`` (JSON) and timings.

    ``grid``: a grid file, a grid document or a :class:`GridSpec`; ``store``: the SQLite
    store (default ``<grid name>.sqlite`` beside the grid file), resumed if it exists;
    ``executor``: "local" (``workers`` processes) or "ray". Raises
    :class:`~planner.interfaces.grid.spec.GridError` for a bad grid or scenario, before solving."""
    spec = resolve_grid(grid)
    opts = resolve_options(spec, solver, time_limit, gap, backend)
    ex = make_executor(executor, workers, address, memory_gb, grace_s)
    path = Path(store) if store is not None else default_store(spec)
    if progress:
        from planner.interfaces.grid.report import ProgressHooks

        with ProgressHooks(TextConsole(stderr=True), spec.name) as hooks:
            start, result = hooks.on_start, hooks.on_result
            run_grid(spec, path, ex, opts, retry_failed, on_start=start, on_result=result)
    else:
        run_grid(spec, path, ex, opts, retry_failed)
    return grid_frame(spec, path)
