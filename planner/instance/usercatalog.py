"""A user's own GPU catalog: their GPUs (or changed figures of built-in ones) and the prices
they pay, in one YAML or JSON file named by an instance's ``gpu_catalog`` or by
``trainplan gpus --catalog``.

Layout (format ``trainplan-catalog/1``)::

    format: trainplan-catalog/1
    gpus:                         # GPU name -> figures, as in planner/data/gpus.yaml
      MyAccel: {memory_gb: 64, peak_tflops: {bf16: 400}, board_power_w: 500, idle_power_w: 60}
      H100-lowpower: {catalog: H100-SXM, board_power_w: 500}   # a built-in entry, changed
      H100-SXM: {on_demand_usd_per_gpu_hour: 2.10}            # a built-in name: merged
    prices:                       # what a GPU-hour costs where (trainplan gpus import-skypilot)
      - {gpu: H100-SXM, cloud: aws, region: us-east-1, instance_type: p5.48xlarge,
         gpus_per_instance: 8, on_demand_usd_per_gpu_hour: 6.88, spot_usd_per_gpu_hour: 2.5}

A GPU entry is complete (every figure a :class:`~planner.instance.schema.GpuType` requires)
or names a built-in entry (by its key, or ``catalog: NAME``) whose figures it overrides.
Besides GpuType's fields an entry may carry ``on_demand_usd_per_gpu_hour`` (an example list
price) and ``memory_unit`` (GiB or GB), as the built-in catalog does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.instance.catalog import (
    MEMORY_UNIT_KEY,
    PRICE_KEY,
    CatalogError,
    catalog_names,
    raw_entry,
    resolve_name,
)
from planner.instance.errors import FieldError
from planner.instance.schema import GpuType

CATALOG_FORMAT = "trainplan-catalog/1"
#: Keys a catalog entry may hold beside GpuType's fields (``memory_unit`` is one of them: it
#: travels with the figures into the instance, so 80 GB in GB is 80e9 bytes in plans too).
EXTRA_KEYS = (PRICE_KEY,)

NonNeg = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class UnknownGpu(ValueError):
    """A GPU entry names no catalog GPU; the message says which names are close."""


class PriceRow(BaseModel):
    """What one GPU-hour of ``gpu`` costs in a cloud region (USD), from a price list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: Annotated[str, Field(min_length=1)]
    region: Annotated[str, Field(min_length=1)]
    cloud: str | None = None
    #: The availability zone the prices are quoted in (None: the region as a whole).
    zone: str | None = None
    instance_type: str | None = None
    gpus_per_instance: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | None = None
    on_demand_usd_per_gpu_hour: NonNeg | None = None
    spot_usd_per_gpu_hour: NonNeg | None = None
    source: str | None = None


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["trainplan-catalog/1"] = "trainplan-catalog/1"
    description: str = ""
    gpus: dict[str, dict[str, Any]] = Field(default_factory=dict)
    prices: tuple[PriceRow, ...] = ()


@dataclass(frozen=True)
class CatalogEntry:
    """One GPU as a catalog gives it: its name, its figures (GpuType fields), an example
    on-demand price and where the figures come from."""

    name: str
    fields: Mapping[str, Any]
    price: float | None
    memory_unit: str
    origin: str

    def gpu_type(self) -> GpuType:
        """The entry's figures validated as an instance's GPU type."""
        return GpuType.model_validate(dict(self.fields))


@dataclass(frozen=True)
class UserCatalog:
    """A user catalog read from ``file``: complete entries by name, and price rows."""

    file: str
    entries: Mapping[str, CatalogEntry]
    prices: tuple[PriceRow, ...]

    def find(self, name: str) -> CatalogEntry | None:
        """The entry called ``name`` (case-insensitive), or None."""
        by_lower = {k.lower(): k for k in self.entries}
        key = by_lower.get(name.strip().lower())
        return None if key is None else self.entries[key]

    def prices_for(
        self, gpu: str, region: str | None = None, cloud: str | None = None
    ) -> list[PriceRow]:
        """The price rows of ``gpu`` (case-insensitive), in ``region`` and ``cloud`` when
        given (a row without a cloud matches any)."""
        return [
            r
            for r in self.prices
            if r.gpu.lower() == gpu.lower()
            and (region is None or r.region == region)
            and (cloud is None or r.cloud is None or r.cloud.lower() == cloud.lower())
        ]


_GPU_FIELDS = set(GpuType.model_fields)
#: GpuType fields a complete entry must give (the rest have defaults).
REQUIRED_FIGURES = tuple(n for n, f in GpuType.model_fields.items() if f.is_required())


def builtin_entry(name: str) -> CatalogEntry:
    """The built-in catalog's entry for ``name`` (aliases and partial names resolve; an
    unknown or ambiguous name raises :class:`~planner.instance.catalog.CatalogError`)."""
    key = resolve_name(name)
    raw = raw_entry(key)
    fields = {k: v for k, v in raw.items() if k in _GPU_FIELDS}
    price = raw.get(PRICE_KEY)
    return CatalogEntry(
        key,
        fields,
        None if price is None else float(price),
        str(raw.get(MEMORY_UNIT_KEY, "GiB")),
        "planner/data/gpus.yaml",
    )


def builtin_entries() -> list[CatalogEntry]:
    """Every built-in catalog GPU as a user-catalog entry (``trainplan gpus`` lists them with a user
    catalog's)."""
    return [builtin_entry(n) for n in catalog_names()]


