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
import itertools
import math
import os
import stat
from collections import OrderedDict
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
    notes: list[str] | None = None,
) -> np.ndarray:
    """Return ``hours`` values starting at ``start`` (UTC-aware), times ``series.scale``. A
    ``csv`` file is looked up by :func:`~planner.instance.files.data_file` (relative to
    ``base_dir``, inside it or ``data_root``); what the reader did that a user should know
    (hours of several rows averaged) is added to ``notes``."""
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
        profile = None if series.reference_year is None else (local_tz, series.reference_year)
        out = _csv(
            path, series.column, series.time_column, series.timezone, start, hours, profile, notes
        )
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


def _csv(
    path: Path,
    column: str,
    time_column: str,
    tz_name: str,
    start: datetime,
    hours: int,
    profile: tuple[str, int] | None = None,
    notes: list[str] | None = None,
) -> np.ndarray:
    """One value per horizon hour from a CSV file's ``column``, rows matched on the UTC hour
    of their ``time_column`` (times without an offset are read in ``tz_name``, the repeated
    hour when clocks go back by the fold rule of :func:`_csv_rows`). ``profile`` (the
    region's time zone and a reference year: a price profile, :mod:`planner.instance.profiles`)
    gives the UTC hour each horizon hour reads, a missing one wrapped by 52 weeks
    (:func:`~planner.instance.profiles.wrapped`); by default hour ``k`` reads ``start + k``
    hours. Hours of several rows read their mean, with a note in ``notes``.

    The values are kept per file (identity, size and modification time) and request
    (:data:`_CACHE`): a variant of an instance (the attribution's baselines, a grid's
    scenarios) reads each file once."""
    why = not_a_file(path)
    if why is not None:
        raise SeriesError(f"file {str(path)!r} {why}")
    utc_start = start.astimezone(UTC)
    try:
        st = os.stat(path)
        key: tuple[object, ...] | None = (
            os.path.realpath(path),
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            column,
            time_column,
            tz_name,
            utc_start,
            hours,
            profile,
        )
    except OSError:
        key = None
    hit = _CACHE.get(key) if key is not None else None
    if key is not None and hit is not None:
        _CACHE.move_to_end(key)
        if notes is not None:
            notes.extend(hit[1])
        return hit[0]
    out, found = _csv_read(path, column, time_column, tz_name, utc_start, hours, profile)
    out.setflags(write=False)
    if key is not None:
        _CACHE[key] = (out, tuple(found))
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    if notes is not None:
        notes.extend(found)
    return out


#: CSV series already read (see :func:`_csv`), least recently used first.
_CACHE: OrderedDict[tuple[object, ...], tuple[np.ndarray, tuple[str, ...]]] = OrderedDict()
#: Entries kept: 64 hourly years are about 4.5 MB.
CACHE_ENTRIES = 64


