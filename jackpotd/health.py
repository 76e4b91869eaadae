"""What grpc.health.v1 says: whether calls can succeed, for the whole service and for each link.

Every gRPC server (each worker process, or the supervisor when it serves in-process) runs one
`HealthReporter`. Once a second it asks the stores directly:

- overall (`""` and each service name): SERVING iff Redis answers PING, PostgreSQL answers `SELECT 1`
  and a ledger writer's heartbeat (`keys.health`, store/heartbeats.py: each writer's, set every 0.5 s with
  a 3 s expiry) is there and none says it has been failing to append for seconds. Without a writer nothing
  becomes durable, so no mutation can answer. Nor can it while this process's clock is off Redis's by more than
  the tolerance (lua_codec.CLOCK_TOLERANCE_MS): Redis refuses its steps, and the reason says by how much.
- per link (`link:<link_id>`, every link in `jackpot:links` and every link a writer names as a
  problem): NOT_SERVING when overall is NOT_SERVING, a writer names the link, or no live writer holds the
  link's shard (store/shards.py), else SERVING. Why a shard has no writer comes from its lease in PostgreSQL
  (migration 019): a holder that has not renewed for N s, whether another writer is alive to take it over.
  A link seen before and missing now (an emptied Redis not yet rebuilt) is NOT_SERVING.

On stop everything turns NOT_SERVING for good.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2

from .clock import now_ms, wait_set
from .store import ledger
from .store.heartbeats import WritersHealth
from .store.ledger import leases
from .store.shards import shard_of

log = logging.getLogger("jackpotd.health")

Status: TypeAlias = health_pb2.HealthCheckResponse.ServingStatus
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
LINK_PREFIX = "link:"
HEARTBEAT_TTL_MS = 3000  # the writer's heartbeat expires this long after it was set
_SECONDS = re.compile(r"\d+ s\b")
LIVE_WITHIN_S = 2.5  # a writer that renewed its liveness this recently is alive (it renews every second)


class HealthStore(Protocol):
    """What health asks of Redis (store.redis.pools.RedisPools is one): whether it answers, its links, and the
    writers' heartbeats."""

    async def ping(self) -> None:
        """Return once Redis answers; raise if it does not."""

    async def links(self) -> list[str]:
        """Every link Redis holds."""

    async def writer_health(self) -> WritersHealth | None:
        """The live writers' heartbeats as one; None without any."""

    async def time_ms(self) -> int:
        """Redis's clock, in ms since the epoch."""

    @property
    def clock_tolerance_ms(self) -> int:
        """How far this process's clock may be from Redis's before its steps are refused (0: unchecked)."""


def link_service(link_id: str) -> str:
    """The health service name of one link."""
    return LINK_PREFIX + link_id


@dataclass(frozen=True)
class Verdict:
    """One round of checks: the overall answer, why not, and each link's answer."""

    serving: bool
    reasons: tuple[str, ...] = ()
    links: Mapping[str, bool] = field(default_factory=dict)
    problems: Mapping[str, str] = field(default_factory=dict)  # the writer's, by link
    leases: leases.LeaseStates | None = None  # who holds each shard's lease, as PostgreSQL says (None: unknown)


def unled(shard: int, states: leases.LeaseStates | None) -> str:
    """Why no writer writes a shard now, as its lease in PostgreSQL says: a holder silent for N s (paused, cut off),
    and whether a live writer can take it over; never "one is taking it over" when none can."""
    if states is None or shard not in states.shards:
        return f"no ledger writer holds its shard {shard} now"
    lease = states.shards[shard]
    others = sorted(states.live - {lease.holder})
    if lease.holder is not None and lease.holder not in states.live:
        silent = "no liveness row" if lease.silent_s is None else f"has not renewed for {lease.silent_s:.0f} s"
        taker = (f"writer {others[0]} takes it over once the lease time has passed" if others else
                 "no other ledger writer is running to take it over")
        return f"the writer lease of its shard {shard} is held by {lease.holder}, which {silent} " \
               f"(paused, or cut off from PostgreSQL?); {taker}"
    if lease.holder is not None and deaf_s(lease) > LIVE_WITHIN_S:
        reaching = sorted(states.reaching - {lease.holder})  # alive in PostgreSQL, cut off from its Redis
        then = (f"it gives it up to writer {reaching[0]}, whose Redis answers, once the lease time has passed"
                if reaching else "no other live writer reaches Redis, so it keeps it (nobody could do better)")
        return f"no ledger writer writes its shard {shard} now: {lease.holder} holds its lease (epoch {lease.epoch}) " \
               f"but has not heard its Redis for {lease.redis_silent_s:.0f} s (cut off from Redis?); {then}"
    if lease.holder is not None:  # alive, taking it (recovering its links), or failing before its first heartbeat
        return f"no ledger writer writes its shard {shard} now: {lease.holder} holds its lease (epoch {lease.epoch}) " \
               "and is taking it over"
    if others:
        return f"no ledger writer holds its shard {shard} now (writer {others[0]} is taking it over)"
    return f"no ledger writer holds its shard {shard} now, and none is running to take it over"


