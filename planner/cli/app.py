"""The typer application every command module registers on, and the shared error handling."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from planner.instance import Instance, InstanceError, read

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="trainplan: plan where, when and on what hardware to train a large model, at least cost.",
)
_WIDTH = None if sys.stdout.isatty() else 160


@app.callback()
def _root() -> None:
    """trainplan: plan where, when and on what hardware to train a large model, at least cost."""


console = Console(highlight=False, width=_WIDTH)
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status for bad input (files, fields, flags).
EXIT_INPUT = 2
#: Exit status when the instance is infeasible or a plan is invalid.
EXIT_INFEASIBLE = 1
#: Exit status when the solver failed or found no plan in time.
EXIT_SOLVER = 3


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


def load_instance(path: Path) -> Instance:
    """Read an instance, turning every input problem into a message and exit status 2."""
    try:
        return read(path)
    except InstanceError as e:
        err_console.print(f"[bold red]invalid instance[/] {e.file}", soft_wrap=True)
        for fe in e.errors:
            err_console.print(f"  {e.file}: {fe}", soft_wrap=True, markup=False)
        raise typer.Exit(EXIT_INPUT) from None


def guarded(fn: F) -> F:
    """Commands never show a traceback: input errors exit 2, anything unexpected exits 1 with
    the message (set TRAINPLAN_DEBUG=1 to see the traceback)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import os

        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except InstanceError as e:
            err_console.print(f"[bold red]invalid input[/] {e.file}", soft_wrap=True)
            for fe in e.errors:
                err_console.print(f"  {e.file}: {fe}", soft_wrap=True, markup=False)
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None
        except MemoryError:
            fail(
                "out of memory; try a coarser --slot, fewer configurations or a smaller instance",
                EXIT_SOLVER,
            )
        except Exception as e:
            if os.environ.get("TRAINPLAN_DEBUG"):
                raise
            err_console.print("[bold red]internal error:[/]", end=" ")
            err_console.print(f"{type(e).__name__}: {e}", soft_wrap=True, markup=False)
            err_console.print(
                "set TRAINPLAN_DEBUG=1 for the traceback; please report it", soft_wrap=True
            )
            raise typer.Exit(EXIT_INFEASIBLE) from None

    return wrapper  # type: ignore[return-value]
