"""Signs see a snapshot, then updates and hit announcements; a lost store answers UNAVAILABLE, safe to retry."""

from __future__ import annotations

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, table_pb2

from ..conftest import unique
from .conftest import Private
from .harness import Client, next_matching, rid, while_unavailable


async def test_watch_pools_snapshot_then_hit_announcement(client: Client) -> None:
    link, table = unique("sign"), unique("tbl")
    await client.create_link(link, resets={"MAJOR": 1_000_000})
    await client.register(table, link)
    await client.fund(link, "MAJOR", 2_000_000)
    stream = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    first = await next_matching(stream, lambda _: True, 5, "the snapshot")
    assert {p.pool: p.amount_cents for p in first.pools}["MAJOR"] == 2_000_000
    await client.commit(table, "r1", [3])
    await client.settle(table, "r1", {3: ["9h", "8h", "7h", "6h", "5h"]})
    hit = (await next_matching(stream, lambda u: u.HasField("hit"), 10, "the hit announcement")).hit
    assert (hit.table_id, hit.seat, hit.hand, hit.pool) == (table, 3, "straight_flush", "MAJOR")
    assert hit.amount_cents == 200_002  # 10% of $20,000.20, floored to the cent
    assert hit.pool_amount_after_cents == 2_000_020 - 200_002
    stream.cancel()


async def test_watch_meter_follows_suspend_and_resume(client: Client) -> None:
    """NSW 14.13: a suspended table's meter says jackpot wagers are off at once; resuming, with the
    inspector's approval reference, turns them on again."""
    link, table = unique("meter"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    stream = client.table.WatchMeter(table_pb2.WatchMeterRequest(table_id=table))
    try:
        first = await next_matching(stream, lambda m: True, 5, "the meter's first update")
        assert first.jackpot_enabled and first.link_id == link
        suspended = await client.admin.SuspendTable(admin_pb2.SuspendTableRequest(
            request_id=rid(), table_id=table, audit=admin_pb2.Audit(actor="pit boss", reason="meter fault")))
        off = await next_matching(stream, lambda m: not m.jackpot_enabled, 5, "jackpot_enabled=False after suspend")
        assert off.link_id == link and off.sequence >= suspended.sequence
        resumed = await client.admin.ResumeTable(admin_pb2.ResumeTableRequest(
            request_id=rid(), table_id=table, audit=admin_pb2.Audit(actor="supervisor", reason="meter repaired",
                                                                    approval_ref="INSP-14.13-7")))
        on = await next_matching(stream, lambda m: m.jackpot_enabled, 5, "jackpot_enabled=True after resume")
        assert on.link_id == link and on.sequence >= resumed.sequence > suspended.sequence
    finally:
        stream.cancel()


async def test_store_unavailable_is_unavailable_and_safe_to_retry(private: Private) -> None:
    """Redis gone: UNAVAILABLE, nothing applied. Redis back (empty, rebuilt from the ledger): the same
    request id is applied exactly once, and asking again answers the same."""
    c = private.client
    link, table = unique("down"), unique("tbl")
    await c.create_link(link)
    await c.register(table, link)
    request = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                            wagers=[table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True)
                                                    for s in (1, 2)])
    private.valkey.stop()
    try:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.table.CommitWagers(request)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "retry with the same request_id" in (err.value.details() or "")
    finally:
        private.valkey.start()  # empty: the service rebuilds the link from the ledger
    answer = await while_unavailable(lambda: c.table.CommitWagers(request), 30, "the retry once the store is back")
    again = await c.table.CommitWagers(request)
    assert again.SerializeToString(deterministic=True) == answer.SerializeToString(deterministic=True)
    assert [(a.seat, a.amount_cents) for a in answer.accepted] == [(1, 100), (2, 100)]
    rows = await c.pg.fetch("SELECT seq, kind FROM entries WHERE link_id = $1 AND request_id LIKE '%:' || $2", link,
                            request.request_id)
    assert [(r["seq"], r["kind"]) for r in rows] == [(answer.sequence, "commit")]  # applied once
    commits = await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND kind = 'commit'", link)
    assert commits == 1
    pools = await c.pools(link)
    assert (pools["MAJOR"].amount_cents, pools["_seq"]) == (40, answer.sequence)  # 2 x 20¢, once
