"""Redis adapter: the live pools, each link's sequence, idempotency records and round states (service.ports.LiveStore),
put together from its parts, one job each: the connections (connection.py), the journals and probes
(journal.py), the announcements (announcements.py), the writers' heartbeats (health.py) and
rebuilds and fences (rebuild.py). The key layout (store/keys.py), the scripts (scripts.py), their KEYS,
ARGV and verdicts (store/lua_codec.py) and pub/sub are known in store/ only; every Redis failure leaves the
adapter as the service's Unavailable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...domain.link import LinkConfig
from ...service.ports import LinkRead, Outcome, Reply, Step
from ...service.replies import decode_reply
from .. import keys
from ..lua_codec import CLOCK_TOLERANCE_MS, apply_call, apply_outcome, read_call, read_result
from .announcements import RedisAnnouncements
from .errors import translated
from .health import RedisHealth
from .journal import RedisJournal
from .rebuild import RedisRebuild


class RedisPools(RedisJournal, RedisAnnouncements, RedisHealth, RedisRebuild):
    """The live store of every link (service.ports.LiveStore), and what the ledger writer needs of Redis."""

    # how far a step's time may be from Redis's clock (lua_codec.CLOCK_TOLERANCE_MS); 0: unchecked (a test's clock)
    clock_tolerance_ms = CLOCK_TOLERANCE_MS

    # ---- the service's port ----------------------------------------------------------------------

    @translated
    async def apply(self, step: Step, floor: int, check: str | None = None) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes. `floor` is the ledger's durable
        sequence as the caller knows it: a Redis behind it has gone back and is refused. With `check` (a bare
        request id the ledger may hold from before ids were scoped, or ""), an id the filter of used ids cannot
        rule out is Unsure (service/seen.py); without it the caller asked the ledger."""
        call = apply_call(step, floor, check, self.clock_tolerance_ms)
        return apply_outcome(step, await self._scripts.run(self._scripts.apply_sha, *call))

    @translated
    async def read(self, link_id: str, floor: int, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and one round, read atomically; LinkLost or LinkFenced when the
        link's Redis state is not fit to answer from."""
        return read_result(link_id, await self._scripts.run(self._scripts.read_sha, *read_call(link_id, floor, round_)))

    @translated
    async def record(self, link_id: str, request_id: str) -> Reply | None:
        """The stored reply of a request id, while Redis keeps it."""
        raw: str | None = await self.client.get(keys.record(link_id, request_id))
        return None if raw is None else decode_reply(raw)

    @translated
    async def mark_online(self, table_id: str, ttl_ms: int) -> None:
        """The table's controller holds a meter stream open (not money: Redis alone keeps it)."""
        await self.client.set(keys.online(table_id), "1", px=ttl_ms)

    @translated
    async def online(self, table_ids: Sequence[str]) -> set[str]:
        """Those of the tables with a meter stream open somewhere."""
        if not table_ids:
            return set()
        pipe = self.client.pipeline(transaction=False)
        for table_id in table_ids:
            pipe.exists(keys.online(table_id))
        found = await pipe.execute()
        return {t for t, n in zip(table_ids, found, strict=True) if n}

    @translated
    async def config(self, link_id: str) -> tuple[str, LinkConfig] | None:
        """(version, config) of a link, or None if Redis does not hold it."""
        version, raw = await self.client.hmget(keys.config(link_id), ["version", "config"])
        if version is None or raw is None:
            return None
        return version, LinkConfig.from_dict(json.loads(raw))

    @translated
    async def link_of_table(self, table_id: str) -> str | None:
        v: str | None = await self.client.get(keys.table(table_id))
        return v

    @translated
    async def set_table_link(self, table_id: str, link_id: str) -> None:
        await self.client.set(keys.table(table_id), link_id)
        await self.client.sadd(keys.LINKS, link_id)

    @translated
    async def add_link(self, link_id: str) -> None:
        await self.client.sadd(keys.LINKS, link_id)

    # ---- for audits, recovery, health and the ledger writer --------------------------------------

    @translated
    async def ping(self) -> None:
        """Whether Redis answers. On a cluster, the primary of the list of links: a dead primary that holds
        no such key stops only its own links, which the writer's heartbeat names."""
        if self.cluster:
            await self.client.ping(target_nodes=self.client.get_node_from_key(keys.LINKS))
        else:
            await self.client.ping()

    @translated
    async def time_ms(self) -> int:
        """Redis's clock (TIME), in ms since the epoch: what steps are checked against, and writers date by."""
        seconds, micros = await self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    @translated
    async def links(self) -> list[str]:
        return sorted(await self.client.smembers(keys.LINKS))

    @translated
    async def balances(self, link_id: str) -> dict[str, int]:
        """The pools as Redis holds them, unchecked: for audits that compare Redis with the ledger."""
        return {k: int(v) for k, v in (await self.client.hgetall(keys.balances(link_id))).items()}

    @translated
    async def seq(self, link_id: str) -> int:
        """The link's sequence as Redis holds it, unchecked: for audits and recovery."""
        return int(await self.client.get(keys.seq(link_id)) or 0)
