"""One call for the commands that read an instance: print its numerical-hygiene warnings.

``trainplan solve`` (and any command that plans) calls :func:`print_numeric_warnings` right
after :func:`planner.cli.app.load_instance`; each warning goes to stderr as
``warning: <field path>: <what looks wrong and the likely unit mistake>``, so that stdout
stays clean for ``--json`` output. See :mod:`planner.hygiene` for the rules.
"""

from __future__ import annotations

from planner.cli.app import err_console
from planner.hygiene import check_numerics
from planner.instance.model import Instance


def print_numeric_warnings(inst: Instance) -> list[str]:
    """Print every :func:`planner.hygiene.check_numerics` warning of ``inst`` on stderr and
    return them."""
    found = check_numerics(inst)
    for w in found:
        err_console.print(f"warning: {w}", soft_wrap=True, markup=False, highlight=False)
    return found
