"""Redis that forgot, went back or restarted under a running service: never NOT_FOUND, never stale pools,
back by itself within seconds; a link whose entry the ledger refuses is fenced alone; finished rounds
and answered requests leave Redis and late retries are answered from the ledger."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, table_pb2
from jackpotd.embedded import EmbeddedValkey
from jackpotd.store import keys, ledger, recovery
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique
from .checks import assert_consistent
from .conftest import Private, open_private, start_private
from .harness import ADMIN, AUDIT, Client, eventually, rid, while_unavailable
from .load import Tally, run_table
from .test_recovery import new_link

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]


async def ledger_pools_at(pg: asyncpg.Pool, link: str, seq: int) -> dict[str, int]:
    """Each visible pool's amount in cents as of entry `seq`, from the ledger's postings."""
    rows = await pg.fetch("SELECT DISTINCT ON (account) account, balance_after_uc FROM postings WHERE link_id = $1 "
                          "AND seq <= $2 AND account LIKE 'pool:%' ORDER BY account, seq DESC, idx DESC", link, seq)
    return {r["account"][5:]: int(r["balance_after_uc"]) // 1_000_000 for r in rows}


async def watch_signs(client: Client, link: str, seconds: float) -> list[str]:
    """Ask GetPools again and again: every answer is UNAVAILABLE or exactly what the ledger held at its
    sequence. Returns the codes seen."""
    codes = []
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while loop.time() < until:
        try:
            resp = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link), timeout=5)
        except grpc.aio.AioRpcError as e:
            assert e.code() == S.UNAVAILABLE, (e.code(), e.details())
            codes.append(e.code().name)
        else:
            held = await ledger_pools_at(client.pg, link, resp.sequence)
            shown = {p.pool: p.amount_cents for p in resp.pools}
            assert shown == {k: v for k, v in held.items() if k != "RESERVE"}, (resp.sequence, shown, held)
            codes.append("OK")
        await asyncio.sleep(0.02)
    return codes


async def test_create_link_of_a_link_redis_forgot_is_refused(private: Private) -> None:
    c = private.client
    link = unique("again")
    await c.create_link(link)
    await c.fund(link, "MAJOR", 5_000)
    await c.redis.flushall()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await c.create_link(link)
    assert err.value.code() == S.FAILED_PRECONDITION and "already exists" in (err.value.details() or "")
    # and the link comes back by itself, its money intact
    await eventually(lambda: _major_is(c, link, 5_000), 10, "MAJOR back at $50.00")


async def _major_is(c: Client, link: str, cents: int) -> bool:
    return (await c.pools(link))["MAJOR"].amount_cents == cents


async def test_live_flushall_answers_unavailable_then_serves_again_without_a_restart(private: Private) -> None:
    c = private.client
    link, tables = await new_link(c, 3)
    tally = Tally()
    load = asyncio.gather(*(run_table(private.target, t, 30, tally, seed=i, hit_every=4)
                            for i, t in enumerate(tables)))
    await eventually(lambda: _answered(tally, 40), 30, "40 answers to the tables")
    await c.redis.flushall()
    codes = await watch_signs(c, link, 3)  # during and after: UNAVAILABLE or the ledger's own figures
    assert "OK" in codes[-10:], codes  # back without a restart
    await load  # the tables' retries succeed; no NOT_FOUND or FAILED_PRECONDITION reached them
    assert len(tally.answers) == 3 * 30 * 2
    assert tally.retries > 0
    await assert_consistent(c.pg, c.redis, link, tally)
    rebuilt = REGISTRY.get_sample_value("jackpotd_link_rebuilds_total", {"link": link, "reason": "lost"})
    assert rebuilt is not None and rebuilt >= 1


def _answered(tally: Tally, n: int) -> bool:
    return len(tally.answers) >= n


async def test_redis_that_went_back_is_refused_and_rebuilt(private: Private) -> None:
    """A replica promoted after it missed the last writes, or a restore of an old snapshot."""
    c = private.client
    link, tables = await new_link(c, 2)
    tally = Tally()
    await asyncio.gather(*(run_table(private.target, t, 6, tally, seed=i) for i, t in enumerate(tables)))
    raw = aioredis.Redis.from_url(private.valkey.url)  # bytes: DUMP payloads are binary
    try:
        old = {k: (await raw.dump(k), await raw.pttl(k)) for k in await raw.keys("*")}
        await asyncio.gather(*(run_table(private.target, t, 6, tally, seed=10 + i, prefix="later-")
                               for i, t in enumerate(tables)))
        before = await c.pools(link)
        await raw.flushall()
        for key, (payload, ttl) in old.items():
            await raw.restore(key, max(ttl, 0), payload)
    finally:
        await raw.aclose()
    assert int(await c.redis.get(keys.seq(link))) < before["_seq"]  # Redis went back
    codes = await watch_signs(c, link, 2)
    assert codes[0] == "UNAVAILABLE" or codes == ["OK"] * len(codes), codes  # never the old pools
    after = await c.pools(link)
    assert {k: str(v) for k, v in after.items()} == {k: str(v) for k, v in before.items()}
    await asyncio.gather(*(run_table(private.target, t, 3, tally, seed=20 + i, prefix="after-")
                           for i, t in enumerate(tables)))
    await assert_consistent(c.pg, c.redis, link, tally)


async def test_a_replica_that_missed_the_last_writes_taking_over_is_rebuilt(private: Private,
                                                                            tmp_path: Path) -> None:
    """A real failover: a replica stops following (promoted), the old master goes on taking writes the
    replica never sees, then the service's Redis becomes that replica's data (the old master re-syncs
    from it, as a demoted master does). Everything acknowledged in between must survive."""
    c = private.client
    link, tables = await new_link(c, 2)
    tally = Tally()
    await asyncio.gather(*(run_table(private.target, t, 5, tally, seed=i) for i, t in enumerate(tables)))
    replica = EmbeddedValkey(tmp_path / "replica").start()
    master = aioredis.Redis(host="127.0.0.1", port=private.valkey.port, password=private.valkey.password)
    follower = aioredis.Redis(host="127.0.0.1", port=replica.port, password=replica.password)  # the same one
    try:
        await follower.replicaof("127.0.0.1", private.valkey.port)
        await eventually(lambda: _synced(follower, master), 30, "the replica in sync")
        await follower.replicaof("NO", "ONE")  # promoted: from here on it misses every write
        await asyncio.gather(*(run_table(private.target, t, 5, tally, seed=10 + i, prefix="missed-")
                               for i, t in enumerate(tables)))
        before = await c.pools(link)
        await master.replicaof("127.0.0.1", replica.port)  # the service's Redis now holds the replica's data
        await eventually(lambda: _synced(master, follower), 30, "the old master in sync")
        await master.replicaof("NO", "ONE")
        assert int(await c.redis.get(keys.seq(link))) < before["_seq"]  # it went back
        codes = await watch_signs(c, link, 2)
        assert codes[0] == "UNAVAILABLE" or codes == ["OK"] * len(codes), codes
        after = await c.pools(link)
        assert {k: str(v) for k, v in after.items()} == {k: str(v) for k, v in before.items()}
        await asyncio.gather(*(run_table(private.target, t, 3, tally, seed=20 + i, prefix="after-")
                               for i, t in enumerate(tables)))
        await assert_consistent(c.pg, c.redis, link, tally)
    finally:
        await master.aclose()
        await follower.aclose()
        replica.stop()


async def _synced(replica: aioredis.Redis, master: aioredis.Redis) -> bool:
    info = await replica.info("replication")
    return bool(info.get("master_link_status") == "up" and await replica.dbsize() == await master.dbsize())


async def test_valkey_restart_under_load_is_rebuilt(private: Private) -> None:
    c = private.client
    link, tables = await new_link(c, 2)
    tally = Tally()
    load = asyncio.gather(*(run_table(private.target, t, 25, tally, seed=i, hit_every=3)
                            for i, t in enumerate(tables)))
    await eventually(lambda: _answered(tally, 30), 30, "30 answers to the tables")
    retries = tally.retries
    private.valkey.stop()
    # down until the tables have met it: a call the service could not answer, retried
    await eventually(lambda: tally.retries > retries or load.done(), 30, "a table retrying while Valkey is down")
    private.valkey.start()  # empty: the embedded Valkey keeps no files
    await load
    assert len(tally.answers) == 2 * 25 * 2
    await assert_consistent(c.pg, c.redis, link, tally)


REFUSE = """
CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.link_id = '{link}' AND NEW.kind = 'fund' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER test_refuse BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION test_refuse();
"""


async def test_an_entry_the_ledger_refuses_fences_its_link_alone(isolated: Isolated, tmp_path: Path) -> None:
    async with open_private(isolated, tmp_path) as p:
        c = p.client
        bad, bad_tables = await new_link(c, 1)
        _, good_tables = await new_link(c, 1)
        conn = await asyncpg.connect(isolated.dsn)
        await conn.execute(REFUSE.format(link=bad))
        fund = admin_pb2.FundPoolRequest(request_id=rid(), link_id=bad, pool="MAJOR", amount_cents=700, audit=AUDIT)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.admin.FundPool(fund)
        assert err.value.code() == S.UNAVAILABLE
        assert "fenced" in (err.value.details() or "") and "refused by a test trigger" in (err.value.details() or "")
        for call in (c.pools(bad), c.commit(bad_tables[0], "r1", [1])):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call
            assert err.value.code() == S.UNAVAILABLE and "fenced" in (err.value.details() or "")
        await c.commit(good_tables[0], "r1", [1])  # every other link goes on
        await c.settle(good_tables[0], "r1", {1: FLUSH})
        assert REGISTRY.get_sample_value("jackpotd_link_fenced", {"link": bad}) == 1
        await eventually(lambda: _health_names(p, bad), 5, "health naming the fenced link")
        listed = await recovery.fenced_links(RedisPools(p.valkey.url), c.pg)
        assert [(f.link_id, entry.split(" ")[0]) for f, entry in listed] == [(bad, "fund")]
        await c.redis.flushall()  # Redis forgets the fence with the rest: the writer says it again
        await eventually(lambda: _fenced_again(c, bad), 10, "the link fenced")
        await eventually(lambda: _health_names(p, bad), 5, "health naming the fenced link")
        # a restart still starts, and the link stays fenced
        p.stop.set()
        await p.task
        p.task, p.stop = await start_private(p.settings)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.pools(bad)
        assert err.value.code() == S.UNAVAILABLE
        await c.commit(good_tables[0], "r2", [1])
        # the operator removes the cause and lifts the fence: the refused entry is written, the retry answered
        await conn.execute("DROP TRIGGER test_refuse ON entries")
        await conn.close()
        stores = {**os.environ, "JACKPOTD_REDIS_URL": p.valkey.url, "JACKPOTD_POSTGRES_DSN": isolated.dsn}
        out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "unfence", bad], env=stores,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "--reason" in out.stderr, out.stdout + out.stderr  # an act says why
        out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "unfence", bad, "--reason",
                              "the trigger that refused it was dropped"], env=stores, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and "fence lifted" in out.stdout, out.stdout + out.stderr
        act = await c.pg.fetchrow("SELECT actor, role, reason, outcome FROM admin_audit WHERE method = 'Unfence' "
                                  "AND link_id = $1", bad)
        assert act is not None and act["role"] == "operator" and "@" in act["actor"], act  # the host's account
        assert act["reason"] == "the trigger that refused it was dropped" and act["outcome"] == "OK", act
        again: Any = await while_unavailable(lambda: c.admin.FundPool(fund), 10, "FundPool once unfenced")
        assert (await c.pools(bad))["MAJOR"].amount_cents == 2_000_000 + 700 + 0
        assert again.sequence == await c.pg.fetchval(
            "SELECT seq FROM entries WHERE link_id = $1 AND request_id = $2", bad, f"admin:{ADMIN}:{fund.request_id}")
        out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "fenced"], env=stores,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "no link is fenced" in out.stdout, out.stdout + out.stderr


async def _fenced_again(c: Client, link: str) -> bool:
    try:
        await c.pools(link)
    except grpc.aio.AioRpcError as e:
        return e.code() == S.UNAVAILABLE and "fenced" in (e.details() or "")
    return False


async def _health_names(p: Private, link: str) -> bool:
    report = await RedisPools(p.valkey.url).writer_health()
    return report is not None and link in report.problems


async def test_finished_rounds_and_answers_leave_redis_and_retries_are_answered_from_the_ledger(
        isolated: Isolated, tmp_path: Path) -> None:
    async with open_private(isolated, tmp_path, retention_seconds=1) as p:
        c = p.client
        link, (table,) = await new_link(c, 1)
        commit = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                               wagers=[table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True)
                                                       for s in (1, 2)])
        settle = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id="r1",
                                              hands=[table_pb2.SeatHand(seat=1, cards=FLUSH),
                                                     table_pb2.SeatHand(seat=2, no_hand=table_pb2.FOLDED)])
        commit2 = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r2",
                                                wagers=[table_pb2.Wager(seat=3, amount_cents=100, ante_placed=True)])
        void = table_pb2.VoidRoundRequest(request_id=rid(), table_id=table, round_id="r2", reason="misdeal")
        calls: list[tuple[Any, Any]] = [(c.table.CommitWagers, commit), (c.table.SettleRound, settle),
                                        (c.table.CommitWagers, commit2), (c.table.VoidRound, void)]
        first = [await method(request) for method, request in calls]
        await eventually(lambda: _only_link_keys_left(c, link), 15, "rounds and records gone from Redis")
        for (method, request), answer in zip(calls, first, strict=True):  # late retries: the same bytes
            again = await method(request)
            assert again.SerializeToString(deterministic=True) == answer.SerializeToString(deterministic=True)
        for round_id, state in (("r1", "SETTLED"), ("r2", "VOIDED")):  # a round id is used once, forever
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await c.commit(table, round_id, [5])
            assert err.value.code() == S.FAILED_PRECONDITION and state in (err.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.settle(table, "r2", {3: FLUSH})
        assert err.value.code() == S.FAILED_PRECONDITION and "VOIDED" in (err.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.settle(table, "never", {3: FLUSH})
        assert err.value.code() == S.NOT_FOUND
        # a request id used once and let go by Redis is still taken: another call with it is refused, and the
        # link is not fenced for it
        await c.commit(table, "r3", [4])
        for reuse in (lambda: c.settle(table, "r3", {4: FLUSH}, request_id=commit.request_id),
                      lambda: c.commit(table, "r4", [4], request_id=settle.request_id)):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reuse()
            assert err.value.code() == S.ALREADY_EXISTS, err.value.details()
        await c.settle(table, "r3", {4: FLUSH})
        assert await c.pg.fetchval("SELECT count(*) FROM link_fences") == 0
        rows = await c.pg.fetch("SELECT request_id, count(*) AS n FROM entries WHERE link_id = $1 "
                                "GROUP BY request_id HAVING count(*) > 1", link)
        assert rows == []


async def _only_link_keys_left(c: Client, link: str) -> bool:
    """Only the link's own keys remain: no round and no request record."""
    left = await c.redis.keys(keys.link_pattern(link))
    return bool(left) and not [k for k in left if ":round:" in k or ":req:" in k]


