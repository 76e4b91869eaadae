"""The Redis adapter's heartbeats: each ledger writer's report (its shards, the links it cannot serve, whether it is
stalled), lapsing after HEALTH_TTL_MS, and all of them merged for health checks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

import redis.exceptions

from . import keys
from .redis_connection import RedisConnection
from .redis_errors import DOWN, translated
from .shards import ALL

HEALTH_TTL_MS = 3000


class RedisHealth(RedisConnection):
    """The writers' heartbeats."""

    @translated
    async def set_health(self, member: int, report: Mapping[str, Any], *, every_link: bool = False) -> None:
        """Writer process `member`'s heartbeat (see writer_health); it lapses after 3 s without that writer. From
        a writer of `every_link`, also under the single key that API processes of versions before writer shards
        read (a rolling upgrade): a report of some shards would speak there for all."""
        await self.client.set(keys.health(member), json.dumps(report), px=HEALTH_TTL_MS)
        if every_link:
            with contextlib.suppress(*DOWN, redis.exceptions.RedisError):  # (on a cluster, maybe another node)
                await self.client.set(keys.HEALTH_BEFORE_SHARDS, json.dumps(report), px=HEALTH_TTL_MS)

    @translated
    async def writer_health(self) -> dict[str, Any] | None:
        """The live writers' heartbeats as one: the shards written by writers that append, the shards of those
        that have been failing to (`stalled_shards`: why), every problem by link, and `stalled` when none
        appends; None when no writer has reported in the last 3 s. A writer of a version before shards writes
        every link: its heartbeat counts for all of them."""
        raws = await self.client.mget([keys.health(m) for m in range(keys.WRITER_MEMBERS)])
        reports: list[dict[str, Any]] = [json.loads(raw) for raw in raws if raw is not None]
        if not reports:
            older = await self.client.get(keys.HEALTH_BEFORE_SHARDS)
            if older is None:
                return None
            reports = [{"shards": sorted(ALL), **json.loads(older)}]
        appending = [r for r in reports if not r.get("stalled")]
        merged: dict[str, Any] = {
            "at_ms": max(r["at_ms"] for r in reports),
            "shards": sorted({s for r in appending for s in r.get("shards", ())}),
            "stalled_shards": {s: r["stalled"] for r in reports if r.get("stalled") for s in r.get("shards", ())},
            "problems": {link: why for r in reports for link, why in (r.get("problems") or {}).items()}}
        if not appending:
            merged["stalled"] = reports[0]["stalled"]
        return merged
