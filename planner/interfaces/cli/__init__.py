"""The command line: a thin layer over the library. One module per command.

A command line that starts at once: :func:`main` answers ``--version`` before loading any
command, and otherwise imports only the module of the command asked for (``trainplan check``
loads no solver). The help, a mistyped command or no command at all load every module; none
of them imports a solver, matplotlib or pandas before its command runs
(tests/cli/test_cli_startup.py checks both).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from planner.interfaces.cli.argv import command_word, hoist_global_options, version_line
from planner.lazy import lazy_names

if TYPE_CHECKING:
    from planner.interfaces.cli.app import app

#: Command modules in the order the help lists their commands; each registers its commands
#: on ``app`` when imported.
COMMANDS = (
    "check",
    "estimate",
    "solve",
    "verify",
    "grid",
    "report",
    "levers",
    "explain",
    "pareto",
    "gpus",
    "export",
    "init",
    "simulate",
)
#: Commands whose module is not named like them.
MODULE_OF = {"grid-export": "grid", "schema": "init"}


def _import(name: str) -> None:
    try:
        importlib.import_module(f"planner.interfaces.cli.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"planner.interfaces.cli.{name}":
            raise


def _register(argv: list[str] | None = None) -> None:
    """Import the module of the command ``argv`` names, or every module when it names none
    that is known (the help, a mistyped command: its "did you mean" needs them all)."""
    word = command_word(argv or [])
    module = MODULE_OF.get(word, word)
    if module in COMMANDS:
        _import(module)
        return
    for name in COMMANDS:
        _import(name)


def main() -> None:
    """The ``trainplan`` entry point: global options may come anywhere, ``--version`` answers
    without loading any command, and only the command run is imported (start-up speed)."""
    argv = hoist_global_options(sys.argv[1:])
    if command_word(argv) == "--version":
        print(version_line())
        return
    from planner.interfaces.cli.startup import collector_paused, one_shot

    one_shot()
    with collector_paused():
        _register(argv)
        from planner.interfaces.cli.app import app
    app(args=argv, prog_name="trainplan")


lazy_names(__name__, {"app": "planner.interfaces.cli.app"})

__all__ = ["COMMANDS", "MODULE_OF", "app", "main"]
