"""Who writes the ledger (issue 13): the one process holding the writer lease, a PostgreSQL session advisory lock
on a connection of its own. Any number of `jackpotd writer` (or `serve`) processes may run; the others stand by
and take over within POLL seconds of the leader's death: kill -9 closes its connection, and PostgreSQL frees the
lock with it. The ledger's head guard (a batch whose head moved is refused) stays the last line of defence
should two ever write at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from ..clock import wait_set
from ..metrics import WRITER_LEADER
from .writer import LedgerWriter

log = logging.getLogger("jackpotd.leader")

LEASE_KEY = 4244  # advisory lock keys: 4242 migrations, 4243 VerifyLedger
# A session PostgreSQL hears nothing from (a leader's host crashed, a partition) keeps its lock until the server
# notices the peer is gone: with these, within about 11 s rather than the operating system's two hours.
KEEPALIVES = {"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"}
HELD = ("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 "
        "AND objsubid = 1 AND pid = pg_backend_pid() AND granted)")


class WriterLease:
    """The writer lease: held while its connection lives and says so."""

    POLL = 0.5  # how often a standby asks for it
    CHECK_TIMEOUT = 2.0

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: asyncpg.Connection | None = None
        self._complained_at = -1e9

    async def try_acquire(self) -> bool:
        """Take the lease if nobody holds it, on a primary (a standby's lock guards nothing it writes). Any
        failure (no primary yet during a failover, a refused login) is "not now": a standby must never stop
        asking."""
        try:
            if self.conn is None or self.conn.is_closed():
                self.conn = await asyncpg.connect(self.dsn, timeout=5, server_settings=KEEPALIVES)
            if await self.conn.fetchval("SELECT pg_is_in_recovery()", timeout=self.CHECK_TIMEOUT):
                await self.release()
                return False
            return bool(await self.conn.fetchval("SELECT pg_try_advisory_lock($1)", LEASE_KEY,
                                                 timeout=self.CHECK_TIMEOUT))
        except Exception as e:
            self._complain(f"writer lease: PostgreSQL cannot be asked ({type(e).__name__}: {e}); trying again")
            await self.release()
            return False

    def _complain(self, message: str) -> None:
        """Log a failure to ask at most once a minute (a standby asks twice a second)."""
        now = time.monotonic()
        if now - self._complained_at >= 60:
            self._complained_at = now
            log.warning("%s", message)

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait for the lease; False when stopped first."""
        while not stop.is_set():
            if await self.try_acquire():
                return True
            await wait_set(stop, self.POLL)
        return False

    async def held(self) -> bool:
        """Whether this session still holds the lock (a PostgreSQL restart or failover ends the lease)."""
        if self.conn is None or self.conn.is_closed():
            return False
        try:
            return bool(await self.conn.fetchval(HELD, LEASE_KEY, timeout=self.CHECK_TIMEOUT))
        except Exception:
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
    BACKOFF_MAX = 8.0  # seconds between attempts to lead after failures in a row
    STOP_WAIT = 10.0  # seconds stop() waits for the loop before cancelling it

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
        Either way the lease is watched, and taken over, in the background. Never raises: a failure to lead
        now is retried there."""
        if await self.lease.try_acquire():
            try:
                await self._lead()
            except Exception as e:
                log.error("leading the ledger writer failed: %s; trying again", e)
        self._task = asyncio.create_task(self._run(), name="leading-writer")
        self._task.add_done_callback(self._ended)

    @staticmethod
    def _ended(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:  # a bug: say so loudly, never silently
            log.critical("the writer lease's loop died: %r; this process will not lead again until restarted",
                         task.exception())

    async def _lead(self) -> None:
        log.info("this process holds the writer lease: recovering, then writing the ledger")
        try:
            await self.recover()
            self.writer = self.make_writer()
            await self.writer.start()
            WRITER_LEADER.set(1)
        except BaseException:
            await self._step_down()
            raise

    async def _step_down(self) -> None:
        """Stop writing, then give the lease up, whatever stopping the writer raises."""
        writer, self.writer = self.writer, None
        try:
            if writer is not None:
                await writer.stop()
        except Exception as e:
            log.error("stopping the ledger writer failed: %s", e)
        finally:
            WRITER_LEADER.set(0)
            await self.lease.release()

    async def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if self.writer is None:
                    if not await self.lease.acquire(self._stop):
                        return
                    await self._lead()
                    failures = 0
                await wait_set(self._stop, self.CHECK_EVERY)
                if self._stop.is_set():
                    return
                if not await self.lease.held():
                    log.error("the writer lease is lost (PostgreSQL restarted or failed over?): stopping the writer")
                    await self._step_down()
                elif self.writer is not None and not self.writer.alive:
                    log.error("the ledger writer stopped: giving the lease up")
                    await self._step_down()
            except Exception as e:  # recovery or the writer's start failed: give the lease to another, back off
                failures += 1
                log.error("leading the ledger writer failed: %s; standing by", e)
                await self._step_down()
                await wait_set(self._stop, min(WriterLease.POLL * 2 ** failures, self.BACKOFF_MAX))

    async def stop(self) -> None:
        """Stop writing and give the lease up (waiting STOP_WAIT seconds at most for the loop)."""
        self._stop.set()
        task, self._task = self._task, None
        try:
            if task is not None:
                done, _ = await asyncio.wait([task], timeout=self.STOP_WAIT)
                if not done:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
        finally:
            await self._step_down()