async def test_a_writer_that_keeps_failing_turns_health_not_serving_and_fences_nothing(
        isolated: Isolated, tmp_path: Path) -> None:
    """A fault that is no entry's (the service's role lost its grant): every call waits, health says so,
    no link is fenced for it, and everything goes on once it is repaired."""
    await ledger.migrate(isolated.dsn)  # as the owner; the service then logs in as its own role, as deployed
    async with open_private(isolated, tmp_path, postgres_dsn=isolated.app_dsn) as p:
        c = p.client
        _, (table,) = await new_link(c, 1)
        conn = await asyncpg.connect(isolated.dsn)
        await conn.execute("REVOKE INSERT ON entries FROM jackpotd_app")
        request = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                                wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)])
        pending = asyncio.ensure_future(c.table.CommitWagers(request))
        await eventually(lambda: _stalled(p), 15, "health reporting the writer stalled")
        await conn.execute("GRANT INSERT ON entries TO jackpotd_app")
        await conn.close()
        try:
            first = await pending
        except grpc.aio.AioRpcError as e:  # the wait for the ledger may have run out: the retry is answered
            assert e.code() == S.UNAVAILABLE, e.details()
            first = await while_unavailable(lambda: c.table.CommitWagers(request), 10, "the commit answered")
        again = await c.table.CommitWagers(request)
        assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
        assert await c.pg.fetchval("SELECT count(*) FROM link_fences") == 0
        await eventually(lambda: _not_stalled(p), 10, "health no longer stalled")


