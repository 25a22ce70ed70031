"""SkyPilot's names for accelerators and its price catalogs (``vms.csv``) read into a user
catalog (:mod:`planner.instance.usercatalog`).

SkyPilot keeps one catalog per cloud (``<cloud>/vms.csv``, schema v5 onwards) with the
columns ``InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Region,
AvailabilityZone, Price, SpotPrice``: one row per instance type and zone, ``Price`` and
``SpotPrice`` in USD per instance-hour (SpotPrice empty where there is none). The import
keeps, per accelerator and region, the instance type with the most accelerators (the node a
training job rents; ties: the cheapest), and for each of the region's zones one price row
with its prices divided by the accelerator count:

    on-demand USD per GPU-hour = Price / AcceleratorCount
    spot USD per GPU-hour      = SpotPrice / AcceleratorCount

Only standard availability zones are kept unless ``all_zones`` (:func:`standard_zone`): an
AWS Local Zone (``us-east-1-bos-1a``) or Wavelength zone (``us-east-1-wl1-bos-wlz-1``) sells
the same instance type at its own price, far from the region and often without the capacity
a training job needs (a 1.28 USD/GPU-h spot H100 in a Local Zone against 6.88 on demand).
A region of an instance mapped to the cloud region takes its offers from these rows
(:func:`planner.instance.usercatalog.catalog_offers`: the cheapest zone per contract, the zone
stated in the plan). Accelerator names become catalog names through :data:`FROM_SKYPILOT`;
names it does not know are kept as they are, so that the user can add their figures under
``gpus:``.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from planner.instance.catalog import CatalogError, resolve_name
from planner.instance.errors import FieldError
from planner.instance.files import not_a_file
from planner.instance.references import MAGNITUDE
from planner.instance.usercatalog import PriceRow

#: The columns an import needs (SkyPilot catalog schema v5+); ``AvailabilityZone`` is read
#: when present (without it a row stands for its whole region).
COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price", "SpotPrice")
ZONE_COLUMN = "AvailabilityZone"

#: SkyPilot accelerator name -> trainplan catalog name. SkyPilot's ``H100`` is the SXM part
#: (AWS p5, GCP a3, Azure ND H100 v5), ``A100`` the 40 GB SXM part and ``A100-80GB`` the
#: 80 GB one, ``H100-MEGA`` GCP's a3-mega (the same GPU with more network).
FROM_SKYPILOT: dict[str, str] = {
    "H100": "H100-SXM",
    "H100-MEGA": "H100-SXM",
    "H200": "H200-SXM",
    "A100": "A100-SXM-40GB",
    "A100-80GB": "A100-SXM-80GB",
    "L4": "L4",
    "L40S": "L40S",
    "T4": "T4",
    "V100-32GB": "V100-SXM-32GB",
    "MI300X": "MI300X",
    "MI325X": "MI325X",
    "B200": "B200",
    "GB200": "GB200-NVL72",
    "H20": "H20",
}
#: trainplan catalog name -> the name SkyPilot's ``accelerators`` field takes (export). A GPU
#: type's ``accelerator`` field overrides it.
TO_SKYPILOT: dict[str, str] = {
    "H100-SXM": "H100",
    "H100-PCIe": "H100",
    "H200-SXM": "H200",
    "H800-SXM": "H800",
    "A100-SXM-40GB": "A100",
    "A100-SXM-80GB": "A100-80GB",
    "L4": "L4",
    "L40S": "L40S",
    "T4": "T4",
    "V100-SXM-32GB": "V100-32GB",
    "MI300X": "MI300X",
    "MI325X": "MI325X",
    "B200": "B200",
    "GB200-NVL72": "GB200",
    "H20": "H20",
}


class SkyPilotCatalogError(CatalogError):
    """A vms.csv that cannot be imported; names the file, the line and the column."""


def catalog_name(accelerator: str) -> str:
    """The trainplan catalog name of a SkyPilot accelerator, or the name itself."""
    if accelerator in FROM_SKYPILOT:
        return FROM_SKYPILOT[accelerator]
    try:
        return resolve_name(accelerator)
    except CatalogError:
        return accelerator


def standard_zone(zone: str | None, region: str) -> bool:
    """Whether ``zone`` is one of the region's standard availability zones: the region's
    name with a one-letter suffix (AWS ``us-east-1a``, GCP ``us-central1-a``), a bare
    number or letter (Azure ``1``), the region itself, or no zone. AWS Local Zones
    (``us-east-1-bos-1a``) and Wavelength zones (``us-east-1-wl1-bos-wlz-1``) carry a
    location code after the region and are not: they must be opted into and sell capacity
    at their own prices (AWS EC2 ``describe-availability-zones``: ``ZoneType``
    ``availability-zone`` against ``local-zone`` and ``wavelength-zone``)."""
    if not zone or zone == region:
        return True
    if len(zone) == 1 and zone.isalnum():
        return True
    for sep in ("", "-"):
        if zone.startswith(region + sep):
            rest = zone[len(region) + len(sep) :]
            if len(rest) == 1 and rest.isalpha():
                return True
    return False


@dataclass(frozen=True)
class _Row:
    instance_type: str
    accelerator: str
    count: float
    region: str
    price: float | None
    spot: float | None
    zone: str | None = None


def _number(text: str | None, file: str, line: int, column: str) -> float | None:
    if text is None or text.strip() == "":
        return None
    try:
        v = float(text)
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise SkyPilotCatalogError(
            file, [FieldError(f"line {line}", f"{column!r} is not a number: {shown!r}")]
        ) from None
    low, high = MAGNITUDE
    if not math.isfinite(v) or v < 0 or (v != 0 and not low <= v <= high):
        raise SkyPilotCatalogError(
            file,
            [
                FieldError(
                    f"line {line}",
                    f"{column!r} must be 0 or a number between {low:g} and {high:g}",
                )
            ],
        )
    return v


def _rows(path: Path) -> list[_Row]:
    """The rows of a ``vms.csv``; an unreadable file (not UTF-8, a field over the CSV
    reader's limit, a FIFO or device) is a :class:`SkyPilotCatalogError` naming it."""
    file = str(path)
    why = not_a_file(path)
    if why is not None:
        raise SkyPilotCatalogError(file, [FieldError("", f"file {why}")])
    try:
        return _read_rows(path, file)
    except UnicodeDecodeError as e:
        raise SkyPilotCatalogError(file, [FieldError("", f"not UTF-8 text ({e.reason})")]) from None
    except csv.Error as e:
        raise SkyPilotCatalogError(file, [FieldError("", f"not readable CSV ({e})")]) from None
    except OSError as e:
        raise SkyPilotCatalogError(
            file, [FieldError("", f"cannot be read ({e.strerror or e})")]
        ) from None


def _read_rows(path: Path, file: str) -> list[_Row]:
    out: list[_Row] = []
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SkyPilotCatalogError(
                file,
                [
                    FieldError(
                        "",
                        f"not a SkyPilot vms.csv: no column {', '.join(map(repr, missing))}; "
                        f"expected {', '.join(COLUMNS)}",
                    )
                ],
            )
        for line, row in enumerate(reader, start=2):
            acc = (row.get("AcceleratorName") or "").strip()
            count = _number(row.get("AcceleratorCount"), file, line, "AcceleratorCount")
            if not acc or not count:
                continue  # a CPU-only instance type
            region = (row.get("Region") or "").strip()
            if not region:
                raise SkyPilotCatalogError(file, [FieldError(f"line {line}", "'Region' is empty")])
            out.append(
                _Row(
                    (row.get("InstanceType") or "").strip(),
                    acc,
                    count,
                    region,
                    _number(row.get("Price"), file, line, "Price"),
                    _number(row.get("SpotPrice"), file, line, "SpotPrice"),
                    (row.get(ZONE_COLUMN) or "").strip() or None,
                )
            )
    return out


def import_vms_csv(
    path: str | Path,
    cloud: str,
    gpus: set[str] | None = None,
    regions: set[str] | None = None,
    all_zones: bool = False,
) -> tuple[list[PriceRow], list[str]]:
    """Price rows (one per accelerator, region and availability zone; standard zones only
    unless ``all_zones``, :func:`standard_zone`) from a SkyPilot ``vms.csv`` of ``cloud``,
    optionally only for the given catalog GPU names and regions; and the accelerator names
    that have no trainplan catalog entry (kept under their SkyPilot name)."""
    p = Path(path)
    rows = _rows(p)
    by_key: dict[tuple[str, str], list[_Row]] = defaultdict(list)
    for r in rows:
        name = catalog_name(r.accelerator)
        if gpus is not None and name not in gpus:
            continue
        if regions is not None and r.region not in regions:
            continue
        if not all_zones and not standard_zone(r.zone, r.region):
            continue
        by_key[(name, r.region)].append(r)
    out: list[PriceRow] = []
    unknown: set[str] = set()
    for (name, region), group in sorted(by_key.items()):
        priced = [r for r in group if r.price is not None or r.spot is not None]
        if not priced:
            continue
        most = max(r.count for r in priced)
        node = [r for r in priced if r.count == most]
        best = min(
            node, key=lambda r: (r.price if r.price is not None else math.inf, r.instance_type)
        )
        zones: dict[str | None, list[_Row]] = defaultdict(list)
        for r in node:
            if r.instance_type == best.instance_type:
                zones[r.zone].append(r)
        for zone, zrows in sorted(zones.items(), key=lambda kv: kv[0] or ""):
            prices = [r.price for r in zrows if r.price is not None]
            spots = [r.spot for r in zrows if r.spot is not None]
            out.append(
                PriceRow(
                    gpu=name,
                    cloud=cloud,
                    region=region,
                    zone=zone,
                    instance_type=best.instance_type,
                    gpus_per_instance=most,
                    on_demand_usd_per_gpu_hour=(
                        None if not prices else round(min(prices) / most, 6)
                    ),
                    spot_usd_per_gpu_hour=None if not spots else round(min(spots) / most, 6),
                    source=f"SkyPilot catalog {p.name} ({cloud}), {best.instance_type}",
                )
            )
        try:
            resolve_name(name)
        except CatalogError:
            unknown.add(name)
    return out, sorted(unknown)


def catalog_rows(path: str | Path) -> list[_Row]:
    """The GPU rows of a SkyPilot ``vms.csv`` (instance type, accelerator and count, region,
    prices), for checking what SkyPilot offers where (``trainplan export``)."""
    return _rows(Path(path))
