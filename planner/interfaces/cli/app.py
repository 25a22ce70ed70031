"""The typer application every command module registers on, the shared error handling, and
the command line's conventions: exit codes, output width, ``--quiet``/``--verbose`` and the
progress shown on a terminal.

Exit codes (:data:`planner.interfaces.cli.exits.EXIT_CODES`, the single source: README's table is
checked against it; re-exported here):

====  ==================================================================================
0     success
1     the instance is infeasible, or a plan is invalid
2     bad input: a file, a field or a flag (the message names which)
3     the solver found no plan in time, or failed
4     internal error: a bug in trainplan (set TRAINPLAN_DEBUG=1 for the traceback)
130   interrupted (Ctrl-C)
====  ==================================================================================
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console, ConsoleDimensions

from planner.instance.errors import InstanceError
from planner.interfaces.cli.argv import GLOBAL_FLAGS as GLOBAL_FLAGS  # re-exported
from planner.interfaces.cli.argv import hoist_global_options as hoist_global_options  # re-exported
from planner.interfaces.cli.argv import version_line
from planner.interfaces.cli.exits import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SOLVER,
)
from planner.interfaces.cli.startup import collector_paused
from planner.terminal import TextConsole, styled

if TYPE_CHECKING:
    from planner.instance.model import Instance

#: Width of output that goes to a pipe or file when COLUMNS is not set and no terminal is
#: attached (a log, CI): wide enough that no table is cut (rich sizes tables to their content;
#: it does not pad them to this width).
PIPE_WIDTH = 10_000


def output_width(
    stream: IO[str] | Any, environ: dict[str, str] | None = None, terminal: Any = None
) -> int | None:
    """The width output is laid out in: ``COLUMNS`` when it is set to a positive number; the
    terminal's when ``stream`` is one (None: rich asks it); when ``stream`` is a pipe or a
    file and a terminal is still attached to stderr (``trainplan gpus | less``), that
    terminal's width, so tables wrap to what the user sees; else :data:`PIPE_WIDTH` (a log:
    nothing is cut). ``terminal`` defaults to ``sys.stderr``."""
    env = os.environ if environ is None else environ
    cols = env.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if _is_tty(stream):
        return None
    term = sys.stderr if terminal is None else terminal
    if _is_tty(term):
        try:
            return max(20, os.get_terminal_size(term.fileno()).columns)
        except (AttributeError, OSError, ValueError):
            pass
    return PIPE_WIDTH


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@dataclass
class Settings:
    """What the global options set: ``quiet`` keeps results and errors (a command's answer
    line, what it wrote, what is wrong) and drops progress, notes and the detail around them;
    ``verbose`` adds solver logs and detail; progress is shown on a terminal only."""

    quiet: bool = False
    verbose: bool = False


settings = Settings()


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(EXIT_OK)


app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="trainplan: plan where, when and on what hardware to train a large model, at least cost.",
)


class _Console(TextConsole):
    """A console whose width follows COLUMNS or the terminal at every print (tests and
    long-lived processes change them), that ``--quiet`` silences, and that shows user text as
    text (:class:`planner.terminal.TextConsole`: no markup, no emoji codes, control
    characters escaped; styles come from :func:`planner.terminal.styled`)."""

    def __init__(self, stderr: bool = False, always: bool = False) -> None:
        super().__init__(stderr=stderr)
        self._stderr_stream = stderr
        self._always = always

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        w = output_width(sys.stderr if self._stderr_stream else sys.stdout)
        return dims if w is None else ConsoleDimensions(w, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print; a table's cells that do not fit fold onto more lines instead of ending in
        an ellipsis, so no figure is ever cut (``$15,174.…``)."""
        from rich.table import Table

        for obj in objects:
            if isinstance(obj, Table):
                for col in obj.columns:
                    if col.overflow == "ellipsis":
                        col.overflow = "fold"
        super().print(*objects, **kwargs)

    @property
    def quiet(self) -> bool:
        return settings.quiet and not self._stderr_stream and not self._always

    @quiet.setter
    def quiet(self, value: bool) -> None:
        pass


