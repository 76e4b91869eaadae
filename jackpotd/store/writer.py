"""The ledger writer: group-commits each link's journal into PostgreSQL and announces what is durable.

One writer runs per deployment (the `jackpotd serve` supervisor). After each commit it publishes, for
each link, the sequences it appended and the request hash of each, so every gRPC worker can answer its
waiting callers, and only those whose very request the ledger now holds. Every half second it also
probes each link's Redis state against the ledger and rebuilds a link that Redis forgot, that went back
or that forked from the ledger, and it reports its health (the key `jackpot:health`). A link whose entry
the ledger refuses is fenced alone; the others go on. Writers are safe to run twice: `write_batch`
skips entries already in the ledger and its statement refuses a head that moved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from ..metrics import DURABILITY_CHECKS, LEDGER_BATCH, LEDGER_LAG, LINK_FENCED, LINK_REBUILDS, POOL_CENTS
from . import keys, ledger, recovery
from ..service.errors import LinkFenced, LinkLost
from .redis_pools import HASH_PREFIX, Durable, RedisPools

log = logging.getLogger("jackpotd.writer")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class LedgerWriter:
    """Background task that moves journal entries into the ledger and keeps every link's Redis honest."""

    LINKS_REFRESH = 0.2
    PROBE_EVERY = 0.5
    STALLED_AFTER = 3.0  # seconds of failing appends before health says the writer cannot serve
    REBUILDS_BEFORE_FENCE = 3  # rebuilds of one link within REBUILD_WINDOW seconds: stop rebuilding, fence it
    REBUILD_WINDOW = 60.0

    def __init__(self, redis: RedisPools, pg: asyncpg.Pool, batch: int = 2000, linger: float = 0.005,
                 retention_seconds: int = 60) -> None:
        self.redis = redis
        self.pg = pg
        self.batch = batch
        self.linger = linger  # group commit: a batch with company waits this long for more
        self.retention_seconds = retention_seconds
        self.durable: dict[str, int] = {}  # each link's ledger head, as announced
        self.fenced: dict[str, str] = {}  # link -> which entry the ledger refused, and why
        self.problems: dict[str, str] = {}  # link -> why it cannot be served right now (a failed rebuild)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._heads: ledger.HeadCache = {}
        self._held = ledger.HeldConnection(pg)
        self._links_cache: list[str] = []
        self._links_read_at = -1e9
        self._probed_at = -1e9
        self._failing: tuple[float, str] | None = None  # since when, and why, appends fail
        self._unannounced: dict[str, list[ledger.Written]] = {}  # appended, not yet announced
        self._rebuilt_at: dict[str, list[float]] = {}

    async def start(self) -> None:
        """Load the heads and fences from PostgreSQL and start the loop."""
        self._heads = await ledger.heads_of(self.pg, None)
        self.durable = {link: head.seq for link, head in self._heads.items()}
        fences = await ledger.fences(self.pg)
        self.fenced = {link: ledger.refused_entry(f.seq, f.reason) for link, f in fences.items()}
        for link in self.fenced:
            LINK_FENCED.labels(link).set(1)
        self._task = asyncio.create_task(self._run(), name="ledger-writer")

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Stop after the current batch."""
        self._stopping = True
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._held.release()

    async def _run(self) -> None:
        backoff = 0.05
        while not self._stopping:
            try:
                await self._once()
                backoff = 0.05
                self._failing = None
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a store hiccup: callers wait, the loop retries
                log.warning("ledger writer retrying after error: %s", e)
                if self._failing is None:
                    self._failing = (time.monotonic(), str(e))
                else:
                    self._failing = (self._failing[0], str(e))
                await self._held.release()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    def stalled(self) -> str | None:
        """Why nothing has been appended for STALLED_AFTER seconds or more, while the writer keeps failing."""
        if self._failing is None or time.monotonic() - self._failing[0] < self.STALLED_AFTER:
            return None
        return f"appending has failed for {time.monotonic() - self._failing[0]:.0f} s: {self._failing[1][:300]}"

    async def _links(self) -> list[str]:
        """The links to follow: every link the ledger holds and every link Redis announces (a new one waits
        up to LINKS_REFRESH seconds), less the fenced ones."""
        now = time.monotonic()
        if now - self._links_read_at >= self.LINKS_REFRESH:
            self._links_cache = sorted(set(await self.redis.links()) | set(self.durable))
            self._links_read_at = now
        return [link for link in self._links_cache if link not in self.fenced]

    async def _once(self) -> None:
        await self._announce()  # what an earlier pass appended but could not announce
        if time.monotonic() - self._probed_at >= self.PROBE_EVERY:
            await self.probe()
        links = await self._links()
        if not links:
            await asyncio.sleep(0.05)
            return
        streams = {keys.journal(link): f"0-{self.durable.get(link, 0)}" for link in links}
        names = {keys.journal(link): link for link in links}
        rows = await self.redis.read_journals(streams, self.batch, block_ms=50)
        if not rows:
            return
        batch = self._entries(rows, streams, names)
        if 1 < len(batch) < self.batch // 16 and self.linger:
            # Under load one commit per handful of entries costs more than the entries, and every waiting
            # caller's answer, so wait for more; a lone entry (a quiet link) is committed at once.
            await asyncio.sleep(self.linger)
            more = await self.redis.read_journals(streams, self.batch)
            if more:
                batch += self._entries(more, streams, names)
        await self._append(batch)

    async def _append(self, batch: list[ledger.JournalEntry]) -> None:
        started = time.perf_counter()
        conn = await self._held.get()
        try:
            appended = await ledger.write_batch(conn, batch, self._heads)
        except Exception as e:
            if not recovery.refuses(e):
                raise
            appended = await self._isolate(conn, batch)
        LEDGER_BATCH.observe(len(batch))
        LEDGER_LAG.observe(time.perf_counter() - started)
        for link, written in appended.written.items():  # in the ledger now, whatever happens next
            self.durable[link] = written[-1].seq
            self._unannounced.setdefault(link, []).extend(written)
        for link, refused in appended.refused.items():
            if refused.malformed:  # a fault in what we wrote ourselves: stop the link, never guess
                await self._fence(link, refused.seq, refused.reason)
            else:  # Redis forked from the ledger, or its balances are not the postings': rebuild it
                await self._rebuild(link, recovery.FORKED, refused.reason)
        by_entry = {(e.link_id, e.seq): e for e in batch}
        for link, written in appended.written.items():  # each link's gauges show its newest balances
            for pool, bal in by_entry[(link, written[-1].seq)].balances.items():
                POOL_CENTS.labels(link, pool).set(bal // 1_000_000)
        await self._announce()

    async def _announce(self) -> None:
        """Tell the workers what the ledger now holds, and let answered keys expire; kept until it succeeds."""
        if not self._unannounced:
            return
        await self.redis.announce_durable({link: self._durable(link, written)
                                           for link, written in self._unannounced.items()}, self.retention_seconds)
        for link, written in self._unannounced.items():
            head = written[-1].seq
            if head % 1000 < len(written):  # trim now and then; PostgreSQL holds everything up to head
                await self.redis.trim_journal(link, head - 100)
        self._unannounced = {}

    @staticmethod
    def _durable(link: str, written: list[ledger.Written]) -> Durable:
        """The announcement of a link's appended entries, and the keys that may now leave Redis."""
        expire = [keys.record(link, w.request_id) for w in written]
        expire += [keys.round_(link, *w.finished_round) for w in written if w.finished_round is not None]
        return Durable(written[0].seq, [w.identity[:HASH_PREFIX] for w in written], expire)

    async def _isolate(self, conn: Any, batch: list[ledger.JournalEntry]) -> ledger.Appended:
        """The ledger refused the batch for what it holds: append entry by entry, and fence the link whose
        entry is refused. Every other link, and the fenced link's earlier entries, are appended."""
        out = ledger.Appended()
        by_link: dict[str, list[ledger.JournalEntry]] = {}
        for e in batch:
            by_link.setdefault(e.link_id, []).append(e)
        for link, entries in by_link.items():
            for e in sorted(entries, key=lambda x: x.seq):
                try:
                    one = await ledger.write_batch(conn, [e], self._heads)
                except Exception as error:
                    if not recovery.refuses(error):
                        raise
                    await self._fence(link, e.seq, str(error))
                    break
                if link in one.refused:
                    out.refused[link] = one.refused[link]
                    break
                out.heads.update(one.heads)
                out.written.setdefault(link, []).extend(one.written.get(link, []))
        return out

    async def _fence(self, link: str, seq: int, reason: str) -> None:
        self.fenced[link] = ledger.refused_entry(seq, reason)
        LINK_FENCED.labels(link).set(1)
        await recovery.fence(self.redis, self.pg, link, seq, reason)

    async def _rebuild(self, link: str, why: str, detail: str) -> None:
        now = time.monotonic()
        recent = [t for t in self._rebuilt_at.get(link, []) if now - t < self.REBUILD_WINDOW]
        if why == recovery.FORKED and len(recent) >= self.REBUILDS_BEFORE_FENCE:
            # A Redis that keeps forking from the ledger is not cured by rebuilding: stop, let a person look.
            # (A Redis that lost everything, a restarted one, is simply rebuilt however often it happens.)
            await self._fence(link, self.durable.get(link, 0) + 1,
                              f"Redis forked from the ledger {len(recent) + 1} times in "
                              f"{self.REBUILD_WINDOW:.0f} s; last: {detail}")
            return
        LINK_REBUILDS.labels(link, why).inc()
        log.error("link %s: Redis %s (%s); rebuilding it from the ledger", link, why, detail)
        self.problems[link] = f"Redis {why}; rebuilding from the ledger"
        try:
            head = await recovery.rebuild(self.redis, self.pg, link)
        except Exception as e:
            self.problems[link] = f"Redis {why}; the rebuild failed and is retried: {e}"
            log.error("link %s: rebuild failed: %s", link, e)
            return
        self._heads.pop(link, None)  # read afresh with the next batch
        self.durable[link] = head
        self.problems.pop(link, None)
        if why == recovery.FORKED:
            self._rebuilt_at[link] = [*recent, now]

    async def probe(self) -> None:
        """Compare each link's Redis state with the ledger, rebuild what Redis lost, lift fences an operator
        resolved, and report the writer's health."""
        self._probed_at = time.monotonic()
        resolved = set(self.fenced) - set(await ledger.fences(self.pg))
        for link in resolved:  # `jackpotd unfence` removed the fence: follow the link again
            log.warning("link %s: fence lifted", link)
            self.fenced.pop(link)
            self._rebuilt_at.pop(link, None)
            LINK_FENCED.labels(link).set(0)
            await self.redis.set_fence(link, None)
            self._heads.pop(link, None)
            self.durable[link] = (await ledger.heads_of(self.pg, [link]))[link].seq
        links = await self._links()
        unknown = [link for link in links if link not in self._heads]
        if unknown:
            self._heads.update(await ledger.heads_of(self.pg, unknown))
        probes = await self.redis.probe([*links, *self.fenced])
        for link in links:
            head = self._heads.get(link, ledger.Head(0, b"", {}))
            state = recovery.classify(probes[link], head.seq, head.identity)
            if state in (recovery.LOST, recovery.BEHIND, recovery.FORKED):
                await self._rebuild(link, state, f"Redis at sequence {probes[link].seq}, the ledger at {head.seq}")
        for link in self.fenced:  # Redis may have lost the fence with the rest: say it again every time
            try:
                if not probes[link].has_config and self.durable.get(link, 0) > 0:
                    await recovery.rebuild(self.redis, self.pg, link)  # the fence comes back with the link
                await self.redis.set_fence(link, self.fenced[link])
            except Exception as e:  # one link's trouble must not silence the heartbeat of all
                log.error("link %s: restating its fence failed: %s", link, e)
        report: dict[str, Any] = {"at_ms": now_ms(), "problems": {
            **{link: f"fenced: {why}" for link, why in self.fenced.items()}, **self.problems}}
        stalled = self.stalled()
        if stalled is not None:
            report["stalled"] = stalled
        await self.redis.set_health(report)

    @staticmethod
    def _entries(rows: list[tuple[str, list[tuple[str, dict[str, str]]]]], streams: dict[str, str],
                 names: dict[str, str]) -> list[ledger.JournalEntry]:
        """Parse XREAD rows and move each stream's read position past them."""
        batch: list[ledger.JournalEntry] = []
        for stream, entries in rows:
            batch += ledger.journal_entries(names[stream], ((int(i.split("-")[1]), f) for i, f in entries))
            if entries:
                streams[stream] = entries[-1][0]
        return batch


