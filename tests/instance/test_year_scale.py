"""Year-scale input: long lists of plain numbers read in bulk (the same data as PyYAML's own
loader gives), libyaml's parser under the same guards, capacity in every series form, and
the caps set from the largest real instance."""

from __future__ import annotations

import copy
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from builders import DATA, instance_from, tiny_dict

from planner.instance import InstanceError, read
from planner.instance import load as L
from planner.instance.read import from_dict, load_document
from planner.instance.schema import MAX_PHASES


def pure(text: str) -> Any:
    """The document as the pure-Python guarded loader reads it, element by element."""
    loader = L._GuardedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def doc_of(tmp_path: Path, text: str, name: str = "d.yaml") -> Any:
    f = tmp_path / name
    f.write_text(text)
    return load_document(f)


def test_long_lists_read_in_bulk_are_what_the_loader_reads(tmp_path: Path) -> None:
    rng = random.Random(7)
    ints = [rng.randint(-500, 500) for _ in range(200)]
    floats = [round(rng.uniform(-1e3, 1e3), 4) for _ in range(200)]
    mixed = [rng.choice([3, -0, 17, 2.5, -0.25, 1e5, 2.0e-3, 7.0]) for _ in range(100)]
    text = (
        "# a comment with [1, 2, 3]\n"
        f"flow_ints: {json.dumps(ints)}\n"
        f"flow_floats: [{', '.join(map(str, floats))}]\n"
        "exponents: [" + ", ".join(["1e5", "2.5E-3", ".5", "5.", "-1.5e+2", "0"] * 10) + "]\n"
        "block:\n"
        + "".join(f"  - {x}\n" for x in mixed)
        + "indentless:\n"
        + "".join(f"- {x}\n" for x in floats)
        + "multiline: ["
        + ",\n    ".join(map(str, ints))
        + "]\n"
        "after: 1\n"
    )
    got = doc_of(tmp_path, text)
    assert got == pure(text)
    assert got["flow_ints"] == ints and all(type(x) is int for x in got["flow_ints"])
    assert got["block"] == mixed and [type(x) for x in got["block"]] == [type(x) for x in mixed]
    assert got["exponents"][:6] == [1e5, 2.5e-3, 0.5, 5.0, -150.0, 0]
    _, runs = L._lift_numbers(text)
    assert len(runs) == 6  # every long list was read in bulk


@pytest.mark.parametrize(
    ("token", "as_read"),
    [
        ("012", 10),  # YAML 1.1 octal: not a list of plain numbers, left to the loader
        ("08", "08"),  # not octal either: text in YAML 1.1
        ("-.5", "-.5"),  # text in YAML 1.1 (no exponent)
        ("1_000", 1000),  # YAML 1.1 digits with separators
    ],
)
def test_numbers_read_otherwise_by_yaml_are_left_to_the_loader(
    tmp_path: Path, token: str, as_read: Any
) -> None:
    values = ["1"] * 40 + [token] + ["2"] * 40
    text = f"flow: [{', '.join(values)}]\nblock:\n" + "".join(f"  - {v}\n" for v in values)
    got = doc_of(tmp_path, text)
    assert got == pure(text)
    assert got["flow"][40] == as_read and got["block"][40] == as_read


def test_a_list_inside_text_is_not_read_as_numbers(tmp_path: Path) -> None:
    nums = ", ".join(str(i) for i in range(50))
    block = "".join(f"  - {i}\n" for i in range(50))
    text = f'quoted: "[{nums}]"\nliteral: |\n{block}plain: [{nums}]\n'
    got = doc_of(tmp_path, text)
    assert got == pure(text)
    assert got["quoted"] == f"[{nums}]" and got["literal"] == block.replace("  - ", "- ")
    assert got["plain"] == list(range(50))


def test_messages_after_a_long_list_keep_their_lines(tmp_path: Path) -> None:
    # line 1: the list (one line), lines 2-101 a block list, then a key given twice on
    # lines 102 and 103: the lines are the file's
    text = (
        f"a: [{', '.join(['1.5'] * 64)}]\nb:\n"
        + "".join(f"  - {i}\n" for i in range(99))
        + "c: 1\nc: 2\n"
    )
    f = tmp_path / "dup.yaml"
    f.write_text(text)
    with pytest.raises(InstanceError) as e:
        load_document(f)
    assert str(e.value) == f"{f}: c: key 'c' is given twice (lines 102 and 103); keep one"
    # a syntax error after a long list: line and column as PyYAML's scanner says them
    g = tmp_path / "bad.yaml"
    g.write_text(f"a: [{', '.join(['7'] * 64)}]\nb: {{x: 1\nc: 2\n")
    with pytest.raises(InstanceError) as e2:
        load_document(g)
    assert "at line 3, column 2 (while parsing a flow mapping that starts at line 2)" in str(
        e2.value
    ), str(e2.value)


def test_libyaml_parses_under_the_same_guards() -> None:
    if L._CPARSER is None:
        pytest.skip("PyYAML without libyaml")
    assert isinstance(L._loader("a: 1\n", fast=True), L._CLoader)
    # aliases counted, recursion refused, keys given twice recorded: the guards are the
    # composer's, whichever parser feeds it
    loader = L._loader("a: &x [1]\nb: *x\nc: [*x, *x]\n", fast=True)
    assert loader.get_single_data() == {"a": [1], "b": [1], "c": [[1], [1]]}
    assert loader._aliases == 3
    loader = L._loader("a: 1\na: 2\n", fast=True)
    loader.get_single_data()
    assert [(k, lines) for _, k, lines in loader.duplicates] == [("a", "lines 1 and 2")]
    with pytest.raises(yaml.YAMLError, match="recursive alias"):
        L._loader("a: &l [1, *l]\n", fast=True).get_single_data()


