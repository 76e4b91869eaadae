"""Crash and loss: kill -9 mid-load, FLUSHALL, and Redis ahead of the ledger. Nothing is lost or doubled."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from jackpotd.store import keys, ledger, recovery
from jackpotd.store.ledger import summaries
from jackpotd.store.ledger.unnest import columns
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique
from .checks import assert_consistent
from .harness import Client, eventually
from .load import Tally, run_table
from .process import ServerProcess
from .writers import funded_link


async def new_link(client: Client, tables: int) -> tuple[str, list[str]]:
    """A funded link of its own, with `tables` tables."""
    return await funded_link(client, unique("crash"), tables)


async def test_kill_9_mid_load_loses_and_doubles_nothing(proc_service: tuple[ServerProcess, Client]) -> None:
    server, client = proc_service
    link, tables = await new_link(client, 6)
    tally = Tally()
    rounds = 120
    load = asyncio.gather(*(run_table(server.target, t, rounds, tally, seed=i, hit_every=4)
                            for i, t in enumerate(tables)))
    await eventually(lambda: len(tally.answers) >= 200 or load.done(), 60, "200 answers before the kill")
    if load.done():  # in the middle of the load, not after it
        load.result()
        raise AssertionError("the load was over before the kill")
    answered_before_kill, retries = len(tally.answers), tally.retries
    server.kill9()
    # down until the tables have met it: a call the dead service did not answer, retried
    await eventually(lambda: tally.retries > retries or load.done(), 30, "a table retrying while jackpotd is down")
    await asyncio.to_thread(server.start)
    await load  # the clients' retries succeed after the restart
    assert answered_before_kill < 6 * rounds * 2
    assert tally.retries > 0
    assert len(tally.answers) == 6 * rounds * 2  # every round: a commit, then a settle or a void
    await assert_consistent(client.pg, client.redis, link, tally)


async def test_flushall_then_restart_rebuilds_the_pools_to_the_cent(
        proc_service: tuple[ServerProcess, Client]) -> None:
    server, client = proc_service
    link, tables = await new_link(client, 2)
    tally = Tally()
    await asyncio.gather(*(run_table(server.target, t, 12, tally, seed=i) for i, t in enumerate(tables)))
    before = await client.pools(link)
    await client.redis.flushdb()
    server.interrupt()
    await asyncio.to_thread(server.start)
    after = await client.pools(link)
    assert {k: str(v) for k, v in after.items()} == {k: str(v) for k, v in before.items()}
    await assert_consistent(client.pg, client.redis, link, tally)
    # the rebuilt link keeps working, and old request ids still answer identically
    more = Tally()
    await run_table(server.target, tables[0], 3, more, seed=99, prefix="after-")
    assert len(more.answers) == 3 * 2


async def test_redis_ahead_of_the_ledger_is_drained(isolated: Isolated,
                                                    proc_service: tuple[ServerProcess, Client]) -> None:
    """A crash between the atomic step and the ledger commit: recovery writes the journal to PostgreSQL first."""
    server, client = proc_service
    link, tables = await new_link(client, 1)
    tally = Tally()
    await run_table(server.target, tables[0], 5, tally, seed=1)
    server.interrupt()
    # Lose the ledger's last entries, as if PostgreSQL had not committed them before a crash.
    head = await client.pg.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link)
    redis_seq = int(await client.redis.get(keys.seq(link)))
    assert head == redis_seq
    conn = await asyncpg.connect(isolated.dsn)
    await conn.execute("SET session_replication_role = replica")  # bypass triggers: simulating lost commits
    await conn.execute("DELETE FROM hits WHERE link_id = $1 AND seq > $2", link, head - 3)
    await conn.execute("DELETE FROM postings WHERE link_id = $1 AND seq > $2", link, head - 3)
    await conn.execute("DELETE FROM entries WHERE link_id = $1 AND seq > $2", link, head - 3)
    await conn.close()
    # restore the projections the lost entries had moved, from the remaining postings
    await _rewind_projections(isolated.dsn, link, head - 3)
    redis = RedisPools(isolated.redis_url)
    pool = await ledger.connect_pool(isolated.dsn)
    # the journal still holds the entries (trimmed only far below the head)
    actions = await recovery.recover(redis, pool)
    assert [(a.link_id, a.action) for a in actions if a.link_id == link] == [(link, "drained")]
    await assert_consistent(pool, redis.client, link, tally)
    await pool.close()
    await redis.close()


async def _rewind_projections(dsn: str, link: str, head: int) -> None:
    conn = await asyncpg.connect(dsn)
    await conn.execute("SET session_replication_role = replica")
    await conn.execute("DELETE FROM account_balances WHERE link_id = $1", link)
    await conn.execute("INSERT INTO account_balances SELECT link_id, account, sum(amount_uc) FROM postings "
                       "WHERE link_id = $1 GROUP BY link_id, account", link)
    h = await conn.fetchval("SELECT hash FROM entries WHERE link_id = $1 AND seq = $2", link, head)
    await conn.execute("UPDATE links SET last_seq = $2, last_hash = $3 WHERE link_id = $1", link, head, h)
    # finance's summaries are written in the same statement as the entries: lost with them
    await conn.execute("DELETE FROM flow_totals WHERE link_id = $1", link)
    await conn.execute("DELETE FROM flow_buckets WHERE link_id = $1", link)
    kept = await summaries.derive(conn, link)
    await conn.execute(summaries.buckets_upsert(1), *columns(kept.bucket_rows(), 5))
    await conn.execute(summaries.totals_upsert(1), *columns(kept.total_rows(), 7))
    await conn.close()


async def test_ledger_rows_cannot_be_changed(isolated: Isolated, proc_service: tuple[ServerProcess, Client]) -> None:
    _, client = proc_service
    link, _ = await new_link(client, 1)
    conn = await asyncpg.connect(isolated.dsn)
    for sql in ("UPDATE entries SET kind = 'x' WHERE link_id = $1", "DELETE FROM postings WHERE link_id = $1",
                "UPDATE postings SET amount_uc = 0 WHERE link_id = $1"):
        with pytest.raises(asyncpg.PostgresError, match="append-only"):
            await conn.execute(sql, link)
    await conn.execute("SET ROLE jackpotd_app")  # the service's own role is refused by grants as well
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await conn.execute("UPDATE entries SET kind = 'x' WHERE link_id = $1", link)
    await conn.close()



@pytest.mark.parametrize("tamper", [
    "UPDATE postings SET amount_uc = amount_uc + 1 WHERE link_id = $1 AND seq = 3 AND idx = 0",
    "UPDATE entries SET entry = replace(entry::text, 'request_id', 'request_iD')::json WHERE link_id = $1 AND seq = 3",
])
async def test_audit_finds_a_tampered_ledger(isolated: Isolated, proc_service: tuple[ServerProcess, Client],
                                             tamper: str) -> None:
    server, client = proc_service
    link, tables = await new_link(client, 1)
    await run_table(server.target, tables[0], 3, Tally(), seed=5)
    redis = RedisPools(isolated.redis_url)
    balances, seq = await redis.balances(link), await redis.seq(link)
    assert (await ledger.audit_link(client.pg, link, balances, seq)).ok
    conn = await asyncpg.connect(isolated.dsn)
    await conn.execute("SET session_replication_role = replica")  # a superuser going around the triggers
    await conn.execute(tamper, link)
    await conn.close()
    report = await ledger.audit_link(client.pg, link, balances, seq)
    assert not report.ok
    assert any("hash chain broken at entry 3" in p for p in report.problems), report.problems
    await redis.close()
