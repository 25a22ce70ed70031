"""The constraints of a phase that runs in segments (docs/cost-model.md, "Segments").

A plan entry with ``segments`` lists them in time order. Checked here: at most
``options.max_segments`` of them (a re-plan's segment off the running configuration is one
of them); the entry's hours are the union of the segments' and its configuration fields the
first segment's; every segment has hours, all before the next segment's; consecutive segments
differ in configuration and only in what ``options.segment_changes`` allows; the work of the
segments adds up to the phase's: ``sum_k |H_k| / work_h_k >= 1`` with ``work_h`` the
fractional hours the configuration needs for the whole (remaining) work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from planner.checker.constraints import Entry
from planner.checker.recompute import PhaseFacts
from planner.checker.violation import Violation
from planner.model.plan import CONFIG_FIELDS, SegmentPlan

#: What each name of ``options.segment_changes`` covers.
CHANGES: dict[str, tuple[str, ...]] = {
    "region": ("region", "tier"),
    "gpu_type": ("gpu",),
    "gpus": ("gpus", "spare_gpus"),
    "contract": ("contract", "term"),
    "layout": ("precision", "zero", "recompute", "tp", "pp"),
}

#: A shortfall of work below this share is rounding, not a violation.
WORK_EPS = 1e-9


def _config(seg: SegmentPlan) -> tuple[object, ...]:
    return (*(getattr(seg, k) for k in CONFIG_FIELDS), seg.term)


def check_segments(ent: Entry) -> list[Violation]:
    """The shape of a phase's segments (count, hours, order, changes)."""
    segs = ent.plan.segments
    if not segs:
        return []
    p, e = ent.phase, ent.plan
    out: list[str] = []
    if len(segs) > p.options.max_segments:
        out.append(f"{len(segs)} segments; options.max_segments allows {p.options.max_segments}")
    union = sorted(h for s in segs for h in s.hours)
    if len(union) != len(set(union)):
        out.append("segments share hours")
    if sorted(set(union)) != sorted(set(e.hours)):
        out.append("the phase's hours are not the union of its segments' hours")
    first = segs[0]
    if any(getattr(e, k) != getattr(first, k) for k in CONFIG_FIELDS) or e.term != first.term:
        out.append("the phase's configuration fields are not its first segment's")
    for k, s in enumerate(segs):
        if not s.hours:
            out.append(f"segment {k} has no hours")
    for k, (a, b) in enumerate(pairwise(segs)):
        if not a.hours or not b.hours:
            continue
        if max(a.hours) >= min(b.hours):
            out.append(
                f"segment {k + 1} starts at hour {min(b.hours)}, before segment {k} ends "
                f"(hour {max(a.hours) + 1})"
            )
        if _config(a) == _config(b):
            out.append(f"segments {k} and {k + 1} run the same configuration")
            continue
        changed = [
            name
            for name, keys in CHANGES.items()
            if any(getattr(a, x) != getattr(b, x) for x in keys)
        ]
        banned = [c for c in changed if c not in p.options.segment_changes]
        if banned:
            out.append(
                f"segments {k} -> {k + 1} change {', '.join(banned)}; options.segment_changes "
                f"allows {list(p.options.segment_changes)}"
            )
    return [Violation("segments", ent.name, m) for m in out]


def check_segment_work(
    ent: Entry, facts: Sequence[PhaseFacts], rel_tol: float = 1e-6, abs_tol: float = 1e-6
) -> list[Violation]:
    """The share of the phase's (remaining) work each segment states, ``work_k = |H_k| /
    work_h_k``, is the share its hours do (a plan shows it; a stated -400% or 500% is
    wrong)."""
    out: list[Violation] = []
    for k, (part, f) in enumerate(zip(ent.parts(), facts, strict=True)):
        stated = ent.plan.segments[k].work
        share = len(part.hours) / f.work_h
        if not (math.isfinite(stated) and abs(stated - share) <= abs_tol + rel_tol * share):
            out.append(
                Violation(
                    "work",
                    ent.name,
                    f"segment {k} states it does {stated:.6g} of the work; its "
                    f"{len(part.hours)} h of {f.work_h:.4f} h needed alone do {share:.6f}",
                )
            )
    return out


def check_work_across(ent: Entry, facts: Sequence[PhaseFacts]) -> list[Violation]:
    """``sum_k |H_k| / work_h_k >= 1``: the segments do the phase's (remaining) work."""
    parts = ent.parts()
    done = sum(len(part.hours) / f.work_h for part, f in zip(parts, facts, strict=True))
    if done >= 1.0 - WORK_EPS:
        return []
    shares = ", ".join(
        f"segment {k}: {len(part.hours)} h of {f.work_h:.4f} h needed alone"
        for k, (part, f) in enumerate(zip(parts, facts, strict=True))
    )
    return [
        Violation(
            "work",
            ent.name,
            f"the segments do {done:.6f} of the work, short of 1 ({shares})",
        )
    ]
