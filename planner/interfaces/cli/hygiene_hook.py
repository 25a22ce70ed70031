"""One call for the commands that read an instance: print its numeric findings.

``trainplan solve`` (and any command that plans) calls :func:`print_numeric_warnings` right
after :func:`planner.interfaces.cli.app.load_instance`; each finding goes to stderr as
``warning: <field path>: <what looks wrong and the likely unit mistake>``, so that stdout
stays clean for ``--json`` output. The checks are :mod:`planner.model.consistency`'s (rules in
:mod:`planner.model.hygiene`); library users get the same findings as Python warnings from
:func:`planner.solve`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.interfaces.cli.app import err_console

if TYPE_CHECKING:
    from planner.instance.model import Instance


def print_numeric_warnings(inst: Instance) -> list[str]:
    """Print every numeric finding of ``inst`` on stderr and return the messages."""
    from planner.model.consistency import numeric_findings

    found = [f.message for f in numeric_findings(inst)]
    for w in found:
        err_console.print(f"warning: {w}", soft_wrap=True, markup=False, highlight=False)
    return found
