"""The schedule every formulation produces and the cost model prices: per phase one
configuration and the hours it runs, and the reserved GPUs committed per pool.

A :class:`Schedule` is what a solver decides; :func:`planner.costs.cost_plan` turns it into a
:class:`~planner.plan.Plan` (the decisions plus their costs), a pure function of the instance
and the schedule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from planner.instance.model import Instance

if TYPE_CHECKING:  # annotations only: the configuration space imports this module's users
    from planner.configs import Config

#: A (region, GPU type) pool.
Pool = tuple[str, str]


def hour_runs(hours: Iterable[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive hours as ``[start, end)`` pairs, in order:
    ``{0, 1, 2, 5, 7, 8} -> [(0, 3), (5, 6), (7, 9)]``."""
    hs = sorted(set(hours))
    runs: list[tuple[int, int]] = []
    for h in hs:
        if runs and runs[-1][1] == h:
            runs[-1] = (runs[-1][0], h + 1)
        else:
            runs.append((h, h + 1))
    return runs


def count_runs(hours: Iterable[int]) -> int:
    """The number of maximal runs of consecutive hours (a phase that pauses k times has
    k + 1)."""
    return len(hour_runs(hours))


class Assignment(NamedTuple):
    """One phase on one configuration during a set of hours (sorted, distinct)."""

    config: Config
    hours: tuple[int, ...]

    @property
    def start(self) -> int:
        return self.hours[0]

    @property
    def end(self) -> int:
        """The hour after the last running hour."""
        return self.hours[-1] + 1

    @property
    def runs(self) -> list[tuple[int, int]]:
        return hour_runs(self.hours)


def assign(config: Config, hours: Iterable[int]) -> Assignment:
    """An :class:`Assignment` with its hours sorted and distinct."""
    return Assignment(config, tuple(sorted({int(h) for h in hours})))


@dataclass(frozen=True)
class Schedule(Mapping[str, Assignment]):
    """Phase name -> :class:`Assignment`, and the reserved GPUs committed per pool (pools
    with 0 left out). Read-only; iterates phases in insertion order."""

    assignments: Mapping[str, Assignment]
    reserved: Mapping[Pool, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignments", MappingProxyType(dict(self.assignments)))
        kept = {k: int(n) for k, n in self.reserved.items() if n > 0}
        object.__setattr__(self, "reserved", MappingProxyType(kept))

    def __getitem__(self, name: str) -> Assignment:
        return self.assignments[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)

    def region_of(self) -> dict[str, str]:
        return {name: a.config.region for name, a in self.assignments.items()}

    def with_reserved(self, reserved: Mapping[Pool, int]) -> Schedule:
        return Schedule(self.assignments, reserved)


def schedule_of(
    assignments: Mapping[str, tuple[Config, Iterable[int]]],
    reserved: Mapping[Pool, int] | None = None,
) -> Schedule:
    """A :class:`Schedule` from ``{phase: (config, hours)}``."""
    return Schedule({n: assign(c, h) for n, (c, h) in assignments.items()}, reserved or {})


def reserved_usage(inst: Instance, assignments: Mapping[str, Assignment]) -> dict[Pool, np.ndarray]:
    """GPUs (working + spare) of reserved-contract assignments per pool and hour."""
    usage: dict[Pool, np.ndarray] = {}
    for c, hours in assignments.values():
        if c.contract == "reserved":
            u = usage.setdefault((c.region, c.gpu), np.zeros(inst.hours))
            u[list(hours)] += c.total_gpus
    return usage


def reservations_for(
    inst: Instance, assignments: Mapping[str, Assignment]
) -> dict[Pool, int] | None:
    """The least reservation per pool that covers the reserved-contract GPUs of
    ``assignments`` in every hour, at least the offer's minimum; None if some pool would
    exceed the offer's maximum."""
    out: dict[Pool, int] = {}
    for (r, g), u in reserved_usage(inst, assignments).items():
        offer = inst.region(r).offers[g].reserved
        n = int(np.ceil(u.max() - 1e-9))
        if offer is not None and n > 0:
            n = max(n, offer.min_gpus)
            if offer.max_gpus is not None and n > offer.max_gpus:
                return None
        out[(r, g)] = n
    return out


def with_reservations(inst: Instance, assignments: Mapping[str, Assignment]) -> Schedule | None:
    """The schedule of ``assignments`` with the least reservation that covers them
    (:func:`reservations_for`); None when an offer's maximum is exceeded."""
    reserved = reservations_for(inst, assignments)
    return None if reserved is None else Schedule(assignments, reserved)
