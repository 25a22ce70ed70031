"""One way in: :func:`read` loads a YAML or JSON instance, validates it once and resolves it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from planner.instance.errors import FieldError, InstanceError
from planner.instance.model import Instance
from planner.instance.schema import InstanceSpec, Phase
from planner.instance.series import SeriesError, resolve_series
from planner.physics.reliability import per_gpu_hour_from_node_days
from planner.physics.transformer import ModelDims, dims

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 40
MAX_ALIASES = 200
MAX_NODES = 2_000_000


class _GuardedLoader(yaml.SafeLoader):
    """SafeLoader that refuses alias bombs: more than MAX_ALIASES alias uses is an error."""

    aliases_seen = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > MAX_ALIASES:
                raise yaml.YAMLError(
                    f"more than {MAX_ALIASES} YAML aliases: refusing a possible alias bomb"
                )
        return super().compose_node(parent, index)


def _check_shape(data: Any, file: str) -> None:
    """Reject documents nested deeper than MAX_DEPTH or with more than MAX_NODES values,
    counting shared (aliased) objects every time they are reachable."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise InstanceError(file, [FieldError("", f"document has more than {MAX_NODES} "
                                                     "values; refusing it")])
        if depth > MAX_DEPTH:
            raise InstanceError(file, [FieldError("", f"document nested deeper than {MAX_DEPTH}"
                                                     " levels; refusing it")])
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def load_document(path: Path) -> Any:
    """Parse YAML (safe loader, alias-limited) or JSON, by extension, with size limits."""
    file = str(path)
    if not path.is_file():
        raise InstanceError(file, [FieldError("", "file does not exist")])
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InstanceError(file, [FieldError("", f"file is {size} bytes; the limit is "
                                                 f"{MAX_FILE_BYTES}")])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InstanceError(file, [FieldError("", f"not UTF-8 text ({e.reason})")]) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text, parse_constant=_reject_constant)
        else:
            loader = _GuardedLoader(text)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
    except (yaml.YAMLError, json.JSONDecodeError, ValueError, RecursionError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InstanceError(file, [FieldError("", f"cannot parse: {msg}")]) from None
    _check_shape(data, file)
    return data


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def read(path: str | Path) -> Instance:
    """Read, validate and resolve an instance file (``.yaml``, ``.yml`` or ``.json``)."""
    p = Path(path)
    data = load_document(p)
    return from_dict(data, str(p), p.parent)


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """A readable field path such as ``phases[1] (pretrain).options.precision[0]``.

    Walks ``data`` alongside pydantic's ``loc`` so that list items of mappings with a ``name``
    are labelled by it, and drops the tags pydantic puts in ``loc`` for union members and
    validators (``constrained-float``, ``function-after[...]``, ``tuple[int, ...]``) unless
    the document really has a key of that name. Keys holding a dot or a space are quoted:
    ``regions['us east'].pue``."""
    tags = {"float", "int", "str", "bool", "datetime", "date", "none", "nullable",
            "tagged-union", "lax-or-strict", "list", "tuple", "dict"}
    parts: list[str] = []
    node: Any = data
    for item in loc:
        if isinstance(item, int) and isinstance(node, list | tuple):
            label = f"[{item}]"
            node = node[item] if -len(node) <= item < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str) and node["name"]:
                label += f" ({node['name']})"
            parts.append(label)
            continue
        key_present = isinstance(node, dict) and item in node
        text = str(item)
        if not key_present and isinstance(item, str) and (
                item in tags or "[" in item or item.startswith(("constrained-", "function-"))):
            continue
        node = node[item] if key_present else None
        if text == "" or any(c in text for c in ". []'\""):
            parts.append(f"[{text!r}]")
        else:
            parts.append(("." if parts else "") + text)
    return "".join(parts)


