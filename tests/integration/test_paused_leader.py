"""Paused or partitioned leaders are replaced and fenced (issue 23). A `jackpotd writer` SIGSTOPped under load keeps
its PostgreSQL sessions (the kernel keeps them alive), yet a standby ends them after the lease time and takes its
shards within 10 s, play goes on, and whatever the old leader would append after SIGCONT PostgreSQL refuses (its
shards' epochs moved on). The same for `jackpotd serve` as the leader, and for a leader cut off from PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path

import asyncpg
import pytest

from jackpotd.metrics import WRITER_FENCED
from jackpotd.store import ledger
from jackpotd.store.leader import WriterLease
from jackpotd.store.ledger import leases
from jackpotd.store.shards import ALL, shard_of

from ..conftest import Isolated, unique
from .checks import assert_consistent
from .conftest import open_private
from .harness import Client, eventually, while_unavailable
from .load import Tally
from .process import ServerProcess
from .relay import Relay
from .test_ledger_writer import funding
from .test_recovery import new_link
from .writers import REPLACED_WITHIN, end_all, halves, link_in, new_link_in, playing, role, share


def other_holder(p: ServerProcess) -> str:
    """What a writer process's holder name holds for sure: its pid."""
    assert p.proc is not None
    return f":{p.proc.pid}:"


def led_by(api: ServerProcess, shard: int) -> str:
    """Who health last said writes the shard, as it logged a link of it serving again ("" if never)."""
    said = f"its shard {shard} is written by "
    text = api.log.read_text()
    return text.rsplit(said, 1)[1].split(",", 1)[0] if said in text else ""


async def refused_with(isolated: Isolated, shard: int, epoch: int) -> ledger.LeaseFenced:
    """What PostgreSQL answers to an append onto `shard` carrying `epoch` (the real append, as the old leader would
    send it): LeaseFenced, and nothing written."""
    conn = await asyncpg.connect(isolated.app_dsn)
    try:
        link = link_in({shard}, "stale")
        with pytest.raises(ledger.LeaseFenced) as refused:
            await ledger.write_batch(conn, [funding(link, 1, 5)], {}, epochs={shard: epoch})
        assert await conn.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link) == 0
        return refused.value
    finally:
        await conn.close()


async def test_an_append_carrying_a_stale_epoch_is_refused_in_its_transaction(isolated: Isolated) -> None:
    """The fence itself, as the locked-down role: an append carrying the epoch its writer took goes in; once another
    writer took the shard (bumped its epoch) the same append is refused with JPL01, small or bulk, and writes
    nothing; a check in flight holds the row FOR SHARE, so the takeover's bump waits for its commit."""
    await ledger.migrate(isolated.dsn)
    conn = await asyncpg.connect(isolated.app_dsn)
    other = await asyncpg.connect(isolated.app_dsn, server_settings={"lock_timeout": "300"})
    try:
        link = unique("fence")
        shard = shard_of(link)
        mine = await leases.take_epoch(conn, shard, "writer-a", 2)
        cache: ledger.HeadCache = {}
        assert (await ledger.write_batch(conn, [funding(link, 1, 5)], cache, epochs={shard: mine})).heads == {link: 1}
        theirs = await leases.take_epoch(conn, shard, "writer-b", 2)
        assert theirs == mine + 1
        for batch in ([funding(link, 2, 5)], [funding(link, s, 5) for s in range(2, 302)]):  # one statement; COPY
            with pytest.raises(ledger.LeaseFenced) as refused:
                await ledger.write_batch(conn, batch, cache, epochs={shard: mine})
            assert str(refused.value) == (f"PostgreSQL refused the append: shard {shard}'s lease epoch is {theirs}, "
                                          f"this writer holds {mine}: another writer took it over")
            assert (refused.value.shard, refused.value.epoch, refused.value.held) == (shard, theirs, mine)
            assert refused.value.__cause__ is not None and not ledger.refuses(refused.value.__cause__)  # no link fenced
            assert await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link) == 1
        assert (await ledger.write_batch(conn, [funding(link, s, 5) for s in range(2, 302)], cache,
                                         epochs={shard: theirs})).heads == {link: 301}
        async with conn.transaction():  # an append's check in flight (a bulk append's first statement, say)
            await conn.execute("SELECT ledger_lease_held($1::smallint[], $2::bigint[])", [shard], [theirs])
            with pytest.raises(asyncpg.LockNotAvailableError):
                await leases.take_epoch(other, shard, "writer-c", 2)
        assert await leases.take_epoch(other, shard, "writer-c", 2) == theirs + 1
    finally:
        await conn.close()
        await other.close()


