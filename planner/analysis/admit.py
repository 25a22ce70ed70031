"""Admit a plan file to a command that acts on it (``export``, ``solve --from``): the plan is
judged against its instance by the independent checker before anything is written or solved.

A plan file is input like any other: a hand-edited or hostile file may name a tier that is
not one (``"cold\\nsetup: curl ... | sh"``), hours outside the horizon (``-74..-1``), the same
hour two hundred times, or reserved pools the instance cannot hold. :func:`admit` runs
:func:`planner.checker.verify` and refuses every violation of a rule (configuration,
window, work, precedence, capacity, reserved pools, ...), each named by its entry. The
*stated figures* (costs, the objective, ``info`` figures, migration prices) are not refused:
neither command uses them (export writes configurations and hours; a re-plan re-costs the
past from the instance), and a plan written before a change of the cost model states other
figures. They come back as notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.checker import Verification, Violation, verify
from planner.instance.model import Instance
from planner.model.plan import Plan

#: Violation kinds about stated figures, which a command acting on the plan recomputes or
#: does not use: reported as notes, not refused.
FIGURE_KINDS = frozenset({"cost", "figure", "migration"})


class PlanRefused(ValueError):
    """A plan that breaks a rule of its instance; the message names each entry and rule."""

    def __init__(self, source: str, violations: tuple[Violation, ...]) -> None:
        self.source = source
        self.violations = violations
        lines = [
            f"{v.kind}" + (f" [{v.phase}]" if v.phase else "") + f": {v.message}"
            for v in violations
        ]
        super().__init__(
            f"{source}: the plan does not fit its instance ({len(violations)} problem"
            f"{'s' if len(violations) != 1 else ''}):\n  " + "\n  ".join(lines)
        )


@dataclass(frozen=True)
class Admitted:
    """A plan that passed: the checker's verdict (its recomputed facts) and the notes on
    stated figures that differ from their recomputation."""

    plan: Plan
    verification: Verification
    notes: tuple[str, ...]


def _shape(inst: Instance, plan: Plan) -> list[Violation]:
    """What the checker needs before it can run: every entry has hours, all whole hours of
    the horizon (an empty or astronomically large hour list is refused here, by entry)."""
    out: list[Violation] = []
    for p in plan.phases:
        for k, part in enumerate(p.parts()):
            where = p.name if len(p.parts()) == 1 else f"{p.name} segment {k}"
            if not part.hours:
                out.append(Violation("window", where, "lists no hours"))
                continue
            bad = [h for h in part.hours if not 0 <= h < inst.hours]
            if bad:
                shown = ", ".join(str(h) for h in sorted(set(bad))[:5])
                out.append(
                    Violation(
                        "window",
                        where,
                        f"hours outside the horizon 0..{inst.hours - 1}: {shown}"
                        + (" ..." if len(set(bad)) > 5 else ""),
                    )
                )
    if plan.horizon_start != inst.start:
        out.append(
            Violation(
                "window",
                None,
                f"the plan's hours count from {plan.horizon_start.isoformat()}, the "
                f"instance's from {inst.start.isoformat()}",
            )
        )
    return out


def admit(
    inst: Instance, plan: Plan, source: str, tolerate: frozenset[str] = frozenset()
) -> Admitted:
    """The plan judged against ``inst``; raises :class:`PlanRefused` (naming ``source`` and
    every broken rule by entry) unless only stated figures differ (and rules of the kinds in
    ``tolerate``: a re-plan that does not know the old plan's instance judges it against the
    file as it is now, whose capacity may have changed)."""
    shape = _shape(inst, plan)
    if shape:
        raise PlanRefused(source, tuple(shape))
    v = verify(inst, plan)
    noted = FIGURE_KINDS | tolerate
    rules = tuple(x for x in v.violations if x.kind not in noted)
    if rules:
        raise PlanRefused(source, rules)
    notes = tuple(str(x) for x in v.violations if x.kind in noted)
    return Admitted(plan, v, notes)