def _explain(err: Mapping[str, Any]) -> str:
    """What the field expected and what the file gave, from one pydantic error.

    Pydantic's messages ("Input should be a valid dictionary") are rephrased as
    ``expected ...`` with the user's vocabulary (mapping, list, whole number, ISO time) and
    followed by ``(got ...)`` unless the message already says what it got or the input is a
    whole mapping (a check across several fields, whose message names them)."""
    kind = str(err.get("type", ""))
    inp = err.get("input")
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    msg = str(err.get("msg", "invalid"))
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"

    def shown(x: Any) -> str:
        if isinstance(x, dict):
            return "a mapping"
        if isinstance(x, list | tuple):
            return f"a list of {len(x)} item{'s' if len(x) != 1 else ''}"
        if x is None:
            return "null"
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, datetime | date):
            return x.isoformat()
        text = repr(x)
        return text if len(text) <= 60 else text[:57] + "..."

    def num(x: Any) -> str:
        return f"{x:g}" if isinstance(x, int | float) else str(x)

    when = "an ISO date-time with a UTC offset, e.g. 2023-06-05T00:00:00Z"
    phrases = {
        "float_parsing": "a number", "float_type": "a number",
        "int_parsing": "a whole number", "int_type": "a whole number",
        "int_from_float": "a whole number", "int_parsing_size": "a whole number",
        "bool_parsing": "true or false", "bool_type": "true or false",
        "string_type": "a string", "dict_type": "a mapping (key: value)",
        "model_type": "a mapping (key: value)", "model_attributes_type": "a mapping (key: value)",
        "tuple_type": "a list", "list_type": "a list", "iterable_type": "a list",
        "finite_number": "a finite number",
        "datetime_parsing": when, "datetime_from_date_parsing": when, "datetime_type": when,
        "datetime_object_invalid": when,
        "date_parsing": "a date, e.g. 2023-12-25", "date_type": "a date, e.g. 2023-12-25",
        "date_from_datetime_parsing": "a date, e.g. 2023-12-25",
        "date_from_datetime_inexact": "a date without a time, e.g. 2023-12-25",
    }
    bounds = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="),
              "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}
    if kind in phrases:
        text = f"expected {phrases[kind]}"
    elif kind in bounds and bounds[kind][0] in ctx:
        key, op = bounds[kind]
        text = f"expected a number {op} {num(ctx[key])}"
    elif kind == "literal_error" and "expected" in ctx:
        text = f"expected one of {ctx['expected']}"
    elif kind in ("string_too_short", "too_short") and "min_length" in ctx:
        n = ctx["min_length"]
        text = (f"expected at least {n} character{'s' if n != 1 else ''}"
                if kind.startswith("string") else f"expected at least {n} item{'s' * (n != 1)}")
    elif kind in ("string_too_long", "too_long") and "max_length" in ctx:
        n = ctx["max_length"]
        text = (f"expected at most {n} character{'s' if n != 1 else ''}"
                if kind.startswith("string") else f"expected at most {n} item{'s' * (n != 1)}")
    else:
        text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if text.startswith("Input should be "):
            text = "expected " + text.removeprefix("Input should be ")
        if isinstance(inp, dict) or "got" in text.split():
            return text
    return f"{text} (got {shown(inp)})"


def from_dict(data: Any, file: str, base_dir: Path) -> Instance:
    """Validate a parsed document and resolve it; every problem found is reported at once."""
    if not isinstance(data, dict):
        raise InstanceError(file, [FieldError("", "expected a mapping at the top level, got "
                                                 f"{type(data).__name__}")])
    try:
        spec = InstanceSpec.model_validate(data)
    except ValidationError as e:
        errors = [FieldError(_loc(tuple(err["loc"]), data), _explain(err))
                  for err in e.errors()]
        raise InstanceError(file, errors) from None
    errors: list[FieldError] = []
    _check_references(spec, errors)
    if errors:
        raise InstanceError(file, errors)
    return _resolve(spec, data, file, base_dir)


def _hour_of(spec: InstanceSpec, when: int | datetime) -> int | float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            return math.nan
        return (when - spec.horizon.start).total_seconds() / 3600.0
    return when


