"""One result type for every solver: why it stopped, what it found, how good it is proved.

A :class:`Result` is the solver header (solver, termination, solution status, bound,
runtime, threads, message, notes, statistics) around a :class:`~planner.model.plan.Plan` (the
schedule and its costs). The objective and the gap are derived from the plan and the bound,
with one definition of the gap (:func:`relative_gap`). Results are built through the named
constructors :meth:`Result.solved`, :meth:`Result.no_plan` and :meth:`Result.failed`; each
backend translates its native status through one table (``formulations``' ``*_TERMINATION``
tables) into a :class:`Termination`.

One vocabulary for every solver: a plan is **optimal** (termination ``optimal``, solution
``optimal``) exactly when its proved gap is within the gap the caller asked for, whoever proved
it (HiGHS, CP-SAT, or the pipeline's own bound); a plan without that proof is ``feasible``, and
the termination says why the solver stopped (``time_limit``, ``interrupted``, ``heuristic``,
``error`` when it failed after a plan was found). :meth:`Result.solved` takes the requested
``gap`` and applies the rule.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from planner.model.plan import Plan


class Termination(StrEnum):
    """Why the solver stopped (kept apart from what it found, as in Pyomo's contrib.solver)."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    #: Read from plan files written before the one vocabulary; no solver returns it now (a
    #: plan proved within the requested gap is OPTIMAL).
    GAP_REACHED = "gap_reached"
    INFEASIBLE = "infeasible"
    NO_CONFIGURATION = "no_configuration"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    HEURISTIC = "heuristic"
    UNKNOWN = "unknown"
    #: Every plan the solver found failed the independent checker: a bug in trainplan, never
    #: the user's (planner.solve's verification net; the command line exits 4).
    CHECK_FAILED = "check_failed"


class SolutionStatus(StrEnum):
    NONE = "none"
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"


#: At most this many plans a solver found besides its best are kept on a :class:`Result`
#: (``alternatives``) for the verification net of ``planner.solve``.
MAX_ALTERNATIVES = 8

#: Relative slack on "within the requested gap": costs are re-summed by the cost model after
#: the solver (rounding in the last digits), and CP-SAT's bound carries the rounding of its
#: integer costs (up to ~0.5 / 10^4 USD per term, a few 1e-6 of small objectives).
GAP_TOLERANCE = 1e-5


def within_gap(objective: float | None, bound: float | None, gap: float) -> bool:
    """Whether ``bound`` proves ``objective`` within the relative ``gap``
    (:func:`relative_gap` <= gap + :data:`GAP_TOLERANCE`)."""
    g = relative_gap(objective, bound)
    return g is not None and g <= gap + GAP_TOLERANCE


def inconsistency(objective: float | None, bound: float | None) -> str | None:
    """Why ``bound`` cannot be a lower bound on a plan of ``objective`` (None when it can):
    it lies above the objective by more than :data:`GAP_TOLERANCE` (relative, at least 1e-9
    absolute), so the bound, the plan's costs or the model behind the bound is wrong."""
    if objective is None or bound is None or not math.isfinite(objective):
        return None
    if math.isnan(bound) or bound <= objective + GAP_TOLERANCE * max(abs(objective), 1.0):
        return None
    return (
        f"internal inconsistency: the solver's bound {bound:,.6g} is above the plan's "
        f"objective {objective:,.6g} (a bound can never exceed a plan); the bound is dropped "
        "and the plan is not called optimal; please report it"
    )


def _ranked(
    alternatives: tuple[tuple[str, Plan], ...], best: Plan | None
) -> tuple[tuple[str, Plan], ...]:
    """Alternatives cheapest first, without ``best`` itself and without repeats of an
    objective and schedule, at most :data:`MAX_ALTERNATIVES`."""
    seen: set[tuple[object, ...]] = set() if best is None else {_key(best)}
    out: list[tuple[str, Plan]] = []
    for src, plan in sorted(alternatives, key=lambda sp: sp[1].objective):
        k = _key(plan)
        if k in seen or not math.isfinite(plan.objective):
            continue
        seen.add(k)
        out.append((src, plan))
        if len(out) == MAX_ALTERNATIVES:
            break
    return tuple(out)


def _key(plan: Plan) -> tuple[object, ...]:
    return (round(plan.objective, 9), tuple((p.name, p.hours) for p in plan.phases))


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``max(0, objective - bound) / max(|objective|, 1e-9)``: how far the plan may be from the
    optimum at most; 0 when the bound meets (or, by tolerance, passes) the objective."""
    if objective is None or bound is None or not math.isfinite(objective):
        return None
    if not math.isfinite(bound):
        return None if bound < 0 else 0.0
    return max(0.0, objective - bound) / max(abs(objective), 1e-9)


@dataclass(frozen=True)
class Result:
    """What a solve produced. ``plan`` is None when there is no plan (``status`` NONE); the
    ``bound`` is a proved lower bound on the objective of every plan (None: none proved)."""

    solver: str
    termination: Termination
    status: SolutionStatus
    plan: Plan | None
    bound: float | None
    runtime_s: float
    message: str = ""
    notes: tuple[str, ...] = ()
    stats: Mapping[str, float] = field(default_factory=dict)
    #: HiGHS / CP-SAT threads the solve ran with (None: no solver ran).
    threads: int | None = None
    #: Other plans the solver found, ``(source, plan)`` cheapest first (at most
    #: :data:`MAX_ALTERNATIVES`): the fallbacks of ``planner.solve``'s verification net when
    #: the best plan fails the independent checker. Never written to a plan file.
    alternatives: tuple[tuple[str, Plan], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.stats, MappingProxyType):
            object.__setattr__(self, "stats", MappingProxyType(dict(self.stats)))
        if (self.plan is None) != (self.status == SolutionStatus.NONE):
            raise ValueError("a Result has a plan exactly when its status is not 'none'")

    # ----------------------------------------------------------------- constructors

    @classmethod
    def solved(
        cls,
        solver: str,
        plan: Plan,
        termination: Termination,
        *,
        bound: float | None = None,
        runtime_s: float,
        optimal: bool | None = None,
        gap: float | None = None,
        message: str = "",
        notes: tuple[str, ...] = (),
        stats: Mapping[str, float] | None = None,
        threads: int | None = None,
        alternatives: tuple[tuple[str, Plan], ...] = (),
    ) -> Result:
        """A result with a plan.

        With the requested ``gap``, the one rule of the module docstring: OPTIMAL (termination
        and solution) exactly when ``bound`` proves the plan within ``gap``
        (:func:`within_gap`); a termination OPTIMAL that the bound does not support becomes
        UNKNOWN, with a note. Without ``gap`` (a solver that proves nothing, or a caller that
        decided): OPTIMAL when ``optimal`` (default: when ``termination`` is OPTIMAL).

        A ``bound`` above the plan's objective (beyond :data:`GAP_TOLERANCE`) is an internal
        inconsistency, since the plan is a plan: :func:`consistent_bound` drops it, the plan
        is not optimal, and the message says so."""
        notes = tuple(notes)
        stats = dict(stats or {})
        bad = inconsistency(plan.objective, bound)
        if bad is not None:
            stats["inconsistent_bound"] = float(bound)  # type: ignore[arg-type]
            bound, optimal = None, False
            if termination in (Termination.OPTIMAL, Termination.GAP_REACHED):
                termination = Termination.UNKNOWN
            message = f"{bad}; {message}" if message else bad
        if gap is not None:
            is_opt = within_gap(plan.objective, bound, gap)
            if is_opt:
                termination = Termination.OPTIMAL
            elif termination in (Termination.OPTIMAL, Termination.GAP_REACHED):
                g = relative_gap(plan.objective, bound)
                shown = "no bound" if g is None else f"a proved gap of {g:.4%}"
                notes = (
                    *notes,
                    f"the solver reported optimal, but the plan has {shown} (asked: {gap:.4%})",
                )
                termination = Termination.UNKNOWN
        else:
            is_opt = termination == Termination.OPTIMAL if optimal is None else optimal
        return cls(
            solver,
            termination,
            SolutionStatus.OPTIMAL if is_opt else SolutionStatus.FEASIBLE,
            plan,
            bound,
            runtime_s,
            message,
            notes,
            stats,
            threads,
            _ranked(alternatives, plan),
        )

    @classmethod
    def no_plan(
        cls,
        solver: str,
        termination: Termination,
        message: str,
        *,
        runtime_s: float,
        bound: float | None = None,
        notes: tuple[str, ...] = (),
        stats: Mapping[str, float] | None = None,
        threads: int | None = None,
    ) -> Result:
        """A result without a plan: infeasible, no configuration, out of time, or an error."""
        return cls(
            solver,
            termination,
            SolutionStatus.NONE,
            None,
            bound,
            runtime_s,
            message,
            tuple(notes),
            dict(stats or {}),
            threads,
        )

    @classmethod
    def no_configuration(
        cls, solver: str, reasons: list[str] | tuple[str, ...], *, runtime_s: float
    ) -> Result:
        """Some phase has no feasible configuration: no model is built. ``reasons`` are the
        configuration space's (one per such phase)."""
        return cls.no_plan(
            solver,
            Termination.NO_CONFIGURATION,
            "; ".join(reasons) + " (run `trainplan explain` for more)",
            runtime_s=runtime_s,
        )

    @classmethod
    def failed(cls, solver: str, message: str, *, runtime_s: float) -> Result:
        """The solver raised or ran out of memory: no plan, termination ERROR."""
        return cls.no_plan(solver, Termination.ERROR, message, runtime_s=runtime_s)

    # ----------------------------------------------------------------- derived

    @property
    def objective(self) -> float | None:
        """The plan's objective (weighted cost), None without a plan."""
        return None if self.plan is None else self.plan.objective

    @property
    def gap(self) -> float | None:
        """Relative gap between the plan's objective and the proven bound, None when either is
        missing."""
        return relative_gap(self.objective, self.bound)

    @property
    def has_plan(self) -> bool:
        """Whether the solve produced a plan (a result may carry only a status and a bound)."""
        return self.plan is not None

    def with_notes(self, *notes: str) -> Result:
        """The same result with ``notes`` appended (results are frozen)."""
        return replace(self, notes=(*self.notes, *notes))

    def with_stats(self, **stats: float) -> Result:
        """The same result with ``stats`` added to (or replacing) its statistics."""
        return replace(self, stats={**self.stats, **stats})

    def with_alternatives(self, *alternatives: tuple[str, Plan]) -> Result:
        """This result with more alternatives (another solver's plans, e.g. a portfolio's
        first run), ranked and deduplicated with its own."""
        return replace(self, alternatives=_ranked((*self.alternatives, *alternatives), self.plan))

    def summary(self) -> str:
        """One line for logs and the CLI: solver, termination, solution status, objective, bound,
        gap and seconds."""
        gap = f"{self.gap:.2%}" if self.gap is not None else "n/a"
        obj = f"{self.objective:,.2f}" if self.objective is not None else "n/a"
        bnd = f"{self.bound:,.2f}" if self.bound is not None else "n/a"
        return (
            f"{self.solver}: {self.termination.value}, solution {self.status.value}, "
            f"objective {obj}, bound {bnd}, gap {gap}, {self.runtime_s:.1f} s"
        )

    # ----------------------------------------------------------------- files

    def header(self) -> dict[str, Any]:
        """The solver header as JSON-ready data (the plan file's ``"solve"`` object)."""
        return {
            "solver": self.solver,
            "termination": self.termination.value,
            "status": self.status.value,
            "objective": _num(self.objective),
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "runtime_s": self.runtime_s,
            "threads": self.threads,
            "message": self.message,
            "notes": list(self.notes),
            "stats": {k: _num(float(v)) for k, v in self.stats.items()},
        }

    def to_dict(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The plan file: the plan's fields, the header under ``"solve"`` and ``extra`` (the
        optional ``instance_file`` and ``attribution``, planner.model.plan)."""
        if self.plan is None:
            raise ValueError(f"no plan to write: {self.message}")
        return {**self.plan.to_dict(), "solve": self.header(), **(extra or {})}

    def to_json(self, indent: int | None = 2, extra: Mapping[str, Any] | None = None) -> str:
        """The result file's JSON text (the solve header and the plan, plus ``extra`` top-level
        fields); NaN raises instead of writing invalid JSON."""
        return json.dumps(self.to_dict(extra), indent=indent, allow_nan=False)

    def write(self, path: str | Path, extra: Mapping[str, Any] | None = None) -> None:
        """Write the result file (:meth:`to_json`) to ``path``."""
        Path(path).write_text(self.to_json(extra=extra) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class SolveHeader:
    """The ``"solve"`` object of a plan file as read back (for reports); absent fields are
    None or empty. Files of format ``trainplan-plan/1`` carry the fields at the top level."""

    solver: str = ""
    termination: str = ""
    status: str = ""
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    runtime_s: float | None = None
    threads: int | None = None
    message: str = ""
    notes: tuple[str, ...] = ()

    @classmethod
    def from_file_dict(cls, d: Mapping[str, Any]) -> SolveHeader:
        """The solve header of a plan file: from its ``solve`` block, or from the top level of older
        files that kept it there; fields of the wrong type read as missing."""
        h = d.get("solve")
        src: Mapping[str, Any] = h if isinstance(h, Mapping) else d

        def num(k: str) -> float | None:
            v = src.get(k)
            return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        threads = src.get("threads")
        return cls(
            solver=str(src.get("solver", "")),
            termination=str(src.get("termination", "")),
            status=str(src.get("status", "")),
            objective=num("objective"),
            bound=num("bound"),
            gap=num("gap"),
            runtime_s=num("runtime_s"),
            threads=int(threads) if isinstance(threads, int) else None,
            message=str(src.get("message", "")),
            notes=tuple(str(n) for n in src.get("notes", []) or []),
        )


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x
