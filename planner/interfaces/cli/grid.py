"""``trainplan grid`` and ``trainplan grid-export``: solve a scenario grid, export its store."""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from planner.interfaces.cli.app import (
    command,
    console,
    err_console,
    fail,
    output_path,
    result,
    results,
)
from planner.interfaces.cli.options import renamed_solver_note
from planner.interfaces.grid.task import RETRYABLE
from planner.solve import SOLVERS
from planner.terminal import shown, styled

if TYPE_CHECKING:
    from planner.interfaces.grid.api import RunReport
    from planner.interfaces.grid.spec import GridSpec
    from planner.interfaces.grid.task import GridOptions


def _describe(spec: GridSpec) -> None:
    axes = ", ".join(f"{a.name} ({len(a.values)})" for a in spec.axes) or "none"
    console.print(
        Text.assemble(
            "grid ",
            styled(spec.name, "bold"),
            shown(
                f": {len(spec.scenarios)} scenarios ({spec.mode}) over {spec.base.source}; "
                f"axes: {axes}"
            ),
        ),
        soft_wrap=True,
    )
    for params, kept in spec.duplicates[:5]:
        err_console.print(
            f"warning: scenario {params} makes the same change as {kept}; solved once",
            soft_wrap=True,
        )
    if len(spec.duplicates) > 5:
        err_console.print(f"warning: ... and {len(spec.duplicates) - 5} more duplicates")


def _list(spec: GridSpec) -> None:
    t = Table(title="scenarios", title_justify="left")
    t.add_column("id")
    for a in spec.axes:
        t.add_column(a.name, overflow="fold")
    for sc in spec.scenarios:
        t.add_row(sc.id, *(str(sc.params.get(a.name, "")) for a in spec.axes))
    results.print(t)


def _check_outputs(store: Path, chart: bool, export_to: Path | None) -> None:
    """Every file the run will write can be written (the store, its chart, the export),
    checked before any scenario is solved."""
    output_path(store, "-o")
    if chart:
        output_path(store.with_suffix(".png"), "--chart")
    if export_to is not None:
        output_path(export_to, "--export")


def _starting(rep: RunReport, store: Path, opts: GridOptions) -> None:
    """What a run says as it starts: the grid's warnings, the scenarios already stored (a
    resumed run) and what is left to solve, with which solver on how many workers."""
    for w in rep.warnings:
        err_console.print(f"warning: {w}", soft_wrap=True)
    if rep.skipped:
        console.print(
            f"resuming {store}: {rep.skipped} of {rep.total} scenarios already stored, skipped"
        )
    if rep.pending:
        console.print(
            f"solving {rep.pending} with {opts.solver} (time limit "
            f"{opts.time_limit:g} s) on {rep.workers} {rep.executor} workers"
        )


def _finish(
    spec: GridSpec, store: Path, report: RunReport, chart: bool, export_to: Path | None
) -> None:
    """After a run: how many were solved, the store's summary table, the cost chart and the
    export (or how to export)."""
    from planner.interfaces.grid.api import grid_frame
    from planner.interfaces.grid.report import summary

    if report.pending:
        console.print(f"solved {report.pending} in {report.wall_s:.1f} s")
    df = grid_frame(spec, store, with_plan=False)
    summary(df, console)
    if chart:
        from planner.interfaces.grid.report import chart as draw

        png = draw(df, store.with_suffix(".png"))
        if png is not None:
            console.print(f"chart: {png}")
    result(f"store: {store}")
    if export_to is not None:
        from planner.interfaces.grid.export import export

        result(f"exported: {export(store, export_to)}")
    else:
        console.print(f"export with: trainplan grid-export {store} -o {store.stem}.parquet")