def test_too_many_numbers_are_refused_before_they_are_read(tmp_path: Path) -> None:
    f = tmp_path / "many.yaml"
    f.write_text("x: [" + "1," * L.MAX_WRITTEN + "1]\n")
    t0 = time.perf_counter()
    with pytest.raises(InstanceError, match=f"more than {L.MAX_WRITTEN} values"):
        load_document(f)
    assert time.perf_counter() - t0 < 10


def test_caps_come_from_the_largest_real_instance() -> None:
    # a year x 20 regions x 4 GPU types x 3 hourly series, inline
    assert L.MAX_WRITTEN >= 8760 * 20 * 4 * 3 > 2_100_000
    assert L.MAX_NODES >= L.MAX_WRITTEN
    assert MAX_PHASES >= 1000


# ----------------------------------------------------------------------------- capacity


def _with_capacity(cap: Any) -> dict[str, Any]:
    d = tiny_dict()
    d["regions"]["east"]["capacity"]["A100"] = cap
    return d


def test_capacity_takes_every_series_form(tmp_path: Path) -> None:
    hours = 48
    daily = [16 if 8 <= h % 24 < 20 else 8 for h in range(hours)]
    (tmp_path / "cap.csv").write_text(
        "time,gpus\n"
        + "".join(
            f"2023-06-{5 + h // 24:02d}T{h % 24:02d}:00:00Z,{v}\n" for h, v in enumerate(daily)
        )
    )
    forms: dict[str, Any] = {
        "number": 16,
        "list": daily,
        "values": {"values": daily},
        "constant": {"constant": 12},
        "csv": {"csv": "cap.csv", "column": "gpus", "time_column": "time"},
        # New York: 08:00-20:00 local is 12:00-24:00 UTC in June
        "tou": {"tou": {"default": 8, "bands": [{"start_hour": 8, "end_hour": 20, "price": 16}]}},
    }
    for form, cap in forms.items():
        inst = from_dict(_with_capacity(cap), f"<{form}>", tmp_path)
        got = inst.capacity[("east", "A100")]
        if form == "number":
            assert np.all(got == 16)
        elif form == "constant":
            assert np.all(got == 12)
        elif form == "tou":
            assert list(got) == [16 if h % 24 >= 12 else 8 for h in range(hours)], form
        else:
            assert list(got) == daily, form


@pytest.mark.parametrize(
    ("cap", "message"),
    [
        (
            {"values": [8.5] * 48},
            "expected whole numbers of GPUs >= 0, got 8.5 at hour 0 (48 hours in all)",
        ),
        (
            {"constant": -2},
            "expected whole numbers of GPUs >= 0, got -2 at hour 0 (48 hours in all)",
        ),
        ({"values": [8] * 10}, "expected at least 48 hourly values (the horizon), got 10"),
    ],
)
def test_capacity_series_must_be_whole_gpus(cap: Any, message: str) -> None:
    with pytest.raises(InstanceError) as e:
        instance_from(_with_capacity(cap))
    assert [(fe.path, fe.message) for fe in e.value.errors] == [
        ("regions.east.capacity.A100", message)
    ]


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_a_year_of_inline_series_in_ten_regions(tmp_path: Path) -> None:
    # 10 regions x (electricity + 4 GPU types' capacity) x 8,760 hours = 438,000 values,
    # written as PyYAML writes lists (a value a line): read as they were written
    d = tiny_dict()
    d["horizon"]["hours"] = 8760
    d["phases"][1]["deadline"] = 8760
    gpus = copy.deepcopy(d["gpu_types"])
    for g in ("H100", "B200"):
        gpus[g] = copy.deepcopy(d["gpu_types"]["A100"])
    d["gpu_types"] = gpus
    rng = random.Random(3)
    regions = {}
    for k in range(10):
        r = copy.deepcopy(d["regions"]["east"])
        r["electricity"] = {"values": [round(rng.uniform(-20, 300), 3) for _ in range(8760)]}
        r["capacity"] = {g: [rng.randint(0, 64) for _ in range(8760)] for g in gpus}
        r["offers"] = {g: {"on_demand": {"usd_per_gpu_hour": 2.0}} for g in gpus}
        regions[f"r{k}"] = r
    d["regions"] = regions
    f = tmp_path / "year.yaml"
    f.write_text(yaml.safe_dump(d, sort_keys=False))
    t0 = time.process_time()
    inst = read(f)
    took = time.process_time() - t0
    assert inst.capacity[("r3", "B200")].tolist() == regions["r3"]["capacity"]["B200"]
    assert inst.price["r9"][17] == pytest.approx(regions["r9"]["electricity"]["values"][17])
    assert took < 10, f"{took:.1f} s of CPU"  # about 2 s on the development machine


def test_the_shipped_instances_read_alike() -> None:
    for f in sorted((DATA.parent.parent / "instances").glob("*.yaml")):
        text = f.read_text()
        data = load_document(f)
        if "base" in data and "axes" in data:
            continue
        assert data == pure(text.removeprefix("\ufeff")), f.name
