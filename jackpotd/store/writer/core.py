"""The ledger writer: group-commits each link's journal into PostgreSQL and announces what is durable.

Each link is written by one writer: the one whose process holds the lease of the link's shard (store/leader.py,
store/shards.py); all in one process by default. After each commit it publishes, for
each link, the sequences it appended and the request hash of each, so every gRPC worker can answer its
waiting callers, and only those whose very request the ledger now holds. Every half second it also
probes each link's Redis state against the ledger and rebuilds a link that Redis forgot, that went back
or that forked from the ledger, and it reports its health (keys.health of its process). A link whose entry
the ledger refuses is fenced alone; the others go on. Writers are safe to run twice: `write_batch`
skips entries already in the ledger and its statement refuses a head that moved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from ...backoff import Backoff, exponential
from ...clock import Clock, now_ms
from ...metrics import LEDGER_BATCH, LEDGER_LAG, LINK_FENCED, LINK_REBUILDS, POOL_CENTS, WRITER_FENCED
from ...service.errors import Unavailable
from .. import ledger, recovery
from ..checkpoints import Anchor, Checkpointer
from ..dating_clock import DatingClock
from ..heartbeats import WriterHealth
from ..ledger.fences import FenceKind
from ..ledger.head_guard import Tamper, Tampered
from ..liveness import LeaseExpired
from ..redis.announcements import DurableBatch
from ..redis.journal import Journal
from ..redis.pools import RedisPools
from ..seen_fill import SeenFiller
from ..shards import ALL, shard_of
from ..throttle import Throttled
from .batches import isolate
from .fences import WriterFences
from .heads import WriterHeads

log = logging.getLogger("jackpotd.writer")
Leads = Callable[[], Awaitable[bool]]  # whether this process still holds its shards' leases
LeaseCheck = Callable[[], None]  # raises LeaseExpired unless this process's lease still stands (store/liveness.py)


class LeaseLost(Exception):
    """A link's head moved past the one this writer left, and its lease is gone: another writer has the link."""


async def _always() -> bool:
    return True