def _check_references(spec: InstanceSpec, errors: list[FieldError]) -> None:
    gpus, regions = spec.gpu_types, spec.regions
    names = [p.name for p in spec.phases]
    seen: set[str] = set()
    for i, p in enumerate(spec.phases):
        where = f"phases[{i}] ({p.name})"
        if p.name in seen:
            errors.append(FieldError(f"{where}.name", f"duplicate phase name {p.name!r}"))
        seen.add(p.name)
        for q in p.predecessors:
            if q not in names:
                errors.append(FieldError(f"{where}.predecessors",
                                         f"unknown phase {q!r}; phases are {names}"))
            if q == p.name:
                errors.append(FieldError(f"{where}.predecessors", "a phase cannot precede itself"))
        for g in p.gpu_types or ():
            if g not in gpus:
                errors.append(FieldError(f"{where}.gpu_types",
                                         f"unknown GPU type {g!r}; known: {sorted(gpus)}"))
        for r in p.regions or ():
            if r not in regions:
                errors.append(FieldError(f"{where}.regions",
                                         f"unknown region {r!r}; known: {sorted(regions)}"))
        if p.model is not None and p.model not in spec.models:
            errors.append(FieldError(f"{where}.model",
                                     f"unknown model {p.model!r}; known: {sorted(spec.models)}"))
        if p.work.gpu is not None and p.work.gpu not in gpus:
            errors.append(FieldError(f"{where}.work.gpu",
                                     f"unknown GPU type {p.work.gpu!r}; known: {sorted(gpus)}"))
        if p.work.tokens is not None and p.model is None:
            errors.append(FieldError(f"{where}.work.tokens",
                                     "work in tokens needs the phase's 'model' (6ND)"))
        if isinstance(p.mfu, dict):
            for g in p.mfu:
                if g not in gpus:
                    errors.append(FieldError(f"{where}.mfu", f"unknown GPU type {g!r}"))
        if p.data.home_region is not None and p.data.home_region not in regions:
            errors.append(FieldError(f"{where}.data.home_region",
                                     f"unknown region {p.data.home_region!r}"))
        rel = _hour_of(spec, p.release)
        dl = spec.horizon.hours if p.deadline is None else _hour_of(spec, p.deadline)
        if math.isnan(rel) or math.isnan(dl):
            errors.append(FieldError(f"{where}.release",
                                     "expected times with a UTC offset or hour numbers"))
            continue
        if dl <= rel:
            errors.append(FieldError(f"{where}.deadline",
                                     f"deadline (hour {dl:g}) must be after release (hour {rel:g})"))
        if rel < 0 or rel >= spec.horizon.hours:
            errors.append(FieldError(f"{where}.release",
                                     f"release hour {rel:g} is outside the horizon "
                                     f"[0, {spec.horizon.hours})"))
        if dl > spec.horizon.hours:
            errors.append(FieldError(f"{where}.deadline",
                                     f"deadline hour {dl:g} is after the horizon end "
                                     f"({spec.horizon.hours})"))
        for t in p.options.storage_tiers or ():
            if not any(t in r.storage for r in regions.values()):
                errors.append(FieldError(f"{where}.options.storage_tiers",
                                         f"no region has a storage tier {t!r}"))
    for rname, r in regions.items():
        for g in list(r.capacity) + list(r.offers):
            if g not in gpus:
                errors.append(FieldError(f"regions.{rname}",
                                         f"unknown GPU type {g!r}; known: {sorted(gpus)}"))
        for g, cap in r.capacity.items():
            if isinstance(cap, tuple) and len(cap) < spec.horizon.hours:
                errors.append(FieldError(f"regions.{rname}.capacity.{g}",
                                         f"expected {spec.horizon.hours} hourly values (the "
                                         f"horizon), got {len(cap)}"))
        for other in r.transfer_usd_per_gb:
            if other not in regions:
                errors.append(FieldError(f"regions.{rname}.transfer_usd_per_gb",
                                         f"unknown region {other!r}"))
    for fam in spec.families:
        if not any(g.family == fam for g in gpus.values()):
            errors.append(FieldError(f"families.{fam}", "no GPU type belongs to this family"))
    if not errors:
        cycle = _find_cycle(spec.phases)
        if cycle:
            errors.append(FieldError("phases", "precedence cycle: " + " -> ".join(cycle)))


def _find_cycle(phases: tuple[Phase, ...]) -> list[str] | None:
    preds = {p.name: p.predecessors for p in phases}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> list[str] | None:
        state[n] = 1
        for q in preds[n]:
            if state.get(q) == 1:
                return [*path[path.index(q):], q] if q in path else [q, n, q]
            if q not in state:
                found = visit(q, [*path, q])
                if found:
                    return found
        state[n] = 2
        return None

    for p in phases:
        if p.name not in state:
            found = visit(p.name, [p.name])
            if found:
                return found
    return None


