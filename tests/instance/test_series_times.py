"""Hourly series and time (issue 26): price profiles over New Year on every shipped market,
CSV files in naive local time across both clock changes, and rows that would land on one
hour (duplicates, sub-hourly data) -- each either read exactly as documented, with the
arithmetic here, or refused naming the lines; never "the last row wins" silently.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from builders import tiny_dict

from planner.instance import InstanceError
from planner.instance.profiles import reference_times, wrapped
from planner.instance.read import from_dict
from planner.instance.series import _CACHE
from planner.interfaces.starter import MARKETS, PRICE_FILE

ROOT = Path(__file__).resolve().parents[2]
PRICES = ROOT / "instances" / "data" / "prices"


def _rows(market: str) -> dict[datetime, float]:
    with (PRICES / PRICE_FILE.format(market=market)).open() as fh:
        return {
            datetime.fromisoformat(r["Datetime (UTC)"]): float(r["Price (USD/MWh)"])
            for r in csv.DictReader(fh)
        }


def _doc(series: dict[str, Any], tz: str, start: datetime, hours: int) -> dict[str, Any]:
    d = tiny_dict()
    d["horizon"] = {"start": start.isoformat().replace("+00:00", "Z"), "hours": hours}
    d["regions"]["east"]["timezone"] = tz
    d["regions"]["east"]["electricity"] = series
    for p in d["phases"]:
        p.pop("deadline", None)
    return d


def _profile(market: str) -> dict[str, Any]:
    return {
        "csv": PRICE_FILE.format(market=market),
        "column": "Price (USD/MWh)",
        "time_column": "Datetime (UTC)",
        "reference_year": 2023,
    }


# ----------------------------------------------------------------------------- year ends


def _check_profile(market: str, start: datetime, hours: int) -> int:
    """The instance's profile of ``market`` over ``hours`` from ``start`` hour by hour
    against the file: each value is the file's row at the reference time or, where the file
    has none (the first local hours of 1 January east of Greenwich, the last of 31 December
    west of it), at the same local time 52 weeks away: the same weekday and hour, in 2023.
    Returns how many hours were wrapped."""
    tz, zone = MARKETS[market], ZoneInfo(MARKETS[market])
    rows = _rows(market)
    inst = from_dict(_doc(_profile(market), tz, start, hours), "<t>", PRICES)
    want = np.empty(hours)
    wraps = 0
    for k, t in enumerate(reference_times(start, hours, tz, 2023)):
        if t not in rows:
            w = wrapped(t, tz)
            assert w in rows, (market, k)
            a, b = t.astimezone(zone), w.astimezone(zone)
            assert (a.weekday(), a.hour, b.year) == (b.weekday(), b.hour, 2023)
            assert abs((a.replace(tzinfo=None) - b.replace(tzinfo=None)).days) == 364
            t, wraps = w, wraps + 1
        want[k] = rows[t]
    # the series is the row plus the region's adder (tiny's east: 0)
    assert np.allclose(inst.price["east"], want, rtol=0, atol=1e-9)
    return wraps


#: Horizons that reach outside 2023 in UTC: a Sunday near 1 January reads Sunday 1 Jan 2023
#: (east of Greenwich its first hours are 2022 in UTC: Sunday 3 Jan 2027), a Sunday near 31
#: December reads Sunday 31 Dec 2023 (west of it, its last hours are 2024: 31 Dec 2028);
#: and the issue's week from Monday 28 Dec 2026.
NEW_YEARS = [
    (datetime(2027, 1, 2, 12, tzinfo=UTC), 48),
    (datetime(2028, 12, 30, 12, tzinfo=UTC), 60),
    (datetime(2026, 12, 28, tzinfo=UTC), 168),
]


@pytest.mark.parametrize("market", sorted(MARKETS))
def test_every_market_profiles_every_hour_at_new_year(market: str) -> None:
    wraps = sum(_check_profile(market, start, hours) for start, hours in NEW_YEARS)
    assert wraps > 0  # every shipped zone is off UTC in winter: some hour was wrapped


@pytest.mark.slow
@pytest.mark.parametrize("market", sorted(MARKETS))
def test_every_market_profiles_two_years_of_hours(market: str) -> None:
    """Two years from 20 Dec 2026: three New Years and every clock change between. East of
    Greenwich the first local hours of Sunday 1 Jan 2023 are 2022 in UTC, which Sunday 3 Jan
    2027 reads: some hour wraps. West of it only a Sunday 31 December reads the last local
    hours of 2023 (2024 in UTC): Sunday 31 Dec 2028 is past these two years (NEW_YEARS
    holds it), so none wraps."""
    wraps = _check_profile(market, datetime(2026, 12, 20, tzinfo=UTC), 17_700)
    east = ZoneInfo(MARKETS[market]).utcoffset(datetime(2027, 1, 1)) > timedelta(0)
    assert (wraps > 0) == east, (market, wraps)


def test_new_year_in_berlin_reads_the_last_day_of_2023() -> None:
    # Friday 1 Jan 2027 00:00 CET is 2026-12-31 23:00 UTC; 1 Jan 2023 was a Sunday, so the
    # nearest Friday in 2023 is 30 Dec 2022 -> moved a week into 2023: Friday 6 Jan 2023.
    # Thursday 31 Dec 2026 23:00 CET: 31 Dec 2023 is a Sunday, the nearest Thursday is
    # 28 Dec 2023, 23:00 CET = 22:00 UTC: inside the file.
    # Monday 28 Dec 2026 00:00 CET (the case) reads Monday 1 Jan 2024?? No: the
    # nearest Monday to 28 Dec 2023 (a Thursday) is 25 Dec 2023, 00:00 CET = 24 Dec 23:00
    # UTC, inside the file. The hour that failed was 2027-01-01 00:00 CET -> Friday: as
    # above, 6 Jan 2023 00:00 CET = 5 Jan 23:00 UTC, also inside. The gap is the first hour
    # of 1 January 2023 in local time: Sunday 2023-01-01 00:00 CET = 2022-12-31 23:00 UTC,
    # reached from Sunday 3 Jan 2027 00:00 CET (1 Jan 2023 is the nearest Sunday).
    start = datetime(2027, 1, 2, 23, tzinfo=UTC)  # Sunday 3 Jan 2027 00:00 CET
    t = reference_times(start, 1, "Europe/Berlin", 2023)[0]
    assert t == datetime(2022, 12, 31, 23, tzinfo=UTC)
    # wrapped: 52 weeks later in local time, Sunday 31 Dec 2023 00:00 CET = 30 Dec 23:00 UTC
    assert wrapped(t, "Europe/Berlin") == datetime(2023, 12, 30, 23, tzinfo=UTC)
    inst = from_dict(_doc(_profile("DE-LU"), "Europe/Berlin", start, 2), "<t>", PRICES)
    rows = _rows("DE-LU")
    assert inst.price["east"][0] == pytest.approx(rows[datetime(2023, 12, 30, 23, tzinfo=UTC)])


def test_a_partial_year_still_says_what_is_missing(tmp_path: Path) -> None:
    # a file of June only: December is neither there nor 52 weeks away
    (tmp_path / "june.csv").write_text(
        "time,price\n"
        + "".join(
            f"{(datetime(2023, 6, 1, tzinfo=UTC) + timedelta(hours=h)).isoformat()},{h}\n"
            for h in range(24 * 30)
        )
    )
    series = {"csv": "june.csv", "column": "price", "time_column": "time", "reference_year": 2023}
    doc = _doc(series, "Europe/Berlin", datetime(2026, 12, 28, tzinfo=UTC), 24)
    with pytest.raises(InstanceError, match="nor 52 weeks from it"):
        from_dict(doc, "<t>", tmp_path)


# ----------------------------------------------------------------------------- local time


def _write(path: Path, rows: list[tuple[str, float]], header: str = "time,price") -> None:
    path.write_text(header + "\n" + "".join(f"{t},{v}\n" for t, v in rows))


def _local_series(name: str) -> dict[str, Any]:
    return {"csv": name, "column": "price", "time_column": "time", "timezone": "Europe/Berlin"}


def _wall_hours(day: datetime, n: int) -> list[str]:
    """Local wall-clock hours as a meter would log them: each hour of the day once."""
    return [(day + timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M") for h in range(n)]


def test_the_hour_the_clocks_go_back_is_read_twice_in_order(tmp_path: Path) -> None:
    # Berlin, Sunday 29 Oct 2023: 02:00-03:00 CEST (00:00 UTC), then 02:00-03:00 CET
    # (01:00 UTC). A local-time file logs 02:00 twice: the first row is 00:00 UTC, the
    # second 01:00 UTC (the fold rule). Rows from 2023-10-28T22:00 local (20:00 UTC).
    walls = [f"2023-10-28T{h:02d}:00" for h in (22, 23)] + [
        "2023-10-29T00:00",
        "2023-10-29T01:00",
        "2023-10-29T02:00",
        "2023-10-29T02:00",
        "2023-10-29T03:00",
        "2023-10-29T04:00",
    ]
    _write(tmp_path / "p.csv", [(w, 10.0 + i) for i, w in enumerate(walls)])
    # horizon 20:00 UTC on the 28th, 8 hours: 20, 21, 22, 23, 00, 01, 02, 03 UTC
    doc = _doc(_local_series("p.csv"), "Europe/Berlin", datetime(2023, 10, 28, 20, tzinfo=UTC), 8)
    inst = from_dict(doc, "<t>", tmp_path)
    # each UTC hour reads its own row: values 10..17 in file order
    assert list(inst.price["east"]) == [10.0 + i for i in range(8)]


def test_the_repeated_hour_once_is_missing_an_hour(tmp_path: Path) -> None:
    walls = ["2023-10-29T01:00", "2023-10-29T02:00", "2023-10-29T03:00"]
    _write(tmp_path / "p.csv", [(w, 1.0) for w in walls])
    doc = _doc(_local_series("p.csv"), "Europe/Berlin", datetime(2023, 10, 28, 23, tzinfo=UTC), 4)
    # 23:00 UTC = 01:00 CEST, 00:00 UTC = 02:00 CEST, 01:00 UTC = 02:00 CET (no row), ...
    with pytest.raises(InstanceError, match=r"no value for 2023-10-29T01:00:00\+00:00"):
        from_dict(doc, "<t>", tmp_path)


def test_a_local_time_the_clocks_skip_is_refused(tmp_path: Path) -> None:
    # Berlin, Sunday 26 Mar 2023: 02:00 local does not exist (01:59 CET -> 03:00 CEST).
    walls = _wall_hours(datetime(2023, 3, 26), 5)  # 00:00 .. 04:00, 02:00 included
    _write(tmp_path / "p.csv", [(w, 1.0) for w in walls])
    doc = _doc(_local_series("p.csv"), "Europe/Berlin", datetime(2023, 3, 25, 23, tzinfo=UTC), 3)
    with pytest.raises(InstanceError) as e:
        from_dict(doc, "<t>", tmp_path)
    assert "line 4" in str(e.value) and "does not exist in Europe/Berlin" in str(e.value)


def test_times_with_an_offset_need_no_rule(tmp_path: Path) -> None:
    rows = [("2023-10-29T02:00+02:00", 1.0), ("2023-10-29T02:00+01:00", 2.0)]
    _write(tmp_path / "p.csv", rows)
    doc = _doc(_local_series("p.csv"), "Europe/Berlin", datetime(2023, 10, 29, 0, tzinfo=UTC), 2)
    assert list(from_dict(doc, "<t>", tmp_path).price["east"]) == [1.0, 2.0]


# ----------------------------------------------------------------------------- several rows


def test_two_rows_for_one_time_are_refused_naming_both_lines(tmp_path: Path) -> None:
    rows = [("2023-06-05T00:00Z", 1.0), ("2023-06-05T01:00Z", 2.0), ("2023-06-05T00:00Z", 3.0)]
    _write(tmp_path / "p.csv", rows)
    series = {"csv": "p.csv", "column": "price", "time_column": "time"}
    doc = _doc(series, "UTC", datetime(2023, 6, 5, tzinfo=UTC), 2)
    with pytest.raises(InstanceError) as e:
        from_dict(doc, "<t>", tmp_path)
    assert "lines 2 and 4" in str(e.value) and "same time twice" in str(e.value)


def test_a_repeated_local_time_thrice_is_refused(tmp_path: Path) -> None:
    walls = ["2023-10-29T02:00"] * 3
    _write(tmp_path / "p.csv", [(w, 1.0) for w in walls])
    doc = _doc(_local_series("p.csv"), "Europe/Berlin", datetime(2023, 10, 29, 0, tzinfo=UTC), 2)
    with pytest.raises(InstanceError, match="lines 2, 3 and 4"):
        from_dict(doc, "<t>", tmp_path)


def test_quarter_hours_read_their_mean_with_a_note(tmp_path: Path) -> None:
    # 15-minute prices 1, 2, 3, 6 in hour 0 (mean 3) and 10, 10, 10, 14 in hour 1 (mean 11)
    t0 = datetime(2023, 6, 5, tzinfo=UTC)
    values = [1, 2, 3, 6, 10, 10, 10, 14]
    rows = [((t0 + timedelta(minutes=15 * i)).isoformat(), float(v)) for i, v in enumerate(values)]
    _write(tmp_path / "p.csv", rows)
    series = {"csv": "p.csv", "column": "price", "time_column": "time"}
    inst = from_dict(_doc(series, "UTC", t0, 2), "<t>", tmp_path)
    assert list(inst.price["east"]) == [3.0, 11.0]
    assert any("several rows in 2 hour(s)" in w and "mean" in w for w in inst.warnings)


def test_rows_land_in_their_utc_hour_to_the_microsecond(tmp_path: Path) -> None:
    # hour 0 (UTC) holds 1 and 3 (the second a microsecond before hour 1, written at +05:30);
    # hour 1 holds 5 (written at -01:00, the previous day by the calendar): means 2 and 5
    rows = [
        ("2023-06-05T00:00:00Z", 1.0),
        ("2023-06-05T06:29:59.999999+05:30", 3.0),
        ("2023-06-05T00:00:00-01:00", 5.0),
    ]
    _write(tmp_path / "p.csv", rows)
    series = {"csv": "p.csv", "column": "price", "time_column": "time"}
    inst = from_dict(_doc(series, "UTC", datetime(2023, 6, 5, tzinfo=UTC), 2), "<t>", tmp_path)
    assert list(inst.price["east"]) == [2.0, 5.0]


def test_hours_before_1970_are_read_as_well(tmp_path: Path) -> None:
    t0 = datetime(1969, 12, 31, 23, tzinfo=UTC)
    _write(tmp_path / "p.csv", [("1969-12-31T23:59:59Z", 7.0), ("1970-01-01T00:00:00Z", 8.0)])
    series = {"csv": "p.csv", "column": "price", "time_column": "time"}
    inst = from_dict(_doc(series, "UTC", t0, 2), "<t>", tmp_path)
    assert list(inst.price["east"]) == [7.0, 8.0]


def test_a_file_read_twice_is_read_once(tmp_path: Path) -> None:
    """A variant rebuilds its instance and reads the same files: the values come from the
    cache (keyed on the file's identity, size and time), and a changed file is read again."""
    t0 = datetime(2023, 6, 5, tzinfo=UTC)
    _write(tmp_path / "p.csv", [((t0 + timedelta(hours=h)).isoformat(), h) for h in range(4)])
    series = {"csv": "p.csv", "column": "price", "time_column": "time"}
    inst = from_dict(_doc(series, "UTC", t0, 4), "<t>", tmp_path)
    entries = len(_CACHE)
    variant = inst.replace({"phases.finetune.deadline": 3})
    assert len(_CACHE) == entries  # no new read
    assert np.array_equal(variant.price["east"], inst.price["east"])
    _write(tmp_path / "p.csv", [((t0 + timedelta(hours=h)).isoformat(), 2 * h) for h in range(4)])
    again = from_dict(_doc(series, "UTC", t0, 4), "<t>", tmp_path)
    assert list(again.price["east"]) == [0.0, 2.0, 4.0, 6.0]


# ----------------------------------------------------------------------------- init


def _init_and_check(market: str, folder: Path, dates: list[tuple[str, str]]) -> None:
    from typer.testing import CliRunner

    from planner.interfaces.cli import _register, app

    _register()
    runner = CliRunner()
    for i, (start, deadline) in enumerate(dates):
        out = folder / f"i{i}.yaml"
        args = ["init", "-o", str(out), "--model", "7B", "--region", f"r={market}"]
        args += ["--start", start, "--deadline", deadline, "--prices-dir", str(PRICES)]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, (start, res.output)
        assert runner.invoke(app, ["check", str(out)]).exit_code == 0, start


@pytest.mark.parametrize("market", sorted(MARKETS))
def test_init_writes_what_check_accepts_on_every_market_at_new_year(
    market: str, tmp_path: Path
) -> None:
    """``init`` over the issue's New Year week (28 Dec 2026 - 4 Jan 2027; its Sunday 3 Jan
    reads 1 Jan 2023, whose first local hours are 2022 in UTC east of Greenwich) on every
    shipped market: the file is written and ``check`` accepts it (exit 0)."""
    _init_and_check(market, tmp_path, [("2026-12-28T00:00Z", "7d")])


@pytest.mark.slow
@pytest.mark.parametrize("market", sorted(MARKETS))
def test_init_on_every_market_at_year_ends_and_clock_changes(market: str, tmp_path: Path) -> None:
    """As above, and the Sunday 31 Dec 2028 (west of Greenwich its last hours read 2024 in
    UTC) and both clock changes of 2027."""
    dates = [
        ("2028-12-30T00:00Z", "3d"),
        ("2027-01-02T00:00Z", "2d"),
        ("2027-03-26T00:00Z", "4d"),
        ("2027-10-29T00:00Z", "4d"),
    ]
    _init_and_check(market, tmp_path, dates)