@dataclass(slots=True)
class _Waiter:
    seq: int
    identity: str | None  # of the request; None: a read that waits only for the sequence to be durable
    deadline: float
    fut: asyncio.Future[None] = field(repr=False)


class DurabilityWatcher:
    """Lets a gRPC worker wait until the ledger holds an entry (ARCHITECTURE write path 4).

    A caller is answered only when the ledger holds its very request at its sequence: a sequence number
    alone could belong to another operation if Redis went back and reused it.
    """

    POLL_SECONDS = 0.5

    def __init__(self, redis: RedisPools, pg: asyncpg.Pool, timeout: float = 10.0) -> None:
        self.redis = redis
        self.pg = pg
        self.timeout = timeout
        self.marks: dict[str, int] = {}
        self._waiters: dict[str, list[_Waiter]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._checks: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        pubsub = self.redis.client.pubsub()
        await pubsub.subscribe(keys.DURABLE_CHANNEL)
        self.marks = await ledger.heads(self.pg)  # the floor below which a Redis has gone back
        self._tasks = [asyncio.create_task(self._listen(pubsub), name="durability-listener"),
                       asyncio.create_task(self._poll(), name="durability-poller")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for waiters in self._waiters.values():
            for w in waiters:
                if not w.fut.done():
                    w.fut.set_exception(ConnectionError("shutting down"))

    def floor(self, link_id: str) -> int:
        """The ledger's durable sequence of the link as this process knows it."""
        return self.marks.get(link_id, 0)

    async def wait_durable(self, link_id: str, seq: int, identity: str | None = None) -> None:
        """Return once the ledger holds entry `seq` of the link (and, given a request's identity, holds that
        very request there); TimeoutError if not in time, LinkLost or LinkFenced if it never will."""
        loop = asyncio.get_running_loop()
        if self.marks.get(link_id, 0) >= seq and identity is None:
            return
        waiter = _Waiter(seq, identity, loop.time() + self.timeout, loop.create_future())
        self._waiters.setdefault(link_id, []).append(waiter)
        if self.marks.get(link_id, 0) >= seq:  # announced before we asked (a retry): ask the ledger itself
            await self._verify(link_id, [waiter])
        await waiter.fut

    async def _listen(self, pubsub: Any) -> None:
        while True:
            try:
                async for msg in pubsub.listen():
                    if msg["type"] == "message":
                        self._on_message(msg["data"])
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                raise
            except Exception as e:  # a dropped connection: resubscribe; the poller covers the gap
                log.warning("durability watcher resubscribing after error: %s", e)
                await asyncio.sleep(0.1)
                with contextlib.suppress(Exception):
                    await pubsub.subscribe(keys.DURABLE_CHANNEL)

    def _on_message(self, data: str) -> None:
        link, kind, seq_text, *rest = data.split(" ")
        seq = int(seq_text)
        if kind == "d":  # entries seq.. appended, with their request hashes
            self._durable(link, seq, rest)
        elif kind == "rebuilt":
            self.marks[link] = max(self.marks.get(link, 0), seq)
            self._fail(link, lambda w: w.seq > seq, lambda w: LinkLost(
                f"link {link}: Redis lost entry {w.seq} before the ledger recorded it and was rebuilt from the "
                "ledger; retry with the same request_id"))
            waiting = [w for w in self._waiters.get(link, []) if not w.fut.done()]
            if waiting:
                self._check(link, waiting)
        elif kind == "fenced":
            reason = " ".join(rest)
            self._fail(link, lambda w: w.seq >= seq, lambda w: LinkFenced(
                f"link {link} is fenced: the ledger refused entry {seq}: {reason}; see `jackpotd fenced`; "
                "retry with the same request_id once it is resolved"))

    def _durable(self, link: str, first: int, hashes: list[str]) -> None:
        last = first + len(hashes) - 1
        if last > self.marks.get(link, 0):
            self.marks[link] = last
        waiters = self._waiters.get(link)
        if not waiters:
            return
        keep, missed = [], []
        for w in waiters:
            if w.fut.done():
                continue
            if w.seq > last:
                keep.append(w)
            elif w.identity is None:
                w.fut.set_result(None)
            elif w.seq < first:
                missed.append(w)  # announced earlier, before this process listened: ask the ledger
                keep.append(w)
            elif w.identity.startswith(hashes[w.seq - first]):
                w.fut.set_result(None)
            else:
                w.fut.set_exception(self._replaced(link, w.seq))
        self._waiters[link] = keep
        if missed:
            self._check(link, missed)

    @staticmethod
    def _replaced(link: str, seq: int) -> LinkLost:
        return LinkLost(f"link {link}: the ledger holds another operation at sequence {seq}; Redis lost this one "
                        "before the ledger recorded it; retry with the same request_id")

    def _fail(self, link: str, which: Any, error: Any) -> None:
        keep = []
        for w in self._waiters.get(link, []):
            if w.fut.done():
                continue
            if which(w):
                w.fut.set_exception(error(w))
            else:
                keep.append(w)
        self._waiters[link] = keep

    def _check(self, link: str, waiters: list[_Waiter]) -> None:
        """Verify these waiters against the ledger in the background."""
        task = asyncio.ensure_future(self._verify(link, waiters))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _verify(self, link: str, waiters: list[_Waiter]) -> None:
        """Settle waiters from the ledger itself: their entry is there with their request, or another's."""
        try:
            held = await ledger.entry_identities(self.pg, link, [w.seq for w in waiters])
        except Exception as e:  # the poller asks again
            log.warning("durability check of link %s failed: %s", link, e)
            return
        for w in waiters:
            found = held.get(w.seq)
            if w.fut.done() or found is None:
                continue
            if w.identity is None or found == w.identity:
                DURABILITY_CHECKS.labels("held").inc()
                w.fut.set_result(None)
            else:
                DURABILITY_CHECKS.labels("replaced").inc()
                w.fut.set_exception(self._replaced(link, w.seq))

    async def _poll(self) -> None:
        """Now and then ask the ledger about waiters no announcement has settled (one may have been lost in
        a reconnect), and fail waiters past their deadline."""
        while True:
            await asyncio.sleep(self.POLL_SECONDS)
            now = asyncio.get_running_loop().time()
            for link, waiters in list(self._waiters.items()):
                pending = [w for w in waiters if not w.fut.done()]
                self._waiters[link] = pending
                stale = [w for w in pending if w.deadline - self.timeout + self.POLL_SECONDS <= now]
                if stale:
                    await self._verify(link, stale)
                for w in pending:
                    if w.deadline <= now and not w.fut.done():
                        w.fut.set_exception(TimeoutError(f"entry {w.seq} of link {link} is not in the ledger yet"))
