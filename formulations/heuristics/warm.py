"""A warm start: an earlier plan (or schedule) as the first plan of a solve.

The plan may be of another instance (a re-plan: the state at an hour of the old plan, new
prices, a region lost). Each phase still to run keeps the old configuration and the hours
from its release on when the configuration is in this instance's space and the hours still
fit (window, capacity, its predecessors' ends, the work left); the others are placed by the
look-ahead list schedule around them (:class:`formulations.heuristics.lookahead.LookAhead` with a
``start``), whose checks every kept placement passes too. The result is an ordinary schedule,
costed by the cost model; it is offered to the pipeline like any other plan.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.model.configs import Config, ConfigSpace
from planner.model.plan import CONFIG_FIELDS, Plan
from planner.model.schedule import Assignment, Schedule

#: What a solve may start from.
Start = Plan | Schedule


def _key(fields: Mapping[str, object]) -> tuple[object, ...]:
    """A configuration's identity in a plan: its configuration fields and reserved term."""
    return (*(fields.get(k) for k in CONFIG_FIELDS), fields.get("term") or "")


def start_placements(
    space: ConfigSpace, release: Mapping[str, int], start: Start
) -> dict[str, Assignment]:
    """Per phase of ``space`` that ``start`` runs on one configuration of the space: that
    configuration and its hours from the phase's ``release`` on (a phase in segments in the
    start, or whose configuration is not in the space, gets none)."""
    out: dict[str, Assignment] = {}
    for name, configs in space.by_phase.items():
        parts = _parts(start, name)
        if parts is None or len(parts) != 1:
            continue
        fields, hours = parts[0]
        by_key: dict[tuple[object, ...], Config] = {
            _key({**c.plan_fields(), "term": c.term}): c for c in configs
        }
        c = by_key.get(_key(fields))
        kept = tuple(sorted(h for h in hours if h >= release[name]))
        if c is not None and kept:
            out[name] = Assignment(c, kept)
    return out


def _parts(start: Start, name: str) -> list[tuple[Mapping[str, object], tuple[int, ...]]] | None:
    """The (configuration fields, hours) of each segment of ``name`` in ``start``."""
    if isinstance(start, Schedule):
        if name not in start:
            return None
        return [
            ({**a.config.plan_fields(), "term": a.config.term}, a.hours) for a in start.parts(name)
        ]
    entry = next((p for p in start.phases if p.name == name), None)
    if entry is None:
        return None
    return [({**s.config(), "term": s.term}, tuple(s.hours)) for s in entry.parts()]
