"""What the checker returns: the violations it found and the figures it recomputed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from planner.checker.recompute import PhaseFacts

Kind = Literal[
    "missing_phase",  # an active phase has no entry in the plan
    "unknown_phase",  # an entry names no phase, a phase marked done, or repeats a phase
    "configuration",  # GPU type, region, contract, precision, layout, count or spares not allowed
    "memory",  # the configuration does not fit in GPU memory
    "work",  # the number of running hours differs from the hours the work needs
    "window",  # hours repeated, outside [release, deadline), or a different horizon
    "contiguity",  # a non-preemptible phase pauses
    "segments",  # segments too many, out of order, repeating or changing what may not change
    "precedence",  # a phase starts before a predecessor ends
    "capacity",  # GPUs of a (region, GPU type) pool above its capacity in some hour
    "reserved",  # reserved-contract GPUs above the committed pool, or a bad commitment
    "carbon_cap",  # emissions above objective.carbon_cap_tonnes
    "cost",  # a stated figure differs from its recomputation
    "figure",  # a derived figure in an entry's info (memory, failures) differs
    "migration",  # a migration between segments stated missing or at the wrong cost
]

#: Every violation kind, in the order the checker looks for them.
KINDS: tuple[str, ...] = get_args(Kind)


@dataclass(frozen=True)
class Violation:
    """One broken rule of docs/cost-model.md; ``phase`` is None for plan-wide rules."""

    kind: Kind
    phase: str | None
    message: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown violation kind {self.kind!r}; expected one of {KINDS}")

    def __str__(self) -> str:
        where = f" [{self.phase}]" if self.phase is not None else ""
        return f"{self.kind}{where}: {self.message}"


@dataclass(frozen=True)
class Verification:
    """The checker's verdict on a plan.

    ``costs`` holds the recomputed plan costs (USD, unweighted; keys rental, energy, storage,
    failure, transfer, porting, carbon, total) and the value of the time it takes (``time``,
    not part of the total), ``objective`` the weighted total ``Σ weights[k] x costs[k]`` plus
    the value of time. ``phase_costs`` and ``facts`` are the recomputed per-phase
    costs and configuration physics. ``costed`` is False when some phase could not be costed
    (its configuration names something the instance lacks); the stated costs are then not
    compared, and the recomputed figures cover the costable phases only."""

    violations: tuple[Violation, ...]
    costs: dict[str, float]
    objective: float
    energy_kwh: float
    emissions_t: float
    phase_costs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    facts: Mapping[str, PhaseFacts] = field(default_factory=dict)
    costed: bool = True

    @property
    def ok(self) -> bool:
        """True when the plan breaks no rule and every stated figure matches."""
        return not self.violations

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of violation found (empty for a valid plan)."""
        return frozenset(v.kind for v in self.violations)

    def of_kind(self, kind: str) -> tuple[Violation, ...]:
        """The violations of one ``kind``, in the order found."""
        return tuple(v for v in self.violations if v.kind == kind)

    def summary(self) -> str:
        """One line for ``verify``: valid with the recomputed total, or how many violations of each
        kind."""
        if self.ok:
            return f"valid; recomputed total {self.costs.get('total', math.nan):,.2f} USD"
        counts: dict[str, int] = {}
        for v in self.violations:
            counts[v.kind] = counts.get(v.kind, 0) + 1
        listed = ", ".join(f"{n} {k}" for k, n in counts.items())
        return f"invalid: {len(self.violations)} violation(s) ({listed})"
