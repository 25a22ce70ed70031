"""The schedule every formulation produces and the cost model prices: per phase one
configuration and the hours it runs (or, for a phase that changes configuration at
checkpoints, its segments in time order), and the reserved GPUs committed per pool and term.

A :class:`Schedule` is what a solver decides; :func:`planner.model.costs.cost_plan` turns it into a
:class:`~planner.model.plan.Plan` (the decisions plus their costs), a pure function of the instance
and the schedule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from planner.instance.model import Instance
from planner.model.configtypes import Config

#: A (region, GPU type) pool.
Pool = tuple[str, str]
#: A reserved commitment: (region, GPU type, term), term "" for the offer's whole-horizon
#: reservation (an offer without terms).
ReservedKey = tuple[str, str, str]


def reserved_key(key: tuple[str, ...]) -> ReservedKey:
    """A reserved-pool key with its term: ``(region, gpu)`` is the whole-horizon pool."""
    if len(key) == 2:
        return (key[0], key[1], "")
    if len(key) == 3:
        return (key[0], key[1], key[2])
    raise ValueError(f"expected (region, gpu[, term]), got {key!r}")


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
        """The first hour the assignment runs."""
        return self.hours[0]

    @property
    def end(self) -> int:
        """The hour after the last running hour."""
        return self.hours[-1] + 1

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The assignment's runs of consecutive hours as (first, one past last): each run after the
        first is a resume."""
        return hour_runs(self.hours)


def assign(config: Config, hours: Iterable[int]) -> Assignment:
    """An :class:`Assignment` with its hours sorted and distinct."""
    return Assignment(config, tuple(sorted({int(h) for h in hours})))


