"""Redis adapter: the live pools, each link's sequence, idempotency records and round states (service.ports.LiveStore),
put together from its parts, one job each: the connections (redis_connection.py), the journals and probes
(redis_journal.py), the announcements (redis_announcements.py), the writers' heartbeats (redis_health.py) and
rebuilds and fences (redis_rebuild.py). The key layout (keys.py), the scripts and their verdicts (redis_scripts.py)
and pub/sub are known in store/ only; every Redis failure leaves the adapter as the service's Unavailable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import orjson

from ..domain.link import LinkConfig
from ..service.entries import encode_entry
from ..service.ports import (
    Applied,
    IdReused,
    LinkExists,
    LinkRead,
    LiveRound,
    Moved,
    Outcome,
    Reply,
    RoundNotOpen,
    RoundsOpen,
    Step,
)
from ..service.replies import decode_reply, encode_result, pairs
from . import keys
from .redis_announcements import RedisAnnouncements
from .redis_errors import refusal, translated
from .redis_health import RedisHealth
from .redis_journal import RedisJournal
from .redis_rebuild import RedisRebuild
from .redis_scripts import Verdict

SAFETY_TTL_SECONDS = 24 * 3600  # until the writer shortens it to the retention once the entry is durable

_RETRY = {Verdict.STALE_CONFIG: False, Verdict.ROUND_MOVED: False, Verdict.MOVED: True, Verdict.NEGATIVE: True}


class RedisPools(RedisJournal, RedisAnnouncements, RedisHealth, RedisRebuild):
    """The live store of every link (service.ports.LiveStore), and what the ledger writer needs of Redis."""

    # ---- the service's port ----------------------------------------------------------------------

    @translated
    async def apply(self, step: Step, floor: int) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes. `floor` is the ledger's durable
        sequence as the caller knows it: a Redis behind it has gone back and is refused."""
        link = step.link_id
        rkey = keys.round_(link, *step.round) if step.round else keys.no_round(link)
        args: list[str | int] = [
            step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
            step.round_data, step.new_config, encode_entry(step.entry),
            encode_result(step.result), SAFETY_TTL_SECONDS, step.canonical_content, floor,
            step.identity, "1" if step.between_rounds else "", len(step.guards)]
        for pool, bal in sorted(step.guards.items()):
            args += [pool, str(bal)]
        args.append(len(step.deltas))
        for pool, delta in step.deltas:
            args += [pool, str(delta)]
        status, payload, *fresh = await self._scripts.run(self._scripts.apply_sha, [
            keys.config(link), keys.balances(link), keys.seq(link), keys.journal(link),
            keys.record(link, step.request_id), rkey, keys.last(link), keys.fence(link), keys.open_rounds(link)], args)
        verdict = Verdict(status)
        if verdict is Verdict.OK:  # the stored reply is what we sent plus the sequence and balances
            seq, balances = fresh
            return Applied(Reply(int(seq), step.result, pairs(orjson.loads(balances)), step.content,
                                 step.request_hash), first=True)
        if verdict is Verdict.DUP:
            return Applied(decode_reply(payload), first=False)
        if verdict is Verdict.CONFLICT:
            return IdReused(decode_reply(payload))
        if verdict is Verdict.ROUND_STATE:
            return RoundNotOpen(payload)
        if verdict is Verdict.ROUNDS_OPEN:
            return RoundsOpen(int(payload))
        if verdict is Verdict.EXISTS:
            return LinkExists()
        if verdict in _RETRY:
            return Moved(contended=_RETRY[verdict])
        error = refusal(link, verdict, payload)
        assert error is not None
        raise error

    @translated
    async def read(self, link_id: str, floor: int, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and one round, read atomically; LinkLost or LinkFenced when the
        link's Redis state is not fit to answer from."""
        rkey = keys.round_(link_id, *round_) if round_ else keys.no_round(link_id)
        status, *rest = await self._scripts.run(self._scripts.read_sha, [
            keys.config(link_id), keys.seq(link_id), keys.balances(link_id), rkey, keys.fence(link_id)], [floor])
        error = refusal(link_id, Verdict(status), rest[0] if rest else "")
        if error is not None:
            raise error
        seq, balances, rnd = rest
        flat = orjson.loads(rnd)
        fields = dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {}
        live = LiveRound(fields["state"], fields.get("rev", ""), fields.get("data", "")) if fields else None
        return LinkRead(int(seq), pairs(orjson.loads(balances)), live)

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
