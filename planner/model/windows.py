"""Time windows through the precedence graph: the one forward and backward pass that every
formulation, ``check``'s summary and ``explain`` use.

For active phases (not ``done``) in topological order, with ``n_p`` the fewest hours any
configuration of p needs (Kelley & Walker 1959, the critical-path method):

- earliest start ``e_p = max(release_p, max over active predecessors q of e_q + n_q)``,
  earliest finish ``EF_p = e_p + n_p``;
- latest end ``l_p = min(deadline_p, min over active successors q of l_q - n_q)``.

A phase runs only in ``[e_p, l_p)`` in any plan: it cannot start before its predecessors
could have finished, nor end so late that its successors miss their deadlines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from planner.instance.model import Instance


@dataclass(frozen=True)
class Windows:
    """Earliest start and latest end per active phase after propagating through precedence."""

    start: Mapping[str, int]
    end: Mapping[str, int]


@dataclass(frozen=True)
class Finish:
    """One phase's earliest start and finish, and the predecessor that set the start (None:
    its release did)."""

    start: int
    finish: int
    via: str | None


def earliest_finish(inst: Instance, fastest: Mapping[str, int | None]) -> dict[str, Finish]:
    """The forward pass: ``EF_p = max(release_p, EF_q for active predecessors q) + n_p`` with
    ``n_p = fastest[p]``. A phase whose ``fastest`` is None (it has no configuration) gets no
    entry and does not bound its successors."""
    out: dict[str, Finish] = {}
    active = {p.name for p in inst.active_phases}
    for name in inst.order:
        if name not in active:
            continue
        n = fastest.get(name)
        if n is None:
            continue
        es, via = inst.release[name], None
        for q in inst.phase(name).predecessors:
            f = out.get(q)
            if f is not None and f.finish > es:
                es, via = f.finish, q
        out[name] = Finish(es, es + n, via)
    return out


def critical_path(finish: Mapping[str, Finish], name: str) -> list[str]:
    """The chain of predecessors that sets ``name``'s earliest start, first phase first."""
    chain = [name]
    while (via := finish[chain[-1]].via) is not None:
        chain.append(via)
    return list(reversed(chain))


def precedence_components(inst: Instance, names: Iterable[str]) -> list[list[str]]:
    """The phases ``names`` in the connected components of the precedence graph among them
    (an edge joins a phase and each of its predecessors in ``names``), each component in the
    topological order ``inst.order``, the components in the order of their first phase."""
    keep = set(names)
    root = {n: n for n in inst.order if n in keep}

    def find(n: str) -> str:
        while root[n] != n:
            root[n] = root[root[n]]
            n = root[n]
        return n

    for name in root:
        for q in inst.phase(name).predecessors:
            if q in root:
                a, b = find(q), find(name)
                if a != b:
                    root[b] = a
    groups: dict[str, list[str]] = {}
    for n in root:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def time_windows(inst: Instance, fewest_hours: Mapping[str, int]) -> Windows:
    """``[e_p, l_p)`` per active phase (module docstring); ``fewest_hours[p]`` is ``n_p``
    (0 for a phase without configurations)."""
    active = {p.name for p in inst.active_phases}
    ef = earliest_finish(inst, {n: fewest_hours.get(n, 0) for n in active})
    start = {name: f.start for name, f in ef.items()}
    end: dict[str, int] = {}
    for name in reversed(inst.order):
        if name not in active:
            continue
        l_ = inst.deadline[name]
        for q in inst.successors(name):
            if q in active:
                l_ = min(l_, end[q] - fewest_hours.get(q, 0))
        end[name] = l_
    return Windows(start, end)
