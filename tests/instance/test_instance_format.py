"""docs/instance-format.md and the JSON Schema cannot drift from the schema: the document is
what the generator writes, every schema field has a unit, meaning and example, and the JSON
Schema accepts the files the reader accepts (and refuses what it refuses). ``trainplan init``
writes a starter instance that ``check`` accepts and ``solve`` solves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

import planner
from planner.instance.docs import json_schema, markdown, models, undocumented
from planner.interfaces.cli import _register, app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "instance-format.md"

_register()


def test_every_schema_field_is_documented() -> None:
    assert undocumented() == []


def test_the_document_is_what_the_generator_writes() -> None:
    """Fails when a field, type, default, unit, meaning or example changed without
    ``python docs/make_instance_format.py`` being run."""
    assert DOC.read_text(encoding="utf-8") == markdown()


def test_the_generator_script_checks_the_document() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_instance_format.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_document_has_every_field_with_its_columns() -> None:
    text = DOC.read_text(encoding="utf-8")
    for m in models():
        assert f"### {m.__name__}\n" in text, m.__name__
        for name in m.model_fields:
            rows = [ln for ln in text.splitlines() if ln.startswith(f"| `{name}` |")]
            assert rows, f"{m.__name__}.{name}"
            assert all(ln.count(" | ") >= 5 for ln in rows)
    # a default, a unit and an example as the schema and the table have them
    assert "| `gpus_per_node` | whole number > 0 | GPUs | 8 |" in text
    assert "| `reference_year` | whole number >= 1900, <= 2200 | year | none |" in text


def test_a_changed_default_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: the drift test fails when the schema changes under the document."""
    from planner.instance import schema

    field = schema.GpuType.model_fields["gpus_per_node"]
    monkeypatch.setattr(field, "default", 4)
    assert DOC.read_text(encoding="utf-8") != markdown()


def _validator() -> jsonschema.Draft202012Validator:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


class Yaml12Loader(yaml.SafeLoader):
    """YAML as an editor's language server reads it (YAML 1.2 core schema): ``1.5e11`` is a
    float. PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent, and
    hands ``1.5e11`` over as text (the reader's lax number parsing accepts both)."""


Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+0123456789."),
)


def _json_data(text: str) -> object:
    data = yaml.load(text, Loader=Yaml12Loader)  # a SafeLoader subclass
    return json.loads(json.dumps(data, default=lambda x: x.isoformat().replace("+00:00", "Z")))


def _as_json(path: Path) -> object:
    return _json_data(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["week-7b.yaml", "month-70b.yaml", "small-finetune.yaml"])
def test_the_json_schema_accepts_the_shipped_instances(name: str) -> None:
    data = _as_json(ROOT / "instances" / name)
    errors = sorted(_validator().iter_errors(data), key=str)
    assert errors == [], errors[:3]


def test_the_json_schema_accepts_catalog_names_and_refuses_unknown_fields() -> None:
    v = _validator()
    doc = _json_data(markdown().split("```yaml\n", 1)[1].split("```", 1)[0])
    assert isinstance(doc, dict)
    assert list(v.iter_errors(doc)) == []
    doc["gpu_types"]["H100-SXM"] = {"tdp_w": 700}
    assert any("tdp_w" in e.message for e in v.iter_errors(doc))


def test_every_property_has_a_description_and_an_example() -> None:
    schema = json_schema()
    nodes = [schema, *schema["$defs"].values()]
    for node in nodes:
        for name, prop in node.get("properties", {}).items():
            assert prop.get("description"), name
            assert prop.get("examples"), name


def test_schema_command_prints_it() -> None:
    res = CliRunner().invoke(app, ["schema"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["title"] == "trainplan instance"
    assert "reference_year" in data["$defs"]["Series"]["properties"]


def test_init_writes_a_starter_that_check_accepts_and_solve_solves(tmp_path: Path) -> None:
    out = tmp_path / "mine" / "instance.yaml"
    out.parent.mkdir()
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "init",
            "-o",
            str(out),
            "--model",
            "llama-2-13b",
            "--gpu",
            "H100:64",
            "--region",
            "eu-de=DE-LU@aws/eu-central-1",
            "--region",
            "eu-fr=FR",
            "--deadline",
            "3d",
            "--start",
            "2026-12-07T00:00:00Z",
            "--eval-gpu",
            "L4",
            "--data-gb",
            "50",
            "--data-region",
            "eu-de",
        ],
    )
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "# ASSUMPTION" in text and "reference_year: 2023" in text
    # the price extracts travel with the instance (copied beside it)
    assert (out.parent / "data" / "prices" / "price_DE-LU_2023.csv").is_file()
    inst = planner.read(out)
    assert set(inst.spec.gpu_types) == {"H100-SXM", "L4"}
    assert inst.hours == 72 and inst.phase("evaluation").work.passes == "forward"
    assert inst.phase("finetune").options.gpu_counts == (8, 16, 24, 32, 40, 48, 56, 64)
    assert inst.region("eu-de").cloud_region == "eu-central-1"
    assert runner.invoke(app, ["check", str(out)]).exit_code == 0
    res = runner.invoke(app, ["solve", str(out), "-o", str(tmp_path / "plan.json")])
    assert res.exit_code == 0, res.output
    assert list(_validator().iter_errors(_as_json(out))) == []
    # a second run does not overwrite it
    again = runner.invoke(app, ["init", "-o", str(out), "--model", "13B"])
    assert again.exit_code == 2 and "--force" in again.output


def test_init_refuses_unknown_choices(tmp_path: Path) -> None:
    runner = CliRunner()
    out = str(tmp_path / "x.yaml")
    res = runner.invoke(app, ["init", "-o", out, "--model", "13B", "--gpu", "H100-SXMM:8"])
    assert res.exit_code == 2 and "did you mean" in res.output
    res = runner.invoke(app, ["init", "-o", out, "--model", "13B", "--region", "eu=XX"])
    assert res.exit_code == 2 and "DE-LU" in res.output
    res = runner.invoke(app, ["init", "-o", out, "--model", "gpt-9"])
    assert res.exit_code == 2 and "--model" in res.output
