"""The instance format documented from the schema itself: ``docs/instance-format.md`` and the
JSON Schema ``trainplan schema`` prints.

Types, defaults and which fields are required come from the pydantic models of
:mod:`planner.instance.schema`; units, meanings and examples from
:data:`planner.instance.fielddocs.FIELD_DOCS`. :func:`undocumented` lists schema fields the
table lacks (a test keeps it empty), :func:`markdown` renders the document (a test compares it
with the file in docs/) and :func:`json_schema` the schema with every field's description and
example.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from datetime import date, datetime
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from planner.instance.fielddocs import FIELD_DOCS
from planner.instance.schema import InstanceSpec
from planner.physics.architecture import MLA, MoE

#: Plain dataclasses the schema nests (their fields are documented in FIELD_DOCS too, and
#: described in the JSON Schema under their own names).
NESTED: tuple[type, ...] = (MoE, MLA)

#: Fields that are required by the schema but may come from the GPU catalog instead.
FROM_CATALOG = {"memory_gb", "peak_tflops", "board_power_w", "idle_power_w"}

TITLE = "# The instance file format"

INTRO = """\
An instance file (YAML or JSON) describes one planning problem: the horizon, the GPU types,
the regions (electricity, capacity, offers, storage), the models and the phases of work.
`trainplan init` writes a commented starter file, `trainplan check FILE` validates one and
names every problem with its field, `trainplan schema` prints the JSON Schema for editors
(save it as `trainplan.schema.json` and start the YAML file with
`# yaml-language-server: $schema=trainplan.schema.json`).

This page is generated from the schema (`planner/instance/schema.py`) and the field table
(`planner/data/field_docs.yaml`) by `docs/make_instance_format.py`; a test fails when they
differ, so what is written here is what the reader accepts. Units are in the field names
(`_gb` 10^9 bytes, `_w` watts, `_usd_per_mwh` US dollars per megawatt-hour) and in the unit
column; hours are slots of the horizon counted from `horizon.start` (UTC).

Things to know:

- **GPUs by catalog name.** `gpu_types: {H100-SXM: {}}` takes every figure from the built-in
  catalog (`trainplan gpus` lists it with sources and example prices); `L4: {board_power_w:
  70}` overrides one; `big: {catalog: H200}` names the catalog entry under another key.
  `gpu_catalog: FILE` adds a user catalog (its own GPUs and prices; `trainplan gpus
  import-skypilot` writes one from SkyPilot's `vms.csv`).
- **Future horizons on past prices.** A CSV series with `reference_year: 2023` is a price
  profile: each hour of a 2026 horizon reads 2023's price of the same weekday and local hour,
  nearest the same date; around New Year, an hour the file lacks reads the same local time 52
  weeks away, so every hour has a value. `instances/data/prices/` holds full-year 2023
  day-ahead prices of 12 markets (`instances/data/SOURCES.md`).
- **`kind` is a label.** An evaluation or validation is priced as a forward pass only with
  `work.passes: forward`; otherwise its tokens are trained on (6ND FLOPs).
- **GPU counts.** Without `options.gpu_counts` the planner tries 1, 2, 4 and whole nodes by
  powers of two (8, 16, 32, 64, ...): list counts such as 24 or 48 to have them tried.
- **Regions without carbon data** add no emissions; plans then say their emissions are
  incomplete.
"""

EXAMPLE = """\
## A complete example

Fine-tune a 13B model on up to 64 H100s within 3 days, the data in Germany, two EU regions,
the evaluation on L4s, on a December 2026 horizon priced from 2023's hourly prices (this file,
with the CSV extracts beside it, is what `tests/cli/test_scenario.py` writes and solves):

