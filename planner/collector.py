"""Fewer passes of Python's cyclic garbage collector over work that makes many objects and
few cycles: the unpruned configuration space and the greedy baselines of the attribution.

The collector runs a pass over the youngest objects after every 700 allocations (net of
deallocations) by default, and over everything when the objects that survived the younger
passes have grown by a quarter. Building a configuration space allocates hundreds of
thousands of objects that all live on (183,160 configurations on a 100-phase quarter), so
the full passes come again and again over a growing heap and find nothing: on that quarter
the attribution's lever chain took 8.4-10.1 s with the collector's defaults, 6.3 s with
passes every 100,000 allocations, and 5.8-6.2 s with the collector off (258 objects in
cycles found in all; ``gc.get_stats()``). :func:`fewer_collections` raises the first
threshold for a block and puts it back after it: the collector still runs, so cycles made
there are still collected, only in fewer passes. A forked child that computes one answer
(:mod:`planner.beside`) also freezes what it inherited (``gc.freeze``), which its passes
then never visit.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations (net) between two passes over the youngest objects inside
#: :func:`fewer_collections` (the default is 700).
ALLOCATIONS_PER_PASS = 100_000


@contextmanager
def fewer_collections(allocations: int = ALLOCATIONS_PER_PASS) -> Iterator[None]:
    """Run the block with the collector's first threshold at least ``allocations`` (module
    docstring); the thresholds as they were afterwards (a block nested in another leaves the
    outer's). A first threshold of 0, automatic collection off, stays 0."""
    before = gc.get_threshold()
    if before[0]:
        gc.set_threshold(max(before[0], allocations), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
