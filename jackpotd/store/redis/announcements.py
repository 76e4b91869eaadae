"""The Redis adapter's announcements: what the ledger writer tells every process (entries durable, a link rebuilt or
fenced) on one channel, with the retention of what the ledger now holds set in the same round trip, and the
subscription the durability watchers read."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...backoff import Backoff, exponential
from .. import keys
from ..announcements import HASH_PREFIX, Announcement, Durable, encode
from .connection import RedisConnection, raised
from .errors import translated

log = logging.getLogger("jackpotd.redis")
RESUBSCRIBE_WAITS = exponential(0.1, 2.0)  # after failed subscriptions in a row: 0.1, 0.2, 0.4 ... 2 s


@dataclass(frozen=True, slots=True)
class DurableBatch:
    """Entries the ledger has just committed for a link: sequences first..first+len(identities)-1, and what
    may now leave Redis after the retention (the requests' records, the rounds they finished)."""

    first: int
    identities: Sequence[str]
    request_ids: Sequence[str] = ()
    finished_rounds: Sequence[tuple[str, str]] = ()


class RedisAnnouncements(RedisConnection):
    """Announcing what is durable and following those announcements."""

    _subscriptions = 0  # on a cluster, which primary the next subscription asks

    @translated
    async def announce_durable(self, written: Mapping[str, DurableBatch], retention_seconds: int) -> set[str]:
        """Record and publish what the ledger now holds, and let answered records and finished rounds
        leave Redis after the retention: all in one round trip. Returns the links whose announcement failed
        (on a cluster, those of a node that failed; on one Redis, a failure raises)."""
        commands: list[list[str | int]] = []
        ttl_ms = retention_seconds * 1000
        for link, d in written.items():
            head = d.first + len(d.identities) - 1
            commands += [["SET", keys.durable(link), head],
                         ["PUBLISH", keys.DURABLE_CHANNEL,
                          encode(Durable(link, d.first, tuple(i[:HASH_PREFIX] for i in d.identities)))]]
            commands += [["PEXPIRE", keys.record(link, r), ttl_ms] for r in d.request_ids]
            commands += [["PEXPIRE", keys.round_(link, *r), ttl_ms] for r in d.finished_rounds]
        owners = [link for link, d in written.items() for _ in range(2 + len(d.request_ids) + len(d.finished_rounds))]
        failed: set[str] = set()
        for link, reply in zip(owners, await self._journal_reader.execute(commands), strict=True):
            if isinstance(reply, Exception):
                failed.add(link)
                error = reply
        if failed and not self.cluster:
            raise raised(error)
        return failed  # a cluster node that failed keeps its links' announcements back, not the others'

    @translated
    async def announce(self, announcement: Announcement) -> None:
        """Publish a link event to the durability watchers (a fence: `Fenced` at the entry the ledger refused). From
        the link's own node, in order with its other announcements."""
        (reply,) = await self._resp.execute_on(keys.config(announcement.link), [
            ["PUBLISH", keys.DURABLE_CHANNEL, encode(announcement)]])
        if isinstance(reply, Exception):
            raise raised(reply)

    @contextlib.asynccontextmanager
    async def announcements(self) -> AsyncIterator[AsyncIterator[str]]:
        """The writer's announcements as published (announcements.parse reads them), subscribed on entry; the
        iterator resubscribes by itself after a dropped connection (the watcher's poller covers what was missed)."""
        subscribed = [await self._subscribed()]

        async def messages() -> AsyncIterator[str]:
            backoff = Backoff(RESUBSCRIBE_WAITS)
            while True:
                try:
                    async for msg in subscribed[0].listen():
                        backoff.reset()
                        if msg["type"] == "message":
                            yield msg["data"]
                    raise ConnectionError("the subscription ended")
                except Exception as e:  # a dropped connection, a protocol error: the poller covers the gap
                    if backoff.failures % 30 == 0:  # a Redis that stays down is said once a minute, not at every try
                        log.warning("durability announcements: resubscribing after %s: %s", type(e).__name__, e)
                    await backoff.sleep()  # a cluster's map is read at each try
                    with contextlib.suppress(Exception):
                        await subscribed[0].aclose()
                    # afresh: a cluster's subscription is tied to one node, which may be gone (the channel reaches
                    # every node of a cluster, so any other will do)
                    with contextlib.suppress(Exception):  # still down: the next turn tries again
                        subscribed[0] = await self._subscribed()

        try:
            yield messages()
        finally:
            with contextlib.suppress(Exception):
                await subscribed[0].aclose()

    @translated
    async def _subscribed(self) -> Any:
        """A pub/sub connection subscribed to the writer's announcements."""
        if self.cluster:  # any primary will do (a cluster forwards PUBLISH to every node): the next one each try
            await self.client.nodes_manager.initialize()
            primaries = self.client.get_primaries()
            self._subscriptions += 1
            pubsub = self.client.pubsub(node=primaries[self._subscriptions % len(primaries)])
            await pubsub.subscribe(keys.DURABLE_CHANNEL)
            return pubsub
        pubsub = self.client.pubsub()
        await pubsub.subscribe(keys.DURABLE_CHANNEL)
        return pubsub
