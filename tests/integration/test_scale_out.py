"""Beyond one process (issue 13): two `jackpotd writer` processes divide the writer shards between them and two
stateless `jackpotd grpc` replicas serve the tables. Under load, kill -9 a writer and one API replica: the other
writer takes every shard over, tables retrying on the other replica see every call answered exactly once,
nothing acknowledged is lost or doubled, and the audit passes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg

from jackpotd.embedded import free_port
from jackpotd.store import ledger
from jackpotd.store.leader import LEASE_KEY, SHARD_KEY, WriterLease
from jackpotd.store.shards import ALL, SHARDS, shard_of

from ..conftest import Isolated
from .checks import assert_consistent
from .conftest import open_private
from .harness import Client, eventually
from .load import Tally, run_table
from .process import ServerProcess
from .test_recovery import new_link


def _started(processes: list[ServerProcess]) -> None:
    for p in processes:
        p.start()


async def test_writer_and_api_replicas_fail_over_under_load(isolated: Isolated, tmp_path: Path) -> None:
    def role(command: str, n: int) -> ServerProcess:
        return ServerProcess(free_port(), tmp_path / f"{command}-{n}.log", redis_url=isolated.redis_url,
                             dsn=isolated.dsn, metrics_port=free_port(), command=command,
                             workers=0 if command == "grpc" else None)

    writers = [role("writer", 1), role("writer", 2)]
    apis = [role("grpc", 1), role("grpc", 2)]
    await asyncio.to_thread(_started, [writers[0]])
    await eventually(lambda: writers[0].shards() == ALL, 30, "the first writer writes every shard")
    await asyncio.to_thread(_started, [writers[1], *apis])
    # the second takes its half of the shards, the first gives that half back
    await eventually(lambda: len(writers[0].shards()) == len(writers[1].shards()) == SHARDS // 2, 30,
                         "the writers share the shards")
    # tables reach both replicas through one target; a dead replica's calls are retried on the other
    target = "ipv4:" + ",".join(a.target for a in apis)
    client = await Client.connect(apis[0].target, isolated.dsn, isolated.redis_url)
    try:
        link, tables = await new_link(client, 4)
        tally = Tally()
        rounds = 60
        total = len(tables) * rounds * 2  # a commit and a settle (or a void) per round
        play = [asyncio.create_task(run_table(target, table, rounds, tally, seed=n, hit_every=4))
                for n, table in enumerate(tables)]
        await eventually(lambda: len(tally.answers) >= 40, 60, "the tables are playing")
        dying, other = sorted(writers, key=lambda w: shard_of(link) not in w.shards())
        assert shard_of(link) in dying.shards()
        dying.kill9()  # the writer of the link's shard dies mid-batch
        assert len(tally.answers) < total  # ... while the tables play
        await eventually(lambda: other.shards() == ALL, 15, "the other writer takes every shard over")
        took_over = time.monotonic()
        await eventually(lambda: len(tally.answers) >= 120, 60, "play goes on after the writer's failover")
        apis[0].kill9()  # an API replica dies with calls in flight
        assert len(tally.answers) < total
        await asyncio.wait_for(asyncio.gather(*play), 240)
        assert time.monotonic() - took_over < 240
        await assert_consistent(client.pg, client.redis, link, tally)  # every answer exactly once in the ledger
        assert len(tally.answers) == total
        assert "holds the writer lease of shards all" in other.log.read_text()
    finally:
        await client.close()
        for p in [*writers, *apis]:
            if p.proc is not None and p.proc.poll() is None:
                p.kill9()


async def test_a_dsn_listing_several_hosts_reaches_the_primary(isolated: Isolated, tmp_path: Path) -> None:
    """`postgres_dsn` may list several hosts with target_session_attrs=read-write (a primary and its standbys):
    the service connects to whichever answers as the primary, here the second, the first being down."""
    dead = free_port()
    host = isolated.dsn.split("@", 1)[1].split("/", 1)[0]
    dsn = isolated.dsn.replace(f"@{host}/", f"@127.0.0.1:{dead},{host}/")
    dsn += ("&" if "?" in dsn else "?") + "target_session_attrs=read-write"
    async with open_private(isolated, tmp_path, postgres_dsn=dsn) as p:
        link, tables = await new_link(p.client, 1)
        done = await p.client.commit(tables[0], "r1", [1, 2])
        assert done.sequence > 0
        assert await p.client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link) == done.sequence


async def test_writers_share_the_shards_fairly_and_take_a_dead_ones_over(isolated: Isolated) -> None:
    """The leases on a real PostgreSQL: one writer takes every shard; a second gets half once the first gives it
    back; a third makes shares of six; when one dies its shards are taken over. No shard is ever held twice."""
    await ledger.migrate(isolated.dsn)  # a shard taken bumps its epoch (migration 019)
    a, b, c = WriterLease(isolated.dsn), WriterLease(isolated.dsn), WriterLease(isolated.dsn)
    try:
        assert await a.claim() == ALL
        assert await b.claim() == frozenset()  # nothing free yet
        keep = await a.claim()
        assert keep is not None and len(keep) == SHARDS // 2
        await a.give_back(a.shards - keep)  # (its writer stopped first)
        mine = await b.claim()
        assert mine is not None and len(mine) == SHARDS // 2 and not mine & a.shards
        for lease in (c, a, b, c):  # a third joins: shares of ceil(16 / 3) = 6
            wanted = await lease.claim()
            assert wanted is not None
            await lease.give_back(lease.shards - wanted)
        assert not (a.shards & b.shards or b.shards & c.shards or a.shards & c.shards)
        assert len(a.shards | b.shards | c.shards) == SHARDS and max(len(x.shards) for x in (a, b, c)) <= 6
        await b.release()  # b dies: its connection closes, PostgreSQL frees its leases
        for lease in (a, c):
            assert await lease.claim() is not None
        assert a.shards | c.shards == ALL and not a.shards & c.shards
        assert await a.held() and await c.held()
    finally:
        for lease in (a, b, c):
            await lease.release()


async def test_a_writer_of_the_single_lease_keeps_newer_writers_out(isolated: Isolated) -> None:
    """During a rolling upgrade a writer of an earlier version (one lease, the bigint lock) and a newer one never
    both write: the newer one stands by while the older holds its lease."""
    await ledger.migrate(isolated.dsn)
    old = await asyncpg.connect(isolated.dsn)
    lease = WriterLease(isolated.dsn)
    try:
        assert await old.fetchval("SELECT pg_try_advisory_lock($1::bigint)", LEASE_KEY)
        assert await lease.claim() is None
        await old.fetchval("SELECT pg_advisory_unlock($1::bigint)", LEASE_KEY)
        assert await lease.claim() == ALL
        assert not await old.fetchval("SELECT pg_try_advisory_lock($1::bigint)", LEASE_KEY)  # and not back
    finally:
        await lease.release()
        await old.close()


async def test_a_lease_taken_twice_or_lost_track_of_is_let_go(isolated: Isolated) -> None:
    """Advisory locks count: a shard locked twice by one session is given back whole. A lock whose answer was lost
    (held, but not known to the writer, so nobody writes its shard) is let go at the next claim."""
    await ledger.migrate(isolated.dsn)
    a, b = WriterLease(isolated.dsn), WriterLease(isolated.dsn)
    other = await asyncpg.connect(isolated.dsn)

    async def free(shard: int) -> bool:
        if not await other.fetchval("SELECT pg_try_advisory_lock($1::int, $2::int)", SHARD_KEY, shard):
            return False
        await other.fetchval("SELECT pg_advisory_unlock($1::int, $2::int)", SHARD_KEY, shard)
        return True

    try:
        assert await a.claim() == ALL
        assert await b.claim() == frozenset()
        keep = await a.claim()
        assert keep is not None
        await a.give_back(a.shards - keep)
        assert a.conn is not None and 3 in a.shards and 5 in a.shards
        assert await a.conn.fetchval("SELECT pg_try_advisory_lock($1::int, $2::int)", SHARD_KEY, 3)  # again
        await a.give_back(frozenset({3}))
        assert await free(3)
        a.shards -= {5}  # held, not known
        assert not await free(5)
        await a.claim()
        assert 5 in a.shards or await free(5)  # taken back knowingly, or let go: never held unknown
    finally:
        for lease in (a, b):
            await lease.release()
        await other.close()