class LedgerWriter:
    """Background task that moves journal entries into the ledger and keeps every link's Redis honest."""

    LINKS_REFRESH = 0.2
    LINKS_RETRY = 5.0  # seconds before the list of links is read again after a failure
    PROBE_EVERY = 0.5
    STALLED_AFTER = 3.0  # seconds of failing appends before health says the writer cannot serve
    REBUILDS_BEFORE_FENCE = 3  # rebuilds of one link within REBUILD_WINDOW seconds: stop rebuilding, fence it
    REBUILD_WINDOW = 60.0
    STOP_WAIT = 5.0  # seconds stop() lets the current pass finish
    RETRY_WAITS = exponential(0.1, 2.0)  # after failing passes in a row: 0.1, 0.2, 0.4 ... 2 s

    def __init__(self, redis: RedisPools, pg: ledger.Pool, batch: int = 2000, linger: float = 0.005,
                 retention_seconds: int = 60, checkpoints: Checkpointer | None = None, clock: Clock = now_ms,
                 shards: frozenset[int] = ALL, member: int = 0, leads: Leads = _always,
                 epochs: Mapping[int, int] | None = None, lease_check: LeaseCheck | None = None) -> None:
        self.redis = redis
        self.shards = shards  # the writer shards whose links this writer writes (its process holds their leases)
        self.member = member  # its process's number among the writers: which heartbeat key is its
        self.pg = pg
        # no entry is dated past it (chain.FUTURE_SLACK_MS): the service's own clock, checked against Redis's
        self.clock = DatingClock(clock, redis.time_ms, lambda: redis.clock_tolerance_ms)
        self.batch = batch
        self.linger = linger  # group commit: a batch with company waits this long for more
        self.retention_seconds = retention_seconds
        self.durable: dict[str, int] = {}  # each link's ledger head, as announced
        self.problems: dict[str, str] = {}  # link -> why it cannot be served right now (a failed rebuild)
        self.unreachable: dict[str, str] = {}  # link -> why its Redis (a cluster node) cannot be probed now
        self._complain = Throttled(log).warn  # for what is tried several times a second
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
        self._metered_links: set[str] = set()  # links whose series exist (_metered)
        self.checkpoints = checkpoints  # heads anchored outside the database (store/checkpoints.py)
        self.heads = WriterHeads(checkpoints)  # what each link's ledger head is held to (store/writer/heads.py)
        self.fences = WriterFences(redis, pg, self.heads)  # the links stopped for a person (store/writer/fences.py)
        self.leads = leads  # asked before a head moved past this writer's is called tampering
        self.seen = SeenFiller(redis, pg)  # each link's filter of used ids (store/seen_fill.py)
        self.epochs = epochs  # shard -> the lease epoch its process took: every append carries them (migration 019)
        # before every append, rebuild and announcement: a woken leader stops (None: outside the leases, a tool)
        self.lease_check: LeaseCheck = lease_check or (lambda: None)
        self.lost: str | None = None  # why the writer stopped for good: its lease is another's (LeaseFenced, expired)

    @property
    def fenced(self) -> dict[str, str]:
        """The fenced links of this writer, and what calls on them are told."""
        return self.fences.why

    async def start(self) -> None:
        """Load the heads and fences from PostgreSQL, fence every link whose head its anchors do not back, and start
        the loop."""
        self._heads = await ledger.heads_of(self.pg, None)
        self.fences.load(f for link, f in (await ledger.fences(self.pg)).items() if self.owns(link))
        anchored = self.checkpoints.links() if self.checkpoints is not None else []
        known = sorted(link for link in {*self._heads, *anchored} if self.owns(link))
        await self.fences.restore_anchored(known)
        await self._guard([link for link in known if link not in self.fenced])
        self.durable = {link: head.seq for link, head in self._heads.items()}
        self._task = asyncio.create_task(self._run(), name="ledger-writer")

    async def _guard(self, links: list[str]) -> list[str]:
        """Check these links' ledger heads against the heads they are held to; fence each one tampered with (and
        forget its cached head). Returns the links backed."""
        verdicts = await self.heads.check(self.pg, links)
        backed = []
        for link, verdict in verdicts.items():
            if isinstance(verdict, Tampered):
                self._heads.pop(link, None)
                if verdict.kind is Tamper.EXTENDED and not await self.leads():  # another writer has it now
                    raise LeaseLost(f"link {link}: its head moved past this writer's and its lease is gone")
                await self._fence(link, verdict.first_seq, verdict.reason, FenceKind(verdict.kind.value),
                                  verdict.found)
            else:
                backed.append(link)
        return backed

    def owns(self, link: str) -> bool:
        """Whether this writer writes the link (its shard's lease is this process's)."""
        return shard_of(link) in self.shards

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self, graceful: bool = True) -> None:
        """Stop after the current pass (within STOP_WAIT s, else mid-pass), announcing what it appended. Not
        `graceful` (lease lost, cut off from Redis): at once, announcing nothing (the poller finds it in the ledger)."""
        self._stopping = True
        if self._task:
            try:
                if graceful:
                    await asyncio.wait([self._task], timeout=self.STOP_WAIT)
            finally:  # also when this wait is itself cancelled: the task must never outlive stop()
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
        if graceful:  # a Redis that does not answer would hold the shards' leases 5 s more
            with contextlib.suppress(Exception):  # else the watchers' poller finds them in the ledger
                await self._announce()
        await self.heads.flush(force=True)
        await self._held.release()
        await self.seen.stop()

    async def _run(self) -> None:
        """Pass after pass until stopped; a failing pass is retried with backoff (callers wait meanwhile)."""
        backoff = Backoff(self.RETRY_WAITS)
        while not self._stopping:
            try:
                await self._pass()
                backoff.reset()
            except (ledger.LeaseFenced, LeaseExpired) as e:  # another writer has (or may have) its shards: stop now
                if isinstance(e, ledger.LeaseFenced):
                    WRITER_FENCED.inc()
                self.lost = str(e)
                log.error("%s; this writer stops at once", e)
                return
            except Exception:  # logged by _pass
                await backoff.sleep()

    async def _pass(self) -> None:
        try:
            await self._once()
        except (ledger.LeaseFenced, LeaseExpired):
            await self._held.release()
            raise
        except Exception as e:  # a store hiccup: note since when appends fail, start the next pass afresh
            if not self._stopping:  # (stopping at once, a pass cut short fails as it may: nothing to retry)
                log.warning("ledger writer retrying after error: %s", e)
            self._failing = (time.monotonic() if self._failing is None else self._failing[0], str(e))
            await self._held.release()
            raise
        self._failing = None

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
            try:
                announced = set(await self.redis.links())
            except Unavailable as e:  # (a cluster node that holds the list is down): the links known go on
                if not self._links_cache and not self.durable:
                    raise
                self._complain(f"reading the list of links failed ({e}); writing the links known")
                announced = set(self._links_cache)
                now += self.LINKS_RETRY  # a node that is down may take seconds to refuse: not every pass
            self._links_cache = sorted(link for link in announced | set(self.durable) if self.owns(link))
            self._metered(self._links_cache)
            self._links_read_at = now
        return [link for link in self._links_cache if link not in self.fenced]

    def _metered(self, links: list[str]) -> None:
        """Each link's fence gauge and rebuild counters, at their values (0 until something happens) from when this
        writer first follows it: an alert sees 0, not nothing."""
        for link in links:
            if link not in self._metered_links:
                self._metered_links.add(link)
                LINK_FENCED.labels(link).set(1 if link in self.fenced else 0)
                for why in recovery.REBUILD:
                    LINK_REBUILDS.labels(link, why)

    async def _once(self) -> None:
        self.lease_check()
        await self._announce()  # what an earlier pass appended but could not announce
        if time.monotonic() - self._probed_at >= self.PROBE_EVERY:
            await self.probe()
        links = await self._links()
        if not links:
            await asyncio.sleep(0.05)
            return
        after = {link: self.durable.get(link, 0) for link in links}
        rows = await self.redis.read_journals(after, self.batch, block_ms=50)
        if not rows:
            return
        batch = self._entries(rows, after)
        if 1 < len(batch) < self.batch // 16 and self.linger:
            # Under load one commit per handful of entries costs more than the entries, and every waiting
            # caller's answer, so wait for more; a lone entry (a quiet link) is committed at once.
            await asyncio.sleep(self.linger)
            more = await self.redis.read_journals(after, self.batch)
            if more:
                batch += self._entries(more, after)
        await self._append(batch)

    async def _append(self, batch: list[ledger.JournalEntry]) -> None:
        started = time.perf_counter()
        unread = sorted({e.link_id for e in batch if e.link_id not in self._heads})
        if unread:  # heads read afresh (a start, a rebuild, a moved head) must be the ones left: never written onto
            await self._read_heads(await self._guard(unread))
            batch = [e for e in batch if e.link_id in self._heads]  # fenced, or moved since: not now
            if not batch:
                return
        self.lease_check()
        conn = await self._held.get()
        await self.clock.refresh()
        try:
            appended = await ledger.write_batch(conn, batch, self._heads, self.clock, self.epochs)
        except Exception as e:
            if not ledger.refuses(e):
                raise
            appended = await isolate(conn, batch, self._heads, self.clock, self._fence, self.epochs)
        LEDGER_BATCH.observe(len(batch))
        LEDGER_LAG.observe(time.perf_counter() - started)
        for link, written in appended.written.items():  # in the ledger now, whatever happens next
            self.durable[link] = written[-1].seq
            self._unannounced.setdefault(link, []).extend(written)
            head = self._heads.get(link)
            if head is not None and head.seq == written[-1].seq:
                self.heads.wrote(link, Anchor(head.seq, head.hash), [Anchor(w.seq, w.hash) for w in written])
        for link, refused in appended.refused.items():
            if refused.malformed:  # a fault in what we wrote ourselves: stop the link, never guess
                await self._fence(link, refused.seq, refused.reason)
            else:  # Redis forked from the ledger, or its balances are not the postings': rebuild it
                await self._rebuild(link, recovery.RecoveryState.FORKED, refused.reason)
        by_entry = {(e.link_id, e.seq): e for e in batch}
        for link, written in appended.written.items():  # each link's gauges show its newest balances
            for pool, bal in by_entry[(link, written[-1].seq)].balances.items():
                POOL_CENTS.labels(link, pool).set(bal // 1_000_000)
        await self._announce()

    async def _announce(self) -> None:
        """Tell the workers what the ledger now holds, and let answered keys expire; kept until it succeeds."""
        if not self._unannounced:
            return
        self.lease_check()  # what it appended is in the ledger, but a woken leader writes nothing to Redis
        failed = await self.redis.announce_durable({link: self._durable(written)
                                                    for link, written in self._unannounced.items()},
                                                   self.retention_seconds)
        for link, written in self._unannounced.items():
            head = written[-1].seq
            if link not in failed and head % 1000 < len(written):  # now and then; PostgreSQL holds it all
                await self.redis.trim_journal(link, head - 100)
        # a cluster node that failed keeps its links' announcements for the next pass; the others are done
        self._unannounced = {link: w for link, w in self._unannounced.items() if link in failed}

    @staticmethod
    def _durable(written: list[ledger.Written]) -> DurableBatch:
        """The announcement of a link's appended entries, with the records and rounds they let go."""
        return DurableBatch(written[0].seq, [w.identity for w in written], [w.request_id for w in written],
                       [w.finished_round for w in written if w.finished_round is not None])

    async def _read_heads(self, links: list[str]) -> None:
        """Cache the ledger's heads of these links (with their balances), each only if it is the very head just
        checked: a head changed between the check and this read waits for the next check."""
        for link, head in (await ledger.heads_of(self.pg, links)).items():
            if self.heads.left.get(link) == Anchor(head.seq, head.hash):
                self._heads[link] = head

    async def _fence(self, link: str, seq: int, reason: str, kind: FenceKind = FenceKind.REFUSED,
                     found: Anchor | None = None) -> None:
        await self.fences.fence(link, seq, reason, kind, found)

    async def _rebuild(self, link: str, why: recovery.RecoveryState, detail: str) -> None:
        now = time.monotonic()
        recent = [t for t in self._rebuilt_at.get(link, []) if now - t < self.REBUILD_WINDOW]
        if why is recovery.RecoveryState.FORKED and len(recent) >= self.REBUILDS_BEFORE_FENCE:
            # A Redis that keeps forking from the ledger is not cured by rebuilding: stop, let a person look.
            # (A Redis that lost everything, a restarted one, is simply rebuilt however often it happens.)
            await self._fence(link, self.durable.get(link, 0) + 1,
                              f"Redis forked from the ledger {len(recent) + 1} times in "
                              f"{self.REBUILD_WINDOW:.0f} s; last: {detail}")
            return
        if link not in await self._guard([link]):  # never rebuild Redis from a ledger its anchors do not back
            return
        expect = self.heads.left.get(link)
        LINK_REBUILDS.labels(link, why).inc()
        log.error("link %s: Redis %s (%s); rebuilding it from the ledger", link, why, detail)
        self.problems[link] = f"Redis {why}; rebuilding from the ledger"
        try:
            head = await recovery.rebuild(self.redis, self.pg, link, expect, check=self.lease_check)
        except LeaseExpired:
            raise
        except Exception as e:
            self.problems[link] = f"Redis {why}; the rebuild failed and is retried: {e}"
            log.error("link %s: rebuild failed: %s", link, e)
            return
        self._heads.pop(link, None)  # read afresh with the next batch
        self.durable[link] = head
        self.problems.pop(link, None)
        if why is recovery.RecoveryState.FORKED:
            self._rebuilt_at[link] = [*recent, now]

    async def probe(self) -> None:
        """Compare each link's Redis state with the ledger, rebuild what Redis lost, lift fences an operator
        resolved, and report the writer's health."""
        self._probed_at = time.monotonic()
        await self.heads.flush()
        resolved = set(self.fenced) - set(await ledger.fences(self.pg))  # self.fenced: this writer's links only
        for link in resolved:  # `jackpotd unfence` removed the fence: follow the link again, if its head is backed
            await self.seen.forget(link)  # the filter of used ids is filled again from the mended ledger
            lifted = await self.fences.lift(link, self.durable.get(link, 0) + 1)
            if lifted is not None:
                self._rebuilt_at.pop(link, None)
                self._heads.pop(link, None)
                self.durable[link] = lifted.seq
        links = await self._links()
        await self._guard(links)  # a head that went back or changed is fenced within a probe
        links = [link for link in links if link not in self.fenced]
        self.fences.say()
        unknown = [link for link in links if link not in self._heads]
        if unknown:
            await self._read_heads(unknown)
        probes = await self.redis.probe([*links, *self.fenced])
        self.unreachable = {link: "its Redis node does not answer" for link in links if link not in probes}
        for link in links:
            if link not in probes:  # its cluster node cannot be asked now: the next probe will
                continue
            head = self._heads.get(link, ledger.Head(0, b"", {}))
            state = recovery.classify(probes[link], head.seq, head.identity)
            if state in recovery.REBUILD:
                await self._rebuild(link, state, f"Redis at sequence {probes[link].seq}, the ledger at {head.seq}")
        await self.fences.restate(probes, self.durable)
        try:
            await self.seen.tend([link for link in links if link in probes and link not in self.problems], self.durable)
        except Exception as e:  # (a Redis that does not answer): the calls ask the ledger meanwhile
            self._complain(f"tending the filters of used ids failed: {e}")
        report = WriterHealth(now_ms(), tuple(sorted(self.shards)), {
            **self.unreachable, **{link: f"fenced: {why}" for link, why in self.fenced.items()}, **self.problems},
            self.stalled())
        try:
            await self.redis.set_health(self.member, report, every_link=self.shards == ALL)
        except Unavailable as e:  # (the cluster node of the heartbeats is down): appending goes on regardless
            self._complain(f"writing the heartbeat failed: {e}")

    @staticmethod
    def _entries(rows: Journal, after: dict[str, int]) -> list[ledger.JournalEntry]:
        """Parse journal rows and move each link's read position past them."""
        batch: list[ledger.JournalEntry] = []
        for link, entries in rows:
            batch += ledger.journal_entries(link, entries)
            if entries:
                after[link] = entries[-1][0]
        return batch
