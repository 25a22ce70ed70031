"""Price profiles: a future horizon reuses a reference year's hourly prices, aligned by
weekday and local hour of day (planner.instance.profiles), optionally scaled."""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest
from builders import tiny_dict

from planner.instance import Instance, InstanceError
from planner.instance.profiles import aligned_date, reference_times
from planner.instance.read import from_dict

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "instances" / "data"
FULL = "prices/price_DE-LU_2023.csv"
SUMMER = "prices/price_DE-LU_2023-06-01_2023-09-01.csv"


def _rows(name: str) -> dict[datetime, float]:
    with (DATA / name).open() as fh:
        return {
            datetime.fromisoformat(r["Datetime (UTC)"]): float(r["Price (USD/MWh)"])
            for r in csv.DictReader(fh)
        }


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        # Monday 7 Dec 2026; 7 Dec 2023 is a Thursday: the nearest Monday is 4 Dec (-3 days)
        (date(2026, 12, 7), date(2023, 12, 4)),
        # Thursday 1 Jan 2026; 1 Jan 2023 is a Sunday: +4 would be nearer... -3 days is
        # 29 Dec 2022, outside 2023, so a week later: Thursday 5 Jan 2023
        (date(2026, 1, 1), date(2023, 1, 5)),
        # 29 Feb 2024 (Thursday) reads from 28 Feb 2023 (Tuesday): +2 days, Thursday 2 March
        (date(2024, 2, 29), date(2023, 3, 2)),
        # Thursday 31 Dec 2026; 31 Dec 2023 is a Sunday: -3 days, Thursday 28 Dec 2023
        (date(2026, 12, 31), date(2023, 12, 28)),
        # the reference year itself maps to itself
        (date(2023, 6, 5), date(2023, 6, 5)),
    ],
)
def test_aligned_date_keeps_the_weekday_and_the_season(day: date, expected: date) -> None:
    got = aligned_date(day, 2023)
    assert got == expected
    assert got.weekday() == day.weekday() and got.year == 2023


def test_reference_times_follow_local_wall_clock_across_dst() -> None:
    # 2026-03-29 is the day Berlin moves to summer time (02:00 -> 03:00); so is 2023-03-26,
    # the Sunday nearest 29 March 2023. Local wall-clock hours match one for one:
    # 00:00 UTC = 01:00 CET -> 2023-03-26 01:00 CET = 00:00 UTC;
    # 01:00 UTC = 03:00 CEST -> 2023-03-26 03:00 CEST = 01:00 UTC.
    ts = reference_times(datetime(2026, 3, 29, tzinfo=UTC), 3, "Europe/Berlin", 2023)
    assert ts == [
        datetime(2023, 3, 26, 0, tzinfo=UTC),
        datetime(2023, 3, 26, 1, tzinfo=UTC),
        datetime(2023, 3, 26, 2, tzinfo=UTC),
    ]
    # in a zone without DST the shift is whole days: Tokyo, Monday 2026-12-07 09:00 JST
    tk = reference_times(datetime(2026, 12, 7, 0, tzinfo=UTC), 1, "Asia/Tokyo", 2023)
    assert tk == [datetime(2023, 12, 4, 0, tzinfo=UTC)]


def _instance(
    series: dict[str, object], start: str = "2026-12-07T00:00:00Z", hours: int = 72
) -> Instance:
    d = tiny_dict()
    d["horizon"] = {"start": start, "hours": hours}
    d["regions"]["east"]["electricity"] = series
    d["phases"][1]["deadline"] = hours
    return from_dict(d, str(DATA / "x.yaml"), DATA)


def _profile(name: str = FULL, **extra: object) -> dict[str, object]:
    return {
        "csv": name,
        "column": "Price (USD/MWh)",
        "time_column": "Datetime (UTC)",
        "reference_year": 2023,
        **extra,
    }


def test_a_2026_horizon_reads_2023s_prices_of_the_same_weekday_and_hour() -> None:
    # east is New York: Monday 2026-12-07 00:00 UTC = Sunday 19:00 EST; the Sunday nearest
    # 6 Dec 2023 is 3 Dec 2023, 19:00 EST = 2023-12-04 00:00 UTC: the profile is the 72
    # hours from there, as the CSV has them
    inst = _instance(_profile())
    rows = _rows(FULL)
    start = datetime(2023, 12, 4, tzinfo=UTC)
    want = np.array([rows[start.replace(day=4 + k // 24, hour=k % 24)] for k in range(72)])
    assert np.allclose(inst.price["east"], want)


def test_scale_multiplies_the_profile() -> None:
    plain = _instance(_profile())
    scaled = _instance(_profile(scale=1.1))
    assert np.allclose(scaled.price["east"], 1.1 * np.asarray(plain.price["east"]))


def test_a_reference_day_outside_the_file_says_what_is_missing() -> None:
    # the summer extract has no December
    with pytest.raises(InstanceError) as e:
        _instance(_profile(SUMMER))
    msg = str(e.value)
    assert "regions.east.electricity" in msg
    assert "2023-12-04T00:00:00+00:00, the reference time of hour 0" in msg
    assert "reference year 2023" in msg


def test_a_future_horizon_without_a_profile_points_to_one() -> None:
    series = _profile()
    del series["reference_year"]
    with pytest.raises(InstanceError, match="reference_year"):
        _instance(series)


def test_reference_year_belongs_to_csv_series_only() -> None:
    with pytest.raises(InstanceError, match="belongs to a 'csv' series only"):
        _instance({"constant": 60, "reference_year": 2023})
