"""Reads (API.md DisplayService, WatchMeter): pools the ledger holds, and the live stream of a link."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from ..domain.verification import HitStatus
from . import results
from .decide.reads import HEARTBEAT, announcements
from .feed import RANGE_MAX, CommittedFeed
from .links import Links
from .ports import Durability, HitRecord, Ledger, LiveStore

ONLINE_REFRESH = HEARTBEAT  # a meter stream says its table is online at least this often (s) ...
ONLINE_TTL_MS = 6000  # ... and it shows offline this long after its last stream ended
HIT_STATUSES = ("", *HitStatus)
LIST_DEFAULT, LIST_MAX = 100, 1000
RESUME_MAX = RANGE_MAX  # entries a resumed WatchPools replays at most (a sign this far behind catches up on pools)


class Reads:
    """GetPools, WatchPools and the pools of WatchMeter."""

    def __init__(self, links: Links, live: LiveStore, ledger: Ledger, durability: Durability) -> None:
        self.links = links
        self.live = live
        self.ledger = ledger
        self.durability = durability
        self.feed = CommittedFeed(links, live, ledger, durability)

    async def pools(self, link_id: str) -> results.PoolsNow:
        """The pools as the ledger holds them, and the link's latest hit."""
        now = await self.snapshot(link_id)
        last = await self.ledger.last_hit(link_id)
        hit = None if last is None else results.HitAnnouncement(last.table_id, last.seat, last.hand,
                                                                last.amount_cents, last.pool, last.hit_id, last.seq,
                                                                status=last.status, approvals=last.approvals,
                                                                approvals_needed=last.approvals_needed)
        return results.PoolsNow(now.seq, link_id, now.pools, hit, now.tables)

    async def hits(self, link_id: str, table_id: str = "", status: str = "", limit: int = 0) -> list[HitRecord]:
        """The link's hits as the ledger holds them, newest first (§7, §10)."""
        require_id("link_id", link_id)
        if table_id:
            require_id("table_id", table_id)
        if status not in HIT_STATUSES:
            raise InvalidInput("status", status, f"must be {', '.join(HitStatus)} or empty (any)")
        if not 0 <= limit <= LIST_MAX:
            raise InvalidInput("limit", limit, f"must be 0 ({LIST_DEFAULT}) to {LIST_MAX}")
        await self.links.config(link_id)  # NOT_FOUND for a link that does not exist
        return await self.ledger.hits(link_id, table_id, status, limit or LIST_DEFAULT)

    async def snapshot(self, link_id: str) -> results.LinkUpdate:
        """The link's sequence, pools and tables: a checked read, answered once the ledger has every entry it
        includes."""
        _, config = await self.links.config(link_id)
        state = await self.links.read(link_id)
        online = await self.live.online(list(config.tables))
        await self.durability.wait_durable(link_id, state.seq, None)
        last_rounds = await self.last_rounds(link_id, list(config.tables))
        return results.LinkUpdate(state.seq, results.pool_views(config, state.balances), None,
                                  results.table_views(config, online, last_rounds))

    async def last_rounds(self, link_id: str, table_ids: list[str]) -> dict[str, int]:
        """When each table last ended a round: as the feed keeps it for a watched link (no query), else read from
        the ledger (GetPools, and a watched link's first snapshot, which seeds the feed)."""
        known = self.feed.last_rounds(link_id)
        if known is not None:
            return known
        found = await self.ledger.last_rounds(link_id, table_ids)
        self.feed.seed_rounds(link_id, found)
        return self.feed.last_rounds(link_id) or found

    async def watch(self, link_id: str, after: int = 0) -> AsyncIterator[results.LinkUpdate]:
        """A snapshot, then what the ledger commits (issue 11: nothing before it): every hit on its own (§8),
        pools coalesced to ten a second, and a checked snapshot on a quiet link so a table can tell it from a
        lost service. Resumed `after` a sequence the caller was sent: the hits and decisions of the entries since
        come first, in order (issue 23: a sign that reconnected missed a PENDING hit's decision)."""
        if after < 0:
            raise InvalidInput("after_sequence", after, "must be 0 (no resume) or a sequence this stream sent")
        await self.links.config(link_id)
        async with self.feed.watching(link_id) as watcher:  # before the snapshot: no entry falls between them
            first = await self.snapshot(link_id)
            watcher.begin(first)
            if 0 < after < first.seq:
                for missed in await self.missed(link_id, after, first):
                    yield missed
            yield first
            while True:
                update = await watcher.next(HEARTBEAT)
                if update is None:
                    update = await self.snapshot(link_id)
                    watcher.showed(update)
                yield update

    async def missed(self, link_id: str, after: int, first: results.LinkUpdate) -> list[results.LinkUpdate]:
        """The hit announcements of the entries after `after` up to the snapshot `first` (the last RESUME_MAX
        entries at most), each with its entry's pools, as the feed would have sent them."""
        _, config = await self.links.config(link_id)
        entries = await self.ledger.entries(link_id, max(after, first.seq - RESUME_MAX), first.seq)
        return [results.LinkUpdate(e.seq, results.pool_views(config, e.reply.balances), hit, first.tables)
                for e in entries if e.reply is not None for hit in announcements(e.kind, e.reply)]

    async def meter(self, table_id: str) -> AsyncIterator[results.MeterUpdate]:
        """The table's link watched, with whether the table may take jackpot wagers (§8, NSW 14.13)."""
        link_id = await self.links.of_table(table_id)
        loop = asyncio.get_running_loop()
        marked = -ONLINE_REFRESH
        async for update in self.watch(link_id):
            if loop.time() - marked >= ONLINE_REFRESH:  # signs show the table online while this stream lasts
                await self.live.mark_online(table_id, ONLINE_TTL_MS)
                marked = loop.time()
            _, config = await self.links.config(link_id, fresh=True)  # a suspension shows at once
            yield results.MeterUpdate(link_id, update, not config.table(table_id).suspended)
