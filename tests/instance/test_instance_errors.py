"""The broken-file matrix: every ``tests/data/bad_*`` file and the exact error it must give.

Each file is ``tiny.yaml`` (or its JSON form) with one thing wrong. The reader must raise
:class:`planner.instance.InstanceError` whose text names the file, the field path and what was
expected, and ``trainplan check FILE`` must exit 2 with that text on stderr and no traceback.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner, Result

import planner.interfaces.cli.check  # noqa: F401  (registers the command)
from planner.instance import InstanceError, read
from planner.instance.read import MAX_DEPTH, MAX_FILE_BYTES, load_document
from planner.interfaces.cli.app import app

DATA = Path(__file__).parents[1] / "data"
TINY = DATA / "tiny.yaml"


@dataclass(frozen=True)
class Case:
    """``file`` must fail with exactly ``expected`` (its lines, each after ``<file>: ``).
    ``field`` is the field path the error must name (empty for errors about the whole
    document)."""

    file: str
    field: str
    expected: str


def _csv(name: str) -> str:
    return str(DATA / name)


P1 = "phases[1] (finetune)"
KNOWN_GPUS = "known: ['A100', 'L4']"
ALLOW = "allow a folder with read(..., data_root=...) or TRAINPLAN_DATA_ROOT=<folder>"


@pytest.fixture(autouse=True)
def _no_data_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The messages about files outside the instance's folder assume no data root is set."""
    monkeypatch.delenv("TRAINPLAN_DATA_ROOT", raising=False)


