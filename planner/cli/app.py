"""The typer application every command module registers on, and the shared error handling."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer

from planner.instance import Instance, InstanceError, read
from planner.terminal import TextConsole, styled

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


# every command prints through these two: user text is shown as text (no markup, no emoji
# codes, control characters escaped; planner.terminal), styles come from styled()
console = TextConsole(width=_WIDTH)
err_console = TextConsole(stderr=True, width=None if sys.stderr.isatty() else 160)

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status for bad input (files, fields, flags).
EXIT_INPUT = 2
#: Exit status when the instance is infeasible or a plan is invalid.
EXIT_INFEASIBLE = 1
#: Exit status when the solver failed or found no plan in time.
EXIT_SOLVER = 3
#: Exit status of an internal error: a bug in trainplan, never the user's input.
EXIT_INTERNAL = 4


def say_plain(text: str, *, end: str = "\n") -> None:
    """Print ``text`` on stderr exactly as text: no rich markup (``[/]`` in a name is not a
    tag), no emoji codes (``:x:`` stays ``:x:``) and no control characters (an ESC in a
    name is shown as ``\\x1b``, never sent to the terminal): :class:`TextConsole`."""
    err_console.print(text, soft_wrap=True, end=end)


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print ``error: <message>`` (the message as plain text, see :func:`say_plain`) and exit."""
    err_console.print(styled("error:", "bold red"), end=" ")
    say_plain(message)
    raise typer.Exit(code)


def print_instance_error(e: InstanceError, title: str = "invalid instance") -> None:
    """The title and file, then one line per problem (``<file>: <field>: <message>``), all
    user text printed plain (:func:`say_plain`)."""
    err_console.print(styled(title, "bold red"), end=" ")
    say_plain(e.file)
    for line in e.lines():
        say_plain(f"  {line}")


def load_instance(path: Path) -> Instance:
    """Read an instance, turning every input problem into a message and exit status 2."""
    try:
        return read(path)
    except InstanceError as e:
        print_instance_error(e)
        raise typer.Exit(EXIT_INPUT) from None


def guarded(fn: F) -> F:
    """Commands never show a traceback: input errors exit 2; anything unexpected is an
    internal error: a short "please report" line with the exception's type and message, and
    exit :data:`EXIT_INTERNAL` (set TRAINPLAN_DEBUG=1 to see the traceback)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import os

        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except InstanceError as e:
            print_instance_error(e, "invalid input")
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
            err_console.print(styled("internal error:", "bold red"), end=" ")
            say_plain(f"{type(e).__name__}: {e}")
            err_console.print(
                "this is a bug in trainplan, please report it with the line above "
                "(TRAINPLAN_DEBUG=1 shows the traceback)",
                soft_wrap=True,
            )
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]