def _topological(phases: tuple[Phase, ...]) -> tuple[str, ...]:
    done: list[str] = []
    placed: set[str] = set()
    pending = list(phases)
    while pending:
        for p in pending:
            if all(q in placed for q in p.predecessors):
                done.append(p.name)
                placed.add(p.name)
                pending.remove(p)
                break
    return tuple(done)


def _resolve(spec: InstanceSpec, data: Any, file: str, base_dir: Path) -> Instance:
    errors: list[FieldError] = []
    T, start = spec.horizon.hours, spec.horizon.start
    price: dict[str, np.ndarray] = {}
    carbon: dict[str, np.ndarray | None] = {}
    capacity: dict[tuple[str, str], np.ndarray] = {}
    for rname, r in spec.regions.items():
        try:
            price[rname] = resolve_series(r.electricity, start, T, r.timezone, base_dir) \
                + r.price_adder_usd_per_mwh
        except SeriesError as e:
            errors.append(FieldError(f"regions.{rname}.electricity", str(e)))
        carbon[rname] = None
        if r.carbon_intensity is not None:
            try:
                ci = resolve_series(r.carbon_intensity, start, T, r.timezone, base_dir)
                if np.any(ci < 0):
                    errors.append(FieldError(f"regions.{rname}.carbon_intensity",
                                             "expected non-negative gCO2/kWh"))
                carbon[rname] = ci
            except SeriesError as e:
                errors.append(FieldError(f"regions.{rname}.carbon_intensity", str(e)))
        for g, cap in r.capacity.items():
            arr = np.asarray(cap[:T] if isinstance(cap, tuple) else [cap] * T, dtype=float)
            arr.setflags(write=False)
            capacity[(rname, g)] = arr
    if errors:
        raise InstanceError(file, errors)
    models: dict[str, ModelDims] = {}
    warnings: list[str] = []
    for mname, m in spec.models.items():
        models[mname] = dims(m.params, m.layers, m.hidden, m.heads, m.seq_len, m.vocab,
                             m.optimizer, m.flash_attention)
        if models[mname].inferred:
            md = models[mname]
            warnings.append(f"models.{mname}: architecture inferred from params (L={md.layers},"
                            f" h={md.hidden}, heads={md.heads}); give layers/hidden for accuracy")
    release = {p.name: int(math.floor(_hour_of(spec, p.release))) for p in spec.phases}
    deadline = {p.name: int(math.floor(T if p.deadline is None else _hour_of(spec, p.deadline)))
                for p in spec.phases}
    fr: dict[str, float] = {}
    for gname, g in spec.gpu_types.items():
        if g.failures_per_gpu_hour is not None:
            fr[gname] = g.failures_per_gpu_hour
        elif g.failures_per_1000_node_days is not None:
            fr[gname] = per_gpu_hour_from_node_days(g.failures_per_1000_node_days, g.gpus_per_node)
        else:
            fr[gname] = spec.failure.failures_per_gpu_hour
    return Instance(
        spec=spec, source=file, raw=data, base_dir=base_dir, price=price, carbon=carbon,
        capacity=capacity, release=release, deadline=deadline, models=models,
        order=_topological(spec.phases), failures_per_gpu_hour=fr, warnings=tuple(warnings),
    )


def set_path(data: Any, path: str, value: Any, file: str = "<variant>") -> None:
    """Set a dotted field path in a raw document; list items of ``phases`` are addressed by
    name (``phases.pretrain.deadline``), other lists by index. Unknown paths raise
    :class:`InstanceError` naming the path."""
    parts = path.split(".")
    node = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            idx: int | None = None
            for j, item in enumerate(node):
                if isinstance(item, dict) and item.get("name") == part:
                    idx = j
            if idx is None and part.isdigit() and int(part) < len(node):
                idx = int(part)
            if idx is None:
                raise InstanceError(file, [FieldError(path, f"no item named {part!r}")])
            if last:
                node[idx] = value
                return
            node = node[idx]
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return
            if part not in node:
                if i + 1 < len(parts):
                    node[part] = {}
                else:
                    raise InstanceError(file, [FieldError(path, f"no field {part!r}")])
            node = node[part]
        else:
            raise InstanceError(file, [FieldError(path, f"{'.'.join(parts[:i])} is not a mapping"
                                                        " or list")])
