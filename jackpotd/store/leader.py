"""Who writes the ledger (issue 13): the one process holding the writer lease, a PostgreSQL session advisory lock
on a connection of its own. Any number of `jackpotd writer` (or `serve`) processes may run; the others stand by
and take over within POLL seconds of the leader's death: kill -9 closes its connection, and PostgreSQL frees the
lock with it. The ledger's head guard (a batch whose head moved is refused) stays the last line of defence
should two ever write at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from ..clock import wait_set
from ..metrics import WRITER_LEADER
from .ledger import DRIVER_ERRORS
from .writer import LedgerWriter

log = logging.getLogger("jackpotd.leader")

LEASE_KEY = 4244  # advisory lock keys: 4242 migrations, 4243 VerifyLedger


class WriterLease:
    """The writer lease: held while its connection lives and says so."""

    POLL = 0.5  # how often a standby asks for it
    CHECK_TIMEOUT = 2.0

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: asyncpg.Connection | None = None

    async def try_acquire(self) -> bool:
        """Take the lease if nobody holds it (a store that cannot be reached: not now)."""
        try:
            if self.conn is None or self.conn.is_closed():
                self.conn = await asyncpg.connect(self.dsn, timeout=5)
            return bool(await self.conn.fetchval("SELECT pg_try_advisory_lock($1)", LEASE_KEY,
                                                 timeout=self.CHECK_TIMEOUT))
        except DRIVER_ERRORS as e:
            log.warning("writer lease: PostgreSQL cannot be asked (%s); trying again", e)
            await self.release()
            return False

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait for the lease; False when stopped first."""
        while not stop.is_set():
            if await self.try_acquire():
                return True
            await wait_set(stop, self.POLL)
        return False

    async def held(self) -> bool:
        """Whether the lease's connection still answers (a PostgreSQL restart or failover ends the lease)."""
        if self.conn is None or self.conn.is_closed():
            return False
        try:
            await self.conn.fetchval("SELECT 1", timeout=self.CHECK_TIMEOUT)
            return True
        except DRIVER_ERRORS:
            return False

    async def release(self) -> None:
        """Give the lease up (closing the connection frees the lock)."""
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)


class LeadingWriter:
    """Runs the ledger writer while this process holds the lease: recovery first (a leader that takes over
    drains what Redis holds beyond the ledger), then the writer, until the lease is lost or the process stops."""

    CHECK_EVERY = 1.0

    def __init__(self, lease: WriterLease, make_writer: Callable[[], LedgerWriter],
                 recover: Callable[[], Awaitable[Any]]) -> None:
        self.lease = lease
        self.make_writer = make_writer
        self.recover = recover
        self.writer: LedgerWriter | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def leading(self) -> bool:
        return self.writer is not None and self.writer.alive

    async def start(self) -> None:
        """Lead at once if the lease is free (so an all-in-one `serve` recovers before it serves); else stand by.
        Either way the lease is watched, and taken over, in the background."""
        if await self.lease.try_acquire():
            await self._lead()
        self._task = asyncio.create_task(self._run(), name="leading-writer")

    async def _lead(self) -> None:
        WRITER_LEADER.set(1)
        log.info("this process holds the writer lease: recovering, then writing the ledger")
        try:
            await self.recover()
            self.writer = self.make_writer()
            await self.writer.start()
        except BaseException:
            await self._step_down()
            raise

    async def _step_down(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            await writer.stop()
        WRITER_LEADER.set(0)
        await self.lease.release()

    async def _run(self) -> None:
        while not self._stop.is_set():
            if self.writer is None:
                if not await self.lease.acquire(self._stop):
                    return
                try:
                    await self._lead()
                except Exception as e:  # recovery or the writer's start failed: give the lease to another
                    log.error("leading the ledger writer failed: %s; standing by", e)
                    await wait_set(self._stop, WriterLease.POLL)
                    continue
            await wait_set(self._stop, self.CHECK_EVERY)
            if self._stop.is_set():
                return
            if not await self.lease.held():
                log.error("the writer lease is lost (PostgreSQL restarted or failed over?): stopping the writer")
                await self._step_down()
            elif self.writer is not None and not self.writer.alive:
                log.error("the ledger writer stopped: giving the lease up")
                await self._step_down()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._step_down()