def complete(
    name: str, given: Mapping[str, Any], user: UserCatalog | None = None
) -> tuple[dict[str, Any], CatalogEntry | None]:
    """The figures of a GPU entry ``given`` under ``name``: the entry itself when it gives
    every required figure and names no ``catalog``; otherwise the catalog entry it names
    (``catalog: NAME``, else its own name; the user catalog first, then the built-in one)
    with ``given``'s figures on top, and ``catalog`` set to the entry used. Raises
    :class:`UnknownGpu` when the name is in no catalog."""
    base = given.get("catalog")
    if base is None and all(k in given for k in REQUIRED_FIGURES):
        return dict(given), None
    ref = str(base) if base is not None else name
    entry = user.find(ref) if user is not None else None
    if entry is None:
        try:
            entry = builtin_entry(ref)
        except CatalogError as e:
            msg = "; ".join(fe.message for fe in e.errors)
            if base is None:
                missing = [k for k in REQUIRED_FIGURES if k not in given]
                msg = (
                    f"{msg}; an entry whose name is not a catalog GPU gives its figures "
                    f"({', '.join(missing)} are missing) or names one with 'catalog:'"
                )
            raise UnknownGpu(msg) from None
    merged = {**entry.fields, **{k: v for k, v in given.items() if k != "catalog"}}
    merged["catalog"] = entry.name
    return merged, entry


def read_user_catalog(path: str | Path) -> UserCatalog:
    """Read and validate a user catalog file; every problem is reported at once in a
    :class:`CatalogError` naming the file and the field."""
    from planner.instance.load import load_document
    from planner.instance.messages import schema_errors

    p = Path(path)
    file = str(p)
    data = load_document(p)
    if not isinstance(data, dict):
        raise CatalogError(file, [FieldError("", "expected a mapping with 'gpus' and 'prices'")])
    try:
        doc = _File.model_validate(data)
    except ValidationError as e:
        raise CatalogError(file, schema_errors(e, data)) from None
    errors: list[FieldError] = []
    entries: dict[str, CatalogEntry] = {}
    for name, raw in doc.gpus.items():
        where = f"gpus.{name}"
        figures = {k: v for k, v in raw.items() if k not in EXTRA_KEYS}
        unknown = sorted(set(figures) - _GPU_FIELDS)
        if unknown:
            errors.append(FieldError(f"{where}.{unknown[0]}", "unknown field"))
            continue
        try:
            fields, base = complete(name, figures)
        except UnknownGpu as e:
            errors.append(FieldError(where, str(e)))
            continue
        try:
            GpuType.model_validate(fields)
        except ValidationError as e:
            errors.extend(
                FieldError(f"{where}.{fe.path}" if fe.path else where, fe.message)
                for fe in schema_errors(e, fields)
            )
            continue
        price = raw.get(PRICE_KEY, base.price if base is not None else None)
        if price is not None and (
            isinstance(price, bool)
            or not isinstance(price, int | float)
            or not math.isfinite(price)
            or price < 0
        ):
            errors.append(
                FieldError(f"{where}.{PRICE_KEY}", "expected a finite non-negative number")
            )
            continue
        unit = str(fields.get(MEMORY_UNIT_KEY, "GiB"))
        entries[name] = CatalogEntry(
            name, fields, None if price is None else float(price), unit, file
        )
    if errors:
        raise CatalogError(file, errors)
    return UserCatalog(file, entries, doc.prices)


def catalog_document(
    prices: list[PriceRow], gpus: Mapping[str, Mapping[str, Any]] | None = None, note: str = ""
) -> dict[str, Any]:
    """A user catalog as plain data, ready to be written as YAML."""
    out: dict[str, Any] = {"format": CATALOG_FORMAT}
    if note:
        out["description"] = note
    out["gpus"] = {k: dict(v) for k, v in (gpus or {}).items()}
    out["prices"] = [r.model_dump(exclude_none=True) for r in prices]
    return out


def catalog_offers(
    user: UserCatalog, cloud: str, cloud_region: str, gpu: str, names: tuple[str, ...]
) -> dict[str, Any] | None:
    """The offers of a region on ``cloud``/``cloud_region`` for GPU type ``gpu`` from the user
    catalog's price rows (``names``: the catalog names the GPU type goes by, its key and the
    ``catalog`` entry it was completed from): ``on_demand`` and ``spot`` each at the cheapest
    zone's price per GPU-hour with its ``zone`` (the import keeps standard zones only unless
    asked, :func:`planner.instance.skypilot_catalog.standard_zone`); None when the catalog prices no
    row there. Spot keeps the schema's default preemption rate (a catalog has none)."""
    rows = [r for n in names for r in user.prices_for(n, cloud_region, cloud)]
    out: dict[str, Any] = {}
    for contract, key in (
        ("on_demand", "on_demand_usd_per_gpu_hour"),
        ("spot", "spot_usd_per_gpu_hour"),
    ):
        priced = [r for r in rows if getattr(r, key) is not None]
        if not priced:
            continue
        best = min(priced, key=lambda r: (float(getattr(r, key)), r.zone or ""))
        offer: dict[str, Any] = {"usd_per_gpu_hour": float(getattr(best, key))}
        if best.zone:
            offer["zone"] = best.zone
        out[contract] = offer
    return out or None
