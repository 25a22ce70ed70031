"""Arguments and options that several commands share, typed once (``Annotated``), so that
each reads, checks and documents them the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
