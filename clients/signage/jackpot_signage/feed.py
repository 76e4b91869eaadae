"""One WatchPools stream per link, kept open for as long as the server runs, fanned out to browsers.

The stream is reopened with backoff whenever it ends or fails (the backoff resets once data flows again), resumed
after the last sequence it was sent, so no hit or decision announced meanwhile is missed (issue 23).
Every subscriber gets a mailbox that never makes the feed wait: the latest state replaces an unread one, and
hits queue up in order (a browser that leaves too many unread is let go and reconnects)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc.aio import EOF  # type: ignore[attr-defined]  # the stubs lack it

from jackpotd.api.gen.jackpot.v1 import display_pb2, display_pb2_grpc
from jackpotd.auth.credentials import CredentialsMissing
from jackpotd.backoff import Backoff, exponential
from jackpotd.domain.verification import HitStatus

from . import reasons
from .reasons import Offline

log = logging.getLogger("jackpot_signage.feed")

BACKOFF_FIRST = 0.5  # seconds before the first retry
BACKOFF_MAX = 5.0  # at most this long between tries: a restarted jackpotd is back on the signs within it
REOPEN_WAITS = exponential(BACKOFF_FIRST, BACKOFF_MAX, jitter=0.2)  # 0.5, 1, 2, 4, 5 s, each ± 20%
SILENCE = 6.0  # jackpotd sends a heartbeat every 2 s: this long without one and the stream is taken as lost
HITS_MAX = 100  # unread hit events a browser may leave before it is let go


ChannelFactory = Callable[[str], grpc.aio.Channel]  # target -> a channel presenting the sign's credential


class CredentialsWait:
    """The sign's wait for its credentials, said once for all its links (they wait for the same ones): plainly at
    INFO when it starts (`make run` starts the sign before jackpotd issues them), with the detail at WARNING once
    if it lasts LONG seconds (flags that name the wrong place)."""

    LONG = 30.0
    REASON = reasons.NO_CREDENTIALS.text  # what the sign's page says meanwhile ("Starting up…")

    def __init__(self) -> None:
        self.since: float | None = None
        self.warned = False

    def missing(self, e: CredentialsMissing) -> None:
        """Its credentials are not there (yet)."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
            if e.directory is not None:
                log.info("waiting for jackpotd to issue this sign's credentials in %s", e.directory)
            else:
                log.info("waiting for this sign's credentials: %s", e)
        elif not self.warned and now - self.since >= self.LONG:
            self.warned = True
            log.warning("this sign still has no credentials after %.0f s: %s", now - self.since, e)

    def found(self) -> None:
        """Its credentials are there: a later loss is said again."""
        self.since, self.warned = None, False


CREDENTIALS = CredentialsWait()  # one sign per process


def pool_json(p: Any) -> dict[str, Any]:
    """A pool as the page reads it."""
    return {"pool": p.pool, "amount_cents": int(p.amount_cents), "reset_cents": int(p.reset_cents)}


def hit_json(h: Any) -> dict[str, Any]:
    """A hit announcement as the page reads it (a PENDING hit's approvals of approvals_needed: "1 of 2")."""
    return {"hit_id": h.hit_id, "table_id": h.table_id, "seat": int(h.seat), "hand": h.hand,
            "amount_cents": int(h.amount_cents), "pool": h.pool,
            "pool_amount_after_cents": int(h.pool_amount_after_cents), "sequence": int(h.sequence),
            "status": h.status or HitStatus.PAID, "approvals": int(h.approvals),
            "approvals_needed": int(h.approvals_needed)}


@dataclass(eq=False)
class Subscriber:
    """A browser's mailbox: (event, data) pairs, hits in order and the newest state once."""

    hits: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    state: dict[str, Any] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    gone: bool = False

    def offer_state(self, state: dict[str, Any]) -> None:
        self.state = state
        self.wake.set()

    def offer_hit(self, hit: dict[str, Any]) -> None:
        if len(self.hits) >= HITS_MAX:
            self.gone = True
        else:
            self.hits.append(("hit", hit))
        self.wake.set()

    async def next(self, timeout: float) -> tuple[str, dict[str, Any]] | None:
        """The next hit, else the newest state, else None after `timeout` seconds."""
        if not self.hits and self.state is None and not self.gone:
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout)
        if self.hits:
            return self.hits.popleft()
        if self.state is not None:
            state, self.state = self.state, None
            return ("state", state)
        return None