CASES: list[Case] = [
    # --- unknown fields at several depths
    Case(
        "bad_unknown_field.yaml",
        f"{P1}.optionz",
        f"{P1}.optionz: unknown field (did you mean 'options'?)",
    ),
    Case(
        "bad_unknown_field.json",
        f"{P1}.optionz",
        f"{P1}.optionz: unknown field (did you mean 'options'?)",
    ),
    Case(
        "bad_unknown_top_field.yaml",
        "solver",
        "solver: unknown field (expected one of: name, description, horizon, gpu_catalog, "
        "gpu_types, regions, models, phases, families, failure, storage, memory, ...)",
    ),
    Case(
        "bad_unknown_gpu_field.yaml",
        "gpu_types.A100.tdp_w",
        "gpu_types.A100.tdp_w: unknown field (expected one of: catalog, accelerator, memory_gb, "
        "memory_unit, peak_tflops, board_power_w, idle_power_w, gpus_per_node, "
        "node_overhead_w, intra_node_gb_per_s, inter_node_gb_per_s, host_gb_per_s, ...)",
    ),
    Case(
        "bad_unknown_offer_field.yaml",
        "regions.west.offers.A100.spot.interruptions_per_hour",
        "regions.west.offers.A100.spot.interruptions_per_hour: unknown field "
        "(did you mean 'preemptions_per_hour'?)",
    ),
    Case(
        "bad_unknown_band_field.yaml",
        "regions.west.electricity.tou.bands[0].month",
        "regions.west.electricity.tou.bands[0].month: unknown field "
        "(expected one of: start_hour, end_hour, price, weekdays)",
    ),
    # --- wrong types
    Case(
        "bad_string_for_number.yaml",
        "gpu_types.A100.memory_gb",
        "gpu_types.A100.memory_gb: expected a number (got 'eighty')",
    ),
    Case(
        "bad_string_for_number.json",
        "horizon.hours",
        "horizon.hours: expected a whole number (got 'two days')",
    ),
    Case(
        "bad_fractional_hours.yaml",
        "horizon.hours",
        "horizon.hours: expected a whole number (got 48.5)",
    ),
    Case(
        "bad_list_for_mapping.yaml",
        "regions.east.capacity",
        "regions.east.capacity: expected a mapping (key: value) (got a list of 2 items)",
    ),
    Case(
        "bad_mapping_for_list.yaml",
        f"{P1}.predecessors",
        f"{P1}.predecessors: expected a list (got a mapping)",
    ),
    Case(
        "bad_cooling_unknown.yaml",
        "regions.west.cooling",
        "regions.west.cooling: expected one of 'air', 'liquid' or 'immersion' (got 'water')",
    ),
    # --- missing required fields
    Case("bad_missing_hours.yaml", "horizon.hours", "horizon.hours: required field is missing"),
    Case(
        "bad_missing_work.yaml",
        "phases[0] (prep).work",
        "phases[0] (prep).work: required field is missing",
    ),
    Case(
        "bad_missing_electricity.yaml",
        "regions.east.electricity",
        "regions.east.electricity: required field is missing",
    ),
    Case("bad_missing_phases.json", "phases", "phases: required field is missing"),
    # --- dangling references
    Case(
        "bad_phase_unknown_gpu.yaml",
        f"{P1}.gpu_types",
        f"{P1}.gpu_types: unknown GPU type 'H100'; {KNOWN_GPUS}",
    ),
    Case(
        "bad_phase_unknown_region.yaml",
        f"{P1}.regions",
        f"{P1}.regions: unknown region 'south'; known: ['east', 'west']",
    ),
    Case(
        "bad_phase_unknown_model.yaml",
        f"{P1}.model",
        f"{P1}.model: unknown model 'm7b'; known: ['m1b']",
    ),
    Case(
        "bad_unknown_predecessor.yaml",
        f"{P1}.predecessors",
        f"{P1}.predecessors: unknown phase 'prepare'; phases are ['prep', 'finetune']",
    ),
    Case(
        "bad_work_unknown_gpu.yaml",
        "phases[0] (prep).work.gpu",
        f"phases[0] (prep).work.gpu: unknown GPU type 'V100'; {KNOWN_GPUS}",
    ),
    Case(
        "bad_offer_unknown_gpu.yaml",
        "regions.east.offers.H100",
        f"regions.east.offers.H100: unknown GPU type 'H100'; {KNOWN_GPUS}",
    ),
    Case(
        "bad_capacity_unknown_gpu.yaml",
        "regions.east.capacity.H100",
        f"regions.east.capacity.H100: unknown GPU type 'H100'; {KNOWN_GPUS}",
    ),
    Case(
        "bad_transfer_unknown_region.yaml",
        "regions.east.transfer_usd_per_gb",
        "regions.east.transfer_usd_per_gb: unknown region 'south'",
    ),
    Case(
        "bad_family_without_gpu.yaml",
        "families.amd",
        "families.amd: no GPU type belongs to this family",
    ),
    # --- impossible values
    Case(
        "bad_negative_memory.yaml",
        "gpu_types.A100.memory_gb",
        "gpu_types.A100.memory_gb: expected a number > 0 (got -80)",
    ),
    Case("bad_zero_hours.yaml", "horizon.hours", "horizon.hours: expected a number >= 1 (got 0)"),
    Case(
        "bad_idle_above_board.yaml",
        "gpu_types.L4",
        "gpu_types.L4: idle_power_w must not exceed board_power_w",
    ),
    Case(
        "bad_mfu_above_one.yaml",
        f"{P1}.mfu",
        f"{P1}.mfu: expected a model FLOPs utilisation in (0, 1], got 1.5",
    ),
    # mfu is 'number | mapping': only the number branch speaks for a number
    Case("bad_mfu_zero.yaml", f"{P1}.mfu", f"{P1}.mfu: expected a number > 0 (got 0)"),
    # capacity is 'whole number | list': the list branch says nothing about -16
    Case(
        "bad_negative_capacity.json",
        "regions.east.capacity.A100",
        "regions.east.capacity.A100: expected a number >= 0 (got -16)",
    ),
    Case(
        "bad_deadline_before_release.yaml",
        f"{P1}.deadline",
        f"{P1}.deadline: deadline (hour 10) must be after release (hour 30)",
    ),
    # a number is an hour, never Unix time (0 would be 1970-01-01, hour -468312)
    Case(
        "bad_deadline_zero.yaml", f"{P1}.deadline", f"{P1}.deadline: expected a number > 0 (got 0)"
    ),
    Case(
        "bad_release_outside_horizon.yaml",
        "phases[0] (prep).release",
        "phases[0] (prep).release: release hour -24 is outside the horizon [0, 48)",
    ),
    Case(
        "bad_deadline_past_horizon.yaml",
        f"{P1}.deadline",
        f"{P1}.deadline: deadline hour 72 is after the horizon end (48)",
    ),
    Case(
        "bad_naive_start.yaml",
        "horizon.start",
        "horizon.start: expected an ISO time with a UTC offset, e.g. 2023-06-05T00:00:00Z "
        "(got 2023-06-05T00:00:00)",
    ),
    Case(
        "bad_naive_deadline.yaml",
        f"{P1}.deadline",
        f"{P1}.deadline: expected a time with a UTC offset, e.g. 2023-06-06T12:00:00Z, or "
        "an hour number (got 2023-06-06T12:00:00)",
    ),
    Case(
        "bad_naive_deadline.json",
        f"{P1}.deadline",
        f"{P1}.deadline: expected a time with a UTC offset, e.g. 2023-06-06T12:00:00Z, or "
        "an hour number (got 2023-06-06T12:00:00)",
    ),
    Case(
        "bad_timezone.yaml",
        "regions.west.timezone",
        "regions.west.timezone: expected an IANA time zone such as 'Europe/Berlin', "
        "got 'Europe/Atlantis'",
    ),
    Case(
        "bad_pue_and_cooling.yaml",
        "regions.west",
        "regions.west: give 'pue' or 'cooling', not both",
    ),
    Case(
        "bad_no_pue.yaml",
        "regions.east",
        "regions.east: expected 'pue' or 'cooling' (air, liquid, immersion)",
    ),
    # --- series shorter than the horizon, CSV problems
    Case(
        "bad_short_values.yaml",
        "regions.east.electricity",
        "regions.east.electricity: expected at least 48 hourly values (the horizon), got 24",
    ),
    Case(
        "bad_capacity_short.yaml",
        "regions.east.capacity.A100",
        "regions.east.capacity.A100: expected 48 hourly values (the horizon), got 24",
    ),
    Case(
        "bad_csv_missing_hours.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('bad_prices_gap.csv')}' has no value for "
        "2023-06-05T10:00:00+00:00 (hour 10 of the horizon); expected hourly rows covering "
        "the horizon, or a price profile of a year the file covers ('reference_year')",
    ),
    Case(
        "bad_csv_missing_file.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('no_such_prices.csv')}' does not exist",
    ),
    Case(
        "bad_csv_missing_column.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('fixture_prices_newyork.csv')}' has no column "
        "'usd_per_mwh'; columns are ['time', 'price']",
    ),
    # the 5th line of bad_prices_text.csv is '2023-06-04T21:00,n/a': named, not shown
    Case(
        "bad_csv_not_number.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('bad_prices_text.csv')}' line 5: 'price' is "
        "not a number",
    ),
    # --- phases
    Case("bad_cycle.yaml", "phases", "phases: precedence cycle: prep -> finetune -> prep"),
    Case(
        "bad_duplicate_phase.yaml",
        "phases[2] (prep).name",
        "phases[2] (prep).name: duplicate phase name 'prep'",
    ),
    Case(
        "bad_tokens_and_flops.yaml",
        f"{P1}.work",
        f"{P1}.work: expected exactly one of 'tokens', 'flops', 'gpu_hours'; "
        "got ['tokens', 'flops']",
    ),
    Case(
        "bad_tokens_without_model.yaml",
        f"{P1}.work.tokens",
        f"{P1}.work.tokens: work in tokens needs the phase's 'model' (6ND)",
    ),
    # --- NaN and infinity
    Case(
        "bad_nan.yaml",
        "regions.east.electricity.constant",
        "regions.east.electricity.constant: expected a finite number (got nan)",
    ),
    Case(
        "bad_inf.yaml",
        "gpu_types.A100.board_power_w",
        "gpu_types.A100.board_power_w: expected a finite number (got inf)",
    ),
    # JSON's NaN and Infinity are parsed so that the schema can name the field
    Case(
        "bad_nan.json",
        "gpu_types.A100.memory_gb",
        "gpu_types.A100.memory_gb: expected a finite number (got nan)",
    ),
    Case(
        "bad_inf.json",
        "regions.east.electricity.constant",
        "regions.east.electricity.constant: expected a finite number (got inf)",
    ),
    # --- documents that are not instances
    # line 3 opens '{start: ..., hours: 48' without the closing brace; line 4 is 'gpu_types:'
    Case(
        "bad_syntax.yaml",
        "",
        "cannot parse: expected ',' or '}', but got ':' at line 4, column 10 (while parsing a "
        "flow mapping that starts at line 3)",
    ),
    Case(
        "bad_syntax.json",
        "",
        "cannot parse: Expecting property name enclosed in double quotes: line 6 column 3 "
        "(char 91)",
    ),
    Case("bad_top_level_list.yaml", "", "expected a mapping at the top level, got list"),
    Case("bad_empty.yaml", "", "the file is empty; expected a mapping of fields"),
    Case("bad_not_utf8.yaml", "", "not UTF-8 text (invalid continuation byte)"),
    # each alias use counts the values it repeats: a0 is 1 list + 9 strings = 10 values and
    # a_k = 1 + 9 a_(k-1): 10, 91, 820, 7381, 66430, 597871. Lines 3-7 (lol1..lol5) repeat
    # 9 x (10 + 91 + 820 + 7381 + 66430) = 672,588; the first *a5 on line 8 adds 597,871.
    Case(
        "bad_alias_bomb.yaml",
        "",
        "YAML aliases repeat more than 1000000 values (line 8): refusing a possible alias bomb",
    ),
    Case(
        "bad_deep_nesting.yaml", "", f"document nested deeper than {MAX_DEPTH} levels; refusing it"
    ),
    Case(
        "bad_duplicate_key.yaml",
        "regions.east.pue",
        "regions.east.pue: key 'pue' is given twice (lines 22 and 23); keep one",
    ),
    # --- files an instance names: inside its folder, never a special file, never echoed
    # (the process environment is never opened: the absolute path is refused first)
    Case(
        "bad_csv_absolute.yaml",
        "regions.east.electricity",
        "regions.east.electricity: file '/proc/self/environ' is an absolute path; give a path "
        f"relative to the instance's folder '{DATA}', or {ALLOW}",
    ),
    Case(
        "bad_csv_outside.yaml",
        "regions.east.electricity",
        "regions.east.electricity: file "
        "'../../instances/data/prices/price_DE-LU_2023-06-01_2023-09-01.csv' leads outside "
        f"the instance's folder '{DATA}' (links are followed); keep data files there, or "
        f"{ALLOW}",
    ),
    # the first line of bad_secret_token.txt is a token: not named .csv, so never shown
    Case(
        "bad_csv_secret.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('bad_secret_token.txt')}' has no column "
        "'price' (its first line is not shown: the file's name does not end in .csv)",
    ),
    # a .csv whose first line is one field (a token) is not a header: not shown either
    Case(
        "bad_csv_secret_header.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('bad_secret_header.csv')}' has no column "
        "'price'; its first line is not a header of named columns (a CSV series needs a "
        "time column and a value column)",
    ),
    Case(
        "bad_csv_timezone.yaml",
        "regions.east.electricity.timezone",
        "regions.east.electricity.timezone: expected an IANA time zone such as "
        "'Europe/Berlin', got 'Mars/Olympus_Mons'",
    ),
    # line 4 of bad_prices_huge.csv is '2023-06-04T20:00,1e308': the line and the column are
    # named, the value is not shown; the rule is the one for the instance's own numbers
    Case(
        "bad_csv_huge_value.yaml",
        "regions.east.electricity",
        f"regions.east.electricity: file '{_csv('bad_prices_huge.csv')}' line 4: 'price' is "
        "outside the magnitudes allowed; expected 0 or a magnitude between 1e-12 and 1e+15 "
        "(is the unit right?)",
    ),
    # --- numbers: one rule for text, integers beyond float range, dates beyond year 9999
    Case(
        "bad_quoted_number.yaml",
        "gpu_types.A100.memory_gb",
        "gpu_types.A100.memory_gb: expected a number, not text (got '1e308')",
    ),
    Case(
        "bad_quoted_number.json",
        "horizon.hours",
        "horizon.hours: expected a number, not text (got '48')",
    ),
    # 1 followed by 400 zeros
    Case(
        "bad_huge_integer.yaml",
        "gpu_types.A100.memory_gb",
        "gpu_types.A100.memory_gb: expected a number of at most 308 digits, got an integer "
        "of 401 digits",
    ),
    Case(
        "bad_horizon_past_9999.yaml",
        "horizon.start",
        "horizon.start: expected a start between 0001-01-02 and 9999-12-30 (UTC), so that "
        "every hour of the horizon is a date in years 1-9999 in any time zone; got "
        "9999-12-31T23:00:00+00:00",
    ),
    # 9999-12-01 + 720 h = 9999-12-31T00:00Z, less than a day before the last date there is
    Case(
        "bad_horizon_hours_past_9999.yaml",
        "horizon.hours",
        "horizon.hours: expected a horizon that ends by 9999-12-30 (UTC), so that every hour "
        "of it is a date in years 1-9999 in any time zone; got 720 hours from "
        "9999-12-01T00:00:00+00:00",
    ),
    # --- caps on what an instance lists
    Case(
        "bad_too_many_gpu_counts.yaml",
        f"{P1}.options.gpu_counts",
        f"{P1}.options.gpu_counts: expected at most 64 items (got a list of 65 items)",
    ),
    # --- names are printable; messages show a control character escaped (ESC as \x1b)
    Case(
        "bad_control_in_name.yaml",
        "phases[0] (\x1b[31mprep).name",
        "phases[0] (\\x1b[31mprep).name: expected printable text (no control characters "
        "such as ESC, tab or newline) (got '\\x1b[31mprep')",
    ),
]


