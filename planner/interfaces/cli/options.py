"""Arguments and options that several commands share, typed once (``Annotated``), so that
each reads, checks and documents them the same way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from planner.interfaces.cli.app import fail, output_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The instance file argument of the commands that read one.
InstanceFile = Annotated[
    Path, typer.Argument(metavar="INSTANCE", help="Instance file (.yaml, .yml or .json).")
]
#: ``--time-limit``: seconds per solve (of every MILP a command runs).
TimeLimit = Annotated[float, typer.Option("--time-limit", min=0.1, help="Seconds per solve.")]


def renamed_solver_note(solver: str) -> str:
    """``--solver``'s current name; an old one (``highs``) is taken with a deprecation note
    on stderr. A name that is neither is returned as it is, for the command to refuse."""
    from planner.interfaces.cli.app import err_console
    from planner.solve import solver_name

    try:
        name, renamed = solver_name(solver)
    except ValueError:
        return solver
    if renamed is not None:
        err_console.print(f"note: {renamed}", markup=False, soft_wrap=True)
    return name


def png_output(png: Path | None) -> None:
    """Check ``--png`` before any solve: a file name ending in .png, a path
    :func:`~planner.interfaces.cli.app.output_path` accepts; nothing to check without one."""
    if png is None:
        return
    if png.suffix.lower() != ".png":
        fail(f"--png: expected a file name ending in .png, got {str(png)!r}")
    output_path(png, "--png")


def write_png(png: Path, draw: Callable[[], Figure]) -> None:
    """Write the chart ``draw`` makes to ``png``
    (:func:`planner.interfaces.report.analysis.save_png`); a failure exits 2 naming --png."""
    from planner.interfaces.report.analysis import save_png

    try:
        save_png(draw(), png)
    except (OSError, ValueError) as e:  # ValueError: planner.outfiles.OutputError
        fail(f"--png: cannot write {png}: {getattr(e, 'strerror', None) or e}")
