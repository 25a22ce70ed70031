"""Resolve an hourly :class:`~planner.instance.schema.Series` to one value per horizon hour.

A ``csv:`` series names a file; :func:`planner.instance.files.data_file` decides whether the
instance may read it. Error messages name the file, the line and the column but never show
what a data row holds; a header is shown only when it looks like one (a ``.csv`` file whose
first line has two or more fields), each column name quoted and cut to :data:`SHOWN_NAME`
characters, so that pointing a series at a file that is not a CSV (a key file, a ``.env``)
does not print its first line.
"""

from __future__ import annotations

import csv
import math
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import numpy as np

from planner.instance.files import FileRefused, data_file, not_a_file
from planner.instance.references import MAGNITUDE
from planner.instance.schema import Series, TimeOfUse

MAX_CSV_BYTES = 64 * 1024 * 1024
#: Characters of a column name an error message shows (then ``...``).
SHOWN_NAME = 40
#: Column names an error message lists.
SHOWN_COLUMNS = 10


class SeriesError(ValueError):
    """A series cannot be resolved; the message says why (the caller adds file and field)."""


def resolve_series(
    series: Series,
    start: datetime,
    hours: int,
    local_tz: str,
    base_dir: Path,
    *,
    data_root: Path | None = None,
) -> np.ndarray:
    """Return ``hours`` values starting at ``start`` (UTC-aware), times ``series.scale``. A
    ``csv`` file is looked up by :func:`~planner.instance.files.data_file` (relative to
    ``base_dir``, inside it or ``data_root``)."""
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
        try:
            path = data_file(series.csv, base_dir, data_root)
        except FileRefused as e:
            raise SeriesError(str(e)) from None
        times = None
        if series.reference_year is not None:
            from planner.instance.profiles import reference_times

            times = reference_times(start, hours, local_tz, series.reference_year)
        out = _csv(path, series.column, series.time_column, series.timezone, start, hours, times)
    out = out * series.scale
    if not np.all(np.isfinite(out)):
        raise SeriesError("expected finite numbers, found NaN or infinity")
    out.setflags(write=False)
    return out


def _tou(tou: TimeOfUse, start: datetime, hours: int, tz: str) -> np.ndarray:
    """The tariff at each horizon hour, in the zone's local time: the bands give a price per
    (weekday, hour) of the week (a later band overrides an earlier one), then weekends and
    holidays override. O(bands x 24 + hours), vectorised over the hours."""
    week = np.full((7, 24), float(tou.default))
    for band in tou.bands:
        a, b = band.start_hour, band.end_hour
        for h in range(24):
            if (a <= h < b) if a < b else (h >= a or h < b):
                week[list(band.weekdays), h] = band.price
    day, weekday, hour = local_clock(start, hours, ZoneInfo(tz))
    out = week[weekday, hour]
    if tou.weekend is not None:
        out[weekday >= 5] = tou.weekend
    if tou.holiday is not None and tou.holidays:
        holidays = np.array([d.toordinal() - _EPOCH_ORDINAL for d in tou.holidays])
        out[np.isin(day, holidays)] = tou.holiday
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = _EPOCH.date().toordinal()
#: Hours between samples of the zone's UTC offset (see :func:`local_clock`).
_SAMPLE_HOURS = 24


