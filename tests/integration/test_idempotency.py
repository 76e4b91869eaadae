"""Retrying with the same request id returns the identical answer and changes nothing; different content is refused."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, table_pb2
from jackpotd.app import jackpot_service
from jackpotd.domain.rounds import Wager
from jackpotd.service.commands import Commit, Request
from jackpotd.store import keys
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique
from .conftest import Private, open_private
from .harness import ADMIN, AUDIT, Client, eventually, rid


async def state(client: Client, link: str) -> tuple[object, ...]:
    pools = await client.pools(link)
    entries = await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link)
    return tuple(sorted((k, str(v)) for k, v in pools.items())), entries


async def test_every_mutating_call_is_idempotent(client: Client) -> None:
    link, table = unique("idem"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    await client.fund(link, "MAJOR", 1_000_000)

    commit = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                           wagers=[table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True)
                                                   for s in (1, 2, 3)])
    settle = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id="r1", hands=[
        table_pb2.SeatHand(seat=1, cards=["9h", "8h", "7h", "6h", "5h"]),
        table_pb2.SeatHand(seat=2, cards=["2c", "5c", "9c", "Jc", "Kc"]),
        table_pb2.SeatHand(seat=3, no_hand=table_pb2.FOLDED)])
    commit2 = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r2",
                                            wagers=[table_pb2.Wager(seat=4, amount_cents=100, ante_placed=True)])
    void = table_pb2.VoidRoundRequest(request_id=rid(), table_id=table, round_id="r2", reason="misdeal")
    fund = admin_pb2.FundPoolRequest(request_id=rid(), link_id=link, pool="MINOR", amount_cents=5_000, audit=AUDIT)
    calls = [(client.table.CommitWagers, commit), (client.table.SettleRound, settle),
             (client.table.CommitWagers, commit2), (client.table.VoidRound, void), (client.admin.FundPool, fund)]
    for method, request in calls:
        first = await method(request)
        after_first = await state(client, link)
        for _ in range(2):
            again = await method(request)
            assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
            assert await state(client, link) == after_first
    rows = await client.pg.fetch("SELECT request_id, count(*) AS n FROM entries WHERE link_id = $1 "
                                 "GROUP BY request_id HAVING count(*) > 1", link)
    assert rows == []


@pytest.mark.parametrize("field", ["round_id", "wagers"])
async def test_same_id_different_content_is_already_exists(client: Client, field: str) -> None:
    link, table = unique("idem"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    request_id = rid()
    await client.commit(table, "r1", [1], request_id=request_id)
    before = await state(client, link)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        if field == "round_id":
            await client.commit(table, "r-other", [1], request_id=request_id)
        else:
            await client.commit(table, "r1", [1, 2], request_id=request_id)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert field in (err.value.details() or "")
    assert await state(client, link) == before


async def test_settle_retry_after_redis_record_expired_is_answered_from_the_ledger(client: Client) -> None:
    link, table = unique("idem"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    await client.commit(table, "r1", [1])
    request_id = rid()
    first = await client.settle(table, "r1", {1: ["2c", "5c", "9c", "Jc", "Kc"]}, request_id=request_id)
    record = keys.record(link, f"table:{table}:{request_id}")  # a request id is its caller's
    # as if its days in Redis were over: the stored answer must really be gone, or the retry below would
    # be answered from Redis and prove nothing about the ledger
    assert await client.redis.delete(record) == 1, f"no stored answer at {record}"
    assert await client.redis.exists(record) == 0
    before = await state(client, link)
    again = await client.settle(table, "r1", {1: ["2c", "5c", "9c", "Jc", "Kc"]}, request_id=request_id)
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    assert await state(client, link) == before  # answered, not applied again
    assert await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND request_id = $2",
                                    link, f"table:{table}:{request_id}") == 1


async def test_a_retried_settle_counts_its_hits_once(client: Client) -> None:
    from prometheus_client import REGISTRY

    link, table = unique("hits"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    await client.commit(table, "r1", [1, 2])
    settle = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id="r1", hands=[
        table_pb2.SeatHand(seat=1, cards=["2c", "5c", "9c", "Jc", "Kc"]),
        table_pb2.SeatHand(seat=2, cards=["2d", "5d", "9d", "Jd", "Kd"])])

    def flushes() -> float:
        return REGISTRY.get_sample_value("jackpotd_hits_total", {"link": link, "hand": "flush", "pool": "MINOR"}) or 0

    first = await client.table.SettleRound(settle)
    assert [p.hand for p in first.payouts] == ["flush", "flush"] and flushes() == 2
    assert await client.table.SettleRound(settle) == first  # the retry: same answer, no new hits counted
    assert flushes() == 2


async def test_a_request_id_belongs_to_its_caller(client: Client) -> None:
    """Issue 19: one table (or an administrator) using another table's next request id first neither claims its
    answer nor makes the other's call fail: ids are unique per link and per authenticated caller."""
    link, victim, other = unique("own"), unique("tbl"), unique("tbl")
    await client.create_link(link)
    await client.register(victim, link)
    await client.register(other, link)
    taken = rid()  # the victim's next id, guessed
    first = await client.commit(other, "r1", [2], request_id=taken)
    fund = await client.admin.FundPool(admin_pb2.FundPoolRequest(request_id=taken, link_id=link, pool="MINOR",
                                                                 amount_cents=100, audit=AUDIT))
    mine = await client.commit(victim, "r1", [1], request_id=taken)
    assert len({first.sequence, fund.sequence, mine.sequence}) == 3  # three operations, none blocked
    assert [a.seat for a in mine.accepted] == [1]
    again = await client.commit(victim, "r1", [1], request_id=taken)  # each caller's retry answers its own
    assert again.sequence == mine.sequence
    assert (await client.commit(other, "r1", [2], request_id=taken)).sequence == first.sequence
    with pytest.raises(grpc.aio.AioRpcError) as err:  # the same caller, other content: still refused
        await client.commit(victim, "r2", [1], request_id=taken)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    keys_held = await client.pg.fetch("SELECT request_id FROM entries WHERE link_id = $1 AND request_id LIKE $2 "
                                      "ORDER BY seq", link, f"%:{taken}")
    assert [r["request_id"] for r in keys_held] == [f"table:{other}:{taken}", f"admin:{ADMIN}:{taken}",
                                                    f"table:{victim}:{taken}"]