class LinkFeed:
    """The one WatchPools stream of a link and the browsers watching it."""

    def __init__(self, link: str, target: str, channel: ChannelFactory, credentials: CredentialsWait | None = None
                 ) -> None:
        self.link = link
        self.credentials = credentials or CREDENTIALS  # shared by the sign's links
        self.target = target
        self._channel = channel
        self.online = False
        self.offline: Offline = reasons.CONNECTING  # why not live: the page's text and code, the log's detail
        self.known = asyncio.Event()  # set once jackpotd has answered (or refused) a first time
        self.sequence = 0
        self.pools: list[dict[str, Any]] = []
        self.tables: list[dict[str, Any]] | None = None
        self.subscribers: set[Subscriber] = set()
        self.last_seen = time.monotonic()  # when a browser last watched (for closing idle feeds)
        self._task: asyncio.Task[None] | None = None

    # ---- browsers ---------------------------------------------------------------------------------------

    @property
    def reason(self) -> str:
        """What the page says while the link is not live ("" while it is)."""
        return "" if self.online else self.offline.text

    @property
    def missing(self) -> bool:
        """jackpotd says the link does not exist."""
        return not self.online and self.offline.code == grpc.StatusCode.NOT_FOUND.name

    def state(self) -> dict[str, Any]:
        """What the page shows now: the pools and tables while live, else the short reason and its code."""
        return {"link": self.link, "online": self.online, "reason": self.reason,
                "code": "" if self.online else self.offline.code, "sequence": self.sequence, "pools": self.pools,
                "tables": self.tables}

    def subscribe(self) -> Subscriber:
        s = Subscriber()
        s.offer_state(self.state())
        self.subscribers.add(s)
        self.last_seen = time.monotonic()
        return s

    def unsubscribe(self, s: Subscriber) -> None:
        self.subscribers.discard(s)
        self.last_seen = time.monotonic()

    def _publish(self) -> None:
        state = self.state()
        for s in self.subscribers:
            s.offer_state(state)

    # ---- the stream -------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watch {self.link}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _down(self, why: Offline) -> bool:
        """Offline for `why`; whether that is news (the detail is logged once per change, not at every retry)."""
        news = self.online or why.shown != self.offline.shown or why.detail != self.offline.detail
        if self.online:
            log.warning("link %s: offline (%s)", self.link, why.detail)
        self.online = False
        self.offline = why
        self.known.set()
        self._publish()
        return news

    async def _run(self) -> None:
        """Watch the link for good: reopen the stream after it ends or fails, soon again once data flowed."""
        backoff = Backoff(REOPEN_WAITS)
        while True:
            try:
                if await self._watch():
                    backoff.reset()  # data flowed: the next failure is retried soon
            except asyncio.CancelledError:
                raise
            except CredentialsMissing as e:
                self._down(reasons.NO_CREDENTIALS)
                self.credentials.missing(e)
            except grpc.aio.AioRpcError as e:
                if self._down(reasons.from_status(e.code(), e.details())):
                    log.info("link %s: no stream (%s); retrying every %.0f s or less", self.link,
                             self.offline.detail, BACKOFF_MAX)
            except Exception as e:  # anything else: keep trying, but say what it was
                if self._down(reasons.failed(e)):
                    log.exception("link %s: stream failed; retrying every %.0f s or less", self.link, BACKOFF_MAX)
            await backoff.sleep()

    async def _watch(self) -> bool:
        """One stream until it ends; whether any update came through it."""
        got = False
        channel = self._channel(self.target)
        self.credentials.found()
        try:
            stub = display_pb2_grpc.DisplayServiceStub(channel)
            # resumed after the last sequence it was sent: the hits and decisions it missed meanwhile come first
            call = stub.WatchPools(display_pb2.WatchPoolsRequest(link_id=self.link, after_sequence=self.sequence))
            try:
                while True:
                    update = await asyncio.wait_for(call.read(), SILENCE)
                    if update is EOF:
                        self._down(reasons.ended())
                        return got
                    if not got:
                        log.info("link %s: watching %s", self.link, self.target)
                    got = True
                    self._apply(update)
            except TimeoutError:
                self._down(reasons.silent(SILENCE))
                return got
            finally:
                call.cancel()
        finally:
            await channel.close(grace=None)

    def _apply(self, update: Any) -> None:
        """An update from the stream: live again, the newest pools and tables, and a hit passed on in order."""
        self.online = True
        self.offline = reasons.CONNECTING  # a later loss is news again
        self.known.set()
        self.sequence = max(self.sequence, int(update.sequence))
        self.pools = [pool_json(p) for p in update.pools]
        if len(update.tables):
            self.tables = [{"table_id": t.table_id, "online": bool(t.online), "suspended": bool(t.suspended)}
                           for t in update.tables]
        if update.HasField("hit"):
            hit = hit_json(update.hit) | {"pools": self.pools}
            log.info("link %s: hit %s (%s) %s seat %d, %d cents from %s", self.link, hit["hit_id"], hit["status"],
                     hit["table_id"], hit["seat"], hit["amount_cents"], hit["pool"])
            for s in self.subscribers:
                s.offer_hit(hit)
        self._publish()


class Feeds:
    """The feeds of the links this server shows: the configured ones for good, others while watched."""

    IDLE = 60.0  # seconds an unconfigured link's feed stays open with no browser

    def __init__(self, target: str, channel: ChannelFactory, links: list[str], max_links: int = 64) -> None:
        self.target = target
        self._channel = channel
        self.pinned = set(links)
        self.max_links = max_links
        self.feeds: dict[str, LinkFeed] = {}
        self._reaper: asyncio.Task[None] | None = None

    def start(self) -> None:
        for link in self.pinned:
            self.get(link)
        self._reaper = asyncio.create_task(self._reap())

    def get(self, link: str) -> LinkFeed | None:
        feed = self.feeds.get(link)
        if feed is None:
            if len(self.feeds) >= self.max_links:
                return None
            feed = self.feeds[link] = LinkFeed(link, self.target, self._channel)
            feed.start()
        return feed

    async def forget(self, link: str) -> None:
        """Close an unconfigured link's feed now (jackpotd says it does not exist): a bad URL holds no stream."""
        feed = self.feeds.get(link)
        if feed is not None and link not in self.pinned and not feed.subscribers:
            del self.feeds[link]
            await feed.stop()

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(10)
            now = time.monotonic()
            for link, feed in list(self.feeds.items()):
                if link not in self.pinned and not feed.subscribers and now - feed.last_seen > self.IDLE:
                    del self.feeds[link]
                    await feed.stop()

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for feed in self.feeds.values():
            await feed.stop()