PARAMS = [pytest.param(c, id=c.file) for c in CASES]


def _error(path: Path) -> InstanceError:
    with pytest.raises(InstanceError) as e:
        read(path)
    return e.value


def test_matrix_covers_every_bad_file() -> None:
    on_disk = {p.name for p in DATA.glob("bad_*") if p.suffix in (".yaml", ".json")}
    assert on_disk == {c.file for c in CASES}
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", PARAMS)
def test_exact_error(case: Case) -> None:
    path = DATA / case.file
    text = str(_error(path))
    assert text == "\n".join(f"{path}: {line}" for line in case.expected.split("\n"))


@pytest.mark.parametrize("case", PARAMS)
def test_error_names_file_and_field(case: Case) -> None:
    path = DATA / case.file
    err = _error(path)
    assert err.file == str(path)
    assert err.errors
    for line in str(err).splitlines():
        assert line.startswith(f"{path}: ")
    if case.field:
        assert any(e.path.startswith(case.field) for e in err.errors), str(err)
    assert "Traceback" not in str(err)


# ----------------------------------------------------------------------------- limits


def test_alias_bomb_is_refused_quickly() -> None:
    # 9 levels of 9 aliases expand to 9^9 = 387,420,489 strings
    t0 = time.perf_counter()
    err = _error(DATA / "bad_alias_bomb.yaml")
    assert time.perf_counter() - t0 < 2.0
    assert "refusing" in str(err)