def _csv_read(
    path: Path,
    column: str,
    time_column: str,
    tz_name: str,
    utc_start: datetime,
    hours: int,
    profile: tuple[str, int] | None,
) -> tuple[np.ndarray, list[str]]:
    """:func:`_csv` without the cache: the values and the notes."""
    if profile is not None:
        from planner.instance.profiles import reference_times, wrapped

        at = reference_times(utc_start, hours, *profile)
        spare = {t: wrapped(t, profile[0]) for t in set(at)}
    else:
        at = [utc_start + timedelta(hours=k) for k in range(hours)]
        spare = {}
    wanted = set(at) | set(spare.values())
    notes: list[str] = []
    try:
        with _open_regular(path) as fh:
            values = _csv_rows(
                fh,
                str(path),
                column,
                time_column,
                ZoneInfo(tz_name),
                wanted,
                header_ok=_csv_named(os.path.realpath(path)),
                notes=notes,
            )
    except UnicodeDecodeError as e:
        raise SeriesError(f"file {str(path)!r} is not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        raise SeriesError(f"file {str(path)!r} is not readable CSV ({e})") from None
    except OSError as e:
        raise SeriesError(
            f"file {str(path)!r} cannot be read ({e.strerror or 'I/O error'})"
        ) from None
    out = np.empty(hours)
    for k in range(hours):
        t = at[k]
        if t not in values and spare.get(t) in values:
            t = spare[t]
        if t not in values:
            if profile is not None:
                when = (utc_start + timedelta(hours=k)).isoformat()
                raise SeriesError(
                    f"file {str(path)!r} has no value for {t.isoformat()}, the reference time "
                    f"of hour {k} of the horizon ({when}), nor 52 weeks from it; expected "
                    f"hourly rows covering the reference year {profile[1]} (a full-year "
                    "extract)"
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
    return out, notes


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


class _LocalTimes:
    """Times without an offset, read in a zone: the fold rule for the hour that repeats when
    the clocks go back (the first row of a repeated wall-clock time is the earlier instant,
    the second the later one), and a refusal for a wall-clock time that does not exist (the
    hour skipped when they go forward), so that no two rows land on one UTC hour unseen."""

    def __init__(self, tz: ZoneInfo) -> None:
        self.tz = tz
        self.plain = str(tz.key).upper() in ("UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z")
        #: repeated wall-clock times seen so far -> the line of each row
        self.repeated: dict[datetime, list[int]] = {}

    def instant(self, naive: datetime, file: str, line: int, time_column: str) -> datetime:
        local = naive.replace(tzinfo=self.tz)
        if self.plain:
            return local
        early, late = local.replace(fold=0), local.replace(fold=1)
        if early.utcoffset() == late.utcoffset():
            return local
        back = early.astimezone(UTC).astimezone(self.tz).replace(tzinfo=None)
        if back != naive:
            raise SeriesError(
                f"file {file!r} line {line}: {time_column!r} is a local time that does not "
                f"exist in {self.tz.key} (the clocks go forward over it); a file in local "
                "time has no row for it: remove the row, or write the times with their UTC "
                "offset"
            )
        lines = self.repeated.setdefault(naive, [])
        lines.append(line)
        if len(lines) > 2:
            raise SeriesError(
                f"file {file!r} lines {lines[0]}, {lines[1]} and {line}: {time_column!r} gives "
                f"one local time three times; the hour the clocks go back repeats once (the "
                f"first row is the earlier hour, the second the later one)"
            )
        return early if len(lines) == 1 else late


def _fields(lines: Iterator[str]) -> Iterator[list[str]]:
    """The fields of each CSV row in ``lines`` (after the header), as ``csv.DictReader`` reads
    them: blank lines skipped, quoting honoured. Rows without a quote are split on commas (the
    csv module's answer for them, three times faster: the price files are read whole); from the
    first quote on, the csv module reads the rest (a quoted field may span lines). The csv
    module's refusal of a field over its size limit holds on both paths."""
    limit = csv.field_size_limit()
    for line in lines:
        if '"' in line:
            yield from (row for row in csv.reader(itertools.chain([line], lines)) if row)
            return
        stripped = line.rstrip("\r\n")
        if not stripped:
            continue
        fields = stripped.split(",")
        if len(stripped) > limit and max(map(len, fields)) > limit:
            raise csv.Error(f"field larger than field limit ({limit})")
        yield fields


def _hour_count(t: datetime) -> int:
    """The UTC hour of the aware time ``t``, as whole hours since 1970-01-01 00:00 UTC
    (floored: negative before 1970; exact, where a float timestamp could round an instant a
    microsecond before the hour into it). OverflowError for an instant outside years 1-9999
    in UTC, as ``astimezone(UTC)`` raises."""
    count = (t - _EPOCH) // _HOUR
    if not _FIRST_COUNT <= count <= _LAST_COUNT:
        raise OverflowError("date value out of range")
    return count


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HOUR = timedelta(hours=1)
_FIRST_COUNT = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _HOUR
_LAST_COUNT = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _HOUR


def _csv_rows(
    fh: IO[str],
    file: str,
    column: str,
    time_column: str,
    tz: ZoneInfo,
    wanted: set[datetime],
    *,
    header_ok: bool = True,
    notes: list[str] | None = None,
) -> dict[datetime, float]:
    """The value of every UTC hour in ``wanted`` (NaN where a value is empty); rows outside
    them are checked but not kept, so memory follows the horizon, not the file.

    - Times without an offset are read in ``tz`` (:class:`_LocalTimes`: the repeated hour
      when the clocks go back is told apart by the order of its rows; a time the clocks skip
      is refused).
    - Two rows for one instant are refused, naming both lines (never "the last one wins").
    - Rows at several instants of one hour (sub-hourly data: every 15 minutes) give the
      hour their mean, and a note says how many hours were averaged.
    - Every value must be 0 or within MAGNITUDE (the rule for the instance's own numbers),
      except that a value below MAGNITUDE's floor in size is read as 0: measured series
      carry rounding residue of 0 (the 2023 DE-LU prices hold -5.7e-14 USD/MWh where a
      smoothed 0 was), which is no unit mistake, while the ceiling still refuses 1e308.

    Lines starting with ``#`` are comments. Errors name the line of the file, comments and
    blank lines counted, and the column, never what the row holds."""
    low, high = MAGNITUDE
    #: wanted hour -> {instant: (value, line)}
    rows_of: dict[datetime, dict[datetime, tuple[float, int]]] = {}
    local = _LocalTimes(tz)
    last = [0]  # the file line of the last line handed to the CSV reader

    def rows() -> Iterator[str]:
        for n, line in enumerate(fh, start=1):
            if not line.startswith("#"):
                last[0] = n
                yield line

    lines = rows()
    fieldnames = next(csv.reader(lines), None)
    if fieldnames is None:
        raise SeriesError(f"file {file!r} is empty")
    for col in (column, time_column):
        if col not in fieldnames:
            raise _no_column(file, col, list(fieldnames), header_ok)
    ti, vi = fieldnames.index(time_column), fieldnames.index(column)
    # the wanted hours by their count of hours since 1970: a row's hour is looked up by an
    # int (hashing an aware datetime asks its zone for the offset: 4 us a row, most of a
    # price file's reading)
    by_count = {_hour_count(w): w for w in wanted}
    for fields in _fields(lines):
        lineno = last[0]
        raw_t = fields[ti] if ti < len(fields) else None
        raw_v = fields[vi] if vi < len(fields) else None
        try:
            parsed = datetime.fromisoformat((raw_t or "").strip())
            if parsed.tzinfo is None:
                parsed = local.instant(parsed, file, lineno, time_column)
            count = _hour_count(parsed)
        except SeriesError:
            raise
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
        hour = by_count.get(count)
        if hour is None:
            continue
        t = parsed.astimezone(UTC)
        seen = rows_of.setdefault(hour, {})
        if t in seen:
            raise SeriesError(
                f"file {file!r} lines {seen[t][1]} and {lineno}: {time_column!r} gives the "
                "same time twice; keep one row per time (times without an offset are read "
                f"in {tz.key})"
            )
        seen[t] = (v, lineno)
    values: dict[datetime, float] = {}
    averaged = 0
    for hour, seen in rows_of.items():
        if len(seen) == 1:
            values[hour] = next(iter(seen.values()))[0]
        else:
            averaged += 1
            values[hour] = math.fsum(v for v, _ in seen.values()) / len(seen)
    if averaged and notes is not None:
        notes.append(
            f"file {file!r} has several rows in {averaged} hour(s) the horizon reads "
            "(sub-hourly data): each such hour reads the mean of its rows"
        )
    return values