def deaf_s(lease: leases.ShardLease) -> float:
    """How long its holder had not heard its Redis when it last renewed (0: not known): the renewal's own transit
    to PostgreSQL cancels out, so a slow PostgreSQL is not taken for a silent Redis."""
    if lease.redis_silent_s is None or lease.silent_s is None:
        return 0.0
    return lease.redis_silent_s - lease.silent_s


def cut_off(states: leases.LeaseStates | None) -> list[str]:
    """Why no writer's heartbeat reaches Redis while a holder of shards is alive in PostgreSQL: it does not hear its
    Redis (and, no other live writer reaching it, keeps its shards: store/redis/cutoff.py)."""
    if states is None:
        return []
    silent: dict[str, float] = {}
    for lease in states.shards.values():
        if lease.holder is not None and lease.holder in states.live and deaf_s(lease) > LIVE_WITHIN_S:
            silent[lease.holder] = lease.redis_silent_s or 0.0
    return [f"ledger writer cut off from Redis: {holder} holds writer leases but has not heard its Redis for "
            f"{seconds:.0f} s; no other live writer reaches Redis, so it keeps them (nobody could do better)"
            for holder, seconds in sorted(silent.items())]


async def _redis_links(redis: HealthStore, timeout: float) -> list[str]:
    """The links, asked only after Redis answered PING."""
    await asyncio.wait_for(redis.ping(), timeout)
    return await asyncio.wait_for(redis.links(), timeout)


async def check(redis: HealthStore, pg: ledger.Pool, known_links: Sequence[str] = (),
                timeout: float = 1.0) -> Verdict:
    """Ask Redis, PostgreSQL and the writer's heartbeat once; `known_links` are links seen before."""
    links_r, pg_r, writer_r, skew_r, leases_r = await asyncio.gather(
        _redis_links(redis, timeout), ledger.ping(pg, timeout), asyncio.wait_for(redis.writer_health(), timeout),
        _clock_skew(redis, timeout), leases.lease_states(pg, LIVE_WITHIN_S, timeout), return_exceptions=True)
    states = leases_r if isinstance(leases_r, leases.LeaseStates) else None  # (else: PostgreSQL explains it)
    reasons: list[str] = []
    if isinstance(skew_r, int) and abs(skew_r) > redis.clock_tolerance_ms:
        reasons.append(f"clock: this process's clock is {skew_r / 1000:+.1f} s off Redis's (more than "
                       f"{redis.clock_tolerance_ms / 1000:g} s): Redis refuses its steps until it is corrected")
    if isinstance(links_r, BaseException):
        reasons.append(f"Redis: {_describe(links_r)}")
    if isinstance(pg_r, BaseException):
        reasons.append(f"PostgreSQL: {_describe(pg_r)}")
    problems: dict[str, str] = {}
    if isinstance(writer_r, BaseException):
        if not isinstance(links_r, BaseException):  # Redis down already explains it
            reasons.append(f"ledger writer heartbeat unreadable: {_describe(writer_r)}")
    elif writer_r is None:
        reasons.append(f"ledger writer: no heartbeat in the last {HEARTBEAT_TTL_MS / 1000:g} s")
        reasons += cut_off(states)
    current = set() if isinstance(links_r, BaseException) else set(links_r)
    if isinstance(writer_r, WritersHealth):
        problems = dict(writer_r.problems)
        if writer_r.stalled:  # alive, but nothing reaches the ledger: no mutation can be answered
            reasons.append(f"ledger writer: {writer_r.stalled}")
        written = set(writer_r.shards)
        stalled = writer_r.stalled_shards
        for link in current - set(problems):  # its writer died (another takes its shard over within seconds),
            shard = shard_of(link)  # or has been failing to append
            if shard in written:  # (a stalled writer's last heartbeat may still name a shard another took over)
                continue
            if shard in stalled:
                problems[link] = f"the ledger writer of its shard {shard}: {stalled[shard]}"
            else:
                problems[link] = unled(shard, states)
    serving = not reasons
    names = current | set(problems) | set(known_links)
    return Verdict(serving, tuple(reasons),
                   {link: serving and link in current and link not in problems for link in sorted(names)}, problems,
                   states)