def test_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    # a valid start, then padded past 64 MiB (sparse: nothing is written)
    for suffix in (".yaml", ".json"):
        big = tmp_path / f"big{suffix}"
        big.write_text(TINY.read_text())
        with big.open("r+b") as fh:
            fh.truncate(MAX_FILE_BYTES + 1)
        t0 = time.perf_counter()
        err = _error(big)
        assert time.perf_counter() - t0 < 1.0
        assert str(err) == f"{big}: file is {MAX_FILE_BYTES + 1} bytes; the limit is 67108864"
        res = run_check(str(big))
        assert res.exit_code == 2 and str(err) in res.stderr
    assert MAX_FILE_BYTES == 64 * 2**20


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_very_deep_document_is_refused(tmp_path: Path, suffix: str) -> None:
    # 100,000 nested lists: deeper than any parser's recursion; refused, not crashed
    deep = tmp_path / f"deep{suffix}"
    nest = "[" * 100_000 + "]" * 100_000
    deep.write_text(f'{{"name": {nest}}}' if suffix == ".json" else f"name: {nest}\n")
    err = _error(deep)
    assert re.fullmatch(
        rf"{re.escape(str(deep))}: (cannot parse: .*recursion.*|document "
        r"nested deeper than \d+ levels; refusing it)",
        str(err),
    ), str(err)


