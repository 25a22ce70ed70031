"""GPU types by catalog name: an instance's ``gpu_types`` entries completed from the catalog
before validation, so that ``gpu_types: {H100-SXM: {}}`` is a GPU type; and the offers of a
region mapped to a cloud region, from the user catalog's imported prices.

An entry takes its figures from a catalog when it names one: ``catalog: NAME``, or, when it
does not give every required figure (memory, peak TFLOPS, board and idle power), its own
key. Names are looked up first in the user catalog the instance names (``gpu_catalog``, a
path relative to the instance file; :mod:`planner.instance.usercatalog`), then in the built-in one
(``trainplan gpus``; aliases such as ``H100`` and partial names such as ``A100-80GB``
resolve). Figures the entry gives override the catalog's. The completed entry records the
catalog name it came from in ``catalog``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.instance.errors import FieldError, InstanceError
from planner.instance.files import FileRefused, data_file, not_a_file

if TYPE_CHECKING:
    from planner.instance.usercatalog import UserCatalog


def expand_gpu_types(
    data: dict[str, Any], base_dir: Path, file: str, data_root: Path | None = None
) -> dict[str, Any]:
    """``data`` with every catalog-named GPU entry completed and, from the user catalog's
    price rows, the offers of regions mapped to a cloud region (a new top-level mapping; the
    input is not changed). Raises :class:`InstanceError` naming the entry when a name is in
    no catalog, or the user catalog cannot be read. The user catalog file obeys the same
    file-access policy as series files (:func:`planner.instance.files.data_file`), and is
    checked and read whenever it is named, also when every GPU type gives its own figures (a
    field naming a file names one the instance may read)."""
    from planner.instance.usercatalog import REQUIRED_FIGURES, UnknownGpu, complete

    user = _user_catalog(data.get("gpu_catalog"), base_dir, file, data_root)
    gpus = data.get("gpu_types")
    if not isinstance(gpus, dict):
        return data
    wanted = [
        k
        for k, v in gpus.items()
        if isinstance(v, dict) and ("catalog" in v or any(f not in v for f in REQUIRED_FIGURES))
    ]
    if not wanted and user is None:
        return data
    errors: list[FieldError] = []
    out = dict(gpus)
    for key in wanted:
        entry = gpus[key]
        if "catalog" in entry and not isinstance(entry["catalog"], str):
            continue  # the schema names the wrong type
        try:
            out[key], _ = complete(str(key), entry, user)
        except UnknownGpu as e:
            errors.append(FieldError(f"gpu_types.{key}", str(e)))
    if errors:
        raise InstanceError(file, errors)
    data = {**data, "gpu_types": out}
    if user is not None:
        data = _catalog_offers(data, user)
    return data


def _user_catalog(
    ref: Any, base_dir: Path, file: str, data_root: Path | None
) -> UserCatalog | None:
    """The user catalog ``gpu_catalog`` names (None when it names none: the schema reports
    a value of the wrong type), read under the file-access policy."""
    from planner.instance.usercatalog import read_user_catalog

    if not isinstance(ref, str):
        return None
    if not ref.strip():
        raise InstanceError(
            file, [FieldError("gpu_catalog", "expected a file name (the user catalog), got ''")]
        )
    try:
        path = data_file(ref, base_dir, data_root)
    except FileRefused as e:
        raise InstanceError(file, [FieldError("gpu_catalog", str(e))]) from None
    why = not_a_file(path)
    if why is not None:
        raise InstanceError(file, [FieldError("gpu_catalog", f"file {str(path)!r} {why}")])
    try:
        return read_user_catalog(path)
    except InstanceError as e:
        raise InstanceError(
            file,
            [FieldError("gpu_catalog", f"{e.file}: {fe}") for fe in e.errors],
        ) from None


def _catalog_offers(data: dict[str, Any], user: UserCatalog) -> dict[str, Any]:
    """Regions mapped to a cloud region (``cloud`` and ``cloud_region``, default the region's
    key) take, for every GPU type they have capacity for but list no offer of, the on-demand
    and spot offers the user catalog prices there
    (:func:`planner.instance.usercatalog.catalog_offers`); offers the file lists win."""
    from planner.instance.usercatalog import catalog_offers

    regions = data.get("regions")
    gpus = data.get("gpu_types")
    if not isinstance(regions, dict) or not isinstance(gpus, dict):
        return data
    new_regions = dict(regions)
    for rname, r in regions.items():
        if not isinstance(r, dict) or not isinstance(r.get("cloud"), str):
            continue
        cap, offers = r.get("capacity"), r.get("offers", {})
        if not isinstance(cap, dict) or not isinstance(offers, dict):
            continue
        cloud_region = r.get("cloud_region") or rname
        added = dict(offers)
        for g in cap:
            if g in offers:
                continue
            entry = gpus.get(g)
            names = (str(g),) + (
                (str(entry["catalog"]),) if isinstance(entry, dict) and entry.get("catalog") else ()
            )
            found = catalog_offers(user, r["cloud"], str(cloud_region), str(g), names)
            if found is not None:
                added[g] = found
        if added != offers:
            new_regions[rname] = {**r, "offers": added}
    return {**data, "regions": new_regions}
