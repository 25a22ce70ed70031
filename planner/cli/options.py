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
