"""The command line: a thin layer over the library. One module per command."""

from __future__ import annotations

import importlib
import sys

from planner.cli.app import app, hoist_global_options

#: Command modules; each registers its commands on ``app`` when imported.
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


def _register() -> None:
    for name in COMMANDS:
        try:
            importlib.import_module(f"planner.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"planner.cli.{name}":
                raise


def main() -> None:
    _register()
    app(args=hoist_global_options(sys.argv[1:]), prog_name="trainplan")


__all__ = ["app", "main"]