```yaml
name: eu-13b-finetune
horizon: {start: 2026-12-07T00:00:00Z, hours: 72}
gpu_types:
  H100-SXM: {}          # every figure from the catalog (trainplan gpus)
  L4: {}
regions:
  eu-de:
    timezone: Europe/Berlin
    cooling: liquid
    cloud: aws
    cloud_region: eu-central-1
    electricity:
      csv: data/prices/price_DE-LU_2023.csv
      column: Price (USD/MWh)
      time_column: Datetime (UTC)
      reference_year: 2023     # a price profile: same weekday and local hour in 2023
    price_adder_usd_per_mwh: 50
    capacity: {H100-SXM: 64, L4: 16}
    offers:
      H100-SXM: {on_demand: {usd_per_gpu_hour: 3.29}}
      L4: {on_demand: {usd_per_gpu_hour: 0.88}, spot: {usd_per_gpu_hour: 0.35}}
  eu-fr:
    timezone: Europe/Paris
    pue: 1.3
    cloud: aws
    cloud_region: eu-west-3
    electricity:
      csv: data/prices/price_FR_2023.csv
      column: Price (USD/MWh)
      time_column: Datetime (UTC)
      reference_year: 2023
    price_adder_usd_per_mwh: 40
    capacity: {H100-SXM: 64, L4: 16}
    offers:
      H100-SXM: {on_demand: {usd_per_gpu_hour: 3.39}}
      L4: {on_demand: {usd_per_gpu_hour: 0.90}, spot: {usd_per_gpu_hour: 0.36}}
models:
  llama-13b: {preset: llama-2-13b}
phases:
  - name: finetune
    model: llama-13b
    work: {tokens: 2.0e9}
    deadline: 2026-12-10T00:00:00Z
    gpu_types: [H100-SXM]
    data: {size_gb: 50, home_region: eu-de}
    options: {gpu_counts: [16, 32, 48, 64], contracts: [on_demand]}
  - name: evaluation
    kind: evaluation
    model: llama-13b
    predecessors: [finetune]
    work: {tokens: 2.0e8, passes: forward}
    gpu_types: [L4]
    preemptible: true
    options: {gpu_counts: [8, 16], contracts: [on_demand, spot]}
```
"""


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) < len(args):
            if len(rest) == 1:
                return rest[0], True
            return typing.Union[tuple(rest)], True  # noqa: UP007
    return tp, False


def _bounds(meta: list[Any]) -> str:
    """``> 0``, ``>= 1900, <= 2200``: the numeric constraints of annotated-types objects
    and of the FieldInfo objects that hold them (``Field(ge=...)`` inside ``Annotated``)."""
    flat: list[Any] = []
    for m in meta:
        inner = getattr(m, "metadata", None)
        flat.extend(inner if isinstance(inner, list) else [m])
    out = []
    for m in flat:
        for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            v = getattr(m, attr, None)
            if v is not None and not callable(v):
                out.append(f"{op} {v:g}" if isinstance(v, int | float) else f"{op} {v}")
        ml = getattr(m, "min_length", None)
        if ml:
            out.append("not empty")
    return ", ".join(out)


def type_text(tp: Any, metadata: list[Any] | None = None, top: bool = True) -> str:
    """A readable type: ``number > 0``, ``list of whole number``, ``mapping of text to
    [Offers](#offers)``, ``one of `air`, `liquid` ``. ``metadata`` is the constraints pydantic
    moved out of a field's top-level annotation. Inside lists and mappings (``top`` false) an
    optional value reads ``... or null``; at the top, absence is the default."""
    if metadata:
        b = _bounds(metadata)
        inner = type_text(tp, top=top)
        return f"{inner} {b}".strip() if b else inner
    tp, optional = _unwrap_optional(tp)
    if optional and not top:
        return type_text(tp, top=False) + " or null"
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        inner = type_text(base, top=top)
        b = _bounds(meta)
        return f"{inner} {b}".strip() if b else inner
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in typing.get_args(tp))
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(type_text(a, top=top) for a in typing.get_args(tp))
    if origin in (tuple, list):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return "list of " + (type_text(args[0], top=False) if args else "values")
    if origin is dict:
        k, v = typing.get_args(tp)
        key = "text" if k is str else type_text(k, top=False)
        return f"mapping of {key} to {type_text(v, top=False)}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    names = {
        float: "number",
        int: "whole number",
        str: "text",
        bool: "true or false",
        datetime: "date-time",
        date: "date",
    }
    if tp in names:
        return names[tp]
    return getattr(tp, "__name__", str(tp))


def _value(v: Any) -> str:
    if isinstance(v, BaseModel):
        return "(its defaults)"
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, tuple | list | dict):
        text = json.dumps(v if not isinstance(v, tuple) else list(v), default=str)
        return text if len(text) <= 60 else text[:57] + "..."
    return str(v)


def default_text(model: type[BaseModel], name: str) -> str:
    """A field's default as the documentation states it (``required``, or ``required, or from the
    catalog`` for catalog-filled GPU figures)."""
    f = model.model_fields[name]
    if f.default_factory is not None:
        return _value(f.default_factory())  # type: ignore[call-arg]
    if f.default is PydanticUndefined:
        if model.__name__ == "GpuType" and name in FROM_CATALOG:
            return "required, or from the catalog"
        return "required"
    return _value(f.default)


def models() -> list[type[BaseModel]]:
    """Every model of the file format, top level first, in the order they are reached."""
    seen: list[type[BaseModel]] = []

    def walk(m: type[BaseModel]) -> None:
        if m in seen:
            return
        seen.append(m)
        for f in m.model_fields.values():
            visit(f.annotation)

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            walk(tp)
        for a in typing.get_args(tp):
            visit(a)

    walk(InstanceSpec)
    return seen


def undocumented() -> list[str]:
    """``Model.field`` names of the schema that :data:`FIELD_DOCS` lacks, and entries of
    the table that are no longer fields."""
    fields = {f"{m.__name__}.{n}" for m in models() for n in m.model_fields}
    fields |= {f"{d.__name__}.{f.name}" for d in NESTED for f in dataclasses.fields(d)}
    missing = sorted(fields - set(FIELD_DOCS))
    stale = sorted(f"(stale) {k}" for k in set(FIELD_DOCS) - fields)
    return missing + stale


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _doc_of(m: type[BaseModel]) -> str:
    text = (m.__doc__ or "").strip()
    if m is InstanceSpec:
        return "The top level of an instance file."
    paras = [" ".join(line.strip() for line in p.splitlines()) for p in text.split("\n\n")]
    return " ".join(paras).replace("``", "`")


def markdown() -> str:
    """docs/instance-format.md."""
    out = [TITLE, "", INTRO, EXAMPLE, "## Fields", ""]
    ms = models()
    out.append("Models: " + ", ".join(f"[{m.__name__}](#{m.__name__.lower()})" for m in ms) + ".")
    out.append("")
    for m in ms:
        out.append(f"### {m.__name__}")
        out.append("")
        doc = _doc_of(m)
        if doc:
            out.append(doc)
            out.append("")
        out.append("| field | type | unit | default | meaning | example |")
        out.append("|---|---|---|---|---|---|")
        for name, f in m.model_fields.items():
            unit, meaning, example = FIELD_DOCS.get(f"{m.__name__}.{name}", ("", "", ""))
            out.append(
                f"| `{name}` | {_cell(type_text(f.annotation, f.metadata))} | "
                f"{_cell(unit) or '-'} | "
                f"{_cell(default_text(m, name))} | {_cell(meaning)} | `{_cell(example)}` |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _example_value(text: str) -> Any:
    """The example as JSON data (dates and times as ISO text)."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return json.loads(json.dumps(value, default=lambda x: x.isoformat()))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of an instance file, every property with its description (meaning and
    unit) and an example."""
    schema = InstanceSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "trainplan instance"
    defs = schema.get("$defs", {})
    for m in models():
        node = schema if m is InstanceSpec else defs.get(m.__name__)
        if node is None:
            continue
        for name, prop in node.get("properties", {}).items():
            unit, meaning, example = FIELD_DOCS.get(f"{m.__name__}.{name}", ("", "", ""))
            if meaning:
                prop["description"] = meaning + (f" Unit: {unit}." if unit else "")
            if example:
                prop["examples"] = [_example_value(example)]
    for d in NESTED:
        for name, prop in defs.get(d.__name__, {}).get("properties", {}).items():
            unit, meaning, example = FIELD_DOCS[f"{d.__name__}.{name}"]
            prop["description"] = meaning + (f" Unit: {unit}." if unit else "")
            prop["examples"] = [_example_value(example)]
    return schema