async def test_a_paused_writer_is_replaced_within_10_s_and_fenced(isolated: Isolated, tmp_path: Path) -> None:
    """Two `jackpotd writer`s (the default 5 s lease) and an API replica under load: SIGSTOP the writer of the
    link's shard. Within 10 s the other writes every shard and calls are acknowledged again; health says, meanwhile,
    that the holder has not renewed. After SIGCONT the old writer stops at once, and PostgreSQL refuses what it
    would append with the epochs it held. The tables' answers are each in the ledger exactly once."""
    await ledger.migrate(isolated.dsn)
    writers = [role(isolated, tmp_path, "writer", 1), role(isolated, tmp_path, "writer", 2)]
    api = role(isolated, tmp_path, "grpc", 1)
    client = None
    try:
        await share(writers[0], writers[1], api)
        client = await Client.connect(api.target, isolated.dsn, isolated.redis_url)
        link, tables = await new_link_in(client, writers[0].shards(), 3)
        paused, other = writers
        shard = shard_of(link)
        held = await client.pg.fetchrow("SELECT epoch, holder FROM writer_leases WHERE shard = $1", shard)
        tally = Tally()
        play = playing(api.target, tables, 40, tally)
        await eventually(lambda: len(tally.answers) >= 20, 60, "the tables are playing")
        assert paused.proc is not None
        paused.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            answered = len(tally.answers)
            await eventually(lambda: other.shards() == ALL, REPLACED_WITHIN + 5, "the other writer takes every shard")
            replaced_after = time.monotonic() - stopped
            assert replaced_after < REPLACED_WITHIN, f"replaced after {replaced_after:.1f} s"
            await eventually(lambda: len(tally.answers) >= answered + 10, 30, "calls acknowledged again")
            text = api.log.read_text()
            assert f"held by {held['holder']}, which has not renewed for" in text, text[-3000:]
            assert "(one is taking it over)" not in text
            await eventually(lambda: other_holder(other) in led_by(api, shard), 10,
                             "health, back to SERVING, names the new leader")
            assert "ended its sessions (pids" in other.log.read_text()
        finally:
            paused.proc.send_signal(signal.SIGCONT)
        await eventually(lambda: "stopping at once; PostgreSQL refuses its appends" in paused.log.read_text(), 15,
                         "the woken writer stops at once")
        now = await client.pg.fetchrow("SELECT epoch, holder FROM writer_leases WHERE shard = $1", shard)
        assert now["epoch"] > held["epoch"] and now["holder"] != held["holder"]
        refused = await refused_with(isolated, shard, held["epoch"])
        assert (refused.shard, refused.held) == (shard, held["epoch"])
        assert "jackpotd_writer_fenced_appends_total 0.0" in paused.metrics()  # present at 0: it never tried
        await asyncio.wait_for(asyncio.gather(*play), 180)
        await assert_consistent(client.pg, client.redis, link, tally)
        # the woken writer rejoins and takes its share again, at new epochs
        await eventually(lambda: halves(paused, other), 30, "the woken writer takes its share again")
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(end_all, [*writers, api])


async def test_a_paused_serve_is_replaced_by_a_standing_writer(isolated: Isolated, tmp_path: Path) -> None:
    """`jackpotd serve` leads (its supervisor is the writer; its gRPC worker is another process) with a `jackpotd
    writer` sharing the shards; SIGSTOP the supervisor under load. The writer takes every shard within 10 s and the
    calls in flight on serve's worker are answered once it writes; after SIGCONT serve stops writing at once."""
    await ledger.migrate(isolated.dsn)
    serve = role(isolated, tmp_path, "serve", 1, lease_s=3, workers=1)
    writer = role(isolated, tmp_path, "writer", 2, lease_s=3)
    client = None
    try:
        await share(serve, writer, first_is="serve", both_are="serve and the writer")
        client = await Client.connect(serve.target, isolated.dsn, isolated.redis_url)
        link, tables = await new_link_in(client, serve.shards(), 2)
        shard = shard_of(link)
        held = await client.pg.fetchval("SELECT epoch FROM writer_leases WHERE shard = $1", shard)
        tally = Tally()
        play = playing(serve.target, tables, 30, tally)
        await eventually(lambda: len(tally.answers) >= 15, 60, "the tables are playing")
        assert serve.proc is not None
        serve.proc.send_signal(signal.SIGSTOP)  # the supervisor only: its worker goes on taking calls
        stopped = time.monotonic()
        try:
            answered = len(tally.answers)
            await eventually(lambda: writer.shards() == ALL, REPLACED_WITHIN + 5, "the writer takes every shard")
            assert time.monotonic() - stopped < REPLACED_WITHIN
            await eventually(lambda: len(tally.answers) >= answered + 10, 30, "serve's worker answers again")
        finally:
            serve.proc.send_signal(signal.SIGCONT)
        await eventually(lambda: "stopping at once; PostgreSQL refuses its appends" in serve.log.read_text(), 15,
                         "the woken serve stops writing at once")
        assert (await refused_with(isolated, shard, held)).held == held
        await asyncio.wait_for(asyncio.gather(*play), 180)
        await assert_consistent(client.pg, client.redis, link, tally)
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(end_all, [serve, writer])