async def test_ids_stay_their_callers_after_the_redis_retention(isolated: Isolated, tmp_path: Path) -> None:
    """Once Redis let the records go, the ledger answers each caller's retry with its own reply."""
    async with open_private(isolated, tmp_path, retention_seconds=1) as p:
        c = p.client
        link, a, b = unique("own"), unique("tbl"), unique("tbl")
        await c.create_link(link)
        await c.register(a, link)
        await c.register(b, link)
        same = rid()
        first = await c.commit(a, "r1", [1], request_id=same)
        second = await c.commit(b, "r1", [3], request_id=same)
        record = keys.record(link, f"table:{a}:{same}")
        await eventually(lambda: _gone(c, record), 15, "the request records let go by Redis")
        assert (await c.commit(a, "r1", [1], request_id=same)).sequence == first.sequence
        assert (await c.commit(b, "r1", [3], request_id=same)).sequence == second.sequence


async def _gone(c: Client, key: str) -> bool:
    return not await c.redis.exists(key)


async def test_a_retry_spanning_the_upgrade_is_answered_from_the_unscoped_entry(private: Private) -> None:
    """A ledger written before ids were scoped holds a table's request under its bare id: its retry, now scoped, is
    answered from that entry, not applied again."""
    c = private.client
    link, table = unique("old"), unique("tbl")
    await c.create_link(link)
    await c.register(table, link)
    old = rid()
    redis = await RedisPools.open(private.valkey.url, "", "jackpot")
    try:
        async with jackpot_service(redis, c.pg) as service:  # as the service wrote requests before ids were scoped
            content = {"table_id": table, "round_id": "r1", "wagers": [[1, 100, True]]}
            before = await service.services.table.commit(Commit(Request(old, content), table, "r1",
                                                                [Wager(1, 100, True)]))
    finally:
        await redis.close()
    assert await c.pg.fetchval("SELECT request_id FROM entries WHERE link_id = $1 AND seq = $2", link,
                               before.seq) == old
    again = await c.commit(table, "r1", [1], request_id=old)
    assert again.sequence == before.seq
    assert await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link) == before.seq
