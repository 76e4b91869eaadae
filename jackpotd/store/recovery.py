"""Recovery (ARCHITECTURE.md): make Redis and PostgreSQL agree for every link before it is served."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import asyncpg

from . import ledger
from .redis_pools import (
    RECORD_TTL_SECONDS,
    RedisPools,
    balances_key,
    config_key,
    durable_key,
    journal_key,
    record_key,
    round_key,
    seq_key,
    table_key,
    tag,
)

log = logging.getLogger("jackpotd.recovery")


@dataclass(frozen=True, slots=True)
class LinkRecovery:
    """What recovery did for one link."""

    link_id: str
    action: str  # "in-step", "drained", "rebuilt"
    redis_seq: int
    ledger_seq: int


async def recover(redis: RedisPools, pg: asyncpg.Pool) -> list[LinkRecovery]:
    """Redis ahead: drain its journal into PostgreSQL. Redis behind or empty: rebuild it from PostgreSQL."""
    out = []
    ledger_heads = await ledger.heads(pg)
    links = sorted(set(ledger_heads) | set(await redis.links()))
    for link in links:
        redis_seq = await redis.seq(link)
        ledger_seq = ledger_heads.get(link, 0)
        if redis_seq == 0 and ledger_seq == 0:
            continue  # announced but never created
        if redis_seq > ledger_seq:
            ledger_seq = await drain(redis, pg, link, ledger_seq)
            action = "drained"
        elif redis_seq < ledger_seq or await redis.config_version(link) is None:
            await rebuild(redis, pg, link)
            action = "rebuilt"
        else:
            action = "in-step"
        await redis.add_link(link)  # the ledger writer follows every link that exists
        log.info("link %s: %s (Redis seq %d, ledger seq %d)", link, action, redis_seq, ledger_seq)
        out.append(LinkRecovery(link, action, redis_seq, ledger_seq))
    return out


async def drain(redis: RedisPools, pg: asyncpg.Pool, link: str, from_seq: int) -> int:
    """Write every journal entry above `from_seq` into the ledger; returns the new ledger head."""
    head = from_seq
    while True:
        rows = await redis.journal_after(link, head)
        if not rows:
            break
        async with pg.acquire() as conn:
            heads = await ledger.write_batch(conn, ledger.journal_entries(link, rows))
        if heads.get(link, head) == head:
            raise RuntimeError(f"link {link}: journal entry {head + 1} is missing; cannot drain")
        head = heads[link]
    if head < await redis.seq(link):
        raise RuntimeError(f"link {link}: journal ends at {head} but Redis is at {await redis.seq(link)}")
    return head


async def rebuild(redis: RedisPools, pg: asyncpg.Pool, link: str) -> None:
    """Replace the link's Redis keys with the state recorded in the ledger."""
    snap = await ledger.snapshot(pg, link)
    client = redis.client
    stale = [k async for k in client.scan_iter(match=f"{tag(link)}*", count=1000)]
    pipe = client.pipeline(transaction=True)
    for k in stale:
        pipe.delete(k)
    pipe.hset(config_key(link), mapping={"version": str(snap.config_version), "config": snap.config})
    if snap.pool_balances:
        pipe.hset(balances_key(link), mapping={k: str(v) for k, v in snap.pool_balances.items()})
    pipe.set(seq_key(link), snap.last_seq)
    pipe.set(durable_key(link), snap.last_seq)
    pipe.xadd(journal_key(link), {"entry": "{}", "balances": "[]", "reply": ""}, id=f"0-{snap.last_seq}")
    pipe.xtrim(journal_key(link), minid=f"0-{snap.last_seq + 1}")  # an empty stream whose last id is the head
    for table_id, round_id, state, rev, data in snap.rounds:
        pipe.hset(round_key(link, table_id, round_id), mapping={"state": state, "rev": str(rev), "data": data})
    for request_id, reply in snap.replies:
        pipe.set(record_key(link, request_id), reply, ex=RECORD_TTL_SECONDS)
    for table_id in snap.tables:
        pipe.set(table_key(table_id), link)
    await pipe.execute()
    await redis.add_link(link)