def _on_term(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # stop the workers and leave the store consistent


def _interrupt_on_sigterm() -> None:
    """SIGTERM stops a run as Ctrl-C does: the workers end, every finished result is kept in
    the store and the same command resumes (only the main thread may set handlers)."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, _on_term)


@command("grid")
def grid_cmd(
    grid: Path = typer.Argument(..., help="grid file (.yaml or .json)"),
    workers: int | None = typer.Option(
        None,
        "--workers",
        "-w",
        min=1,
        help="parallel solves (default: CPUs, or the Ray cluster's CPUs)",
    ),
    executor: str = typer.Option("local", "--executor", help="local or ray"),
    address: str | None = typer.Option(
        None, "--address", help="Ray cluster address (default: $RAY_ADDRESS)"
    ),
    output: Path | None = typer.Option(
        None,
        "-o",
        "--output",
        help="the store (SQLite); default: <grid name>.sqlite "
        "beside the grid file; resumed if it exists",
    ),
    time_limit: float | None = typer.Option(
        None,
        "--time-limit",
        min=0.1,
        help="seconds per scenario (default: the grid file's, else 60)",
    ),
    gap: float | None = typer.Option(None, "--gap", min=0.0, max=1.0, help="relative MIP gap"),
    solver: str | None = typer.Option(None, "--solver", help=f"one of {', '.join(SOLVERS)}"),
    backend: str | None = typer.Option(None, "--backend", help="MILP backend: auto, highs, pyomo"),
    memory_gb: float | None = typer.Option(
        None,
        "--memory-gb",
        min=0.0,
        help="address-space limit per worker, GB (default: RAM / workers; 0: none)",
    ),
    grace: float | None = typer.Option(
        None,
        "--grace",
        min=0.0,
        help="seconds past the time limit before a worker is killed (default: 60)",
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help=f"redo scenarios stored as {' or '.join(RETRYABLE)}"
    ),
    export_to: Path | None = typer.Option(
        None, "--export", help="also export the store to this .parquet or .csv file"
    ),
    chart: bool = typer.Option(
        True, "--chart/--no-chart", help="write the cost chart (PNG) beside the store"
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="expand and validate the scenarios, list them, solve nothing"
    ),
) -> None:
    """Solve every scenario of GRID (a base instance and axes of variation), storing each
    result in a SQLite store the moment it finishes. Rerun the same command to resume after an
    interruption: stored scenarios are skipped. Exit status 2 when the grid file or any
    scenario is invalid (nothing is solved then)."""
    from planner.interfaces.grid.api import (
        DEFAULT_GRACE_S,
        EXECUTORS,
        default_store,
        make_executor,
        resolve_options,
        run_grid,
    )
    from planner.interfaces.grid.spec import load_grid
    from planner.interfaces.grid.store import StoreError

    if executor not in EXECUTORS:
        fail(f"--executor: expected one of {', '.join(EXECUTORS)}, got {executor!r}")
    if export_to is not None and export_to.suffix.lower() not in (".parquet", ".csv"):
        fail(f"--export: expected a .parquet or .csv file name, got {export_to}")
    spec = load_grid(grid)
    try:
        opts = resolve_options(spec, solver, time_limit, gap, backend)
    except ValueError as e:
        fail(f"--{e}")
    renamed_solver_note(solver or str(spec.defaults.get("solver") or "auto"))
    store = output if output is not None else default_store(spec)
    if not dry_run:  # every output checked before any scenario is solved
        _check_outputs(store, chart, export_to)
    _describe(spec)
    if dry_run:
        _list(spec)
        return
    try:
        ex = make_executor(
            executor, workers, address, memory_gb, DEFAULT_GRACE_S if grace is None else grace
        )
    except RuntimeError as e:
        fail(str(e))
    from planner.interfaces.grid.report import ProgressHooks

    _interrupt_on_sigterm()
    hooks = ProgressHooks(console, spec.name, before=lambda rep: _starting(rep, store, opts))
    close_bars = hooks.close
    try:
        report = run_grid(
            spec, store, ex, opts, retry_failed, on_start=hooks.on_start, on_result=hooks.on_result
        )
    except StoreError as e:
        close_bars()
        fail(str(e))
    except KeyboardInterrupt:
        close_bars()
        err_console.print(
            f"interrupted: every finished result is in {store}; rerun the same command to resume",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except RuntimeError as e:  # Ray unreachable, workers that cannot start
        close_bars()
        fail(str(e), 3)
    finally:
        close_bars()
    _finish(spec, store, report, chart, export_to)


@command("grid-export")
def grid_export_cmd(
    store: Path = typer.Argument(..., help="a grid store (.sqlite) written by trainplan grid"),
    output: Path = typer.Option(..., "-o", "--output", help="a .parquet or .csv file"),
    plan: bool | None = typer.Option(
        None, "--plan/--no-plan", help="include the plan JSON column (default: Parquet yes, CSV no)"
    ),
) -> None:
    """Export a grid store to Parquet or CSV, one row per scenario."""
    from planner.interfaces.grid.export import FORMATS, export
    from planner.interfaces.grid.store import StoreError

    if output.suffix.lower() not in FORMATS:
        fail(f"-o: expected a .parquet or .csv file name, got {output}")
    output_path(output, "-o")
    try:
        out = export(store, output, plan)
    except StoreError as e:
        fail(str(e))
    result(f"exported {out}")
