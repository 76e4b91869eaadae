"""Reads (API.md DisplayService, WatchMeter): pools the ledger holds, and the live stream of a link."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from . import results
from .decide.reads import HEARTBEAT
from .feed import CommittedFeed
from .links import Links
from .ports import HitRecord

HIT_STATUSES = ("", "PAID", "PENDING", "REJECTED")
LIST_DEFAULT, LIST_MAX = 100, 1000


class Reads:
    """GetPools, WatchPools and the pools of WatchMeter."""

    def __init__(self, links: Links) -> None:
        self.links = links
        self.feed = CommittedFeed(links)

    async def pools(self, link_id: str) -> results.PoolsNow:
        """The pools as the ledger holds them, and the link's latest hit."""
        seq, pools = await self.snapshot(link_id)
        last = await self.links.ledger.last_hit(link_id)
        hit = None if last is None else results.HitAnnouncement(last.table_id, last.seat, last.hand,
                                                                last.amount_cents, last.pool, last.hit_id, last.seq)
        return results.PoolsNow(seq, link_id, pools, hit)

    async def hits(self, link_id: str, table_id: str = "", status: str = "", limit: int = 0) -> list[HitRecord]:
        """The link's hits as the ledger holds them, newest first (§7, §10)."""
        require_id("link_id", link_id)
        if table_id:
            require_id("table_id", table_id)
        if status not in HIT_STATUSES:
            raise InvalidInput("status", status, "must be PAID, PENDING, REJECTED or empty (any)")
        if not 0 <= limit <= LIST_MAX:
            raise InvalidInput("limit", limit, f"must be 0 ({LIST_DEFAULT}) to {LIST_MAX}")
        await self.links.config(link_id)  # NOT_FOUND for a link that does not exist
        return await self.links.ledger.hits(link_id, table_id, status, limit or LIST_DEFAULT)

    async def snapshot(self, link_id: str) -> tuple[int, tuple[results.PoolView, ...]]:
        """The link's sequence and pools: a checked read, answered once the ledger has every entry it includes."""
        _, config = await self.links.config(link_id)
        state = await self.links.read(link_id)
        await self.links.durability.wait_durable(link_id, state.seq, None)
        return state.seq, results.pool_views(config, state.balances)

    async def watch(self, link_id: str) -> AsyncIterator[results.LinkUpdate]:
        """A snapshot, then what the ledger commits (issue 11: nothing before it): every hit on its own (§8),
        pools coalesced to ten a second, and a checked snapshot on a quiet link so a table can tell it from a
        lost service."""
        await self.links.config(link_id)
        first = results.LinkUpdate(*await self.snapshot(link_id))
        yield first
        async with self.feed.watching(link_id, first.seq) as watcher:
            while True:
                update = await watcher.next(HEARTBEAT)
                if update is None:
                    update = results.LinkUpdate(*await self.snapshot(link_id))
                    watcher.showed(update)
                yield update

    async def meter(self, table_id: str) -> AsyncIterator[results.MeterUpdate]:
        """The table's link watched, with whether the table may take jackpot wagers (§8, NSW 14.13)."""
        link_id = await self.links.of_table(table_id)
        async for update in self.watch(link_id):
            _, config = await self.links.config(link_id, fresh=True)  # a suspension shows at once
            yield results.MeterUpdate(link_id, update, not config.table(table_id).suspended)
