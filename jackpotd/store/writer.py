"""The ledger writer: group-commits each link's journal into PostgreSQL, then releases the waiting callers.

Every replica reads every journal from its own committed watermark; an entry another replica already
wrote is skipped by `write_batch`, so each replica learns of every commit and can answer its callers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import asyncpg

from ..metrics import LEDGER_BATCH, LEDGER_LAG
from . import ledger
from .redis_pools import RedisPools, journal_key

log = logging.getLogger("jackpotd.writer")


class LedgerWriter:
    """Background task that moves journal entries into the ledger and tracks the durable watermark."""

    def __init__(self, redis: RedisPools, pg: asyncpg.Pool, batch: int = 2000) -> None:
        self.redis = redis
        self.pg = pg
        self.batch = batch
        self.durable: dict[str, int] = {}
        self._waiters: dict[str, list[tuple[int, asyncio.Future[None]]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.failed: BaseException | None = None

    async def start(self) -> None:
        """Load the watermarks from PostgreSQL and start the loop."""
        self.durable = await ledger.heads(self.pg)
        self._task = asyncio.create_task(self._run(), name="ledger-writer")

    async def stop(self) -> None:
        """Finish the current batch and stop."""
        self._stopping = True
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for waiters in self._waiters.values():
            for _, fut in waiters:
                if not fut.done():
                    fut.set_exception(ConnectionError("ledger writer stopped"))

    async def wait_durable(self, link_id: str, seq: int, timeout: float = 10.0) -> None:
        """Return once entry `seq` of the link is committed in PostgreSQL (ARCHITECTURE write path 4)."""
        if self.durable.get(link_id, 0) >= seq:
            return
        if self.failed is not None:
            raise ConnectionError(f"ledger writer failed: {self.failed}")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(link_id, []).append((seq, fut))
        await asyncio.wait_for(fut, timeout)

    async def _run(self) -> None:
        backoff = 0.05
        while not self._stopping:
            try:
                await self._once()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except ledger.LedgerMismatch as e:  # never record a ledger that disagrees with the pools
                log.critical("ledger writer stopped: %s", e)
                self.failed = e
                return
            except Exception as e:  # a store hiccup: callers wait, the loop retries
                log.warning("ledger writer retrying after error: %s", e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _once(self) -> None:
        links = await self.redis.links()
        if not links:
            await asyncio.sleep(0.05)
            return
        streams = {journal_key(link): f"0-{self.durable.get(link, 0)}" for link in links}
        rows = await self.redis.client.xread(streams, count=self.batch, block=50)
        if not rows:
            return
        batch: list[ledger.JournalEntry] = []
        for stream, entries in rows:
            link = stream[len("{link:"):stream.index("}")]
            batch += ledger.journal_entries(link, ((int(i.split("-")[1]), f) for i, f in entries))
        started = time.perf_counter()
        async with self.pg.acquire() as conn:
            heads = await ledger.write_batch(conn, batch)
        LEDGER_BATCH.observe(len(batch))
        LEDGER_LAG.observe(time.perf_counter() - started)
        for link, head in heads.items():
            if head > self.durable.get(link, 0):
                self.durable[link] = head
            self._release(link)
            if head % 1000 < len(batch):  # trim now and then; PostgreSQL holds everything up to head
                await self.redis.trim_journal(link, head - 100)

    def _release(self, link: str) -> None:
        mark = self.durable.get(link, 0)
        waiters = self._waiters.get(link)
        if not waiters:
            return
        keep = []
        for seq, fut in waiters:
            if seq <= mark:
                if not fut.done():
                    fut.set_result(None)
            elif not fut.done():
                keep.append((seq, fut))
        self._waiters[link] = keep
