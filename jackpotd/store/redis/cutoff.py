"""A leader cut off from its Redis (issue 23): it keeps renewing in PostgreSQL, yet none of its links is made
durable. Once its Redis has not answered for the lease time while another live writer's does, it gives its shards up
and stays aside for a cool-down (2 lease times) and until its Redis answers again; alone, it keeps them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ledger import leases
from ..ledger.leases import Peer
from ..throttle import Throttled

log = logging.getLogger("jackpotd.leader")

COOL_DOWN_LEASES = 2.0  # a writer that gave its shards up claims none for this many lease times
HEALTHY_WITHIN_S = 2.0  # a live writer whose Redis answered this recently (when it renewed) can make links durable


@dataclass(frozen=True, slots=True)
class Keep:
    """Keep leading: its Redis answers, or nobody could do better (`why` says so, for the log)."""

    why: str | None


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Give every shard up now: its Redis is silent and `to` is live with a Redis that answers."""

    why: str
    to: str


@dataclass(frozen=True, slots=True)
class StayAside:
    """Claim no shard yet (cooling down, or its Redis is still silent while another's answers)."""

    why: str


@dataclass(frozen=True, slots=True)
class Rejoin:
    """Claim its share again."""

    why: str


def heard_at_renewal(peer: Peer) -> float | None:
    """How long the peer had not heard its Redis when it last renewed (None: it does not say)."""
    return None if peer.redis_silent_s is None else peer.redis_silent_s - peer.silent_s


def healthy(peer: Peer, lease_s: float) -> bool:
    """Whether a live writer's Redis answers: it had heard it within HEALTHY_WITHIN_S (at most half the lease time)
    when it last renewed (it asks every half second), so a Redis down for everyone never makes a writer hand its
    shards to another."""
    heard = heard_at_renewal(peer)
    return peer.silent_s <= lease_s and heard is not None and heard <= min(HEALTHY_WITHIN_S, lease_s / 2)


def best_peer(peers: Sequence[Peer], lease_s: float) -> Peer | None:
    """The live writer that had heard its Redis most recently, among those whose Redis answers; None when none."""
    fit = [p for p in peers if healthy(p, lease_s)]
    return min(fit, key=lambda p: (heard_at_renewal(p) or 0.0, p.holder)) if fit else None


def while_leading(redis_silent_s: float, lease_s: float, peers: Sequence[Peer]) -> Keep | GiveUp:
    """A leader's verdict: give up once its Redis has been silent for the lease time and a live writer's answers."""
    if redis_silent_s <= lease_s:
        return Keep(None)
    silent = f"its Redis has not answered for {redis_silent_s:.1f} s (the lease time is {lease_s:g} s)"
    peer = best_peer(peers, lease_s)
    if peer is None:
        return Keep(f"{silent}, but no other live writer reaches Redis: keeping its shards (nobody could do better)")
    return GiveUp(f"{silent}, and writer {peer.holder}'s Redis answered {peer.redis_silent_s or 0.0:.1f} s ago",
                  peer.holder)


def while_aside(aside_s: float, redis_silent_s: float, lease_s: float, peers: Sequence[Peer]) -> StayAside | Rejoin:
    """A writer that gave its shards up: back at once when no live writer's Redis answers (someone must lead), else
    once the cool-down has passed and its own Redis answers again."""
    peer = best_peer(peers, lease_s)
    if peer is None:
        return Rejoin("no other live writer reaches Redis")
    if aside_s < COOL_DOWN_LEASES * lease_s:
        return StayAside(f"cooling down for {COOL_DOWN_LEASES * lease_s:g} s (writer {peer.holder} leads)")
    if redis_silent_s > lease_s / 2:
        return StayAside(f"its Redis has not answered for {redis_silent_s:.1f} s (writer {peer.holder} leads)")
    return Rejoin(f"its Redis answers again ({redis_silent_s:.1f} s ago)")


class RedisCutoff:
    """The shell of the verdicts: asks its Redis every EVERY seconds (a PING, bounded by the lease time), tells
    PostgreSQL with each renewal how long it has been silent (Liveness.redis_silent), and reads the other writers."""

    EVERY = 0.5
    PEERS_TIMEOUT = 2.0

    def __init__(self, ping: Callable[[], Awaitable[None]], pg: Any, holder: str, lease_s: float) -> None:
        self.ping = ping
        self.pg = pg  # the process's pool: a writer aside holds no lease connection (it must not count as a member)
        self.holder = holder
        self.lease_s = lease_s
        self.heard_at = time.monotonic()  # when the last PING that was answered was sent (its start: the benefit of
        self.aside_since: float | None = None  # doubt); since when it gave its shards up (None: it may lead)
        self._said: str | None = None
        self._complain = Throttled(log, every=10.0).warn
        self._task: asyncio.Task[None] | None = None

    def redis_silent(self) -> float:
        """Seconds since the last PING that was answered was sent, by the monotonic clock."""
        return time.monotonic() - self.heard_at

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="redis-witness")

    async def _run(self) -> None:
        """Ping until cancelled: a PING in a blackhole waits, and the silence counts meanwhile."""
        while True:
            sent = time.monotonic()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ping(), self.lease_s)
                self.heard_at = sent
            await asyncio.sleep(max(0.0, self.EVERY - (time.monotonic() - sent)))

    async def _peers(self) -> list[Peer] | None:
        """The other live writers; None when PostgreSQL cannot be asked now (then nothing changes)."""
        try:
            async with self.pg.acquire(timeout=self.PEERS_TIMEOUT) as conn:
                return await leases.peers(conn, self.holder, self.lease_s, self.PEERS_TIMEOUT)
        except Exception as e:
            self._complain(f"writer leases: the other writers cannot be read ({type(e).__name__}: {e})")
            return None

    async def leading(self) -> GiveUp | None:
        """Whether the leader gives its shards up now (it logs why, once); None: it keeps them."""
        if self.redis_silent() <= self.lease_s:
            self._said = None
            return None
        peers = await self._peers()
        if peers is None:
            return None
        verdict = while_leading(self.redis_silent(), self.lease_s, peers)
        if isinstance(verdict, GiveUp):
            self.aside_since, self._said = time.monotonic(), None
            log.error("this writer gives its shards up: %s; it stands aside for at least %g s and until its Redis "
                      "answers again", verdict.why, COOL_DOWN_LEASES * self.lease_s)
            return verdict
        if verdict.why is not None and self._said is None:
            self._said = verdict.why
            log.error("this writer cannot make its links durable: %s", verdict.why)
        return None

    async def may_claim(self) -> bool:
        """Whether a writer that gave its shards up may claim its share again (it logs why when it does)."""
        if self.aside_since is None:
            return True
        peers = await self._peers()
        if peers is None:
            return False
        verdict = while_aside(time.monotonic() - self.aside_since, self.redis_silent(), self.lease_s, peers)
        if isinstance(verdict, StayAside):
            self._complain(f"writer leases: standing aside, {verdict.why}")
            return False
        log.info("this writer claims its share again: %s", verdict.why)
        self.aside_since = None
        return True

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
