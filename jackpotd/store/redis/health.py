"""The Redis adapter's heartbeats: each ledger writer's report (its shards, the links it cannot serve, whether it is
stalled), lapsing after HEALTH_TTL_MS, and all of them merged for health checks (their codec: heartbeats.py)."""

from __future__ import annotations

import contextlib

import redis.exceptions

from .. import heartbeats, keys
from ..heartbeats import WriterHealth, WritersHealth
from ..shards import ALL
from .connection import RedisConnection
from .errors import DOWN, translated

HEALTH_TTL_MS = 3000


class RedisHealth(RedisConnection):
    """The writers' heartbeats."""

    @translated
    async def set_health(self, member: int, health: WriterHealth, *, every_link: bool = False) -> None:
        """Writer process `member`'s heartbeat (see writer_health); it lapses after 3 s without that writer. From
        a writer of `every_link`, also under the single key that API processes of versions before writer shards
        read (a rolling upgrade): a report of some shards would speak there for all."""
        text = heartbeats.encode(health)
        await self.client.set(keys.health(member), text, px=HEALTH_TTL_MS)
        if every_link:
            with contextlib.suppress(*DOWN, redis.exceptions.RedisError):  # (on a cluster, maybe another node)
                await self.client.set(keys.HEALTH_BEFORE_SHARDS, text, px=HEALTH_TTL_MS)

    @translated
    async def writer_health(self) -> WritersHealth | None:
        """The live writers' heartbeats as one (heartbeats.merged); None when no writer has reported in the last
        3 s. A writer of a version before shards writes every link: its heartbeat counts for all of them."""
        raws = await self.client.mget([keys.health(m) for m in range(keys.WRITER_MEMBERS)])
        reports = [heartbeats.decode(raw) for raw in raws if raw is not None]
        if not reports:
            older = await self.client.get(keys.HEALTH_BEFORE_SHARDS)
            if older is None:
                return None
            reports = [heartbeats.decode(older, shards=sorted(ALL))]
        return heartbeats.merged(reports)