def _variant(tmp_path: Path, old: str, new: str, name: str = "v.yaml") -> Path:
    """tiny.yaml with one piece of text replaced (which must be there)."""
    text = TINY.read_text()
    assert old in text
    f = tmp_path / name
    f.write_text(text.replace(old, new, 1))
    return f


def _errors(path: Path) -> list[str]:
    """The error lines of ``path`` without the ``<file>: `` prefix."""
    return [line.removeprefix(f"{path}: ") for line in str(_error(path)).splitlines()]


def test_aliases_and_merge_keys_are_read(tmp_path: Path) -> None:
    # east's A100 offer anchored and merged into west's with '<<', whose own on_demand (1.8)
    # overrides the merged one (2.0): not a duplicate key, and the same spec as tiny.yaml
    text = (
        TINY.read_text()
        .replace(
            "      A100: {on_demand: {usd_per_gpu_hour: 2.0}}",
            "      A100: &od {on_demand: {usd_per_gpu_hour: 2.0}}",
        )
        .replace(
            "      A100: {on_demand: {usd_per_gpu_hour: 1.8}, spot:",
            "      A100: {<<: *od, on_demand: {usd_per_gpu_hour: 1.8}, spot:",
        )
    )
    f = tmp_path / "aliased.yaml"
    f.write_text(text)
    assert read(f).spec == read(TINY).spec


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(TINY.read_text() + "extra: &loop [1, *loop]\n")
    (msg,) = _errors(f)
    assert msg.startswith(
        "cannot parse: recursive alias *loop (an alias inside the node it "
        "names) is not allowed at line "
    )


