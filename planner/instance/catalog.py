"""The built-in GPU catalog: ``planner/data/gpus.yaml`` read as package data.

Each entry becomes a :class:`planner.instance.schema.GpuType` (vendor datasheet figures, dense
peak TFLOPS per precision; sources and estimates in ``planner/data/GPU_SOURCES.md``). Keys the
schema does not know (the public on-demand list price) are dropped from the GPU type; the
price is available from :func:`catalog_price`. Names are looked up case-insensitively.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import ValidationError

from planner.instance.errors import FieldError, InstanceError
from planner.instance.schema import GpuType

#: The catalog file, relative to the ``planner`` package.
CATALOG_PATH = "data/gpus.yaml"
#: The catalog key holding a public on-demand price per GPU-hour (USD); not part of GpuType.
PRICE_KEY = "on_demand_usd_per_gpu_hour"


class CatalogError(InstanceError):
    """The catalog file is broken, or a name is not in it. Names the file and the entry."""


def _file_label() -> str:
    return f"planner/{CATALOG_PATH}"


@cache
def _raw() -> dict[str, dict[str, Any]]:
    """The catalog document, parsed once: ``{name: {key: value}}``."""
    path = resources.files("planner").joinpath(*CATALOG_PATH.split("/"))
    label = _file_label()
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as e:
        raise CatalogError(label, [FieldError("", f"cannot read the GPU catalog ({e})")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        msg = str(e).splitlines()[0] if str(e) else "invalid YAML"
        raise CatalogError(label, [FieldError("", f"cannot parse: {msg}")]) from None
    if not isinstance(data, dict) or not data:
        raise CatalogError(label, [FieldError("", "expected a mapping of GPU name to its figures")])
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise CatalogError(
                label,
                [
                    FieldError(
                        str(name), f"expected a mapping of figures, got {type(entry).__name__}"
                    )
                ],
            )
    return {str(k): dict(v) for k, v in data.items()}


@cache
def _catalog() -> dict[str, GpuType]:
    label = _file_label()
    known = set(GpuType.model_fields)
    out: dict[str, GpuType] = {}
    errors: list[FieldError] = []
    for name, entry in _raw().items():
        fields = {k: v for k, v in entry.items() if k in known}
        price = entry.get(PRICE_KEY)
        if price is not None and (
            not isinstance(price, int | float) or isinstance(price, bool) or price < 0
        ):
            errors.append(
                FieldError(f"{name}.{PRICE_KEY}", f"expected a non-negative number, got {price!r}")
            )
        try:
            out[name] = GpuType.model_validate(fields)
        except ValidationError as e:
            for err in e.errors():
                loc = ".".join(str(x) for x in err["loc"])
                errors.append(FieldError(f"{name}.{loc}" if loc else name, str(err["msg"])))
    if errors:
        raise CatalogError(label, errors)
    return out


def load_catalog() -> dict[str, GpuType]:
    """Every GPU type of the built-in catalog by its catalog name (a fresh dict; the GpuType
    values are frozen)."""
    return dict(_catalog())


def catalog_names() -> list[str]:
    """Catalog names in file order."""
    return list(_catalog())


#: Natural names for catalog entries. ``H100`` alone means the SXM part (the one large
#: training clusters use, e.g. Llama 3's 16,384 "H100"); ``GB200`` the NVL72 rack.
ALIASES: dict[str, str] = {
    "h100": "H100-SXM",
    "h100-80gb": "H100-SXM",
    "h200": "H200-SXM",
    "h800": "H800-SXM",
    "gb200": "GB200-NVL72",
    "ascend": "Ascend-910B",
    "910b": "Ascend-910B",
}


def _tokens(name: str) -> set[str]:
    return {t for t in name.strip().lower().replace("_", "-").replace(" ", "-").split("-") if t}


def resolve_name(name: str) -> str:
    """The catalog's spelling of ``name``: matched case-insensitively, then through
    :data:`ALIASES`, then as the only entry whose name contains all of ``name``'s parts
    (``A100-80GB`` -> A100-SXM-80GB, ``V100`` -> V100-SXM-32GB). An ambiguous name
    (``A100``) raises :class:`CatalogError` listing its variants; an unknown one the known
    names and the closest."""
    names = catalog_names()
    by_lower = {n.lower(): n for n in names}
    key = name.strip().lower()
    if key in by_lower:
        return by_lower[key]
    if key in ALIASES and ALIASES[key] in names:
        return ALIASES[key]
    want = _tokens(name)
    matches = [n for n in names if want and want <= _tokens(n)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise CatalogError(
            "GPU catalog",
            [
                FieldError(
                    "",
                    f"ambiguous GPU {name!r}: it could be {', '.join(matches)}; give the full name",
                )
            ],
        )
    close = difflib.get_close_matches(key, list(by_lower), n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(by_lower[c] for c in close)}?)" if close else ""
    raise CatalogError(
        "GPU catalog", [FieldError("", f"unknown GPU {name!r}{hint}; known: {', '.join(names)}")]
    )


def gpu_by_name(name: str) -> GpuType:
    """The catalog's GPU type called ``name``, matched case-insensitively."""
    return _catalog()[resolve_name(name)]


def catalog_price(name: str) -> float | None:
    """The catalog's public on-demand price in USD per GPU-hour (a dated snapshot, see
    GPU_SOURCES.md), or None when the entry gives none. Unknown names raise CatalogError."""
    price = _raw()[resolve_name(name)].get(PRICE_KEY)
    return None if price is None else float(price)


#: Catalog key naming the unit of ``memory_gb`` ("GiB" or "GB").
MEMORY_UNIT_KEY = "memory_unit"


def catalog_memory_unit(name: str) -> str:
    """The unit the vendor's memory figure is in ("GiB" for every HBM/GDDR part listed;
    GPU_SOURCES.md gives the evidence per GPU). Entries without the key are taken as GiB."""
    return str(_raw()[resolve_name(name)].get(MEMORY_UNIT_KEY, "GiB"))


def catalog_memory_bytes(name: str) -> float:
    """Memory capacity in bytes: memory_gb x 2^30 for GiB (an "80 GB" A100: 85,899,345,920
    bytes = 81,920 MiB), x 10^9 for GB."""
    from planner.physics.memory import capacity_bytes

    return capacity_bytes(gpu_by_name(name).memory_gb, catalog_memory_unit(name))


def raw_entry(name: str) -> dict[str, Any]:
    """Every key the catalog file gives for ``name`` (a copy): GpuType's figures, the
    example price and the memory unit."""
    return dict(_raw()[resolve_name(name)])
