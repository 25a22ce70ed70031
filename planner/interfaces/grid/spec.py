"""Grid files: a base instance, axes of variation, and the scenarios they expand to.

A grid file (YAML or JSON) looks like::

    name: east-sweep              # optional; default: the file's stem
    base: tiny.yaml               # the base instance, relative to this file
    mode: product                 # product (cartesian, the default) or list
    solve: {solver: milp, time_limit: 30, gap: 1.0e-4, backend: auto}   # optional defaults
    axes:
      - path: regions.east.pue                    # any instance field by its dotted path
        values: [1.1, 1.3]
      - multiply: regions.east.electricity        # a multiplier on a price series
        values: [1.0, 1.3]                        # (sets the series' ``scale``)
      - name: fleet                               # whole alternative blocks
        alternatives:
          small: {regions.east.capacity.A100: 8}
          large: {regions.east.capacity.A100: 32, regions.west.capacity.A100: 16}
    scenarios:                    # mode: list only; each maps axis names to values
      - {regions.east.pue: 1.1, fleet: large}

Paths follow :func:`planner.instance.read.set_path`: mappings by key, ``phases`` by phase
name (``phases.finetune.deadline``), other lists by index. An axis is named by ``name``, or
else by its path (a multiplier axis by ``<path>*``).

Multipliers compose with the base: a series whose base ``scale`` is ``s`` gets
``scale = s x m`` for multiplier ``m`` (the price is then ``value x s x m + adder``; the
region's ``price_adder_usd_per_mwh`` is not scaled). Sets are applied first, so a scenario
that replaces a series and also multiplies it scales the replacement.

**Stable scenario IDs.** A scenario is the change it makes to the base: the paths it sets
(with their values) and the series it multiplies (with their factors). Its ID is the first 12
hex digits of ``sha256`` of the canonical JSON of ``{"set": {...}, "multiply": {...}}`` (keys
sorted, no spaces, integral floats written as integers, dates as ISO text). It therefore does
not depend on the order of the axes, on the other scenarios, or on how the change was spelt
(an axis value or an alternative block setting the same path to the same value give one ID).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from planner.instance.errors import FieldError, InstanceError
from planner.instance.files import FileRefused, data_root_of, referenced_file
from planner.instance.model import Instance, copy_document
from planner.instance.read import load_document, read, set_path

#: Refuse grids that expand to more scenarios than this (a typo in an axis can explode).
MAX_SCENARIOS = 200_000
#: At most this many validation problems are kept (the count of the rest is reported).
MAX_REPORTED = 200
ID_LENGTH = 12
MODES = ("product", "list")
SOLVE_KEYS = ("solver", "time_limit", "gap", "backend")


class GridError(InstanceError):
    """A problem with a grid file or with one of its scenarios; names the file and the path."""


@dataclass(frozen=True)
class Axis:
    """One axis of variation.

    ``kind`` is ``"set"`` (``path`` takes each of ``values``), ``"multiply"`` (the series at
    ``path`` is scaled by each of ``values``) or ``"alternatives"`` (``values`` are labels of
    ``blocks``, each block a mapping of paths to values set together)."""

    name: str
    kind: str
    path: str = ""
    values: tuple[Any, ...] = ()
    blocks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """One variant of the base instance.

    ``params`` maps axis names to the value taken (an alternative's label); ``sets`` and
    ``multiply`` are the change it makes; ``id`` is derived from that change alone."""

    id: str
    index: int
    params: Mapping[str, Any]
    sets: Mapping[str, Any]
    multiply: Mapping[str, float]

    def label(self) -> str:
        """The scenario's parameters in one line (``base`` for the unchanged instance)."""
        return ", ".join(f"{k}={_short(v)}" for k, v in self.params.items()) or "base"


@dataclass(frozen=True)
class GridSpec:
    """A parsed grid: its base instance, its axes and its scenarios (in expansion order)."""

    name: str
    file: str
    directory: Path
    base: Instance
    axes: tuple[Axis, ...]
    mode: str
    scenarios: tuple[Scenario, ...]
    #: The grid file's ``solve`` block: the :data:`SOLVE_KEYS` it gives, validated (``solver``
    #: and ``backend`` strings, ``time_limit`` and ``gap`` floats); command-line options
    #: override them (:func:`planner.interfaces.grid.api.resolve_options`).
    defaults: Mapping[str, str | float] = field(default_factory=dict)
    #: Scenarios dropped because another scenario makes the same change (ID, kept ID).
    duplicates: tuple[tuple[str, str], ...] = ()
    #: ``Instance.replace`` updates per scenario ID, computed once by :func:`validate`.
    updates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def updates_of(self, sc: Scenario) -> Mapping[str, Any]:
        """The instance updates of scenario ``sc`` (:func:`updates_for`): those worked out
        when the grid was read, else worked out now."""
        known = self.updates.get(sc.id)
        return known if known is not None else updates_for(self.base, sc)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The names of the grid's axes, in file order."""
        return tuple(a.name for a in self.axes)


# ----------------------------------------------------------------------------- canonical IDs


def canonical(value: Any) -> Any:
    """A JSON-ready canonical form: integral floats become ints (``1.0`` and ``1`` are one
    value to the instance reader), dates become ISO text, tuples become lists."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return str(value)


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces): equal values give equal text, so
    scenario ids and hashes are stable."""
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def scenario_id(sets: Mapping[str, Any], multiply: Mapping[str, float]) -> str:
    """``sha256(canonical_json({"set": sets, "multiply": multiply}))``, first 12 hex digits.

    48 bits: by the birthday bound two of n scenarios collide with probability about
    n^2 / 2^49, 1.8e-3 for a million; a collision inside one grid is detected by
    :func:`expand`."""
    text = canonical_json({"set": dict(sets), "multiply": dict(multiply)})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


def base_fingerprint(inst: Instance) -> str:
    """sha256 of the base instance's canonical JSON document (comments and key order in the
    file do not count; the contents of CSV files it references are not included)."""
    return hashlib.sha256(canonical_json(inst.raw).encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- paths


def get_path(data: Any, path: str) -> Any:
    """The value at a dotted path of a raw document, addressed as :func:`set_path` does;
    raises ``KeyError`` naming the missing part."""
    node = data
    for part in path.split("."):
        if isinstance(node, list):
            idx = next(
                (j for j, it in enumerate(node) if isinstance(it, dict) and it.get("name") == part),
                None,
            )
            if idx is None and part.isdigit() and int(part) < len(node):
                idx = int(part)
            if idx is None:
                raise KeyError(f"no item named {part!r}")
            node = node[idx]
        elif isinstance(node, dict):
            if part not in node:
                raise KeyError(f"no field {part!r}")
            node = node[part]
        else:
            raise KeyError(f"{part!r}: the parent is not a mapping or list")
    return node


def updates_for(base: Instance, sc: Scenario) -> dict[str, Any]:
    """The ``Instance.replace`` updates of a scenario: its sets, then ``<series>.scale`` for
    each multiplier (the series' scale after the sets, times the factor). Raises
    :class:`InstanceError` naming the path when a multiplied path is not a series."""
    updates, errors = _updates(base, sc.sets, sc.multiply)
    if errors:
        raise InstanceError(base.source, errors)
    return updates


def _updates(
    base: Instance, sets: Mapping[str, Any], multiply: Mapping[str, float]
) -> tuple[dict[str, Any], list[FieldError]]:
    if not multiply:
        return dict(sets), []
    data = copy_document(base.raw)
    for path, value in sets.items():
        set_path(data, path, copy_document(value), base.source)
    return _scales(data, sets, multiply)


def _scales(
    data: Any, sets: Mapping[str, Any], multiply: Mapping[str, float]
) -> tuple[dict[str, Any], list[FieldError]]:
    """``sets`` and, per multiplied series of ``data`` (the base with the sets applied), its
    ``scale`` times the factor; and the problems with the multiplied paths."""
    updates: dict[str, Any] = dict(sets)
    errors: list[FieldError] = []
    for path, factor in multiply.items():
        try:
            series = get_path(data, path)
        except KeyError as e:
            errors.append(FieldError(path, str(e.args[0])))
            continue
        if not isinstance(series, dict) or not any(
            k in series for k in ("constant", "values", "tou", "csv")
        ):
            errors.append(
                FieldError(
                    path,
                    "multiply: expected an hourly series (a mapping with constant, values, "
                    f"tou or csv), got {_short(series)}",
                )
            )
            continue
        old = series.get("scale", 1.0)
        if isinstance(old, bool) or not isinstance(old, int | float):
            errors.append(FieldError(f"{path}.scale", f"expected a number, got {old!r}"))
            continue
        updates[f"{path}.scale"] = float(old) * float(factor)
    return updates, errors


# ----------------------------------------------------------------------------- parsing


def load_grid(path: str | Path) -> GridSpec:
    """Read a grid file, read its base instance, expand and validate every scenario.

    Raises :class:`GridError` listing every problem found (grid file fields, then every
    scenario whose instance does not validate, naming the scenario and the field path)."""
    p = Path(path)
    data = load_document(p)
    return grid_from_dict(data, str(p), p.parent, default_name=p.stem)


def grid_from_dict(
    data: Any, file: str, directory: Path, default_name: str = "grid", base: Instance | None = None
) -> GridSpec:
    """Parse a grid document (see the module docstring). ``base`` replaces the ``base`` file
    when given (a library caller's in-memory instance)."""
    errors: list[FieldError] = []
    if not isinstance(data, dict):
        raise GridError(
            file,
            [FieldError("", f"expected a mapping at the top level, got {type(data).__name__}")],
        )
    known = {"name", "base", "mode", "axes", "scenarios", "solve", "description"}
    for k in data:
        if k not in known:
            errors.append(FieldError(str(k), f"unknown field; expected one of {sorted(known)}"))
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\\0"):
        errors.append(FieldError("name", f"expected a file-name-safe string, got {name!r}"))
        name = default_name
    mode = data.get("mode", "product")
    if mode not in MODES:
        errors.append(FieldError("mode", f"expected one of {list(MODES)}, got {mode!r}"))
        mode = "product"
    defaults = _parse_defaults(data.get("solve"), errors)
    axes = _parse_axes(data.get("axes"), mode, errors)
    raw_list = data.get("scenarios")
    if mode == "list" and raw_list is None:
        errors.append(FieldError("scenarios", "mode: list needs a 'scenarios' list"))
    if mode == "product" and raw_list is not None:
        errors.append(
            FieldError("scenarios", "only for mode: list (mode: product expands the axes)")
        )
    if base is None:
        rel = data.get("base")
        if not isinstance(rel, str) or not rel:
            errors.append(
                FieldError(
                    "base", "expected the base instance file (a path relative to the grid file)"
                )
            )
        else:
            try:
                # the base obeys the file-access policy of the files an instance names:
                # inside the grid's folder or the data root, never another file's keys shown
                base = read(referenced_file(rel, directory, data_root_of(None)))
            except FileRefused as e:
                errors.append(FieldError("base", str(e)))
            except InstanceError as e:
                errors.extend(
                    FieldError(f"base ({e.file})" + (f": {fe.path}" if fe.path else ""), fe.message)
                    for fe in e.errors
                )
    if errors or base is None:
        raise GridError(file, errors or [FieldError("base", "no base instance")])
    if mode == "product":
        picks = _product(axes, file)
    else:
        picks = _list_picks(raw_list, axes, errors)
        if errors:
            raise GridError(file, errors)
    scenarios, duplicates = expand(axes, picks, file)
    spec = GridSpec(
        name=str(name),
        file=file,
        directory=directory,
        base=base,
        axes=tuple(axes),
        mode=str(mode),
        scenarios=scenarios,
        defaults=defaults,
        duplicates=duplicates,
    )
    return dataclasses.replace(spec, updates=validate(spec))


def _parse_defaults(raw: Any, errors: list[FieldError]) -> dict[str, str | float]:
    out: dict[str, str | float] = {}
    if raw is None:
        return out
    if not isinstance(raw, dict):
        errors.append(FieldError("solve", "expected a mapping of solver, time_limit, gap, backend"))
        return out
    for k, v in raw.items():
        if k not in SOLVE_KEYS:
            errors.append(
                FieldError(f"solve.{k}", f"unknown field; expected one of {list(SOLVE_KEYS)}")
            )
        elif k in ("solver", "backend"):
            if not isinstance(v, str):
                errors.append(FieldError(f"solve.{k}", f"expected a string, got {v!r}"))
            else:
                out[k] = v
        else:
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or v <= 0
                or (k == "gap" and v > 1)
            ):
                what = "a number in (0, 1]" if k == "gap" else "a positive number of seconds"
                errors.append(FieldError(f"solve.{k}", f"expected {what}, got {v!r}"))
            else:
                out[k] = float(v)
    return out


def _is_path(x: Any) -> bool:
    return isinstance(x, str) and bool(x) and all(part for part in x.split("."))


def _parse_axes(raw: Any, mode: str, errors: list[FieldError]) -> list[Axis]:
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        errors.append(FieldError("axes", "expected a list of axes"))
        return []
    if not raw and mode == "product":
        errors.append(FieldError("axes", "expected at least one axis"))
    axes: list[Axis] = []
    names: set[str] = set()
    for i, a in enumerate(raw):
        where = f"axes[{i}]"
        if not isinstance(a, dict):
            errors.append(
                FieldError(where, "expected a mapping with 'path', 'multiply' or 'alternatives'")
            )
            continue
        kinds = [k for k in ("path", "multiply", "alternatives") if k in a]
        if len(kinds) != 1:
            errors.append(
                FieldError(
                    where,
                    "expected exactly one of 'path', 'multiply' or "
                    f"'alternatives', got {kinds or 'none'}",
                )
            )
            continue
        kind = kinds[0]
        allowed = {"name", kind} | ({"values"} if kind != "alternatives" else set())
        for k in a:
            if k not in allowed:
                errors.append(
                    FieldError(f"{where}.{k}", f"unknown field; expected {sorted(allowed)}")
                )
        name = a.get("name")
        if kind == "alternatives":
            blocks = _parse_blocks(a["alternatives"], f"{where}.alternatives", errors)
            if name is None:
                errors.append(FieldError(f"{where}.name", "an alternatives axis needs a name"))
                continue
            axis = Axis(name=str(name), kind="alternatives", values=tuple(blocks), blocks=blocks)
        else:
            path = a[kind]
            if not _is_path(path):
                errors.append(
                    FieldError(
                        f"{where}.{kind}",
                        f"expected a dotted field path such as regions.east.pue, got {path!r}",
                    )
                )
                continue
            vals = a.get("values")
            if vals is None and mode == "list":
                vals = []
            if not isinstance(vals, list) or (not vals and mode == "product"):
                errors.append(FieldError(f"{where}.values", "expected a non-empty list"))
                continue
            if kind == "multiply":
                bad = [
                    v
                    for v in vals
                    if isinstance(v, bool)
                    or not isinstance(v, int | float)
                    or not math.isfinite(v)
                    or v < 0
                ]
                if bad:
                    errors.append(
                        FieldError(
                            f"{where}.values", f"expected finite multipliers >= 0, got {bad}"
                        )
                    )
                    continue
            seen: list[str] = []
            for v in vals:
                c = canonical_json(v)
                if c in seen:
                    errors.append(
                        FieldError(f"{where}.values", f"value {_short(v)} is listed twice")
                    )
                seen.append(c)
            default = path if kind == "path" else f"{path}*"
            axis = Axis(
                name=str(name) if name is not None else default,
                kind="set" if kind == "path" else "multiply",
                path=path,
                values=tuple(vals),
            )
        if not axis.name:
            errors.append(FieldError(f"{where}.name", "expected a non-empty name"))
        elif axis.name in names:
            errors.append(
                FieldError(
                    f"{where}.name",
                    f"duplicate axis name {axis.name!r}; give each axis its own 'name'",
                )
            )
        names.add(axis.name)
        axes.append(axis)
    return axes


def _parse_blocks(raw: Any, where: str, errors: list[FieldError]) -> dict[str, dict[str, Any]]:
    """Alternatives as ``{label: {path: value}}`` or ``[{name: label, set: {path: value}}]``."""
    items: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        for j, it in enumerate(raw):
            if not isinstance(it, dict) or set(it) != {"name", "set"}:
                errors.append(
                    FieldError(f"{where}[{j}]", "expected a mapping with 'name' and 'set'")
                )
                continue
            items.append((str(it["name"]), it["set"]))
    else:
        errors.append(FieldError(where, "expected a mapping of label -> {path: value}"))
        return {}
    if not items and not errors:
        errors.append(FieldError(where, "expected at least one alternative"))
    blocks: dict[str, dict[str, Any]] = {}
    for label, block in items:
        if label in blocks:
            errors.append(FieldError(f"{where}.{label}", "duplicate alternative label"))
        if not isinstance(block, dict):
            errors.append(
                FieldError(f"{where}.{label}", "expected a mapping of field path -> value")
            )
            continue
        bad = [p for p in block if not _is_path(p)]
        if bad:
            errors.append(FieldError(f"{where}.{label}", f"expected dotted field paths, got {bad}"))
            continue
        blocks[label] = dict(block)
    return blocks


def _product(axes: Sequence[Axis], file: str) -> list[dict[str, Any]]:
    n = math.prod(len(a.values) for a in axes)
    if n > MAX_SCENARIOS:
        raise GridError(
            file,
            [
                FieldError(
                    "axes", f"the product has {n:,} scenarios; the limit is {MAX_SCENARIOS:,}"
                )
            ],
        )
    return [
        {a.name: v for a, v in zip(axes, combo, strict=True)}
        for combo in itertools.product(*(a.values for a in axes))
    ]


def _list_picks(raw: Any, axes: Sequence[Axis], errors: list[FieldError]) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        errors.append(
            FieldError("scenarios", "expected a non-empty list of mappings (axis name -> value)")
        )
        return []
    if len(raw) > MAX_SCENARIOS:
        errors.append(FieldError("scenarios", f"more than {MAX_SCENARIOS:,} scenarios"))
        return []
    by_name = {a.name: a for a in axes}
    picks: list[dict[str, Any]] = []
    for i, s in enumerate(raw):
        where = f"scenarios[{i}]"
        if not isinstance(s, dict):
            errors.append(FieldError(where, "expected a mapping of axis name -> value"))
            continue
        for k, v in s.items():
            ax = by_name.get(k)
            if ax is None:
                errors.append(
                    FieldError(f"{where}.{k}", f"unknown axis; axes are {sorted(by_name)}")
                )
            elif ax.kind == "alternatives" and (not isinstance(v, str) or v not in ax.blocks):
                errors.append(
                    FieldError(
                        f"{where}.{k}",
                        f"unknown alternative {v!r}; expected one of {list(ax.blocks)}",
                    )
                )
            elif ax.kind == "multiply" and (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or v < 0
            ):
                errors.append(
                    FieldError(f"{where}.{k}", f"expected a finite multiplier >= 0, got {v!r}")
                )
        picks.append({a.name: s[a.name] for a in axes if a.name in s})
    return picks


def expand(
    axes: Sequence[Axis], picks: Sequence[Mapping[str, Any]], file: str
) -> tuple[tuple[Scenario, ...], tuple[tuple[str, str], ...]]:
    """Scenarios from axis picks (axis name -> value). Two axes setting the same path to
    different values, or one set path inside another, is an error naming both axes (the
    result would depend on the axis order). Picks making the same change as an earlier one are
    dropped and returned as duplicates."""
    by_name = {a.name: a for a in axes}
    errors: list[FieldError] = []
    out: list[Scenario] = []
    seen: dict[str, Scenario] = {}
    dups: list[tuple[str, str]] = []
    for pick in picks:
        sets: dict[str, Any] = {}
        owner: dict[str, str] = {}
        mult: dict[str, float] = {}
        params: dict[str, Any] = {}
        for name, value in pick.items():
            ax = by_name[name]
            params[name] = canonical(value)
            if ax.kind == "multiply":
                mult[ax.path] = float(value)
                continue
            block = ax.blocks[value] if ax.kind == "alternatives" else {ax.path: value}
            for path, v in block.items():
                clash = next(
                    (
                        q
                        for q in sets
                        if q == path or q.startswith(path + ".") or path.startswith(q + ".")
                    ),
                    None,
                )
                if clash is not None and not (
                    clash == path and canonical_json(sets[path]) == canonical_json(v)
                ):
                    errors.append(
                        FieldError(
                            "axes",
                            f"axes {owner[clash]!r} and {name!r} both set {clash}"
                            + ("" if clash == path else f" / {path}")
                            + " in one scenario; the result would depend on their order",
                        )
                    )
                    continue
                sets[path] = v
                owner[path] = name
        if errors:
            break
        # The ID depends on the change only: sort paths so that axis order does not matter.
        sets = {k: sets[k] for k in sorted(sets)}
        mult = {k: mult[k] for k in sorted(mult)}
        sid = scenario_id(sets, mult)
        if sid in seen:
            other = seen[sid]
            if canonical_json([other.sets, other.multiply]) != canonical_json([sets, mult]):
                raise GridError(
                    file,
                    [
                        FieldError(
                            "axes", f"scenario ID collision: {sid} for {other.label()} and {params}"
                        )
                    ],
                )
            dups.append((canonical_json(params), other.id))
            continue
        sc = Scenario(id=sid, index=len(out), params=params, sets=sets, multiply=mult)
        seen[sid] = sc
        out.append(sc)
    if errors:
        raise GridError(file, errors)
    return tuple(out), tuple(dups)


def validate(spec: GridSpec) -> dict[str, dict[str, Any]]:
    """Build every scenario's instance and raise one :class:`GridError` listing every
    failure before anything is solved; return each scenario's ``replace`` updates.

    Per scenario, each set path is tried on its own (so that every bad path is found, not
    only the first), each multiplied path is checked to be a series, and when the paths are
    sound the instance is built with :meth:`Instance.replace`, which reports every bad
    value. Failures with the same field path and message are reported once, with the
    scenarios (ID and parameters) they occur in."""
    found: dict[tuple[str, str], list[Scenario]] = {}
    updates: dict[str, dict[str, Any]] = {}
    for sc in spec.scenarios:
        errs, ups = _check(spec.base, sc)
        for fe in errs:
            found.setdefault((fe.path, fe.message), []).append(sc)
        updates[sc.id] = ups
    if not found:
        return updates
    n = len(spec.scenarios)
    errors: list[FieldError] = []
    for (path, message), scs in found.items():
        if len(errors) >= MAX_REPORTED:
            errors.append(FieldError("", f"... and {len(found) - MAX_REPORTED} more problems"))
            break
        shown = "; ".join(f"{sc.id} ({sc.label()})" for sc in scs[:5])
        more = f"; and {len(scs) - 5} more" if len(scs) > 5 else ""
        errors.append(
            FieldError(path, f"{message} [in {len(scs)} of {n} scenarios: {shown}{more}]")
        )
    raise GridError(spec.file, errors)


def scenario_errors(base: Instance, sc: Scenario) -> list[FieldError]:
    """Every problem with one scenario: bad paths, multipliers on non-series, bad values
    (the instance is built from the sound part of the change, so a bad path does not hide a
    bad value elsewhere)."""
    return _check(base, sc)[0]


def _check(base: Instance, sc: Scenario) -> tuple[list[FieldError], dict[str, Any]]:
    """A scenario's problems and its ``replace`` updates. One copy of the base document takes
    the sound sets and the multipliers' scales, and is validated as ``base.replace(updates)``
    would validate it (the same document; built once instead of three times)."""
    data = copy_document(base.raw)
    errors: list[FieldError] = []
    good: dict[str, Any] = {}
    for path, value in sc.sets.items():
        try:
            set_path(data, path, copy_document(value), base.source)
        except InstanceError as e:
            errors.extend(e.errors)
        else:
            good[path] = value
    updates, more = _scales(data, good, sc.multiply)
    errors.extend(more)
    for path, value in updates.items():
        if path not in good:
            set_path(data, path, value, base.source)
    try:
        base.rebuild(data, base.source, base.base_dir, data_root=base.data_root)
    except InstanceError as e:
        errors.extend(e.errors)
    return errors, updates


def build_instance(base: Instance, sc: Scenario) -> Instance:
    """The scenario's instance: ``base.replace(updates_for(base, sc))``."""
    return base.replace(updates_for(base, sc))


def grid_from_instance(
    base: Instance,
    axes: Sequence[Mapping[str, Any]],
    name: str = "grid",
    mode: str = "product",
    scenarios: Sequence[Mapping[str, Any]] | None = None,
    directory: str | Path = ".",
) -> GridSpec:
    """A grid over an in-memory instance, axes written as in a grid file."""
    doc: dict[str, Any] = {"name": name, "mode": mode, "axes": list(axes)}
    if scenarios is not None:
        doc["scenarios"] = list(scenarios)
    return grid_from_dict(doc, f"<grid {name}>", Path(directory), default_name=name, base=base)


def _short(v: Any) -> str:
    text = json.dumps(canonical(v), separators=(",", ":")) if not isinstance(v, str) else v
    return text if len(text) <= 40 else text[:37] + "..."
