"""Retrying with the same request id returns the identical answer and changes nothing; different content is refused."""

from __future__ import annotations

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, table_pb2
from jackpotd.store import keys

from ..conftest import unique
from .harness import AUDIT, Client, rid


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
    record = keys.record(link, request_id)
    # as if its days in Redis were over: the stored answer must really be gone, or the retry below would
    # be answered from Redis and prove nothing about the ledger
    assert await client.redis.delete(record) == 1, f"no stored answer at {record}"
    assert await client.redis.exists(record) == 0
    before = await state(client, link)
    again = await client.settle(table, "r1", {1: ["2c", "5c", "9c", "Jc", "Kc"]}, request_id=request_id)
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    assert await state(client, link) == before  # answered, not applied again
    assert await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND request_id = $2",
                                    link, request_id) == 1


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