def test_too_many_aliases_are_refused(tmp_path: Path) -> None:
    # 201 uses of a one-value anchor: harmless in size, but more than MAX_ALIASES = 200
    f = tmp_path / "many.yaml"
    f.write_text("a: &x 1\nb: [" + ", ".join(["*x"] * 201) + "]\n")
    assert _errors(f) == ["more than 200 YAML aliases (line 2): refusing a possible alias bomb"]


def test_duplicate_key_in_json_names_its_path(tmp_path: Path) -> None:
    doc = yaml.safe_load(TINY.read_text())
    text = json.dumps(doc, indent=1, default=lambda o: o.isoformat())
    assert text.count('"deadline": 48') == 1
    f = tmp_path / "dup.json"
    f.write_text(text.replace('"deadline": 48', '"deadline": 48, "deadline": 40'))
    assert _errors(f) == [f"{P1}.deadline: key 'deadline' is given twice; keep one"]


def test_duplicate_key_in_a_phase_names_the_phase(tmp_path: Path) -> None:
    # tiny.yaml line 48 is '    deadline: 48' (finetune); the copy goes on line 49
    f = _variant(tmp_path, "    deadline: 48\n", "    deadline: 48\n    deadline: 40\n")
    assert _errors(f) == [
        f"{P1}.deadline: key 'deadline' is given twice (lines 48 and 49); keep one"
    ]


def test_a_document_of_only_comments_is_empty(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("# nothing yet\n")
    assert _errors(f) == [
        "the document is empty (only comments or null); expected a mapping of fields"
    ]


def test_plain_load_document_still_refuses_json_nan(tmp_path: Path) -> None:
    # plan and grid files keep the strict JSON reading; read() lets the schema name the field
    f = tmp_path / "n.json"
    f.write_text('{"x": NaN}')
    with pytest.raises(InstanceError, match="cannot parse: NaN is not a number JSON allows"):
        load_document(f)
    assert math.isnan(load_document(f, nan_as_float=True)["x"])


# ----------------------------------------------------------------------------- union fields


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # a number for 'hour number | time': the hour branch only, never 1970-01-01 + 10.5 s
        (
            "    deadline: 48\n",
            "    deadline: 10.5\n",
            [f"{P1}.deadline: expected a whole number (got 10.5)"],
        ),
        # text for 'hour number | time': the time branch only
        (
            "    deadline: 48\n",
            "    deadline: tomorrow\n",
            [
                f"{P1}.deadline: expected an ISO date-time with a UTC offset, e.g. "
                "2023-06-05T00:00:00Z (got 'tomorrow')"
            ],
        ),
        # a mapping for 'number | mapping': the mapping branch, at the GPU's key
        (
            "    deadline: 48\n",
            "    deadline: 48\n    mfu: {A100: 0}\n",
            [f"{P1}.mfu.A100: expected a number > 0 (got 0)"],
        ),
        # a list for 'whole number | list': the list branch, at the item
        (
            "capacity: {A100: 8}",
            "capacity: {A100: [8, -1]}",
            ["regions.west.capacity.A100[1]: expected a number >= 0 (got -1)"],
        ),
        # text is plainly neither a number nor a mapping: both branches say what they take
        (
            "    deadline: 48\n",
            "    deadline: 48\n    mfu: high\n",
            [
                f"{P1}.mfu: expected a number (got 'high')",
                f"{P1}.mfu: expected a mapping (key: value) (got 'high')",
            ],
        ),
    ],
)
def test_union_fields_report_the_branch_the_input_is(
    tmp_path: Path, old: str, new: str, expected: list[str]
) -> None:
    assert _errors(_variant(tmp_path, old, new)) == expected


