"""Reading good instances: one spec whatever the format, series resolved hour by hour in the
region's local time, datetimes turned into horizon hours, variants with ``replace()``, frozen
data, and the ``trainplan check`` summary of a valid instance.

Every expected series below is worked out by hand in the comments (local time = UTC + offset;
June in Berlin is CEST = UTC+2; New York is EST = UTC-5 until 2023-03-12 07:00 UTC, then EDT =
UTC-4)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from planner.analysis.summary import summarize
from planner.instance import Instance, InstanceError, read
from planner.instance.read import load_document

DATA = Path(__file__).parents[1] / "data"
TINY = DATA / "tiny.yaml"


@pytest.fixture(scope="module")
def tiny() -> Instance:
    return read(TINY)


def _to_json(obj: Any) -> str:
    """JSON text of a YAML document; datetimes become ISO strings as a person would write."""
    return json.dumps(obj, indent=1, default=lambda o: o.isoformat().replace("+00:00", "Z"))


# ----------------------------------------------------------------------------- formats


def test_yaml_and_json_give_equal_specs(tiny: Instance, tmp_path: Path) -> None:
    # YAML hands the reader a datetime object for horizon.start, JSON a string: both must end
    # up as the same aware datetime and the same validated spec.
    doc = load_document(TINY)
    (tmp_path / "tiny.json").write_text(_to_json(doc))
    (tmp_path / "tiny.yml").write_text(TINY.read_text())
    from_json = read(tmp_path / "tiny.json")
    from_yml = read(tmp_path / "tiny.yml")
    assert from_json.spec == tiny.spec
    assert from_yml.spec == tiny.spec
    assert from_json.start == datetime.fromisoformat("2023-06-05T00:00:00+00:00")
    assert from_json.start.utcoffset() is not None
    for r in ("east", "west"):
        np.testing.assert_array_equal(from_json.price[r], tiny.price[r])
    assert dict(from_json.release) == dict(tiny.release)
    assert dict(from_json.deadline) == dict(tiny.deadline)
    assert from_json.order == tiny.order == ("prep", "finetune")


def test_tiny_resolves_as_written(tiny: Instance) -> None:
    assert tiny.name == "tiny"
    assert tiny.hours == 48
    assert tiny.release == {"prep": 0, "finetune": 0}
    # prep has no deadline: the horizon end; finetune's is 48
    assert tiny.deadline == {"prep": 48, "finetune": 48}
    assert tiny.region("west").effective_pue == 1.58  # cooling: air -> Uptime 2023 average
    assert tiny.region("east").effective_pue == 1.2
    np.testing.assert_array_equal(tiny.price["east"], np.full(48, 60.0))
    np.testing.assert_array_equal(tiny.capacity[("east", "L4")], np.full(48, 16.0))
    assert ("west", "L4") not in tiny.capacity
    # m1b given by architecture: nothing inferred, no warning
    assert tiny.warnings == ()
    assert tiny.successors("prep") == ("finetune",)


# ----------------------------------------------------------------------------- time of use


def test_tou_band_wrapping_midnight_in_berlin_summer(tiny: Instance) -> None:
    # west: default 120, band 22:00-06:00 local at 40. Horizon 2023-06-05 00:00 UTC (Monday),
    # Berlin is UTC+2, so UTC hour u is local (u + 2) % 24. Off-peak when the local hour is
    # 22, 23, 0..5, i.e. u % 24 in {20, 21, 22, 23, 0, 1, 2, 3}. Mon and Tue: no weekend.
    off = {0, 1, 2, 3, 20, 21, 22, 23, 24, 25, 26, 27, 44, 45, 46, 47}
    expected = [40.0 if t in off else 120.0 for t in range(48)]
    assert list(tiny.price["west"]) == expected
    # mean: (16 x 40 + 32 x 120) / 48 = (640 + 3840) / 48 = 93.33
    assert float(np.mean(tiny.price["west"])) == pytest.approx(4480 / 48)


def test_tou_across_the_dst_change_in_new_york(tiny: Instance) -> None:
    # Horizon 2023-03-10 20:00 UTC = Friday 15:00 EST. DST starts Sunday 2023-03-12 at 02:00
    # EST = 07:00 UTC (hour t = 35): from then local = UTC - 4.
    # Bands: 22:00-06:00 at 30 every day; 17:00-21:00 at 200 on weekdays (Mon-Fri); else 100.
    #   t = 0, 1      Fri 15, 16           100
    #   t = 2..5      Fri 17, 18, 19, 20   200
    #   t = 6         Fri 21               100
    #   t = 7..14     Fri 22 .. Sat 05      30
    #   t = 15..30    Sat 06 .. Sat 21     100  (Saturday: no evening band)
    #   t = 31..34    Sat 22 .. Sun 01      30
    #   t = 35..37    Sun 03, 04, 05 EDT    30  (02:00 does not exist)
    #   t = 38..47    Sun 06 .. 15 EDT     100
    # Read in fixed EST, t = 38 would be 05:00 and cost 30: that hour tells DST apart.
    v = tiny.replace(
        {
            "horizon.start": "2023-03-10T20:00:00Z",
            "regions.east.electricity": {
                "tou": {
                    "default": 100,
                    "bands": [
                        {"start_hour": 22, "end_hour": 6, "price": 30},
                        {
                            "start_hour": 17,
                            "end_hour": 21,
                            "price": 200,
                            "weekdays": [0, 1, 2, 3, 4],
                        },
                    ],
                }
            },
        }
    )
    expected = (
        [100.0] * 2
        + [200.0] * 4
        + [100.0]
        + [30.0] * 8
        + [100.0] * 16
        + [30.0] * 4
        + [30.0] * 3
        + [100.0] * 10
    )
    assert len(expected) == 48
    assert list(v.price["east"]) == expected
    assert v.price["east"][38] == 100.0


def test_tou_weekend_and_holiday_override_bands(tiny: Instance) -> None:
    # Same horizon (Fri 2023-03-10 15:00 EST .. Sun 2023-03-12 15:00 EDT); Friday 10 March is
    # a holiday at 10, weekends at 50, band 22:00-06:00 at 30, default 100.
    #   t = 0..8   Fri 15..23 (holiday beats the 22:00 band)      10
    #   t = 9..47  Sat 00 .. Sun 15 (weekend beats the band)      50
    # The adder of 5 USD/MWh goes on every hour.
    v = tiny.replace(
        {
            "horizon.start": "2023-03-10T20:00:00Z",
            "regions.east.price_adder_usd_per_mwh": 5,
            "regions.east.electricity": {
                "tou": {
                    "default": 100,
                    "weekend": 50,
                    "holidays": ["2023-03-10"],
                    "holiday": 10,
                    "bands": [{"start_hour": 22, "end_hour": 6, "price": 30}],
                }
            },
        }
    )
    assert list(v.price["east"]) == [15.0] * 9 + [55.0] * 39


def test_tou_holiday_is_a_local_date(tiny: Instance) -> None:
    # Holiday 2023-06-06 in Berlin: local 2023-06-06 00:00 CEST = 2023-06-05 22:00 UTC (t = 22)
    # to 2023-06-06 22:00 UTC (t = 46). The band still applies outside the holiday.
    v = tiny.replace(
        {
            "regions.west.electricity.tou.holidays": ["2023-06-06"],
            "regions.west.electricity.tou.holiday": 7,
        }
    )
    p = v.price["west"]
    assert p[21] == 40.0  # Mon 23:00 local, band
    assert list(p[22:46]) == [7.0] * 24
    assert p[46] == 40.0  # Wed 00:00 local, band again


# ----------------------------------------------------------------------------- CSV and values


def test_csv_in_new_york_local_time(tiny: Instance) -> None:
    # fixture_prices_newyork.csv: naive local New York times, price = 50 + local hour.
    # June: EDT = UTC-4, so horizon hour t (UTC 2023-06-05 00:00 + t) is local hour
    # (20 + t) % 24: t = 0 -> 20:00 on 4 June -> 70; t = 4 -> 00:00 -> 50; t = 47 -> 19:00 -> 69.
    # scale 2 doubles every value; the adder is added after scaling.
    v = tiny.replace(
        {
            "regions.east.electricity": {
                "csv": "fixture_prices_newyork.csv",
                "column": "price",
                "time_column": "time",
                "timezone": "America/New_York",
                "scale": 2,
            },
            "regions.east.price_adder_usd_per_mwh": 1,
        }
    )
    expected = [2.0 * (50 + (20 + t) % 24) + 1.0 for t in range(48)]
    assert list(v.price["east"]) == expected
    assert v.price["east"][0] == 141.0 and v.price["east"][4] == 101.0


def test_csv_path_is_relative_to_the_instance_file(tmp_path: Path) -> None:
    # Timestamps with their own offset (+09:00, Tokyo) ignore the series' timezone; rows may
    # come in any order and extend beyond the horizon. Value at UTC hour u is 10 u.
    rows = [
        f"2023-06-{5 + (u + 9) // 24:02d}T{(u + 9) % 24:02d}:00:00+09:00,{10 * u}"
        for u in range(49, -3, -1)
        if u >= 0
    ]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "p.csv").write_text("stamp,usd\n" + "\n".join(rows) + "\n")
    doc = load_document(TINY)
    doc["regions"]["east"]["electricity"] = {
        "csv": "sub/p.csv",
        "column": "usd",
        "time_column": "stamp",
        "timezone": "Europe/Berlin",
    }
    (tmp_path / "i.yaml").write_text(yaml.safe_dump(doc))
    inst = read(tmp_path / "i.yaml")
    assert list(inst.price["east"]) == [10.0 * u for u in range(48)]


def test_csv_line_numbers_count_comments_and_blank_lines(tmp_path: Path) -> None:
    # line 1 a comment, 2 the header, 3 blank, 4 a good row, 5 a comment, 6 the bad row
    (tmp_path / "p.csv").write_text(
        "# USD/MWh\ntime,price\n\n2023-06-05T00:00:00Z,50\n"
        "# next row is broken\n2023-06-05T01:00:00Z,n/a\n"
    )
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
    assert "p.csv' line 6: 'price' is not a number" in str(e.value)
    assert "n/a" not in str(e.value)  # a data row's content is never shown


def test_csv_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_bytes(b"time,price\n2023-06-05T00:00:00Z,\xff\xfe\n")
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
    assert str(e.value) == (
        f"{TINY}: regions.east.electricity: file '{tmp_path / 'p.csv'}' is "
        "not UTF-8 text (invalid start byte)"
    )


def test_inline_values_longer_than_horizon_are_cut(tiny: Instance) -> None:
    # 60 values 0..59 with scale 0.5 and adder 5: hour t costs 0.5 t + 5 for t < 48.
    v = tiny.replace(
        {
            "regions.east.electricity": {"values": list(range(60)), "scale": 0.5},
            "regions.east.price_adder_usd_per_mwh": 5,
        }
    )
    assert v.price["east"].shape == (48,)
    assert list(v.price["east"]) == [0.5 * t + 5 for t in range(48)]


def test_capacity_as_an_hourly_list(tiny: Instance) -> None:
    # 60 hourly values (cut to 48): 16 GPUs except 0 in hours 10..19.
    hourly = [0 if 10 <= t < 20 else 16 for t in range(60)]
    v = tiny.replace({"regions.east.capacity": {"A100": hourly, "L4": 4}})
    np.testing.assert_array_equal(v.capacity[("east", "A100")], np.array(hourly[:48], float))
    np.testing.assert_array_equal(v.capacity[("east", "L4")], np.full(48, 4.0))


def test_carbon_intensity_is_resolved_like_prices(tiny: Instance) -> None:
    v = tiny.replace({"regions.east.carbon_intensity": {"constant": 380}})
    np.testing.assert_array_equal(v.carbon["east"], np.full(48, 380.0))
    assert v.carbon["west"] is None


# ----------------------------------------------------------------------------- datetimes


def test_datetime_release_and_deadline_become_hours(tiny: Instance) -> None:
    # release 2023-06-05 06:00 UTC = hour 6; deadline 2023-06-06 12:00 +02:00 = 10:00 UTC on
    # the 6th = 24 + 10 = hour 34.
    v = tiny.replace(
        {
            "phases.finetune.release": "2023-06-05T06:00:00Z",
            "phases.finetune.deadline": "2023-06-06T12:00:00+02:00",
        }
    )
    assert v.release["finetune"] == 6
    assert v.deadline["finetune"] == 34


def test_deadline_between_hours_rounds_down(tiny: Instance) -> None:
    # 2023-06-06 10:30 UTC is hour 34.5; the last whole hour that ends by then is hour 33,
    # so the phase may run in hours < 34.
    v = tiny.replace({"phases.finetune.deadline": "2023-06-06T10:30:00Z"})
    assert v.deadline["finetune"] == 34


def test_release_between_hours_rounds_up(tiny: Instance) -> None:
    # 2023-06-05 06:30 UTC is hour 6.5; slot 6 (06:00-07:00) starts before the release, so the
    # first slot the phase may use is 7. A release on the hour stays: 06:00 -> 6 (above).
    v = tiny.replace({"phases.finetune.release": "2023-06-05T06:30:00Z"})
    assert v.release["finetune"] == 7
    # one second after the hour is still after it: 06:00:01 -> 7
    v = tiny.replace({"phases.finetune.release": "2023-06-05T06:00:01Z"})
    assert v.release["finetune"] == 7


# ----------------------------------------------------------------------------- replace


def test_replace_makes_a_variant_and_leaves_the_original(tiny: Instance) -> None:
    v = tiny.replace(
        {
            "phases.finetune.deadline": 40,
            "regions.east.pue": 1.5,
            "phases.prep.options.gpu_counts": [2],
        }
    )
    assert v.deadline["finetune"] == 40 and tiny.deadline["finetune"] == 48
    assert v.region("east").effective_pue == 1.5 and tiny.region("east").effective_pue == 1.2
    assert v.phase("prep").options.gpu_counts == (2,)
    assert tiny.phase("prep").options.gpu_counts == (1, 2, 4)
    assert tiny.raw["phases"][1]["deadline"] == 48


def test_bad_variant_names_the_path(tiny: Instance) -> None:
    with pytest.raises(InstanceError) as e:
        tiny.replace({"regions.east.pue": 0.5})
    assert str(e.value) == f"{TINY}: regions.east.pue: expected a number >= 1 (got 0.5)"
    with pytest.raises(InstanceError) as e:
        tiny.replace({"phases.finetune.optionz": {}})
    assert str(e.value) == (
        f"{TINY}: phases[1] (finetune).optionz: unknown field (did you mean 'options'?)"
    )
    with pytest.raises(InstanceError) as e:
        tiny.replace({"phases.pretrain.deadline": 5})
    assert str(e.value) == f"{TINY}: phases.pretrain.deadline: no item named 'pretrain'"
    with pytest.raises(InstanceError) as e:
        tiny.replace({"phases.finetune.deadline": 30, "phases.finetune.release": 40})
    assert str(e.value) == (
        f"{TINY}: phases[1] (finetune).deadline: deadline (hour 30) must be after release (hour 40)"
    )


# ----------------------------------------------------------------------------- frozen


def test_instance_and_spec_are_frozen(tiny: Instance) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny.source = "elsewhere"  # type: ignore[misc]
    with pytest.raises(ValueError, match="frozen"):
        tiny.spec.horizon.hours = 24
    with pytest.raises(ValueError, match="frozen"):
        tiny.phase("finetune").deadline = 10
    with pytest.raises(ValueError, match="read-only"):
        tiny.capacity[("east", "A100")][0] = 99.0
    with pytest.raises(TypeError):
        tiny.phases[0] = tiny.phases[1]  # type: ignore[index]


def test_price_series_are_read_only() -> None:
    inst = read(TINY)  # a fresh one: this test would corrupt a shared instance
    # west has no adder and east has 0: both are sums 'series + adder', new arrays
    for r in ("west", "east"):
        with pytest.raises(ValueError, match="read-only"):
            inst.price[r][0] = 0.0
    v = inst.replace(
        {
            "regions.east.carbon_intensity": {"constant": 380},
            "regions.east.price_adder_usd_per_mwh": 5,
        }
    )
    with pytest.raises(ValueError, match="read-only"):
        v.price["east"][0] = 0.0
    carbon = v.carbon["east"]
    assert carbon is not None
    with pytest.raises(ValueError, match="read-only"):
        carbon[0] = 0.0


def test_instance_mappings_are_read_only() -> None:
    inst = read(TINY)
    with pytest.raises(TypeError):
        inst.price["west"] = np.zeros(48)  # type: ignore[index]
    with pytest.raises(TypeError):
        inst.carbon["west"] = np.zeros(48)  # type: ignore[index]
    with pytest.raises(TypeError):
        inst.capacity[("west", "L4")] = np.zeros(48)  # type: ignore[index]
    with pytest.raises(TypeError):
        inst.release["finetune"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        inst.deadline["finetune"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        del inst.models["m1b"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        inst.failures_per_gpu_hour["A100"] = 0.0  # type: ignore[index]
    assert inst.deadline["finetune"] == 48 and ("west", "L4") not in inst.capacity


def test_instance_pickles_and_stays_read_only() -> None:
    inst = read(TINY)
    back: Instance = pickle.loads(pickle.dumps(inst))
    assert isinstance(back, Instance)
    assert back.spec == inst.spec and dict(back.release) == dict(inst.release)
    np.testing.assert_array_equal(back.price["west"], inst.price["west"])
    with pytest.raises(TypeError):
        back.price["west"] = np.zeros(48)  # type: ignore[index]
    with pytest.raises(ValueError, match="read-only"):
        back.price["west"][0] = 0.0


# ----------------------------------------------------------------------------- summary


def test_summary_of_tiny(tiny: Instance) -> None:
    s = summarize(tiny)
    assert s["name"] == "tiny"
    assert s["horizon"] == {
        "start": "2023-06-05T00:00:00Z",
        "hours": 48,
        "end": "2023-06-07T00:00:00Z",
    }
    prep, ft = s["phases"]
    # prep: 12 GPU-hours on A100 bf16 at MFU 0.4:
    # 12 x 3600 x 312e12 x 0.4 = 43200 x 1.248e14 = 5.3914e18 FLOPs
    assert prep["work"]["flops"] == pytest.approx(5.3914e18, rel=1e-4)
    # fastest: 4 A100s (gpu_counts 1, 2, 4), no model so no checkpoint overhead:
    # 12 GPU-h / 4 GPUs = 3 h exactly
    assert prep["fastest_hours"] == 3
    # finetune: P = 12 L h^2 (1 + 13/(12h) + (V+s)/(12Lh)), L = 24, h = 2048, V + s = 34048:
    # 12 x 24 x 2048^2 = 1,207,959,552; x (1 + 0.000529 + 0.057726) = 1.27833e9.
    # W = 6 P D (6ND, the default convention) = 6 x 1.27833e9 x 2e9 = 1.53399e19
    assert ft["work"]["flops"] == pytest.approx(1.53399e19, rel=1e-4)
    assert ft["work"]["tokens"] == 2e9
    # fastest: 16 A100s in east, the MFU at the scale it is used at (no reference scale):
    # 16 x 312e12 x 0.4 = 1.9968e15 FLOP/s -> 1.53399e19 / 1.9968e15 = 7682 s = 2.13 h
    # -> 3 whole hours. 8 GPUs would need 1.53399e19 / 9.984e14 / 3600 = 4.27 h -> 5 h.
    assert ft["fastest_hours"] == 3
    assert ft["predecessors"] == ["prep"]
    assert (ft["release_hour"], ft["deadline_hour"], ft["window_hours"]) == (0, 48, 48)
    assert prep["configurations"] > 0 and ft["configurations"] > 0
    # finetune may start after prep's 3 fastest hours at the earliest: 3 + 3 = 6
    assert ft["earliest_finish_hour"] == 6
    west = next(r for r in s["regions"] if r["name"] == "west")
    assert west["price_usd_per_mwh"] == pytest.approx(
        {"min": 40.0, "mean": 4480 / 48, "max": 120.0}
    )
    assert west["pue"] == 1.58 and west["timezone"] == "Europe/Berlin"
    assert west["gpus"] == {"A100": {"max_capacity": 8, "contracts": ["on_demand", "spot"]}}
    l4 = next(g for g in s["gpu_types"] if g["name"] == "L4")
    assert l4["regions"] == ["east"]
    assert s["infeasible"] == [] and s["feasible"] is True
    json.dumps(s)  # JSON types only


def test_summary_finds_a_phase_that_misses_its_deadline_after_its_predecessor(
    tiny: Instance,
) -> None:
    # finetune alone fits in hours [0, 5) (fastest 3 h), but prep needs 3 h first:
    # earliest finish 3 + 3 = 6 > 5.
    v = tiny.replace({"phases.finetune.deadline": 5})
    s = summarize(v)
    assert s["feasible"] is False
    assert s["infeasible"] == [
        {
            "phase": "finetune",
            "reason": (
                "finetune: after its predecessors (earliest finish of 'prep' at hour 3) its "
                "fastest configuration (3 h) would end at hour 6, after its deadline (hour 5)"
            ),
        }
    ]
    # a deadline of 6 is just enough
    assert summarize(tiny.replace({"phases.finetune.deadline": 6}))["feasible"] is True


def test_summary_reports_the_config_space_reason(tiny: Instance) -> None:
    # window of 2 h for a phase whose fastest configuration needs 3 h
    s = summarize(tiny.replace({"phases.finetune.deadline": 2}))
    assert s["feasible"] is False
    (item,) = s["infeasible"]
    assert item["phase"] == "finetune"
    assert item["reason"] == (
        "finetune: the fastest configuration needs 3 h but the window from "
        "release (hour 0) to deadline (hour 2) is 2 h"
    )
    ft = s["phases"][1]
    assert ft["configurations"] == 0 and ft["fastest_hours"] is None


def test_summary_of_done_phase_and_unused_offers(tiny: Instance) -> None:
    # prep already done: it has no configurations and does not delay finetune (EF = 0 + 3).
    # west offers L4 but has no L4 capacity: a note says it can never be used.
    v = tiny.replace(
        {
            "phases.prep.done": True,
            "regions.west.offers.L4": {"on_demand": {"usd_per_gpu_hour": 0.7}},
        }
    )
    s = summarize(v)
    prep, ft = s["phases"]
    assert prep["done"] is True and prep["configurations"] is None
    assert ft["earliest_finish_hour"] == 3
    assert "regions.west.offers.L4: offered but no capacity given; never used" in s["warnings"]


def test_replace_addresses_phase_names_with_dots(tmp_path: Path) -> None:
    d = load_document(Path(__file__).parents[1] / "data" / "tiny.yaml")
    d["phases"][1]["name"] = "finetune-1.3b"
    f = tmp_path / "dotted.yaml"
    f.write_text(yaml.safe_dump(d))
    inst = read(f).replace({"phases.finetune-1.3b.deadline": 40})
    assert inst.deadline["finetune-1.3b"] == 40
