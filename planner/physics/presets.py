"""Model presets: published architectures from ``planner/data/models.yaml``, with sources.

:func:`preset_fields` gives the ModelSpec fields of a preset (what ``preset: NAME`` in an
instance expands to); :func:`preset_architecture` the :class:`Architecture`. Names are matched
case-insensitively; ``_`` and ``.`` spellings of the same name are accepted
(``llama_3_1_8b``, ``Llama-3.1-8B``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from planner.physics.architecture import MLA, OPTIONAL_ARCHITECTURE_FIELDS, Architecture, MoE

#: The presets file, relative to the ``planner`` package.
PRESETS_PATH = "data/models.yaml"
#: Keys of a preset entry that document it and are not ModelSpec fields.
META_KEYS = ("published_params", "published_active_params", "source")


class PresetError(ValueError):
    """An unknown preset name, or a broken presets file."""


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@cache
def _raw() -> dict[str, dict[str, Any]]:
    text = resources.files("planner").joinpath(*PRESETS_PATH.split("/")).read_text("utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise PresetError(f"planner/{PRESETS_PATH}: expected a mapping of preset name to fields")
    return {str(k): dict(v) for k, v in data.items()}


def preset_names() -> list[str]:
    """Preset names in file order."""
    return list(_raw())


def resolve_preset(name: str) -> str:
    """The file's spelling of a preset name, or :class:`PresetError` listing the known ones."""
    by_key = {_key(n): n for n in _raw()}
    k = _key(name)
    if k in by_key:
        return by_key[k]
    dotted = {_key(n).replace(".", "-"): n for n in _raw()}
    if k.replace(".", "-") in dotted:
        return dotted[k.replace(".", "-")]
    import difflib

    close = difflib.get_close_matches(k, list(by_key), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(by_key[c] for c in close)}?)" if close else ""
    raise PresetError(f"unknown model preset {name!r}{hint}; known: {', '.join(_raw())}")


def preset_entry(name: str) -> dict[str, Any]:
    """The whole entry (fields, published figures, source) of a preset (a fresh copy)."""
    return dict(_raw()[resolve_preset(name)])


def preset_fields(name: str) -> dict[str, Any]:
    """The ModelSpec fields of a preset (architecture only; no ``params``: the count follows
    from the dimensions)."""
    return {k: v for k, v in preset_entry(name).items() if k not in META_KEYS}


def preset_source(name: str) -> str:
    """Where a model preset's architecture comes from (paper or model card), empty when not
    recorded."""
    return str(preset_entry(name).get("source", ""))


def architecture_from_fields(f: dict[str, Any]) -> Architecture:
    """An :class:`Architecture` from ModelSpec-style fields (missing ones take the GPT
    defaults of :class:`Architecture`)."""
    moe = f.get("moe")
    mla = f.get("mla")
    kwargs = {k: f[k] for k in (*OPTIONAL_ARCHITECTURE_FIELDS, "seq_len") if f.get(k) is not None}
    return Architecture(
        layers=int(f["layers"]),
        hidden=int(f["hidden"]),
        heads=int(f["heads"]) if f.get("heads") else max(1, int(f["hidden"]) // 128),
        vocab=int(f.get("vocab", 32000)),
        moe=MoE(**dict(moe)) if moe else None,
        mla=MLA(**dict(mla)) if mla else None,
        **kwargs,
    )


def preset_architecture(name: str) -> Architecture:
    """The :class:`Architecture` of a preset."""
    return architecture_from_fields(preset_fields(name))
