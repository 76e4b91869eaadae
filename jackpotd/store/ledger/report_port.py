"""The service's ReportStore over PostgreSQL (and, for VerifyLedger only, Redis): driver failures become
Unavailable here, as in service_port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import asyncpg

from ...service.errors import Unavailable
from ...service.export_columns import ExportedColumns
from ...service.ports import AuditReport, ExportedEntry, LiabilityData, PeriodData, ReportStore
from ..checkpoints import Checkpoint
from . import export_columns, reports
from .audit import audit_link
from .service_port import DRIVER_ERRORS, translated, unavailable

RedisView = Callable[[str], Awaitable[tuple[dict[str, int], int]]]


VERIFY_LOCK = 4243  # PostgreSQL advisory lock: one VerifyLedger at a time, whichever worker runs it (migrate: 4242)


class PostgresReports(ReportStore):
    """Finance's reads. `live` gives a link's pools and sequence as Redis holds them (VerifyLedger compares);
    `anchors` the link's checkpoints kept outside the database, already MAC-verified."""

    QUIET_S = 5.0

    def __init__(self, pg: asyncpg.Pool, live: RedisView,
                 anchors: Callable[[str], Sequence[Checkpoint]] = lambda _: ()) -> None:
        self.pg = pg
        self.live = live
        self.anchors = anchors

    @translated
    async def config(self, link_id: str) -> str | None:
        return await reports.latest_config(self.pg, link_id)

    @translated
    async def period(self, link_id: str, from_ms: int, to_ms: int) -> PeriodData:
        return await reports.period(self.pg, link_id, from_ms, to_ms)

    @translated
    async def export_range(self, link_id: str, from_seq: int, to_seq: int, from_ms: int | None,
                           to_ms: int | None) -> tuple[int, int]:
        return await reports.seq_range(self.pg, link_id, from_seq, to_seq, from_ms, to_ms)

    async def export(self, link_id: str, first: int, last: int) -> AsyncIterator[list[ExportedEntry]]:
        try:
            async for page in reports.entries(self.pg, link_id, first, last):
                yield page
        except DRIVER_ERRORS as error:
            raise unavailable(error) from error

    async def export_columns(self, link_id: str, first: int, last: int) -> AsyncIterator[ExportedColumns]:
        try:
            async for chunk in export_columns.entry_columns(self.pg, link_id, first, last):
                yield chunk
        except DRIVER_ERRORS as error:
            raise unavailable(error) from error

    @translated
    async def liability(self, link_id: str) -> LiabilityData:
        return await reports.liability(self.pg, link_id)

    @translated
    async def verify(self, link_id: str) -> AuditReport:
        """The audit of one link in one snapshot of the ledger, compared with Redis at the same sequence: a link in
        play has entries in flight (Redis ahead by them), so wait for a moment the two agree on the head (up to
        QUIET_S; after that Redis's difference is reported as it is)."""
        deadline = time.monotonic() + self.QUIET_S
        async with self.pg.acquire() as conn:
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", VERIFY_LOCK):
                raise Unavailable("another VerifyLedger is running (one at a time across the service: each reads a "
                                  "whole link); retry in a while")
            try:
                while True:
                    async with conn.transaction(isolation="repeatable_read", readonly=True):
                        head = await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link_id)
                        pools, seq = await self.live(link_id)  # after the snapshot: Redis is at or ahead of it
                        if seq == (head or 0) or time.monotonic() > deadline:
                            anchors = await asyncio.to_thread(self.anchors, link_id)  # files: off the event loop
                            report = await audit_link(conn, link_id, pools, seq, anchors)
                            break
                    await asyncio.sleep(0.02)
            finally:
                await conn.fetchval("SELECT pg_advisory_unlock($1)", VERIFY_LOCK)
        return report