def _led_by(link: str, verdict: Verdict) -> str:
    """Which writer process leads a link's shard now, for the line that says it serves again."""
    lease = None if verdict.leases is None else verdict.leases.shards.get(shard_of(link))
    return "" if lease is None or lease.holder is None else \
        f"its shard {lease.shard} is written by {lease.holder}, lease epoch {lease.epoch}"


async def _clock_skew(redis: HealthStore, timeout: float) -> int | None:
    """This process's clock less Redis's (ms, at the middle of the question); None when unchecked."""
    if not redis.clock_tolerance_ms:
        return None
    before = now_ms()
    redis_ms = await asyncio.wait_for(redis.time_ms(), timeout)
    return (before + now_ms()) // 2 - redis_ms


def _what_failed(verdict: Verdict) -> tuple[str, ...]:
    """The failing parts without their messages, so an outage is logged once, not every second."""
    return tuple(reason.partition(":")[0] for reason in verdict.reasons)


def _describe(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return "no answer in time"
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


class HealthReporter:
    """Keeps a gRPC health servicer's statuses up to date with `check`, every `interval` seconds."""

    def __init__(self, servicer: health_aio.HealthServicer, redis: HealthStore, pg: ledger.Pool,
                 services: Sequence[str], interval: float = 1.0, timeout: float = 2.0) -> None:
        self.servicer = servicer
        self.redis = redis
        self.pg = pg
        self.services = tuple(services)
        self.interval = interval
        self.timeout = timeout  # for each store's answer: a busy store is slow, not down
        self.statuses: dict[str, Status] = {}
        self._last: Verdict | None = None
        self._said: dict[str, str] = {}  # each link's last reason, its counts of seconds left out

    async def not_serving(self) -> None:
        """Before the first check: nothing is known, so nothing is serving."""
        for name in self.services:
            await self._set(name, NOT_SERVING)

    async def update(self) -> Verdict:
        """Check once and publish the result; logs when the overall answer or a link's changes."""
        known = [name[len(LINK_PREFIX):] for name in self.statuses if name.startswith(LINK_PREFIX)]
        verdict = await check(self.redis, self.pg, known, timeout=self.timeout)
        overall = SERVING if verdict.serving else NOT_SERVING
        for name in self.services:
            await self._set(name, overall)
        last = self._last
        if last is None or _what_failed(last) != _what_failed(verdict):
            if verdict.serving:
                log.info("health: SERVING")
            else:
                log.warning("health: NOT_SERVING (%s)", "; ".join(verdict.reasons))
        for link, ok in verdict.links.items():
            name, before = link_service(link), self.statuses.get(link_service(link))
            why = verdict.problems.get(link, _led_by(link, verdict) if ok else "not in Redis")
            said, self._said[link] = self._said.get(link), _SECONDS.sub("N s", why)  # a new reason, not a new count
            if verdict.serving and (before == NOT_SERVING if ok else before != NOT_SERVING or said != self._said[link]):
                log.log(logging.INFO if ok else logging.WARNING, "health: %s %s%s", name,
                        "SERVING" if ok else "NOT_SERVING", f" ({why})" if why else "")
            await self._set(name, SERVING if ok else NOT_SERVING)
        self._last = verdict
        return verdict

    async def run(self, stop: asyncio.Event) -> None:
        """Update every `interval` seconds until `stop` is set; a failed round is logged, not fatal."""
        while not stop.is_set():
            try:
                await self.update()
            except Exception:  # never let the reporter die: a stale SERVING is what this module prevents
                log.exception("health check failed")
                for name in list(self.statuses):
                    await self._set(name, NOT_SERVING)
            await wait_set(stop, self.interval)

    async def shutdown(self) -> None:
        """NOT_SERVING everywhere, for good (later updates are ignored)."""
        await self.servicer.enter_graceful_shutdown()
        self.statuses = dict.fromkeys(self.statuses, NOT_SERVING)

    async def _set(self, name: str, status: Status) -> None:
        if self.statuses.get(name) != status:
            self.statuses[name] = status
            await self.servicer.set(name, status)
