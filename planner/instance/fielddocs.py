"""What every field of the instance file means: unit, meaning and an example, per
``Model.field`` of :mod:`planner.instance.schema`, read from ``planner/data/field_docs.yaml``.

The schema gives each field's type and default; that table gives the rest. Both feed
``docs/instance-format.md`` (``docs/make_instance_format.py``) and the JSON Schema that
``trainplan schema`` prints, and a test fails when a schema field has no entry there or the
document differs from what they generate, so the documentation cannot drift from the code.
"""

from __future__ import annotations

from importlib import resources

import yaml

#: Where the table lives, as package data of ``planner``.
FIELD_DOCS_PATH = "data/field_docs.yaml"


def _load() -> dict[str, tuple[str, str, str]]:
    text = resources.files("planner").joinpath(*FIELD_DOCS_PATH.split("/")).read_text("utf-8")
    table = yaml.safe_load(text)
    return {key: (str(v["unit"]), str(v["meaning"]), str(v["example"])) for key, v in table.items()}


#: ``"Model.field": (unit, meaning, example)``; the example is YAML as it would appear under
#: the model's own key (a value, or ``key: value`` lines).
FIELD_DOCS: dict[str, tuple[str, str, str]] = _load()