def local_clock(
    start: datetime, hours: int, zone: ZoneInfo
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each hour ``t`` of the horizon, the local day (days since 1970-01-01), weekday
    (0 = Monday) and hour of ``start + t h`` in ``zone``.

    The UTC offset is asked of the zone once a day; on a day whose first and last hours have
    different offsets (a daylight-saving change) it is asked every hour. So a 3-year horizon
    costs about 1,100 conversions, not 26,000; a zone would have to change its offset twice
    within 24 hours and back for this to differ from converting every hour."""
    utc = start.astimezone(UTC)

    def offset(k: int) -> int:
        delta = (utc + timedelta(hours=k)).astimezone(zone).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    offsets = np.empty(hours, dtype=np.int64)
    k, previous = 0, offset(0)
    while k < hours:
        end = min(k + _SAMPLE_HOURS, hours)
        last = offset(end - 1)
        if last == previous:
            offsets[k:end] = last
        else:
            offsets[k:end] = [offset(j) for j in range(k, end)]
        previous, k = last, end
    base = (utc - _EPOCH) // timedelta(seconds=1)
    seconds = base + 3600 * np.arange(hours, dtype=np.int64) + offsets
    day = seconds // 86400
    # 1970-01-01 was a Thursday (weekday 3)
    return day, (day + 3) % 7, (seconds % 86400) // 3600


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
    why = not_a_file(path)
    if why is not None:
        raise SeriesError(f"file {str(path)!r} {why}")
    utc_start = start.astimezone(UTC)
    if times is None:
        wanted = _seconds(utc_start) + 3600 * np.arange(hours, dtype=np.int64)
    else:
        wanted = np.fromiter((_seconds(t) for t in times), dtype=np.int64, count=len(times))
    span = (int(wanted.min()), int(wanted.max())) if len(wanted) else (0, -1)
    keys, values = _csv_table(path, column, time_column, tz_name, span)
    pos = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    found = (keys[pos] == wanted) if len(keys) else np.zeros(len(wanted), dtype=bool)
    out = values[pos] if len(keys) else np.full(len(wanted), np.nan)
    bad = np.flatnonzero(~(found & np.isfinite(out)))
    if len(bad):
        k = int(bad[0])
        t = times[k] if times is not None else utc_start + timedelta(hours=k)
        if found[k]:
            raise SeriesError(f"file {str(path)!r}: {column!r} is empty or not finite at {t}")
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
    return out


def _seconds(t: datetime) -> int:
    """Whole seconds since 1970-01-01 UTC of an aware time (floored; exact for every time in
    years 1-9999 to the second, well within a float's 2^53)."""
    return math.floor(t.timestamp())


#: Tables read, by file (its real path, size and modification time) and columns: a grid's
#: scenarios and a solve's variants read the same price files again.
_TABLES: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
#: Tables kept (each a row's UTC second and value: 16 bytes a row).
_TABLES_KEPT = 32


def _csv_table(
    path: Path, column: str, time_column: str, tz_name: str, span: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a CSV series file whose UTC hour (seconds since 1970) lies in ``span``
    (inclusive; rows outside are checked but not kept, so memory follows the horizon, not
    the file): their hours, sorted (a row given twice: the last one), and values (NaN where
    empty); read once per file version and span."""
    try:
        st = os.stat(path)
        key: tuple[object, ...] | None = (
            os.path.realpath(path),
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
            column,
            time_column,
            tz_name,
            span,
        )
    except OSError:
        key = None
    if key is not None and key in _TABLES:
        return _TABLES[key]
    try:
        with _open_regular(path) as fh:
            rows = _csv_rows(
                fh,
                str(path),
                column,
                time_column,
                ZoneInfo(tz_name),
                span,
                header_ok=_csv_named(os.path.realpath(path)),
            )
    except UnicodeDecodeError as e:
        raise SeriesError(f"file {str(path)!r} is not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        raise SeriesError(f"file {str(path)!r} is not readable CSV ({e})") from None
    except OSError as e:
        raise SeriesError(
            f"file {str(path)!r} cannot be read ({e.strerror or 'I/O error'})"
        ) from None
    order = sorted(rows)
    table = (
        np.fromiter(order, dtype=np.int64, count=len(order)),
        np.fromiter((rows[k] for k in order), dtype=float, count=len(order)),
    )
    if key is not None:
        while len(_TABLES) >= _TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = table
    return table


def _open_regular(path: Path) -> IO[str]:
    """``path`` opened for reading as UTF-8 text (a byte-order mark skipped), once the open
    file is known to be a regular file within MAX_CSV_BYTES: the type is checked on the open
    descriptor (a file swapped for a FIFO after :func:`not_a_file` cannot block the reader,
    which opens without waiting)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SeriesError(
                f"file {str(path)!r} is not a regular file (a FIFO, socket or device); "
                "expected a file"
            )
        if st.st_size > MAX_CSV_BYTES:
            raise SeriesError(f"file {str(path)!r} is larger than {MAX_CSV_BYTES // 2**20} MiB")
        return open(fd, newline="", encoding="utf-8-sig", errors="strict", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _name(text: str) -> str:
    """A column name for a message: quoted, at most SHOWN_NAME characters of it."""
    return repr(text[:SHOWN_NAME]) + ("..." if len(text) > SHOWN_NAME else "")


def _csv_named(file: str) -> bool:
    return file.lower().endswith((".csv", ".tsv"))


def _no_column(file: str, col: str, names: list[str], header_ok: bool = True) -> SeriesError:
    """The error for a missing column. The header is listed only for a file named ``.csv``
    (or ``.tsv``) whose first line has two or more fields (a series needs a time and a value
    column); any other first line may be a file that is not a CSV at all (a key, a ``.env``)
    and is not shown. ``header_ok`` is False when the name leads (through symbolic links) to
    a file not named so: ``prices.csv -> secret.txt`` shows no first line either."""
    if not _csv_named(file):
        return SeriesError(
            f"file {file!r} has no column {col!r} (its first line is not shown: the file's "
            "name does not end in .csv)"
        )
    if not header_ok:
        return SeriesError(
            f"file {file!r} has no column {col!r} (its first line is not shown: the file "
            "it links to is not named .csv)"
        )
    if len(names) < 2:
        return SeriesError(
            f"file {file!r} has no column {col!r}; its first line is not a header of named "
            "columns (a CSV series needs a time column and a value column)"
        )
    shown = ", ".join(_name(n) for n in names[:SHOWN_COLUMNS])
    if len(names) > SHOWN_COLUMNS:
        shown += f", ... ({len(names) - SHOWN_COLUMNS} more)"
    return SeriesError(f"file {file!r} has no column {col!r}; columns are [{shown}]")


def _csv_rows(
    fh: IO[str],
    file: str,
    column: str,
    time_column: str,
    tz: ZoneInfo,
    span: tuple[int, int],
    *,
    header_ok: bool = True,
) -> dict[int, float]:
    """The value of every row whose UTC hour (seconds since 1970) lies in ``span``, by that
    hour (NaN where the value is empty; a row given twice: the last one). Every value must be
    0 or within MAGNITUDE (the rule for the instance's own numbers), except that a value
    below MAGNITUDE's floor in size is read as 0: measured series carry rounding residue of
    0 (the 2023 DE-LU prices hold -5.7e-14 USD/MWh where a smoothed 0 was), which is no unit
    mistake, while the ceiling still refuses 1e308.
    Lines starting with ``#`` are comments. Errors name the line of the file, comments and
    blank lines counted, and the column, never what the row holds."""
    low, high = MAGNITUDE
    lo, hi = span
    values: dict[int, float] = {}
    last = [0]  # the file line of the last line handed to the CSV reader

    def rows() -> Iterator[str]:
        for n, line in enumerate(fh, start=1):
            if not line.startswith("#"):
                last[0] = n
                yield line

    reader = csv.reader(rows())
    fieldnames = next(reader, None)
    if fieldnames is None:
        raise SeriesError(f"file {file!r} is empty")
    for col in (column, time_column):
        if col not in fieldnames:
            raise _no_column(file, col, list(fieldnames), header_ok)
    # as csv.DictReader: the last column of a name wins; blank lines are skipped
    ti = len(fieldnames) - 1 - fieldnames[::-1].index(time_column)
    vi = len(fieldnames) - 1 - fieldnames[::-1].index(column)
    for row in reader:
        if not row:
            continue
        lineno = last[0]
        raw_t = row[ti] if ti < len(row) else None
        raw_v = row[vi] if vi < len(row) else None
        try:
            t = _parse_time(raw_t or "", tz)
            if t.year in (1, 9999):  # its UTC time may fall outside years 1-9999
                t = t.astimezone(UTC)
            seconds = _seconds(t)
        except (ValueError, OverflowError):
            raise SeriesError(
                f"file {file!r} line {lineno}: {time_column!r} is not an ISO time with a "
                "date in years 1-9999"
            ) from None
        try:
            v = float(raw_v) if raw_v not in (None, "") else math.nan
        except ValueError:
            raise SeriesError(f"file {file!r} line {lineno}: {column!r} is not a number") from None
        if math.isfinite(v) and abs(v) < low:
            v = 0.0
        if math.isfinite(v) and abs(v) > high:
            raise SeriesError(
                f"file {file!r} line {lineno}: {column!r} is outside the magnitudes "
                f"allowed; expected 0 or a magnitude between {low:g} and {high:g} "
                "(is the unit right?)"
            )
        hour = seconds - seconds % 3600
        if lo <= hour <= hi:
            values[hour] = v
    return values
