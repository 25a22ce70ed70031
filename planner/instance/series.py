"""Resolve an hourly :class:`~planner.instance.schema.Series` to one value per horizon hour."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from planner.instance.files import not_a_file
from planner.instance.schema import Series, TimeOfUse

MAX_CSV_BYTES = 64 * 1024 * 1024


class SeriesError(ValueError):
    """A series cannot be resolved; the message says why (the caller adds file and field)."""


def resolve_series(
    series: Series, start: datetime, hours: int, local_tz: str, base_dir: Path
) -> np.ndarray:
    """Return ``hours`` values starting at ``start`` (UTC-aware), times ``series.scale``."""
    if series.constant is not None:
        out = np.full(hours, float(series.constant))
    elif series.values is not None:
        if len(series.values) < hours:
            raise SeriesError(
                f"expected at least {hours} hourly values (the horizon), got {len(series.values)}"
            )
        out = np.asarray(series.values[:hours], dtype=float)
    elif series.tou is not None:
        out = _tou(series.tou, start, hours, local_tz)
    else:
        assert series.csv is not None and series.column and series.time_column
        times = None
        if series.reference_year is not None:
            from planner.instance.profiles import reference_times

            times = reference_times(start, hours, local_tz, series.reference_year)
        out = _csv(
            base_dir / series.csv,
            series.column,
            series.time_column,
            series.timezone,
            start,
            hours,
            times,
        )
    out = out * series.scale
    if not np.all(np.isfinite(out)):
        raise SeriesError("expected finite numbers, found NaN or infinity")
    out.setflags(write=False)
    return out


def _tou(tou: TimeOfUse, start: datetime, hours: int, tz: str) -> np.ndarray:
    zone = ZoneInfo(tz)
    holidays = set(tou.holidays)
    out = np.empty(hours)
    for t in range(hours):
        local = (start + timedelta(hours=t)).astimezone(zone)
        price = tou.default
        for band in tou.bands:
            h, a, b = local.hour, band.start_hour, band.end_hour
            inside = (a <= h < b) if a < b else (h >= a or h < b)
            if inside and local.weekday() in band.weekdays:
                price = band.price
        if tou.weekend is not None and local.weekday() >= 5:
            price = tou.weekend
        if tou.holiday is not None and local.date() in holidays:
            price = tou.holiday
        out[t] = price
    return out


def _parse_time(text: str, tz: ZoneInfo) -> datetime:
    dt = datetime.fromisoformat(text.strip())
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt


def _csv(
    path: Path,
    column: str,
    time_column: str,
    tz_name: str,
    start: datetime,
    hours: int,
    times: list[datetime] | None = None,
) -> np.ndarray:
    """One value per horizon hour from a CSV file's ``column``, rows matched on the UTC hour
    of their ``time_column`` (times without an offset are read in ``tz_name``). ``times``
    (a price profile, :mod:`planner.instance.profiles`) gives the UTC hour each horizon hour
    reads; by default hour ``k`` reads ``start + k`` hours."""
    if not path.is_file():
        raise SeriesError(f"file {str(path)!r} {not_a_file(path)}")
    if path.stat().st_size > MAX_CSV_BYTES:
        raise SeriesError(f"file {str(path)!r} is larger than {MAX_CSV_BYTES // 2**20} MiB")
    utc_start = start.astimezone(ZoneInfo("UTC"))
    at = times if times is not None else [utc_start + timedelta(hours=k) for k in range(hours)]
    wanted = set(at)
    try:
        values = _csv_rows(path, column, time_column, ZoneInfo(tz_name), wanted)
    except UnicodeDecodeError as e:
        raise SeriesError(f"file {str(path)!r} is not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        raise SeriesError(f"file {str(path)!r} is not readable CSV ({e})") from None
    out = np.empty(hours)
    for k in range(hours):
        t = at[k]
        if t not in values:
            if times is not None:
                when = (utc_start + timedelta(hours=k)).isoformat()
                raise SeriesError(
                    f"file {str(path)!r} has no value for {t.isoformat()}, the reference time "
                    f"of hour {k} of the horizon ({when}); expected hourly rows covering the "
                    f"reference year {t.year} (a full-year extract)"
                )
            raise SeriesError(
                f"file {str(path)!r} has no value for {t.isoformat()} (hour {k} of the horizon); "
                f"expected hourly rows covering the horizon, or a price profile of a year the "
                f"file covers ('reference_year')"
            )
        v = values[t]
        if not math.isfinite(v):
            raise SeriesError(f"file {str(path)!r}: {column!r} is empty or not finite at {t}")
        out[k] = v
    return out


def _csv_rows(
    path: Path, column: str, time_column: str, tz: ZoneInfo, wanted: set[datetime]
) -> dict[datetime, float]:
    """The value of every row whose UTC hour is in ``wanted`` (NaN where the value is empty);
    rows outside it are checked but not kept, so memory follows the horizon, not the file.
    Lines starting with ``#`` are comments; a UTF-8 byte-order mark is skipped. Errors name
    the line of the file, comments and blank lines counted."""
    values: dict[datetime, float] = {}
    with path.open(newline="", encoding="utf-8-sig", errors="strict") as fh:
        last = [0]  # the file line of the last line handed to the CSV reader

        def rows() -> Iterator[str]:
            for n, line in enumerate(fh, start=1):
                if not line.startswith("#"):
                    last[0] = n
                    yield line

        reader = csv.DictReader(rows())
        if reader.fieldnames is None:
            raise SeriesError(f"file {str(path)!r} is empty")
        for col in (column, time_column):
            if col not in reader.fieldnames:
                names = list(reader.fieldnames)
                shown = repr(names[:10])[:-1] + (
                    f", ... ({len(names) - 10} more)]" if len(names) > 10 else "]"
                )
                raise SeriesError(
                    f"file {str(path)!r} has no column {col!r}; columns are {shown[:500]}"
                )
        for row in reader:
            lineno = last[0]
            raw_t, raw_v = row.get(time_column), row.get(column)
            try:
                t = _parse_time(raw_t or "", tz).astimezone(ZoneInfo("UTC"))
            except ValueError:
                raise SeriesError(
                    f"file {str(path)!r} line {lineno}: {time_column!r} is not an ISO time: "
                    f"{raw_t!r}"
                ) from None
            try:
                v = float(raw_v) if raw_v not in (None, "") else math.nan
            except ValueError:
                raise SeriesError(
                    f"file {str(path)!r} line {lineno}: {column!r} is not a number: {raw_v!r}"
                ) from None
            hour = t.replace(minute=0, second=0, microsecond=0)
            if hour in wanted:
                values[hour] = v
    return values
