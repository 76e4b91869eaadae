"""The link's current gaming day, for the reports asked for no period (issue 32): its time zone and day start
as jackpotd serves them, its clock, and the domain's own rule (jackpotd.domain.gaming_day), so the day is the
one the server would reconcile."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jackpotd.domain.gaming_day import day_bounds, day_of

from .calls import fetch_reconciliation
from .times import instant

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.report_pb2_grpc import ReportServiceAsyncStub


class UnknownZone(ValueError):
    """The link's time zone is not in this host's time zone database: the day's bounds cannot be found here."""


@dataclass(frozen=True)
class LinkDay:
    """A gaming day of a link: the date, the link's zone and day start, and its bounds [from_ms, to_ms)."""

    day: date
    time_zone: str
    start: str  # HH:MM local
    from_ms: int
    to_ms: int

    def said(self) -> str:
        """How the reports name it: 2026-12-08 (Australia/Sydney, from 06:00)."""
        return f"{self.day.isoformat()} ({self.time_zone}, from {self.start})"


def link_day(at_ms: int, time_zone: str, start: str) -> LinkDay:
    """The gaming day instant `at_ms` falls in, for a link of `time_zone` whose days start at `start`."""
    try:
        zone = ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnknownZone(f"the link's time zone {time_zone!r} is unknown on this host: give --day, or --from and "
                          "--to") from None
    day = day_of(instant(at_ms), start, zone)
    begin, end = day_bounds(day, start, zone)
    return LinkDay(day, time_zone, start, int(begin.timestamp()) * 1000, int(end.timestamp()) * 1000)


async def current_day(stub: ReportServiceAsyncStub, link_id: str, timeout: float | None) -> LinkDay:
    """The link's gaming day now, by jackpotd's clock: the reconciliation of the last millisecond is the lightest
    call that carries the link's zone, day start and jackpotd's time (generated_at)."""
    now = time.time_ns() // 1_000_000
    probe = await fetch_reconciliation(stub, link_id, from_ms=now - 1, to_ms=now, timeout=timeout)
    return link_day(probe.generated_at_ms or now, probe.time_zone, probe.gaming_day_start)