@dataclass(frozen=True)
class Schedule(Mapping[str, Assignment]):
    """Phase name -> :class:`Assignment`, the phases that run in segments (``segments``: name
    -> two or more assignments in time order, each segment's hours before the next one's),
    and the reserved GPUs committed per (region, GPU type, term) (keys given as
    ``(region, gpu)`` mean the whole-horizon reservation; commitments of 0 are left out).
    Read-only; iterates phases in insertion order, single-configuration phases first.

    ``schedule[name]`` is the assignment of a phase on one configuration; for a phase in
    segments it raises ``TypeError`` (code that knows one configuration per phase must not
    price a segmented phase by its first segment): use :meth:`parts`."""

    assignments: Mapping[str, Assignment]
    #: Keys (region, gpu, term), or (region, gpu) for the whole-horizon term on input.
    reserved: Mapping[Any, int] = field(default_factory=dict)
    segments: Mapping[str, tuple[Assignment, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignments", MappingProxyType(dict(self.assignments)))
        kept = {reserved_key(k): int(n) for k, n in self.reserved.items() if n > 0}
        object.__setattr__(self, "reserved", MappingProxyType(kept))
        segs: dict[str, tuple[Assignment, ...]] = {}
        for name, parts in self.segments.items():
            parts = tuple(parts)
            if len(parts) == 1:
                raise ValueError(f"{name}: a phase in one segment is an assignment")
            if name in self.assignments:
                raise ValueError(f"{name}: both an assignment and segments")
            segs[name] = parts
        object.__setattr__(self, "segments", MappingProxyType(segs))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its plain mappings (a read-only view does not pickle): a schedule
        crosses processes (the command line's work beside the solve)."""
        return (type(self), (dict(self.assignments), dict(self.reserved), dict(self.segments)))

    def __getitem__(self, name: str) -> Assignment:
        if name in self.segments:
            raise TypeError(
                f"phase {name!r} runs in {len(self.segments[name])} segments; read it with "
                "Schedule.parts()"
            )
        return self.assignments[name]

    def __contains__(self, name: object) -> bool:
        return name in self.assignments or name in self.segments

    def __iter__(self) -> Iterator[str]:
        yield from self.assignments
        yield from self.segments

    def __len__(self) -> int:
        return len(self.assignments) + len(self.segments)

    def parts(self, name: str) -> tuple[Assignment, ...]:
        """The phase's segments in time order (one for a phase on one configuration)."""
        if name in self.segments:
            return self.segments[name]
        return (self.assignments[name],)

    def all_parts(self) -> Iterator[tuple[str, Assignment]]:
        """(phase, segment) for every segment of every phase."""
        for name in self:
            for a in self.parts(name):
                yield name, a

    def hours_of(self, name: str) -> tuple[int, ...]:
        """Every hour the phase runs, sorted."""
        return tuple(sorted(h for a in self.parts(name) for h in a.hours))

    def region_of(self) -> dict[str, str]:
        """Where each phase starts: the region its input must reach (a segmented phase's
        first segment; its output leaves from its last segment's, :meth:`last_region`)."""
        return {name: self.parts(name)[0].config.region for name in self}

    def last_region(self, name: str) -> str:
        """The region phase ``name`` ends in (its last segment's): where its output is archived and
        its successors fetch it."""
        return self.parts(name)[-1].config.region

    def with_reserved(self, reserved: Mapping[Any, int]) -> Schedule:
        """The same schedule with the reserved pools ``reserved`` (pool -> GPUs committed)."""
        return Schedule(self.assignments, reserved, self.segments)


def schedule_of(
    assignments: Mapping[str, tuple[Config, Iterable[int]]],
    reserved: Mapping[Any, int] | None = None,
    segments: Mapping[str, Iterable[tuple[Config, Iterable[int]]]] | None = None,
) -> Schedule:
    """A :class:`Schedule` from ``{phase: (config, hours)}`` (and ``{phase: [(config, hours),
    ...]}`` for phases in segments)."""
    return Schedule(
        {n: assign(c, h) for n, (c, h) in assignments.items()},
        reserved or {},
        {n: tuple(assign(c, h) for c, h in parts) for n, parts in (segments or {}).items()},
    )


def residual(
    inst: Instance, schedule: Mapping[str, Assignment] | Schedule, fixed: Iterable[str]
) -> dict[Pool, np.ndarray]:
    """GPUs per pool and hour that the ``fixed`` phases of ``schedule`` leave free (the
    instance's capacity less their working and spare GPUs)."""
    cap = {k: np.array(v, dtype=float) for k, v in inst.capacity.items()}
    for name in fixed:
        c, hours = schedule[name]
        cap[(c.region, c.gpu)][list(hours)] -= c.total_gpus
    return cap


def reserved_usage(
    inst: Instance, schedule: Mapping[str, Assignment] | Schedule
) -> dict[ReservedKey, np.ndarray]:
    """GPUs (working + spare) of reserved-contract assignments per (region, GPU, term) and
    hour."""
    usage: dict[ReservedKey, np.ndarray] = {}
    for _, (c, hours) in _all_parts(schedule):
        if c.contract == "reserved":
            u = usage.setdefault((c.region, c.gpu, c.term), np.zeros(inst.hours))
            u[list(hours)] += c.total_gpus
    return usage


def _all_parts(
    schedule: Mapping[str, Assignment] | Schedule,
) -> Iterator[tuple[str, Assignment]]:
    if isinstance(schedule, Schedule):
        yield from schedule.all_parts()
    else:
        yield from schedule.items()


def reservations_for(
    inst: Instance, assignments: Mapping[str, Assignment] | Schedule
) -> dict[ReservedKey, int] | None:
    """The least reservation per pool and term that covers the reserved-contract GPUs of
    ``assignments`` in every hour, at least the term's minimum; None if some pool would
    exceed the term's maximum."""
    out: dict[ReservedKey, int] = {}
    for (r, g, term), u in reserved_usage(inst, assignments).items():
        t = inst.term(r, g, term)
        n = int(np.ceil(u.max() - 1e-9))
        if t is not None and n > 0:
            n = max(n, t.min_gpus)
            if t.max_gpus is not None and n > t.max_gpus:
                return None
        out[(r, g, term)] = n
    return out


def with_reservations(inst: Instance, assignments: Mapping[str, Assignment]) -> Schedule | None:
    """The schedule of ``assignments`` with the least reservation that covers them
    (:func:`reservations_for`); None when an offer's maximum is exceeded."""
    reserved = reservations_for(inst, assignments)
    return None if reserved is None else Schedule(assignments, dict(reserved))
