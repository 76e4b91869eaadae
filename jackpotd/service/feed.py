"""What signs and meters are sent (issue 11; RULES.md §8): only what the ledger has committed, read once per
process and link, and fanned out to any number of watchers. A watcher that falls behind has its pool updates
coalesced; one that stops reading altogether is let go; neither ever delays the others."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace

from ..clock import wait_set
from ..metrics import FEED_DROPPED, FEED_READS, WATCHERS
from .decide.reads import METER_INTERVAL, announcements
from .errors import Unavailable
from .links import Links
from .ports import Durability, Ledger, LiveStore
from .results import LinkUpdate, TableView, pool_views, table_views

log = logging.getLogger("jackpotd.feed")

PRESENCE_INTERVAL = 1.0  # seconds between looks at which of a watched link's tables are online
WARN_EVERY = 10.0  # seconds between warnings of a link whose feed keeps failing
BACKLOG_MAX = 1000  # hit announcements a watcher may leave unread before it is let go
RANGE_MAX = 10_000  # entries read at once: a link this far behind is caught up on its pools, not every entry
CONFIG_KINDS = frozenset({"create_link", "update_link", "set_rates", "set_paytable", "register_table",
                          "suspend_table", "resume_table", "combine_pools", "split_pools"})


@dataclass(eq=False)
class Watcher:
    """One stream's mailbox, filled by the feed without ever waiting: announcements in order, each on its own,
    and the link's latest pools, coalesced."""

    start: int = 0  # the entry of the stream's first snapshot: what it announces happened before the stream
    shown: LinkUpdate | None = None  # the pools the stream showed last: older pools are never sent after them
    announced: deque[LinkUpdate] = field(default_factory=deque)
    latest: LinkUpdate | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    gone: str = ""  # why the feed let it go

    @property
    def pools_seq(self) -> int:
        return self.shown.seq if self.shown is not None else self.start

    def begin(self, first: LinkUpdate) -> None:
        """The stream's first snapshot: what the feed offers from before it is not sent."""
        self.start = first.seq
        self.showed(first)

    def offer(self, updates: list[LinkUpdate], pools: LinkUpdate, *, tables_changed: bool = False) -> None:
        """Announcements in order, and the pools unless older than those the stream showed (or, when only the
        tables changed, the same pools again with them)."""
        if self.gone:
            return
        fresh = [u for u in updates if u.seq > self.start]
        if len(self.announced) + len(fresh) > BACKLOG_MAX:
            self.gone = f"this stream left {BACKLOG_MAX} announcements unread; reconnect"
            self.announced.clear()
            self.wake.set()
            return
        self.announced.extend(fresh)
        if pools.seq > self.pools_seq or (tables_changed and pools.seq == self.pools_seq):
            self.latest = pools
        self.wake.set()

    def showed(self, update: LinkUpdate) -> None:
        """The stream sent these pools (a snapshot or the feed's): nothing older is sent after them."""
        if self.shown is None or update.seq >= self.shown.seq:
            self.shown = update
        if self.latest is not None and self.latest.seq < self.pools_seq:
            self.latest = None

    async def next(self, timeout: float) -> LinkUpdate | None:
        """The next announcement, else the latest pools, else None after `timeout` s."""
        if not self.announced and self.latest is None and not self.gone:
            self.wake.clear()
            await wait_set(self.wake, timeout)
        if self.gone:
            raise Unavailable(self.gone)
        while self.announced and self.announced[0].seq <= self.start:  # offered before the snapshot was taken
            self.announced.popleft()
        if self.announced:
            update = self.announced.popleft()
            if self.shown is not None and update.seq < self.shown.seq:  # its pools are older than those shown
                update = replace(update, pools=self.shown.pools, tables=self.shown.tables)
            return update
        if self.latest is None:
            return None
        update, self.latest = self.latest, None
        self.showed(update)
        return update


@dataclass(eq=False)
class _Link:
    """What the feed knows of one watched link in this process."""

    shown: int  # the last entry read from the ledger
    target: int  # the ledger's durable mark, as announced
    watchers: set[Watcher] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # the mark, the tables or the watchers changed
    pump: asyncio.Task[None] | None = None
    online: set[str] = field(default_factory=set)  # the link's tables with a meter stream open
    tables: tuple[TableView, ...] = ()
    last_rounds: dict[str, int] = field(default_factory=dict)  # table -> when its last round ended (ms)
    rounds_known: bool = False  # last_rounds was seeded from the ledger (a snapshot's one query), not only read
    pools: LinkUpdate | None = None  # the last pools offered
    looked: float = 0.0  # when the tables' presence was last read
    warned: float = -1e9  # when a failing read was last logged


