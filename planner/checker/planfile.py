"""Read a plan file for checking: every missing or mistyped field is named with its path.

The layout is :mod:`planner.model.plan`'s (``trainplan-plan/2``, and ``/1`` with the solver fields
at the top level). Required: ``horizon_start`` (ISO
time with a UTC offset), ``objective`` (a number or null), ``costs`` (every component and
``total``), ``energy_kwh``, ``emissions_t`` and ``phases``, each phase with ``name``, ``gpu``,
``region``, ``contract``, ``gpus``, ``spare_gpus``, ``precision``, ``zero``, ``recompute``,
``tp``, ``pp``, ``tier`` and ``hours``. Optional: ``reserved`` (with a ``term`` in ``/3``),
phase ``costs``, ``info``, ``term`` and (``/3``) ``segments``, each with the configuration
fields, ``hours``, ``work``, ``costs`` and ``migration``; ``replan``; and the descriptive
fields (``instance``, the ``solve`` header; in ``/1`` ``solver``, ``status``, ...).
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from planner.checker.costs import ALL_KEYS
from planner.instance.errors import FieldError, InstanceError
from planner.instance.read import load_document
from planner.model.plan import PLAN_FORMAT, READABLE_FORMATS, Plan
from planner.model.result import SolveHeader


class PlanFileError(InstanceError):
    """A plan file that cannot be read: names the file, each field path and what was expected.
    A subclass of :class:`InstanceError`, so the CLI reports it and exits with status 2."""


_PHASE_FIELDS: tuple[tuple[str, str], ...] = (
    ("name", "str"),
    ("gpu", "str"),
    ("region", "str"),
    ("contract", "str"),
    ("gpus", "number"),
    ("spare_gpus", "int"),
    ("precision", "str"),
    ("zero", "int"),
    ("recompute", "str"),
    ("tp", "int"),
    ("pp", "int"),
    ("tier", "str"),
)

#: Hours a plan file may name, either side of its horizon's start: ten times the longest
#: horizon an instance may have (3 years); beyond that a number is no hour (1e308 as an hour
#: would make every range over it unbounded).
MAX_HOUR = 10 * 24 * 366 * 3


#: Layout fields an entry may leave out (planner.model.plan fills the defaults), each typed.
_OPTIONAL_FIELDS: tuple[tuple[str, str], ...] = (
    ("sp", "bool"),
    ("cp", "int"),
    ("ep", "int"),
    ("microbatches", "int"),
    ("virtual", "int"),
    ("offload", "str"),
    ("checkpoint", "str"),
)

_EXPECTED = {
    "str": "a string",
    "number": "a finite number",
    "int": "a whole number",
    "bool": "true or false",
}


def _is(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, int | float) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(
    obj: dict[str, Any],
    key: str,
    kind: str,
    path: str,
    errors: list[FieldError],
    required: bool = True,
) -> None:
    if key not in obj:
        if required:
            errors.append(
                FieldError(path, f"required field is missing (expected {_EXPECTED[kind]})")
            )
        return
    if not _is(obj[key], kind):
        errors.append(FieldError(path, f"expected {_EXPECTED[kind]}, got {_shown(obj[key])}"))


def _check_phase(i: int, ph: Any, errors: list[FieldError]) -> None:
    where = f"phases[{i}]"
    if not isinstance(ph, dict):
        errors.append(FieldError(where, f"expected an object, got {_shown(ph)}"))
        return
    if isinstance(ph.get("name"), str):
        where += f" ({ph['name']})"
    for key, kind in _PHASE_FIELDS:
        _field(ph, key, kind, f"{where}.{key}", errors)
    _optional_fields(ph, where, errors)
    _check_hours_and_costs(ph, where, errors)
    segs = ph.get("segments", [])
    if not isinstance(segs, list):
        errors.append(FieldError(f"{where}.segments", f"expected a list, got {_shown(segs)}"))
        return
    for k, seg in enumerate(segs):
        at = f"{where}.segments[{k}]"
        if not isinstance(seg, dict):
            errors.append(FieldError(at, f"expected an object, got {_shown(seg)}"))
            continue
        for key, kind in _PHASE_FIELDS[1:]:
            _field(seg, key, kind, f"{at}.{key}", errors)
        _optional_fields(seg, at, errors)
        _check_hours_and_costs(seg, at, errors)
        _field(seg, "work", "number", f"{at}.work", errors, required=False)
        mig = seg.get("migration", {})
        if not isinstance(mig, dict):
            errors.append(FieldError(f"{at}.migration", "expected an object"))
        else:
            for key in ("rental", "energy", "transfer", "total", "hours"):
                _field(mig, key, "number", f"{at}.migration.{key}", errors, required=False)


def _optional_fields(obj: dict[str, Any], where: str, errors: list[FieldError]) -> None:
    """The layout fields a plan may leave out, when given, of their type (``checkpoint``
    may also be null: the phase's default scheme)."""
    for key, kind in _OPTIONAL_FIELDS:
        if key == "checkpoint" and obj.get(key) is None:
            continue
        _field(obj, key, kind, f"{where}.{key}", errors, required=False)


def _check_hours_and_costs(ph: dict[str, Any], where: str, errors: list[FieldError]) -> None:
    """``hours`` (whole numbers), optional ``term`` (a string), ``costs`` (numbers) and
    ``info`` (an object) of a phase entry or a segment."""
    _field(ph, "term", "str", f"{where}.term", errors, required=False)
    hours = ph.get("hours")
    if "hours" not in ph:
        errors.append(
            FieldError(
                f"{where}.hours", "required field is missing (expected a list of hour numbers)"
            )
        )
    elif not isinstance(hours, list):
        errors.append(
            FieldError(f"{where}.hours", f"expected a list of hour numbers, got {_shown(hours)}")
        )
    else:
        bad = [h for h in hours if not _is(h, "int")]
        far = [h for h in hours if _is(h, "int") and not -MAX_HOUR <= h <= MAX_HOUR]
        if bad:
            errors.append(
                FieldError(f"{where}.hours", f"expected whole hour numbers, got {_shown(bad[0])}")
            )
        elif far:
            errors.append(
                FieldError(
                    f"{where}.hours",
                    f"expected hours between {-MAX_HOUR:,} and {MAX_HOUR:,} (a horizon is at "
                    f"most three years), got {_shown(far[0])}",
                )
            )
    costs = ph.get("costs", {})
    if not isinstance(costs, dict):
        errors.append(FieldError(f"{where}.costs", f"expected an object, got {_shown(costs)}"))
    else:
        for k, v in costs.items():
            if not _is(v, "number"):
                errors.append(
                    FieldError(
                        f"{where}.costs.{k}", f"expected {_EXPECTED['number']}, got {_shown(v)}"
                    )
                )
    if not isinstance(ph.get("info", {}), dict):
        errors.append(FieldError(f"{where}.info", "expected an object"))


def _check(data: Any) -> list[FieldError]:
    if not isinstance(data, dict):
        return [
            FieldError("", f"expected a JSON object (a trainplan plan), got {type(data).__name__}")
        ]
    errors: list[FieldError] = []
    fmt = data.get("format", PLAN_FORMAT)
    if fmt not in READABLE_FORMATS:
        errors.append(
            FieldError("format", f"expected one of {list(READABLE_FORMATS)}, got {_shown(fmt)}")
        )
    if "horizon_start" not in data:
        errors.append(
            FieldError(
                "horizon_start",
                "required field is missing (expected an ISO time with a UTC offset)",
            )
        )
    else:
        hs = data["horizon_start"]
        try:
            when = datetime.fromisoformat(hs) if isinstance(hs, str) else None
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            errors.append(
                FieldError(
                    "horizon_start", f"expected an ISO time with a UTC offset, got {_shown(hs)}"
                )
            )
    if "objective" not in data:
        errors.append(
            FieldError("objective", "required field is missing (expected a number or null)")
        )
    elif data["objective"] is not None:
        _field(data, "objective", "number", "objective", errors)
    costs = data.get("costs")
    if "costs" not in data:
        errors.append(
            FieldError(
                "costs", f"required field is missing (expected an object with {list(ALL_KEYS)})"
            )
        )
    elif not isinstance(costs, dict):
        errors.append(FieldError("costs", f"expected an object, got {_shown(costs)}"))
    else:
        for k in ALL_KEYS:
            _field(costs, k, "number", f"costs.{k}", errors)
        for k, v in costs.items():
            if k not in ALL_KEYS and not _is(v, "number"):
                errors.append(
                    FieldError(f"costs.{k}", f"expected a finite number, got {_shown(v)}")
                )
    _field(data, "energy_kwh", "number", "energy_kwh", errors)
    _field(data, "emissions_t", "number", "emissions_t", errors)
    header = data.get("solve", data)
    where = "solve." if "solve" in data else ""
    if not isinstance(header, dict):
        errors.append(FieldError("solve", f"expected an object, got {_shown(header)}"))
        header = {}
    for key in ("bound", "gap", "runtime_s"):
        if header.get(key) is not None:
            _field(header, key, "number", where + key, errors)
    phases = data.get("phases")
    if "phases" not in data:
        errors.append(
            FieldError("phases", "required field is missing (expected a list of phase entries)")
        )
    elif not isinstance(phases, list):
        errors.append(FieldError("phases", f"expected a list, got {_shown(phases)}"))
    else:
        for i, ph in enumerate(phases):
            _check_phase(i, ph, errors)
    reserved = data.get("reserved", [])
    if not isinstance(reserved, list):
        errors.append(FieldError("reserved", f"expected a list, got {_shown(reserved)}"))
    else:
        for i, r in enumerate(reserved):
            if not isinstance(r, dict):
                errors.append(
                    FieldError(f"reserved[{i}]", "expected an object with region, gpu, gpus")
                )
                continue
            _field(r, "region", "str", f"reserved[{i}].region", errors)
            _field(r, "gpu", "str", f"reserved[{i}].gpu", errors)
            _field(r, "gpus", "int", f"reserved[{i}].gpus", errors)
            _field(r, "term", "str", f"reserved[{i}].term", errors, required=False)
    notes = header.get("notes", [])
    if not isinstance(notes, list):
        errors.append(FieldError(where + "notes", "expected a list of strings"))
    return errors


def plan_from_dict(data: Any, file: str = "<plan>") -> Plan:
    """Validate a parsed plan document and build the :class:`Plan`; every problem is reported
    at once in a :class:`PlanFileError`."""
    errors = _check(data)
    if errors:
        raise PlanFileError(file, errors)
    return Plan.from_dict(data)


def read_plan(path: str | Path) -> Plan:
    """Read a plan file (JSON; YAML also parses) with the instance reader's size and shape
    limits."""
    p = Path(path)
    try:
        data = load_document(p)
    except InstanceError as e:
        raise PlanFileError(e.file, e.errors) from None
    return plan_from_dict(data, str(p))


def read_solved(path: str | Path) -> tuple[Plan, SolveHeader]:
    """Read a plan file and its solver header (``"solve"``; the top-level fields of format
    ``/1``), for reports: the plan is validated as :func:`read_plan` does."""
    p = Path(path)
    try:
        data = load_document(p)
    except InstanceError as e:
        raise PlanFileError(e.file, e.errors) from None
    return plan_from_dict(data, str(p)), SolveHeader.from_file_dict(data)


def read_plan_document(path: str | Path) -> tuple[Plan, SolveHeader, dict[str, Any]]:
    """:func:`read_solved` and the parsed document itself (for the optional
    ``instance_file`` and ``attribution``, which the checker does not need)."""
    p = Path(path)
    try:
        data = load_document(p)
    except InstanceError as e:
        raise PlanFileError(e.file, e.errors) from None
    return plan_from_dict(data, str(p)), SolveHeader.from_file_dict(data), data