async def _stalled(p: Private) -> bool:
    report = await RedisPools(p.valkey.url).writer_health()
    return report is not None and report.stalled is not None


async def _not_stalled(p: Private) -> bool:
    report = await RedisPools(p.valkey.url).writer_health()
    return report is not None and report.stalled is None


async def test_a_journal_entry_the_writer_cannot_read_fences_its_link(private: Private) -> None:
    c = private.client
    bad, _ = await new_link(c, 1)
    _, (good_table,) = await new_link(c, 1)
    seq = int(await c.redis.incr(keys.seq(bad)))  # as a faulty step would leave it
    await c.redis.xadd(keys.journal(bad), {"entry": "{not json", "balances": "[]", "reply": "",
                                           "after": await c.redis.get(keys.last(bad))}, id=f"0-{seq}")
    await eventually(lambda: _fenced_again(c, bad), 10, "the link fenced")
    assert await c.pg.fetchval("SELECT seq FROM link_fences WHERE link_id = $1", bad) == seq
    await c.commit(good_table, "r1", [1])  # the others go on


async def test_redis_lost_again_and_again_is_rebuilt_every_time_and_fences_nothing(private: Private) -> None:
    """A Valkey that keeps restarting empty (the supervisor restarts it) is no fault of a link's."""
    c = private.client
    link, (table,) = await new_link(c, 1)
    for n in range(5):
        await c.redis.flushall()
        await eventually(lambda n=n: _major_is(c, link, 2_000_000 + 20 * n), 10, f"MAJOR rebuilt after loss {n}")
        await while_unavailable(lambda n=n: c.commit(table, f"r{n}", [1]), 10, f"commit r{n}")
    assert await c.pg.fetchval("SELECT count(*) FROM link_fences") == 0


