"""The plan file's optional blocks a report shows, checked before anything of them is shown:
the ``attribution`` (the saving against the lever-free baseline, written by ``solve``) and
the ``replan`` block (what a re-plan changed, written by ``solve --from``).

A report prints these figures on its first screen, so a plan file cannot be trusted to hold
them right (issue 26: a crafted block ended in a traceback, or printed what it liked). Each
block is read in two steps:

- **shape** (:func:`attribution_of`, :func:`check_replan`): every field of the expected type,
  every number finite, every text of a bounded length; a malformed block is bad input
  (:class:`BlockError` with ``code`` 2) naming each field;
- **figures**: an attribution's plan side is the plan file's own objective and costs; its
  steps add up (each lever's cost is the previous cost less its saving, from the baseline's
  objective to the plan's); no cost is negative; and, with the instance at hand, its baseline
  is the instance's lever-free baseline (:func:`check_baseline`). A re-plan's hours and
  phases lie in the instance. A block whose figures do not hold is an invalid plan
  (``code`` 1).

Figures match within the checker's tolerance: ``|stated - expected| <= 0.01 + 1e-6 x
|expected|`` (``trainplan verify``'s defaults).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from planner.model.plan import COST_KEYS, Plan

if TYPE_CHECKING:
    from planner.analysis.attribution import Attribution
    from planner.instance.model import Instance

#: Exit statuses of a refused block (planner.interfaces.cli.exits: bad input, invalid plan).
MALFORMED, INCONSISTENT = 2, 1
#: The longest text a block may hold (a rule, a note, a label).
MAX_TEXT = 2_000
#: The most lever steps and notes an attribution may hold, and changes a re-plan.
MAX_ITEMS = 200
#: The most hours a re-plan's segment may list (a report draws at most this many).
MAX_HOURS = 1_000_000
REL_TOL, ABS_TOL = 1e-6, 0.01


class BlockError(ValueError):
    """A block the report will not show: ``errors`` are ``field: what was expected``,
    ``code`` the exit status (2 malformed, 1 figures that do not hold)."""

    def __init__(self, errors: list[str], code: int) -> None:
        self.errors = errors
        self.code = code
        super().__init__("; ".join(errors))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= ABS_TOL + REL_TOL * abs(b)


class _Shape:
    """Collects what is wrong with a parsed block, field by field."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.errors: list[str] = []

    def bad(self, where: str, expected: str, got: Any) -> None:
        text = repr(got)
        text = text if len(text) <= 40 else text[:37] + "..."
        self.errors.append(f"{self.root}{where}: expected {expected}, got {text}")

    def mapping(self, v: Any, where: str) -> dict[str, Any]:
        if isinstance(v, dict):
            return v
        self.bad(where, "an object", v)
        return {}

    def items(self, v: Any, where: str, most: int = MAX_ITEMS) -> list[Any]:
        if isinstance(v, list) and len(v) <= most:
            return v
        self.bad(where, f"a list of at most {most:,} items", v)
        return []

    def number(self, v: Any, where: str, *, none: bool = False) -> float:
        if none and v is None:
            return math.nan
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            self.bad(where, "a finite number" + (" or null" if none else ""), v)
            return math.nan
        return float(v)

    def whole(self, v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            self.bad(where, "a whole number", v)
            return 0
        return v

    def text(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or len(v) > MAX_TEXT:
            self.bad(where, f"a text of at most {MAX_TEXT} characters", v)
            return ""
        return v

    def check(self) -> None:
        if self.errors:
            raise BlockError(self.errors, MALFORMED)


def attribution_of(raw: Any, plan: Plan) -> Attribution:
    """The plan file's ``attribution`` as an :class:`~planner.analysis.attribution.Attribution`,
    once its shape and figures hold (module docstring); raises :class:`BlockError`."""
    from planner.analysis.attribution import ATTRIBUTION_FORMAT, Attribution

    s = _Shape("attribution")
    d = s.mapping(raw, "")
    if d.get("format") != ATTRIBUTION_FORMAT:
        s.bad(".format", repr(ATTRIBUTION_FORMAT), d.get("format"))
    if "method" in d:
        s.text(d["method"], ".method")
    base = s.mapping(d.get("baseline"), ".baseline")
    side = s.mapping(d.get("plan"), ".plan")
    for where, block in ((".baseline", base), (".plan", side)):
        s.number(block.get("objective"), f"{where}.objective")
        costs = s.mapping(block.get("costs"), f"{where}.costs")
        for k in (*COST_KEYS, "total"):
            if k in costs or k != "total":
                s.number(costs.get(k), f"{where}.costs.{k}")
        for k in costs:
            if k not in (*COST_KEYS, "total"):
                s.bad(f"{where}.costs", f"only the keys {[*COST_KEYS, 'total']}", k)
    for k in ("energy_kwh", "emissions_t"):
        if k in base:
            s.number(base[k], f".baseline.{k}")
    for i, r in enumerate(s.items(base.get("rules", []), ".baseline.rules")):
        s.text(r, f".baseline.rules[{i}]")
    for i, n in enumerate(s.items(d.get("notes", []), ".notes")):
        s.text(n, f".notes[{i}]")
    keys: set[str] = set()
    for i, step in enumerate(s.items(d.get("levers"), ".levers")):
        at = f".levers[{i}]"
        st = s.mapping(step, at)
        key = s.text(st.get("key"), f"{at}.key")
        if key in keys:
            s.bad(f"{at}.key", "a lever named once", key)
        keys.add(key)
        for k in ("label", "section", "method", "note"):
            if k in st:
                s.text(st[k], f"{at}.{k}")
        s.number(st.get("cost"), f"{at}.cost")
        s.number(st.get("saving"), f"{at}.saving")
    s.check()
    a = Attribution.from_dict(d)
    _check_figures(a, plan)
    return a


def _check_figures(a: Attribution, plan: Plan) -> None:
    errors: list[str] = []
    stated_obj = plan.objective
    if stated_obj is not None and not _close(a.plan_objective, float(stated_obj)):
        errors.append(
            f"attribution.plan.objective: {a.plan_objective:,.2f} is not the plan's "
            f"objective {float(stated_obj):,.2f}"
        )
    for k in (*COST_KEYS, "total"):
        mine, theirs = a.plan_costs.get(k), plan.costs.get(k)
        if mine is not None and theirs is not None and not _close(mine, float(theirs)):
            errors.append(
                f"attribution.plan.costs.{k}: {mine:,.2f} is not the plan's {float(theirs):,.2f}"
            )
    for k, v in a.baseline_costs.items():
        if v < -ABS_TOL:
            errors.append(f"attribution.baseline.costs.{k}: {v:,.2f} is negative")
    parts = sum(a.baseline_costs.get(k, 0.0) for k in COST_KEYS)
    total = a.baseline_costs.get("total")
    if total is not None and not _close(parts, total):
        errors.append(
            f"attribution.baseline.costs.total: {total:,.2f} is not the sum of the components "
            f"{parts:,.2f}"
        )
    if a.baseline_objective < -ABS_TOL:
        errors.append(f"attribution.baseline.objective: {a.baseline_objective:,.2f} is negative")
    before = a.baseline_objective
    for i, step in enumerate(a.levers):
        if not _close(step.cost, before - step.saving):
            errors.append(
                f"attribution.levers[{i}] ({step.key}): cost {step.cost:,.2f} is not the cost "
                f"before it {before:,.2f} less its saving {step.saving:,.2f}"
            )
        before = step.cost
    if a.levers and not _close(before, a.plan_objective):
        errors.append(
            f"attribution.levers: the last step ends at {before:,.2f}, not at the plan's "
            f"objective {a.plan_objective:,.2f}"
        )
    if errors:
        raise BlockError(errors, INCONSISTENT)


def check_baseline(a: Attribution, inst: Instance) -> None:
    """The attribution's baseline is the instance's lever-free baseline (its objective
    recomputed by :func:`formulations.heuristics.baseline.lever_free`); raises
    :class:`BlockError`."""
    from formulations.heuristics.baseline import BaselineError, lever_free

    try:
        lf = lever_free(inst)
    except BaselineError as e:
        raise BlockError(
            [f"attribution.baseline: the instance has no lever-free baseline ({e})"],
            INCONSISTENT,
        ) from None
    want = lf.plan.objective
    if want is None or not _close(a.baseline_objective, float(want)):
        raise BlockError(
            [
                f"attribution.baseline.objective: {a.baseline_objective:,.2f} is not the "
                f"instance's lever-free baseline ({float(want or math.nan):,.2f}); solve again "
                "to rewrite the attribution"
            ],
            INCONSISTENT,
        )


def check_replan(raw: Any, inst: Instance | None) -> None:
    """The plan file's ``replan`` block (written by ``solve --from``): its shape, and with the
    instance its hour, phases and hours inside the instance; raises :class:`BlockError`."""
    s = _Shape("replan")
    d = s.mapping(raw, "")
    hour = s.whole(d.get("from_hour"), ".from_hour")
    if hour < 0:
        s.bad(".from_hour", "an hour >= 0", hour)
    if "previous_instance" in d:
        s.text(d["previous_instance"], ".previous_instance")
    for k in ("previous_total", "history_usd"):
        v = s.number(d.get(k), f".{k}", none=True)
        if v < -ABS_TOL:
            s.bad(f".{k}", "a cost >= 0", v)
    if "state" in d:
        s.mapping(d["state"], ".state")
    hours_seen: list[tuple[str, int]] = []
    phases: list[tuple[str, str]] = []
    for i, ch in enumerate(s.items(d.get("changes", []), ".changes")):
        at = f".changes[{i}]"
        c = s.mapping(ch, at)
        phases.append((f"{at}.phase", s.text(c.get("phase"), f"{at}.phase")))
        if not isinstance(c.get("changed"), bool):
            s.bad(f"{at}.changed", "true or false", c.get("changed"))
        for side in ("before", "after"):
            sd = s.mapping(c.get(side), f"{at}.{side}")
            if "runs" in sd and not isinstance(sd["runs"], bool):
                s.bad(f"{at}.{side}.runs", "true or false", sd["runs"])
            if "cost" in sd:
                s.number(sd["cost"], f"{at}.{side}.cost")
            for j, seg in enumerate(s.items(sd.get("segments", []), f"{at}.{side}.segments")):
                sg = s.mapping(seg, f"{at}.{side}.segments[{j}]")
                s.text(sg.get("config"), f"{at}.{side}.segments[{j}].config")
                where = f"{at}.{side}.segments[{j}].hours"
                for h in s.items(sg.get("hours"), where, MAX_HOURS):
                    hours_seen.append((where, s.whole(h, where)))
    s.check()
    if inst is None:
        return
    errors: list[str] = []
    if hour > inst.hours:
        errors.append(f"replan.from_hour: {hour} is past the instance's horizon ({inst.hours} h)")
    names = {p.name for p in inst.phases}
    errors += [
        f"replan{w}: {n!r} is not a phase of the instance" for w, n in phases if n not in names
    ]
    errors += [
        f"replan{w}: hour {h} is outside the horizon 0..{inst.hours - 1}"
        for w, h in hours_seen
        if not 0 <= h < inst.hours
    ][:10]
    if errors:
        raise BlockError(errors, INCONSISTENT)
