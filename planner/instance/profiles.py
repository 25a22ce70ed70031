"""Price profiles: a horizon reuses a reference year's hourly series, aligned by weekday and
hour of day in the region's local time.

For horizon hour ``t`` with local time ``L`` (date ``d``, wall-clock time ``h``), the
reference time is the same wall-clock time ``h`` on the day of the reference year ``Y`` that
has ``d``'s weekday and lies nearest to ``d``'s calendar date in ``Y``::

    c     = date(Y, d.month, d.day)          (28 February for 29 February)
    shift = ((weekday(d) - weekday(c) + 3) mod 7) - 3        in -3 .. 3 days
    r     = c + shift                       (moved by a week if that leaves year Y)

So Monday 7 December 2026 18:00 in Berlin reads Monday 4 December 2023 18:00 in Berlin:
the season, the weekday and the local hour (the daily peak, the weekend dip) carry over;
holidays, which move between years, do not. Wall-clock times that do not exist in the
reference year (the hour skipped when clocks go forward) read the hour after it; the
series' ``scale`` then applies as for any series (``scale: 1.1`` for prices 10% higher).

**The ends of the year.** The reference day always lies in year ``Y`` in local time, but a
file of year ``Y`` in UTC (the shipped extracts) lacks the first local hours of 1 January
east of Greenwich and the last local hours of 31 December west of it. A reference time the
file has no row for reads the same local wall-clock time 52 weeks later (in the first half of
the year) or earlier (in the second): the same weekday and hour, inside year ``Y``
(:func:`wrapped`). So every hour of a horizon profiled on a full-year file has a value, New
Year included; a file that covers only part of the year still lacks the rest.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

#: How far a reference time outside the file moves (keeps the weekday): :func:`wrapped`.
WRAP = timedelta(weeks=52)


def aligned_date(d: date, year: int) -> date:
    """The day of ``year`` with ``d``'s weekday nearest to ``d``'s calendar date."""
    day = 28 if (d.month, d.day) == (2, 29) else d.day
    c = date(year, d.month, day)
    shift = ((d.weekday() - c.weekday() + 3) % 7) - 3
    r = c + timedelta(days=shift)
    if r.year < year:
        r += timedelta(days=7)
    elif r.year > year:
        r -= timedelta(days=7)
    return r


def reference_times(start: datetime, hours: int, local_tz: str, year: int) -> list[datetime]:
    """For each of ``hours`` horizon hours from ``start``, the UTC time in ``year`` whose
    values it reuses (see the module docstring)."""
    zone = ZoneInfo(local_tz)
    out: list[datetime] = []
    for t in range(hours):
        local = (start + timedelta(hours=t)).astimezone(zone)
        ref_day = aligned_date(local.date(), year)
        wall = datetime.combine(ref_day, local.time().replace(tzinfo=None))
        out.append(wall.replace(tzinfo=zone, fold=local.fold).astimezone(UTC))
    return out


def wrapped(t: datetime, local_tz: str) -> datetime:
    """The reference time that stands in for ``t`` (UTC) when the file has no row for it:
    the same local wall-clock time 52 weeks later when ``t`` lies in the first half of its
    local year, else 52 weeks earlier (module docstring, "The ends of the year")."""
    zone = ZoneInfo(local_tz)
    local = t.astimezone(zone)
    step = WRAP if local.month <= 6 else -WRAP
    wall = local.replace(tzinfo=None) + step
    return wall.replace(tzinfo=zone, fold=local.fold).astimezone(UTC)