async def test_a_retry_of_an_applied_commit_is_answered_after_its_table_was_suspended(private: Private) -> None:
    c = private.client
    _, (table,) = await new_link(c, 1)
    request = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                            wagers=[table_pb2.Wager(seat=2, amount_cents=100, ante_placed=True)])
    first = await c.table.CommitWagers(request)
    await c.admin.SuspendTable(admin_pb2.SuspendTableRequest(request_id=rid(), table_id=table, audit=AUDIT))
    again = await c.table.CommitWagers(request)
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    with pytest.raises(grpc.aio.AioRpcError) as err:  # a new commit is refused, as it should be
        await c.commit(table, "r2", [2])
    assert err.value.code() == S.FAILED_PRECONDITION


async def test_a_journal_entry_with_unreadable_balances_fences_its_link(private: Private) -> None:
    c = private.client
    bad, _ = await new_link(c, 1)
    seq = int(await c.redis.incr(keys.seq(bad)))
    await c.redis.xadd(keys.journal(bad), {"entry": "{}", "balances": "[1, 2, 3", "reply": ""}, id=f"0-{seq}")
    await eventually(lambda: _fenced_again(c, bad), 10, "the link fenced")
    assert await c.pg.fetchval("SELECT seq FROM link_fences WHERE link_id = $1", bad) == seq
