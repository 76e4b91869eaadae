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
  link's shard (store/shards.py), else SERVING.
  A link seen before and missing now (an emptied Redis not yet rebuilt) is NOT_SERVING.

On stop everything turns NOT_SERVING for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2

from .clock import now_ms, wait_set
from .store import ledger
from .store.heartbeats import WritersHealth
from .store.shards import shard_of

log = logging.getLogger("jackpotd.health")

Status: TypeAlias = health_pb2.HealthCheckResponse.ServingStatus
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
LINK_PREFIX = "link:"
HEARTBEAT_TTL_MS = 3000  # the writer's heartbeat expires this long after it was set


class HealthStore(Protocol):
    """What health asks of Redis (store.redis_pools.RedisPools is one): whether it answers, its links, and the
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


async def _redis_links(redis: HealthStore, timeout: float) -> list[str]:
    """The links, asked only after Redis answered PING."""
    await asyncio.wait_for(redis.ping(), timeout)
    return await asyncio.wait_for(redis.links(), timeout)


async def check(redis: HealthStore, pg: ledger.Pool, known_links: Sequence[str] = (),
                timeout: float = 1.0) -> Verdict:
    """Ask Redis, PostgreSQL and the writer's heartbeat once; `known_links` are links seen before."""
    links_r, pg_r, writer_r, skew_r = await asyncio.gather(
        _redis_links(redis, timeout), ledger.ping(pg, timeout), asyncio.wait_for(redis.writer_health(), timeout),
        _clock_skew(redis, timeout), return_exceptions=True)
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
                problems[link] = f"no ledger writer holds its shard {shard} now (one is taking it over)"
    serving = not reasons
    names = current | set(problems) | set(known_links)
    return Verdict(serving, tuple(reasons),
                   {link: serving and link in current and link not in problems for link in sorted(names)}, problems)


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
            if verdict.serving and (before == NOT_SERVING if ok else before != NOT_SERVING):
                why = verdict.problems.get(link, "" if ok else "not in Redis")
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
