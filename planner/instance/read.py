"""One way in: :func:`read` loads a YAML or JSON instance, validates it once and resolves it.

The work is split by job: :mod:`~planner.instance.load` (the guarded YAML/JSON loader),
:mod:`~planner.instance.messages` (pydantic errors made readable),
:mod:`~planner.instance.references` (cross-references, windows, cycles, magnitudes),
:mod:`~planner.instance.resolve` (series, capacities and windows into an
:class:`~planner.instance.model.Instance`) and :mod:`~planner.instance.paths` (dotted paths
for variants). The names other modules import from here are re-exported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.instance.breadth import check_breadth
from planner.instance.errors import FieldError, InstanceError
from planner.instance.files import DATA_ROOT_ENV, data_root_of
from planner.instance.gpus import expand_gpu_types
from planner.instance.load import (
    MAX_ALIAS_VALUES,
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_WRITTEN,
    MAX_YAML_BYTES,
    check_shape,
    load_document,
)
from planner.instance.messages import MAX_ERRORS, capped, schema_errors
from planner.instance.model import Instance
from planner.instance.paths import set_path
from planner.instance.references import (
    LARGEST_SIZE,
    MAGNITUDE,
    check_magnitudes,
    check_references,
)
from planner.instance.resolve import resolve
from planner.instance.schema import InstanceSpec

__all__ = [
    "DATA_ROOT_ENV",
    "LARGEST_SIZE",
    "MAGNITUDE",
    "MAX_ALIASES",
    "MAX_ALIAS_VALUES",
    "MAX_DEPTH",
    "MAX_ERRORS",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_WRITTEN",
    "MAX_YAML_BYTES",
    "from_dict",
    "load_document",
    "read",
    "set_path",
]


def read(path: str | Path, *, data_root: str | Path | None = None) -> Instance:
    """Read, validate and resolve an instance file (``.yaml``, ``.yml`` or ``.json``).

    Files the instance names (``csv:`` series) are read from the instance's folder, or from
    ``data_root`` (default: the environment variable ``TRAINPLAN_DATA_ROOT``) when given;
    see :mod:`planner.instance.files`."""
    p = Path(path)
    data = load_document(p, nan_as_float=True)
    return _build(data, str(p), p.parent, data_root, parsed=True)


def from_dict(
    data: Any, file: str, base_dir: Path, *, data_root: str | Path | None = None
) -> Instance:
    """Validate a parsed document and resolve it; every problem found is reported at once.

    ``file`` names the document in messages; files it names are looked up relative to
    ``base_dir``, inside it or inside ``data_root`` (default ``$TRAINPLAN_DATA_ROOT``).
    Numbers must be numbers: parse YAML with :func:`load_document`, not ``yaml.safe_load``,
    which reads ``2.0e9`` as the text ``'2.0e9'`` (YAML 1.1), refused here as a quoted
    number would be."""
    return _build(data, file, base_dir, data_root, parsed=False)


#: Added to the first "not text" error of a document built in Python.
YAML11_HINT = (
    "yaml.safe_load reads an unquoted number such as 2.0e9 as text (YAML 1.1): parse YAML "
    "with planner.instance.read.load_document"
)


def _build(
    data: Any, file: str, base_dir: Path, data_root: str | Path | None, *, parsed: bool
) -> Instance:
    """:func:`from_dict`; ``parsed`` when ``data`` comes from :func:`load_document` (so a
    number as text was quoted in the file, and the YAML 1.1 hint would mislead)."""
    if not isinstance(data, dict):
        raise InstanceError(
            file,
            [FieldError("", f"expected a mapping at the top level, got {type(data).__name__}")],
        )
    if "horizon" not in data and "base" in data and ("axes" in data or "scenarios" in data):
        raise InstanceError(
            file,
            [
                FieldError(
                    "",
                    "this is a scenario grid (it has 'base' and 'axes' or 'scenarios'), not an "
                    f"instance: run `trainplan grid {file}`, or check its base instance "
                    f"({data['base']!r}) with `trainplan check`",
                )
            ],
        )
    # documents built in Python (not parsed) may share sub-objects: bound them here too
    check_shape(data, file)
    data = expand_gpu_types(data, base_dir, file, data_root_of(data_root))
    try:
        spec = InstanceSpec.model_validate(data)
    except ValidationError as e:
        errors = schema_errors(e, data)
        if not parsed:
            for i, fe in enumerate(errors):
                if "expected a number, not text" in fe.message:
                    errors[i] = FieldError(fe.path, f"{fe.message}; {YAML11_HINT}")
                    break
        raise InstanceError(file, errors) from None
    errors = []
    check_magnitudes(data, errors)
    check_references(spec, errors)
    if not errors:
        check_breadth(spec, errors)
    if errors:
        raise InstanceError(file, capped(errors))
    return resolve(spec, data, file, base_dir, from_dict, data_root_of(data_root))
