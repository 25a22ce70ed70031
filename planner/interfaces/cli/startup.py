"""What lets a command start at once beyond lazy imports: the cyclic garbage collector paused
while the command line's modules and the instance are loaded.

Imports and reading make many objects and few cycles, all of them kept to the end, so the
collector's passes over them find nothing. Paused there, and with what they made frozen out
of its later passes (``gc.freeze``), `trainplan solve week-7b` took 1.098-1.136 s against
1.223-1.274 s and `check` 0.696-0.730 s against 0.777-0.811 s (least and median of 24
interleaved runs, with the greedy's import of ``numpy.ma`` gone, 20 ms of it). The
collector runs as usual while the command works.

Freezing keeps every object then tracked for the rest of the process, garbage not yet
collected included; so only the ``trainplan`` process itself freezes (:func:`one_shot`,
set by :func:`planner.interfaces.cli.main`), never a process that embeds the command line
and runs many commands (tests, a notebook): there the collector is only paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_ONE_SHOT = False


def one_shot() -> None:
    """Mark this process as one ``trainplan`` command, which may freeze what it loads."""
    global _ONE_SHOT
    _ONE_SHOT = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block without the cyclic collector (on again afterwards, unless it was off
    before); in a :func:`one_shot` process, freeze what the block made."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
        if _ONE_SHOT:
            gc.freeze()
