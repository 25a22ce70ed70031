"""Regions that are real: where a phase runs in the cloud, and whether the cloud offers its
accelerator there.

A region names its cloud and cloud region (``regions.<r>.cloud`` and ``cloud_region``, as
``trainplan init --region eu-de=DE-LU@aws/eu-central-1`` writes them). A SkyPilot export of
a phase in a region without both is refused: SkyPilot would read the region's own name
(``us-tex``) as a cloud region and fail at launch.

Whether the cloud offers the accelerator in that region, with the count per node and spot
when the plan says so, is looked up, in this order:

1. a SkyPilot catalog folder (``<cloud>/vms.csv``, SkyPilot's own layout): ``--sky-catalog
   DIR``, else SkyPilot's local copy when the ``skypilot`` package is installed
   (``$SKY_RUNTIME_DIR`` or ``~``, ``.sky/catalogs/<newest schema version>/``). SkyPilot
   fetches that copy on its first use and trainplan never downloads it: offline and before
   any ``sky`` command it is absent;
2. the price rows of the user catalog the instance names (``gpu_catalog``, as ``trainplan
   gpus import-skypilot`` writes it), for rows of the region's cloud;
3. otherwise nothing is checked and the export says so.

With a SkyPilot catalog the accelerator must be offered with exactly the per-node count
(SkyPilot matches instance types by count), and with a spot price for a spot phase; an
imported catalog keeps only each region's largest node, so any count up to it passes.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from planner.instance.errors import InstanceError
from planner.instance.files import FileRefused, data_file
from planner.instance.model import Instance
from planner.instance.skypilot_catalog import SkyPilotCatalogError, catalog_rows
from planner.instance.usercatalog import read_user_catalog

#: SkyPilot's storage type for a bucket on each cloud (``file_mounts.<path>.store``).
STORES: dict[str, str] = {
    "aws": "s3",
    "gcp": "gcs",
    "azure": "azure",
    "ibm": "ibm",
    "oci": "oci",
    "nebius": "nebius",
    "cloudflare": "r2",
}


@dataclass(frozen=True)
class Offer:
    """An accelerator on offer in a cloud region: node sizes, and whether spot is priced."""

    counts: frozenset[float]
    spot: bool


@dataclass(frozen=True)
class Catalog:
    """What a catalog says is offered, by (cloud, cloud region, accelerator); ``exact``: the
    node sizes are every size (SkyPilot's catalog), else the largest (an imported one)."""

    source: str
    offers: dict[tuple[str, str, str], Offer]
    clouds: frozenset[str]
    exact: bool

    def why_not(self, cloud: str, region: str, accel: str, count: float, spot: bool) -> str | None:
        """None when offered; else what is missing, in words."""
        o = self.offers.get((cloud, region, accel))
        if o is None:
            where = sorted(r for (c, r, a) in self.offers if c == cloud and a == accel)
            elsewhere = f" (it has {accel} in {', '.join(where[:8])})" if where else ""
            return f"{self.source} lists no {accel} in {cloud}/{region}{elsewhere}"
        fits = count in o.counts if self.exact else count <= max(o.counts)
        if not fits:
            sizes = ", ".join(f"{c:g}" for c in sorted(o.counts))
            return f"{self.source} offers {accel} in {cloud}/{region} only {sizes} per node"
        if spot and not o.spot:
            return f"{self.source} has no spot price for {accel} in {cloud}/{region}"
        return None


def skypilot_catalog_dir(environ: dict[str, str] | None = None) -> Path | None:
    """SkyPilot's local catalog folder (the newest schema version present), when the
    ``skypilot`` package is installed and the folder exists; None otherwise."""
    if importlib.util.find_spec("sky") is None:
        return None
    env = os.environ if environ is None else environ
    root = Path(env.get("SKY_RUNTIME_DIR") or "~").expanduser() / ".sky" / "catalogs"
    versions = sorted(
        (p for p in root.glob("v*") if p.is_dir() and p.name[1:].isdigit()),
        key=lambda p: int(p.name[1:]),
    )
    return versions[-1] if versions else None


def read_sky_catalog(folder: Path, clouds: Iterable[str]) -> Catalog | None:
    """The offers of ``folder/<cloud>/vms.csv`` for each cloud that has one; None when none
    has. Raises :class:`SkyPilotCatalogError` for a file that is not a vms.csv."""
    offers: dict[tuple[str, str, str], tuple[set[float], bool]] = {}
    found: set[str] = set()
    for cloud in sorted(set(clouds)):
        path = folder / cloud / "vms.csv"
        if not path.is_file():
            continue
        found.add(cloud)
        for r in catalog_rows(path):
            counts, spot = offers.setdefault((cloud, r.region, r.accelerator), (set(), False))
            counts.add(r.count)
            offers[(cloud, r.region, r.accelerator)] = (counts, spot or r.spot is not None)
    if not found:
        return None
    return Catalog(
        f"SkyPilot's catalog ({folder})",
        {k: Offer(frozenset(c), s) for k, (c, s) in offers.items()},
        frozenset(found),
        True,
    )


def read_user_offers(inst: Instance, accel_of: dict[str, str]) -> Catalog | None:
    """The offers in the price rows of the instance's user catalog (``gpu_catalog``), keyed
    by SkyPilot accelerator names (``accel_of``: catalog or GPU-type name -> accelerator);
    None without a catalog or rows with a cloud."""
    ref = inst.spec.gpu_catalog
    if not ref:
        return None
    try:
        path = data_file(ref, inst.base_dir, inst.data_root)
        user = read_user_catalog(path)
    except (FileRefused, InstanceError, OSError):
        return None
    offers: dict[tuple[str, str, str], Offer] = {}
    for row in user.prices:
        if not row.cloud:
            continue
        accel = accel_of.get(row.gpu, row.gpu)
        key = (row.cloud, row.region, accel)
        size = row.gpus_per_instance or 1.0
        old = offers.get(key)
        offers[key] = Offer(
            frozenset({size}) | (old.counts if old else frozenset()),
            (row.spot_usd_per_gpu_hour is not None) or bool(old and old.spot),
        )
    if not offers:
        return None
    return Catalog(
        f"the instance's catalog {ref}",
        offers,
        frozenset(c for c, _, _ in offers),
        False,
    )


__all__ = [
    "STORES",
    "Catalog",
    "Offer",
    "SkyPilotCatalogError",
    "read_sky_catalog",
    "read_user_offers",
    "skypilot_catalog_dir",
]