def test_naive_release_names_release(tmp_path: Path) -> None:
    f = _variant(
        tmp_path, "    deadline: 48\n", "    deadline: 48\n    release: 2023-06-05T06:00:00\n"
    )
    assert _errors(f) == [
        f"{P1}.release: expected a time with a UTC offset, e.g. "
        "2023-06-06T12:00:00Z, or an hour number (got 2023-06-05T06:00:00)"
    ]


def test_window_without_a_whole_hour_is_refused(tmp_path: Path) -> None:
    # release 06:30 (hour 6.5, slots from 7) and deadline 06:50 (hour 6.83, slots before 6):
    # the deadline is after the release, but no hour slot [t, t + 1) fits between them
    f = _variant(
        tmp_path,
        "    deadline: 48\n",
        "    deadline: 2023-06-05T06:50:00Z\n    release: 2023-06-05T06:30:00Z\n",
    )
    (msg,) = _errors(f)
    assert msg == (
        f"{P1}.deadline: no whole hour slot between release (hour 6.5, slots from "
        "7) and deadline (hour 6.83333, slots before 6)"
    )


def test_missing_file(tmp_path: Path) -> None:
    assert str(_error(tmp_path / "nope.yaml")) == f"{tmp_path / 'nope.yaml'}: file does not exist"


def test_csv_values_must_cover_every_hour_even_at_the_end(tmp_path: Path) -> None:
    # rows up to local 2023-06-06 18:00 EDT = 22:00 UTC = hour 46: hour 47 is missing
    rows = (DATA / "fixture_prices_newyork.csv").read_text().splitlines()
    cut = [rows[0]] + [r for r in rows[1:] if r < "2023-06-06T19:00"]
    (tmp_path / "p.csv").write_text("\n".join(cut) + "\n")
    inst = read(TINY, data_root=tmp_path)
    with pytest.raises(InstanceError) as e:
        inst.replace(
            {
                "regions.east.electricity": {
                    "csv": str(tmp_path / "p.csv"),
                    "column": "price",
                    "time_column": "time",
                    "timezone": "America/New_York",
                }
            }
        )
    assert "has no value for 2023-06-06T23:00:00+00:00 (hour 47 of the horizon)" in str(e.value)


def test_csv_error_line_counts_comment_lines(tmp_path: Path) -> None:
    text = (DATA / "bad_prices_text.csv").read_text()
    (tmp_path / "p.csv").write_text("# prices in USD/MWh\n# local time\n" + text)
    with pytest.raises(InstanceError) as e:
        read(TINY, data_root=tmp_path).replace(
            {
                "regions.east.electricity": {
                    "csv": str(tmp_path / "p.csv"),
                    "column": "price",
                    "time_column": "time",
                }
            }
        )
    # two comment lines push '2023-06-04T21:00,n/a' from line 5 to line 7
    assert "line 7: 'price' is not a number" in str(e.value)


# ----------------------------------------------------------------------------- the CLI


def _cli() -> typer.Typer:
    """The app as a command group, however many commands are registered."""
    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """trainplan"""

    root.add_typer(app)
    return root


def run_check(*args: str) -> Result:
    return CliRunner().invoke(_cli(), ["check", *args])


@pytest.mark.parametrize("case", PARAMS)
def test_check_exits_2_with_the_error_on_stderr(case: Case) -> None:
    path = DATA / case.file
    lines = str(_error(path)).splitlines()
    res = run_check(str(path))
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit)
    assert res.stdout == ""
    for line in lines:
        assert line in res.stderr
    assert "Traceback" not in res.output


def test_check_json_reports_the_errors() -> None:
    path = DATA / "bad_deadline_before_release.yaml"
    res = run_check("--json", str(path))
    assert res.exit_code == 2
    assert json.loads(res.stdout) == {
        "valid": False,
        "file": str(path),
        "errors": [
            {
                "path": f"{P1}.deadline",
                "message": "deadline (hour 10) must be after release (hour 30)",
            }
        ],
    }
    assert f"{path}: {P1}.deadline" in res.stderr


