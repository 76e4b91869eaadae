"""The ledger writer: group-commits each link's journal into PostgreSQL and announces what is durable.

One writer runs per deployment (the `jackpotd serve` supervisor). After each commit it sets
`{link:<id>}:durable` and publishes the new mark, so every gRPC worker can answer its waiting callers.
Writers are safe to run twice: `write_batch` skips entries already in the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import asyncpg

from ..metrics import LEDGER_BATCH, LEDGER_LAG, POOL_CENTS
from . import ledger
from .redis_pools import RedisPools, journal_key

log = logging.getLogger("jackpotd.writer")


class LedgerWriter:
    """Background task that moves journal entries into the ledger."""

    LINKS_REFRESH = 0.2

    def __init__(self, redis: RedisPools, pg: asyncpg.Pool, batch: int = 2000, linger: float = 0.005) -> None:
        self.redis = redis
        self.pg = pg
        self.batch = batch
        self.linger = linger  # group commit: a batch with company waits this long for more
        self.durable: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.failed: BaseException | None = None
        self._heads: ledger.HeadCache = {}
        self._conn: Any = None  # held between batches: acquiring and resetting a pooled one costs a round trip
        self._links_cache: list[str] = []
        self._links_read_at = -1e9

    async def start(self) -> None:
        """Load the heads from PostgreSQL, announce them, and start the loop."""
        self.durable = await ledger.heads(self.pg)
        if self.durable:
            await self.redis.announce_durable(self.durable)
        self._task = asyncio.create_task(self._run(), name="ledger-writer")

    async def stop(self) -> None:
        """Stop after the current batch."""
        self._stopping = True
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._drop_connection()

    async def _drop_connection(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(Exception):
                await self.pg.release(conn)

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
                await self._drop_connection()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _links(self) -> list[str]:
        """The links to follow, re-read at most every LINKS_REFRESH seconds (a new link waits that long)."""
        now = time.monotonic()
        if now - self._links_read_at >= self.LINKS_REFRESH:
            self._links_cache = await self.redis.links()
            self._links_read_at = now
        return self._links_cache

    async def _once(self) -> None:
        links = await self._links()
        if not links:
            await asyncio.sleep(0.05)
            return
        streams = {journal_key(link): f"0-{self.durable.get(link, 0)}" for link in links}
        rows = await self.redis.read_journals(streams, self.batch, block_ms=50)
        if not rows:
            return
        batch = self._entries(rows, streams)
        if 1 < len(batch) < self.batch // 16 and self.linger:
            # Under load one commit per handful of entries costs more than the entries, and every waiting
            # caller's answer, so wait for more; a lone entry (a quiet link) is committed at once.
            await asyncio.sleep(self.linger)
            more = await self.redis.read_journals(streams, self.batch)
            if more:
                batch += self._entries(more, streams)
        started = time.perf_counter()
        if self._conn is None or self._conn.is_closed():
            self._conn = await self.pg.acquire()
        heads = await ledger.write_batch(self._conn, batch, self._heads)
        LEDGER_BATCH.observe(len(batch))
        LEDGER_LAG.observe(time.perf_counter() - started)
        last = {entry.link_id: entry for entry in batch}  # each link's gauges show its newest balances
        for entry in last.values():
            for pool, bal in entry.balances.items():
                POOL_CENTS.labels(entry.link_id, pool).set(bal // 1_000_000)
        advanced = {link: head for link, head in heads.items() if head > self.durable.get(link, 0)}
        if advanced:
            self.durable.update(advanced)
            await self.redis.announce_durable(advanced)
        for link, head in heads.items():
            if head % 1000 < len(batch):  # trim now and then; PostgreSQL holds everything up to head
                await self.redis.trim_journal(link, head - 100)


    @staticmethod
    def _entries(rows: list[tuple[str, list[tuple[str, dict[str, str]]]]],
                 streams: dict[str, str]) -> list[ledger.JournalEntry]:
        """Parse XREAD rows and move each stream's read position past them."""
        batch: list[ledger.JournalEntry] = []
        for stream, entries in rows:
            link = stream[len("{link:"):stream.index("}")]
            batch += ledger.journal_entries(link, ((int(i.split("-")[1]), f) for i, f in entries))
            if entries:
                streams[stream] = entries[-1][0]
        return batch


class DurabilityWatcher:
    """Lets a gRPC worker wait until an entry is committed in PostgreSQL (ARCHITECTURE write path 4)."""

    POLL_SECONDS = 0.5

    def __init__(self, redis: RedisPools, timeout: float = 10.0) -> None:
        self.redis = redis
        self.timeout = timeout
        self.marks: dict[str, int] = {}
        self._waiters: dict[str, list[tuple[int, float, asyncio.Future[None]]]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        pubsub = self.redis.client.pubsub()
        await pubsub.subscribe(self.redis.DURABLE_CHANNEL)
        self._tasks = [asyncio.create_task(self._listen(pubsub), name="durability-listener"),
                       asyncio.create_task(self._poll(), name="durability-poller")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for waiters in self._waiters.values():
            for _, _, fut in waiters:
                if not fut.done():
                    fut.set_exception(ConnectionError("shutting down"))

    async def wait_durable(self, link_id: str, seq: int) -> None:
        """Return once entry `seq` of the link is in the ledger; TimeoutError if it is not in time."""
        if self.marks.get(link_id, 0) >= seq:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.setdefault(link_id, []).append((seq, loop.time() + self.timeout, fut))
        await fut

    async def _listen(self, pubsub: Any) -> None:
        while True:
            try:
                async for msg in pubsub.listen():
                    if msg["type"] == "message":
                        link, _, seq = msg["data"].rpartition(" ")
                        self._advance(link, int(seq))
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                raise
            except Exception as e:  # a dropped connection: resubscribe; the poller covers the gap
                log.warning("durability watcher resubscribing after error: %s", e)
                await asyncio.sleep(0.1)
                with contextlib.suppress(Exception):
                    await pubsub.subscribe(self.redis.DURABLE_CHANNEL)

    async def _poll(self) -> None:
        """Now and then read the marks of links with waiters (an announcement may predate our
        subscription or be lost in a reconnect), and fail waiters past their deadline."""
        while True:
            await asyncio.sleep(self.POLL_SECONDS)
            now = asyncio.get_running_loop().time()
            for link, waiters in list(self._waiters.items()):
                if not waiters:
                    continue
                with contextlib.suppress(Exception):
                    self._advance(link, await self.redis.durable_mark(link))
                for want, deadline, fut in self._waiters.get(link, []):
                    if deadline <= now and not fut.done():
                        fut.set_exception(TimeoutError(f"entry {want} of link {link} is not in the ledger yet"))

    def _advance(self, link: str, seq: int) -> None:
        if seq > self.marks.get(link, 0):
            self.marks[link] = seq
        mark = self.marks.get(link, 0)
        waiters = self._waiters.get(link)
        if not waiters:
            return
        keep = []
        for want, deadline, fut in waiters:
            if fut.done():
                continue
            if want <= mark:
                fut.set_result(None)
            else:
                keep.append((want, deadline, fut))
        self._waiters[link] = keep
