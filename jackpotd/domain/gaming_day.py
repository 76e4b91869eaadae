"""Gaming days (RULES.md §10): a day starts at a configured local time (06:00 by default) in the link's time
zone, so it lasts 23 or 25 hours across a daylight-saving change. Pure: the zone is passed in."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from .errors import InvalidInput

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


FIRST_DAY, LAST_DAY = date(1970, 1, 2), date(9998, 12, 30)  # the days whose bounds every zone can express


def parse_day(field: str, text: str) -> date:
    """YYYY-MM-DD between FIRST_DAY and LAST_DAY, or InvalidInput naming the field."""
    try:
        if _DAY.fullmatch(text) is None:
            raise ValueError("not YYYY-MM-DD")
        day = date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(field, text[:40], "must be a date YYYY-MM-DD") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise InvalidInput(field, text, f"must be from {FIRST_DAY} to {LAST_DAY}")
    return day


def _start_time(start: str) -> time:
    hours, minutes = start.split(":")
    return time(int(hours), int(minutes))


def day_start(day: date, start: str, zone: tzinfo) -> datetime:
    """The instant (UTC) gaming day `day` begins: the first instant whose local time on that date is at or after
    `start` (HH:MM). A start that occurs twice (clocks going back) is its first occurrence; one that does not
    occur (clocks going forward) is the end of the gap."""
    local = datetime.combine(day, _start_time(start))
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == local:
        return first  # the time exists: its first occurrence
    # In a gap, both offsets name instants on either side of it: find where local time passes `start`.
    lo = min(first, local.replace(tzinfo=zone, fold=1).astimezone(UTC))
    hi = max(first, local.replace(tzinfo=zone, fold=1).astimezone(UTC))
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        if mid.astimezone(zone).replace(tzinfo=None) >= local:
            hi = mid
        else:
            lo = mid
    return hi.replace(microsecond=0)


def day_bounds(day: date, start: str, zone: tzinfo) -> tuple[datetime, datetime]:
    """[from, to) of gaming day `day` in UTC."""
    return day_start(day, start, zone), day_start(day + timedelta(days=1), start, zone)



def day_of(at: datetime, start: str, zone: tzinfo) -> date:
    """The gaming day instant `at` (aware) falls in: its local date in `zone`, or the day before while that date's
    day has not started (before `start`, HH:MM, local)."""
    day = at.astimezone(zone).date()
    return day if at >= day_start(day, start, zone) else day - timedelta(days=1)