async def test_a_partitioned_writer_is_replaced_and_fenced(isolated: Isolated, tmp_path: Path) -> None:
    """A writer reaches PostgreSQL through a relay the test cuts (a partition: its sessions stay open, nothing
    arrives). The other writer ends its sessions after the lease time and takes its shards; the cut-off writer stops
    writing by its own clock; once the partition heals it rejoins at new epochs, and the old ones are refused."""
    await ledger.migrate(isolated.dsn)
    host, port = isolated.app_dsn.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)
    relay = await Relay(host, int(port)).start()
    cut_dsn = isolated.app_dsn.replace(f"@{host}:{port}/", f"@127.0.0.1:{relay.port}/")
    cut_off = role(isolated, tmp_path, "writer", 1, dsn=cut_dsn, lease_s=3)
    other = role(isolated, tmp_path, "writer", 2, lease_s=3)
    api = role(isolated, tmp_path, "grpc", 1)
    client = None
    try:
        await share(cut_off, other, api)
        client = await Client.connect(api.target, isolated.dsn, isolated.redis_url)
        link, tables = await new_link_in(client, cut_off.shards(), 2)
        shard = shard_of(link)
        held = await client.pg.fetchval("SELECT epoch FROM writer_leases WHERE shard = $1", shard)
        tally = Tally()
        play = playing(api.target, tables, 30, tally)
        await eventually(lambda: len(tally.answers) >= 15, 60, "the tables are playing")
        relay.cut()
        cut_at = time.monotonic()
        try:
            answered = len(tally.answers)
            await eventually(lambda: other.shards() == ALL, REPLACED_WITHIN + 5, "the other writer takes every shard")
            assert time.monotonic() - cut_at < REPLACED_WITHIN
            await eventually(lambda: len(tally.answers) >= answered + 10, 30, "calls acknowledged again")
            # by its own clock, or sooner: its lease connection stops answering (LeadingWriter.held)
            await eventually(lambda: cut_off.shards() == set() and any(
                said in cut_off.log.read_text() for said in ("stopping at once", "a writer lease is lost")), 10,
                "the cut-off writer stops writing")
        finally:
            relay.heal()
        assert (await refused_with(isolated, shard, held)).held == held
        await asyncio.wait_for(asyncio.gather(*play), 180)
        await assert_consistent(client.pg, client.redis, link, tally)
        await eventually(lambda: halves(cut_off, other), 30, "the healed writer takes its share again")
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(end_all, [cut_off, other, api])
        await relay.close()


async def test_a_leader_that_missed_its_takeover_is_refused_by_postgresql(
        isolated: Isolated, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The fence without the self-fence: a shard's epoch is bumped behind its leader's back (a standby took it while
    the leader's own clock saw nothing amiss). The leader's next append is refused by PostgreSQL in its transaction:
    it says so in one line, counts it, stops at once and gives its leases up; then, still alive, takes its share
    again at a new epoch, and the call is answered once, from the ledger."""
    async with open_private(isolated, tmp_path) as p:
        link, tables = await new_link(p.client, 1)
        shard = shard_of(link)
        conn = await asyncpg.connect(isolated.dsn)
        try:
            held = await conn.fetchval("SELECT epoch FROM writer_leases WHERE shard = $1", shard)
            taken = await leases.take_epoch(conn, shard, "a standby", 5)
            fenced_before = WRITER_FENCED._value.get()
            request = unique("req")
            with caplog.at_level(logging.INFO, logger="jackpotd"):
                done = await while_unavailable(lambda: p.client.commit(tables[0], "r1", [1, 2], request_id=request),
                                               30, "the commit, answered once the leader took its shard again")
            said = (f"PostgreSQL refused the append: shard {shard}'s lease epoch is {taken}, this writer holds "
                    f"{held}: another writer took it over; this writer stops at once")
            assert said in caplog.text
            assert WRITER_FENCED._value.get() == fenced_before + 1
            again = await conn.fetchrow("SELECT epoch, holder FROM writer_leases WHERE shard = $1", shard)
            assert again["epoch"] > taken and again["holder"] != "a standby"
            assert await conn.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND request_id LIKE $2",
                                       link, "%" + request) == 1
            assert await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link) == done.sequence
            assert not await conn.fetchval("SELECT count(*) FROM link_fences WHERE link_id = $1", link)  # not its fault
        finally:
            await conn.close()


async def test_a_takeover_waits_for_an_append_in_flight_then_asks_again(
        isolated: Isolated, caplog: pytest.LogCaptureFixture) -> None:
    """A shard whose epoch row an append in flight holds (FOR SHARE) is not taken: after the lock timeout the
    writer lets its lock go, names the session in the way, and takes the shard at the next claim."""
    await ledger.migrate(isolated.dsn)
    append = await asyncpg.connect(isolated.dsn)
    lease = WriterLease(isolated.dsn)
    try:
        async with append.transaction():
            await append.execute("SELECT ledger_lease_held($1::smallint[], $2::bigint[])", [3], [0])
            with caplog.at_level(logging.WARNING, logger="jackpotd.leader"):
                assert await lease.claim() == ALL - {3}
            assert f"shard 3's epoch is locked by pid {append.get_server_pid()}" in caplog.text
        assert await lease.claim() == ALL
        assert lease.epochs == dict.fromkeys(ALL, 1)
    finally:
        await lease.release()
        await append.close()
