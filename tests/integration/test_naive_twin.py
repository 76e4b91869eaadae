"""The naive twin of bench_naive.py (bench/naive/) answers CommitWagers and SettleRound as jackpotd does, so the
benchmark compares two designs of storage and not two sets of rules; and its one-transaction store keeps a
balanced ledger, answers a retry with the stored reply, and changes nothing on bad input."""

from __future__ import annotations

import asyncpg
import grpc
import pytest

from bench.naive import server as naive
from jackpotd.domain.link import TableConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.embedded import free_port
from jackpotd.service.admin_requests import new_link
from tests.conftest import AUTH_KEY, Isolated, unique

from .harness import Client, authorized_channel, rid

ROYAL = ["AS", "KS", "QS", "JS", "TS"]


@pytest.mark.asyncio
async def test_the_naive_twin_answers_as_jackpotd_and_keeps_a_balanced_ledger(client: Client,
                                                                               isolated: Isolated) -> None:
    link, table = unique("twin"), unique("twin-t")
    await client.create_link(link, resets={"MAJOR": 1_000})
    await client.register(table, link)
    pools = (PoolSpec("MAJOR", 1_000), PoolSpec("MINOR"), PoolSpec("RESERVE"))
    rates = RateSet({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}, 700_000)
    config = new_link(link, "SPLIT", 100, pools, rates, [], 0, "", "")
    config = config.with_table(TableConfig(table, "caribbean-stud", 7))
    assert config.paytable("caribbean-stud") == default_paytable("caribbean-stud", "SPLIT")
    await naive.setup(isolated.dsn, config)
    port = free_port()
    server, pg = await naive.start(port, isolated.dsn, AUTH_KEY, 2)
    channel = authorized_channel(f"127.0.0.1:{port}")
    twin = Client(channel, *(type(s)(channel) for s in (client.table, client.display, client.admin, client.report)),
                  pg, client.redis)
    try:
        for round_id in ("r1", "r2"):  # the second round is priced against pools the first has moved
            a = await client.commit(table, round_id, range(1, 8))
            b = await twin.commit(table, round_id, range(1, 8))
            assert [(x.seat, x.amount_cents, x.contributed_ucents, x.overflow_ucents) for x in a.accepted] == \
                   [(x.seat, x.amount_cents, x.contributed_ucents, x.overflow_ucents) for x in b.accepted]
            assert [(p.pool, p.amount_cents, p.balance_ucents) for p in a.pools] == \
                   [(p.pool, p.amount_cents, p.balance_ucents) for p in b.pools]
            s_a = await client.settle(table, round_id, {7: ROYAL})
            s_b = await twin.settle(table, round_id, {7: ROYAL})
            fields = ("seat", "hand", "amount_cents", "pool", "funded_by_operator_cents", "pool_before_ucents", "rule")
            assert [tuple(getattr(p, f) for f in fields) for p in s_a.payouts] == \
                   [tuple(getattr(p, f) for f in fields) for p in s_b.payouts] != []
            assert list(s_a.resets) == list(s_b.resets)
            assert [(p.pool, p.balance_ucents) for p in s_a.pools] == [(p.pool, p.balance_ucents) for p in s_b.pools]

        # A retry gets the stored reply and moves nothing; the id reused for other content is refused.
        request_id = rid()
        first = await twin.commit(table, "r3", [1, 2], request_id=request_id)
        again = await twin.commit(table, "r3", [1, 2], request_id=request_id)
        assert again == first
        with pytest.raises(grpc.aio.AioRpcError) as reused:
            await twin.commit(table, "r4", [1, 2], request_id=request_id)
        assert reused.value.code() == grpc.StatusCode.ALREADY_EXISTS and "request_id" in (reused.value.details() or "")

        # Bad input: a precise status naming the field and the value, and nothing changed.
        conn = await asyncpg.connect(isolated.dsn)
        try:
            before = await conn.fetch("SELECT pool, balance_uc FROM naive_pools ORDER BY pool")
            entries = await conn.fetchval("SELECT count(*) FROM naive_entries")
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await twin.commit(table, "r5", [1], amount=50)
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "wagers[0].amount_cents" in (bad.value.details() or "") and "50" in (bad.value.details() or "")
            assert await conn.fetch("SELECT pool, balance_uc FROM naive_pools ORDER BY pool") == before
            assert await conn.fetchval("SELECT count(*) FROM naive_entries") == entries == 5

            # Every entry balances, and the pool rows are what their postings sum to.
            assert await conn.fetch("SELECT seq FROM naive_postings GROUP BY seq HAVING sum(amount_uc) <> 0") == []
            summed = await conn.fetch("SELECT substr(account, 6) AS pool, sum(amount_uc) AS total FROM naive_postings "
                                      "WHERE account LIKE 'pool:%' GROUP BY account ORDER BY 1")
            assert [(r["pool"], r["total"]) for r in summed] == \
                   [(r["pool"], r["balance_uc"]) for r in before]
        finally:
            await conn.close()
    finally:
        await channel.close()
        await server.stop(None)
        await pg.close()