def test_check_valid_instance_exits_0() -> None:
    res = run_check(str(TINY))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "instance tiny" in out
    assert "horizon  2023-06-05T00:00:00Z + 48 h -> 2023-06-07T00:00:00Z" in out
    # west: Berlin, PUE 1.58 (air), prices 40 (16 h) and 120 (32 h): mean 93.3
    assert "west  Europe/Berlin  PUE 1.58  USD/MWh min 40.0 mean 93.3 max 120.0" in out
    assert "prep [data_preparation]  5.39e18 FLOPs (12 GPU-h on A100 bf16)" in out
    assert "fastest: 3 h" in out
    assert "every phase can fit" in out
    assert res.stderr == ""


def test_check_json_valid_instance() -> None:
    res = run_check("--json", str(TINY))
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["valid"] is True and doc["feasible"] is True
    assert [p["name"] for p in doc["phases"]] == ["prep", "finetune"]
    assert doc["horizon"]["hours"] == 48


def test_check_exits_1_when_a_phase_can_never_fit(tmp_path: Path) -> None:
    # finetune's fastest configuration needs 3 h; a deadline at hour 2 leaves 2 h
    text = TINY.read_text().replace("    deadline: 48\n", "    deadline: 2\n")
    assert text != TINY.read_text()
    f = tmp_path / "late.yaml"
    f.write_text(text)
    res = run_check(str(f))
    assert res.exit_code == 1, res.output
    assert "instance tiny" in res.stdout  # the summary is still printed
    assert (
        "finetune: the fastest configuration needs 3 h but the window from release (hour 0)"
        " to deadline (hour 2) is 2 h"
    ) in res.stdout
    assert "infeasible: 1 phase(s) can never fit" in res.stdout
    res = run_check("--json", str(f))
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["valid"] is True and doc["feasible"] is False
    assert [i["phase"] for i in doc["infeasible"]] == ["finetune"]


def test_check_memory_never_fits_exits_1(tmp_path: Path) -> None:
    # a 70B model on L4s only (24 GB, at most 16 in east): 70e9 x 16 bytes of Adam states
    # = 1,120 GB over 16 GPUs = 70 GB per GPU even fully sharded (ZeRO-3) > 24 GB.
    text = (
        TINY.read_text()
        .replace("  m1b: {", "  m70b: {params: 7.0e10}\n  m1b: {")
        .replace("    model: m1b\n", "    model: m70b\n    gpu_types: [L4]\n")
    )
    f = tmp_path / "big.yaml"
    f.write_text(text)
    res = run_check(str(f))
    assert res.exit_code == 1, res.output
    assert "finetune [fine_tuning]" in res.stdout and "configurations: 0  fastest: -" in res.stdout
    # the inferred architecture is a warning: P = 7e10 -> L = round((7e10 / 196608)^(1/3))
    # = round(70.9) = 71, h = sqrt(7e10 / 852) = 9064 rounded to a multiple of 1024 (heads of
    # 128, a multiple of 8 so that tp 1-8 divide them) = 9 x 1024 = 9216, heads 9216 / 128 = 72
    assert "models.m70b: architecture inferred from params (L=71, h=9216, heads=72)" in res.stdout


def test_check_says_memory_when_memory_never_fits(tmp_path: Path) -> None:
    text = (
        TINY.read_text()
        .replace("  m1b: {", "  m70b: {params: 7.0e10}\n  m1b: {")
        .replace("    model: m1b\n", "    model: m70b\n    gpu_types: [L4]\n")
    )
    f = tmp_path / "big.yaml"
    f.write_text(text)
    res = run_check(str(f))
    assert res.exit_code == 1
    assert re.search(
        r"finetune: needs [\d.]+ GB per GPU at best .*; the largest allowed GPU "
        r"has 24 GiB \(25.8 GB\)",
        res.stdout,
    ), res.stdout


@pytest.mark.parametrize(
    "name", ["bad_alias_bomb.yaml", "bad_not_utf8.yaml", "bad_syntax.yaml", "bad_cycle.yaml"]
)
def test_real_entry_point(name: str) -> None:
    # the console script's code path, in a fresh interpreter: exit 2, message, no traceback
    path = DATA / name
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from planner.interfaces.cli import main; main()",
            "check",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{path}: " in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