#: Detail on stdout (tables, plans, explanations): silenced by ``--quiet``.
console = _Console()
#: Results on stdout (a command's answer, what it wrote): printed with ``--quiet`` too.
results = _Console(always=True)
err_console = _Console(stderr=True)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
    quiet: bool = typer.Option(
        False,
        "-q",
        "--quiet",
        help="Print only results and errors: the answer and what was written (no progress, "
        "no notes, no detail tables).",
    ),
    verbose: bool = typer.Option(
        False, "-v", "--verbose", help="Print more: solver logs and detail."
    ),
) -> None:
    """trainplan: plan where, when and on what hardware to train a large model, at least cost.

    Exit status: 0 success, 1 infeasible or invalid plan, 2 bad input, 3 no plan from the
    solver, 4 internal error."""
    settings.quiet = quiet
    settings.verbose = verbose and not quiet


F = TypeVar("F", bound=Callable[..., Any])


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
    """The title and file, then one line per problem (``<file>: <field>: <message>``) and the
    error's hint (did you mean ...), all user text printed plain (:func:`say_plain`)."""
    err_console.print(styled(title, "bold red"), end=" ")
    say_plain(e.file)
    for line in e.lines():
        say_plain(f"  {line}")
    hint = getattr(e, "hint", None)
    if hint:
        say_plain(hint)


def note(message: str) -> None:
    """An informational line on stdout (silenced by ``--quiet``), wrapped at the output
    width."""
    console.print(message, markup=False)


def result(message: str) -> None:
    """A result line on stdout (a command's answer, what it wrote): kept by ``--quiet``."""
    results.print(message, markup=False)


def output_path(path: Path, flag: str, *, folder: bool = False) -> Path:
    """Check an output path before any work fills it (:func:`planner.outfiles.check_output`:
    no link written through, no directory taken for a file, missing folders created and
    named on stderr); a refusal exits 2 naming ``flag``."""
    from planner.outfiles import OutputError, check_output

    try:
        made = check_output(path, folder=folder)
    except OutputError as e:
        fail(f"{flag}: {e}")
    for f in made:
        err_console.print(f"created folder {f}", markup=False, soft_wrap=True)
    return path


def write_output(path: Path, text: str, flag: str) -> None:
    """Write an output file (:func:`planner.outfiles.write_text`: through a temporary file
    that replaces it, never through a link); a failure exits 2 naming ``flag``."""
    from planner.outfiles import OutputError, write_text

    try:
        write_text(path, text)
    except OutputError as e:
        fail(f"{flag}: {e}")


def load_instance(path: Path) -> Instance:
    """Read an instance, turning every input problem into a message and exit status 2 (the
    collector paused: :mod:`planner.interfaces.cli.startup`)."""
    try:
        with collector_paused():
            from planner.instance.read import read

            return read(path)
    except InstanceError as e:
        print_instance_error(e)
        raise typer.Exit(EXIT_INPUT) from None


def progress_shown() -> bool:
    """Progress is drawn on a terminal (stderr) only, and never with ``--quiet``."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and not settings.quiet and not os.environ.get("TRAINPLAN_NO_PROGRESS")


@contextmanager
def progress(message: str) -> Iterator[Callable[[str], None]]:
    """Show ``message`` with a spinner and the elapsed time on a terminal while the block
    runs; yields a function that replaces the message (``step("lever 3 of 9")``). Off a
    terminal (pipes, CI, files) nothing is drawn, so logs stay clean."""
    if not progress_shown():
        yield lambda _text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(message, total=None)
        t0 = time.monotonic()

        def step(text: str) -> None:
            bar.update(task, description=f"{message}: {text}")
            if settings.verbose:
                err_console.print(f"[{time.monotonic() - t0:6.1f} s] {text}", markup=False)

        yield step


def guarded(fn: F) -> F:
    """Commands never show a traceback: input errors exit 2; anything unexpected is an
    internal error: a short "please report" line with the exception's type and message, and
    exit :data:`EXIT_INTERNAL` (set TRAINPLAN_DEBUG=1 to see the traceback)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except InstanceError as e:
            print_instance_error(e, "invalid input")
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
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


def command(name: str | None = None) -> Callable[[F], F]:
    """Register a command on :data:`app` (as ``name``, else the function's name), run
    :func:`guarded`: ``@command("solve")`` stands for ``@app.command("solve")`` over
    ``@guarded``."""

    def register(fn: F) -> F:
        return app.command(name)(guarded(fn))

    return register