class CommittedFeed:
    """Per process: follows each watched link's durable mark and reads what it newly covers from the ledger, at
    most ten times a second a link, however many watch it (ARCHITECTURE.md, Reads)."""

    def __init__(self, links: Links, live: LiveStore, ledger: Ledger, durability: Durability) -> None:
        self.links = links
        self.live = live
        self.ledger = ledger
        self.durability = durability
        self._links: dict[str, _Link] = {}
        durability.on_durable(self._advanced)

    @contextlib.asynccontextmanager
    async def watching(self, link_id: str) -> AsyncIterator[Watcher]:
        """A watcher of the link, offered what the ledger commits from now on. Register before taking the
        stream's snapshot, then `begin` with it: nothing committed after the snapshot can then be missed."""
        state = self._links.get(link_id)
        if state is None:
            mark = self.durability.floor(link_id)
            state = self._links[link_id] = _Link(mark, mark)
            FEED_READS.labels(link_id), FEED_DROPPED.labels(link_id)  # at 0 from its first watcher on
            state.pump = asyncio.create_task(self._pump(link_id, state), name=f"feed-{link_id}")
        watcher = Watcher()
        state.watchers.add(watcher)
        state.changed.set()
        WATCHERS.labels(link_id).inc()
        try:
            yield watcher
        finally:
            WATCHERS.labels(link_id).dec()
            if watcher.gone:
                FEED_DROPPED.labels(link_id).inc()
            state.watchers.discard(watcher)
            if not state.watchers and self._links.get(link_id) is state:
                del self._links[link_id]
                if state.pump is not None:
                    state.pump.cancel()

    def last_rounds(self, link_id: str) -> dict[str, int] | None:
        """When each table of a watched link last ended a round (ms), once seeded from the ledger; None before."""
        state = self._links.get(link_id)
        return dict(state.last_rounds) if state is not None and state.rounds_known else None

    def seed_rounds(self, link_id: str, found: Mapping[str, int]) -> None:
        """The ledger's last rounds of a watched link (read once): merged with what the feed has read since."""
        state = self._links.get(link_id)
        if state is None:
            return
        for table_id, at_ms in found.items():
            state.last_rounds[table_id] = max(at_ms, state.last_rounds.get(table_id, 0))
        state.rounds_known = True

    def _advanced(self, link_id: str, mark: int) -> None:
        state = self._links.get(link_id)
        if state is not None and mark > state.target:
            state.target = mark
            state.changed.set()

    async def _pump(self, link_id: str, state: _Link) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await wait_set(state.changed, PRESENCE_INTERVAL)
            state.changed.clear()
            started = loop.time()
            try:
                if started - state.looked >= PRESENCE_INTERVAL:
                    await self._look(link_id, state, started)
                if state.target > state.shown:
                    await self._read(link_id, state)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the ledger or Redis is away: try again with the next mark
                if started - state.warned >= WARN_EVERY:  # a person reads this: once in a while, not ten a second
                    log.warning("feed of link %s: %s (retrying)", link_id, e)
                    state.warned = started
                state.changed.set()
            await asyncio.sleep(max(0.0, METER_INTERVAL - (loop.time() - started)))  # ten a second at most

    async def _look(self, link_id: str, state: _Link, now: float) -> None:
        """Which tables are online: a change goes out with the pools already shown."""
        _, config = await self.links.config(link_id)
        state.online = await self.live.online(list(config.tables))
        state.looked = now
        tables = table_views(config, state.online, state.last_rounds)
        if tables != state.tables:
            state.tables = tables
            if state.pools is not None:
                state.pools = replace(state.pools, tables=tables)
                for watcher in list(state.watchers):
                    watcher.offer([], state.pools, tables_changed=True)

    async def _read(self, link_id: str, state: _Link) -> None:
        upto = state.target
        after = max(state.shown, upto - RANGE_MAX)
        entries = await self.ledger.entries(link_id, after, upto)
        FEED_READS.labels(link_id).inc()
        if any(e.kind in CONFIG_KINDS for e in entries):
            self.links.changed(link_id)  # a suspension, new pools: shown from this read on
        _, config = await self.links.config(link_id)
        for e in entries:  # a settle or void: its table's last round, kept from the entries read anyway
            if e.round_table and e.at_ms > state.last_rounds.get(e.round_table, 0):
                state.last_rounds[e.round_table] = e.at_ms
        state.tables = table_views(config, state.online, state.last_rounds)  # a suspension shows with its entry
        updates: list[LinkUpdate] = []
        for e in entries:
            if e.reply is not None:
                updates += [LinkUpdate(e.seq, pool_views(config, e.reply.balances), hit, state.tables)
                            for hit in announcements(e.kind, e.reply)]
        last = entries[-1].reply if entries else None
        state.shown = upto
        if last is None:
            return
        state.pools = LinkUpdate(upto, pool_views(config, last.balances), None, state.tables)
        for watcher in list(state.watchers):
            watcher.offer(updates, state.pools)
