"""Instants as the API has them (Unix milliseconds, UTC) and as people read them: ISO 8601 in UTC and in the
link's time zone. Exact: integer milliseconds, no float."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


class NaiveTime(ValueError):
    """A time given without an offset: which zone it means is a guess, so it is refused."""


def parse_instant(text: str) -> int:
    """Unix milliseconds of an ISO 8601 time with an offset or Z (2024-05-01T06:00:00+10:00,
    2024-04-30T20:00:00Z). ValueError for anything else, NaiveTime for a time without an offset."""
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time such as 2024-05-01T06:00:00+10:00 or "
                         "2024-04-30T20:00:00Z") from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise NaiveTime(f"{text!r} has no offset: say which zone it is in, e.g. {text.strip()}Z for UTC or "
                        f"{text.strip()}+10:00")
    return (at - EPOCH) // MS


def zone(name: str) -> tzinfo:
    """The link's time zone, UTC when it is empty or unknown here (a report still renders)."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def instant(ms: int) -> datetime:
    """An aware UTC datetime of Unix milliseconds."""
    return EPOCH + ms * MS


def utc_iso(ms: int) -> str:
    """2024-04-30T20:00:00.000Z: ISO 8601 with milliseconds."""
    second, milli = divmod(ms, 1000)
    return f"{utc_second(second)}.{milli:03d}Z"


@lru_cache(maxsize=1024)
def utc_second(second: int) -> str:
    """A Unix second as 2024-04-30T20:00:00: a ledger export dates many entries within the same second, and many
    seconds within a day (its date formatted once, the time of day by integer arithmetic: UTC has 86,400 s a day)."""
    day, rest = divmod(second, 86_400)
    hour, rest = divmod(rest, 3_600)
    minute, sec = divmod(rest, 60)
    return f"{_utc_day(day)}T{hour:02d}:{minute:02d}:{sec:02d}"


@lru_cache(maxsize=64)
def _utc_day(day: int) -> str:
    """Day `day` since 1970-01-01 as 2024-04-30."""
    return f"{instant(day * 86_400_000):%Y-%m-%d}"


def local_iso(ms: int, tz: tzinfo) -> str:
    """2024-05-01T06:00:00.000+10:00: the same instant in the link's zone, with its offset."""
    at = instant(ms).astimezone(tz)
    offset = at.strftime("%z")
    return f"{at:%Y-%m-%dT%H:%M:%S}.{at.microsecond // 1000:03d}{offset[:3]}:{offset[3:]}"
