"""Two availability defects of the writer leases the chaos harness found (issue 23). A leader cut off from its Redis
(PostgreSQL reachable) kept renewing and kept its shards while none of its links was made durable: it now gives them
up to a live writer whose Redis answers, and rejoins once its own answers again; alone, it keeps them and health says
why. A slow PostgreSQL (a lease check that times out) made writers declare their lease lost: it now stands while
the liveness lease does."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from jackpotd.store import ledger
from jackpotd.store.shards import ALL

from ..conftest import Isolated
from .checks import assert_consistent
from .harness import Client, eventually
from .load import Tally
from .relay import Relay
from .writers import REPLACED_WITHIN, end_all, halves, new_link_in, playing, role, share, start_all

SLOW_FOR_S = 7.0  # how long the writer's PostgreSQL is 1.5 s away each way
LEASE_S = 3  # the writers' lease time here (the default is 5 s): give-up after 3 s of silence, 6 s cool-down


async def relayed_redis(url: str) -> tuple[Relay, str]:
    """A relay to the Redis of `url` (TCP or a unix socket), and the redis:// URL that reaches it through the relay."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        relay = await Relay("", 0, unix_path=parts.path).start()
        db = dict(q.split("=", 1) for q in parts.query.split("&") if "=" in q).get("db", "0")
        return relay, urlunsplit(("redis", f"{parts.netloc}127.0.0.1:{relay.port}", f"/{db}", "", ""))
    assert parts.hostname is not None and parts.port is not None
    relay = await Relay(parts.hostname, parts.port).start()
    netloc = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return relay, urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{relay.port}"))


async def test_a_writer_cut_off_from_redis_gives_its_shards_to_one_that_reaches_it(
        isolated: Isolated, tmp_path: Path) -> None:
    """Two writers; the first reaches Redis through a relay the test blackholes (both ways) under load. The other
    takes every shard within 10 s and calls are acknowledged again; healed, the first takes its share again after
    its cool-down. Then alone (the other killed) and cut off again, it keeps its shards and health says why."""
    await ledger.migrate(isolated.dsn)
    relay, cut_url = await relayed_redis(isolated.redis_url)
    cut = role(isolated, tmp_path, "writer", 1, lease_s=LEASE_S)
    cut.env["JACKPOTD_REDIS_URL"] = cut_url
    other = role(isolated, tmp_path, "writer", 2, lease_s=LEASE_S)
    api = role(isolated, tmp_path, "grpc", 1)
    client = None
    try:
        await share(cut, other, api)
        client = await Client.connect(api.target, isolated.dsn, isolated.redis_url)
        link, tables = await new_link_in(client, cut.shards(), 2)
        tally = Tally()
        play = playing(api.target, tables, 30, tally)
        await eventually(lambda: len(tally.answers) >= 10, 60, "the tables are playing")
        relay.cut()
        cut_at = time.monotonic()
        try:
            answered = len(tally.answers)
            await eventually(lambda: other.shards() == ALL, REPLACED_WITHIN + 5, "the other writer takes every shard")
            taken_after = time.monotonic() - cut_at
            assert taken_after < REPLACED_WITHIN, f"taken over after {taken_after:.1f} s"
            print(f"cut off from Redis: every shard taken over after {taken_after:.2f} s (lease {LEASE_S} s)")
            await eventually(lambda: len(tally.answers) >= answered + 10, 30, "calls acknowledged again")
            said = cut.log.read_text()
            assert "this writer gives its shards up: its Redis has not answered for" in said, said[-3000:]
            assert cut.shards() == set()
        finally:
            relay.heal()
        await eventually(lambda: halves(cut, other), 30, "the healed writer takes its share again")
        assert "this writer claims its share again: its Redis answers again" in cut.log.read_text()
        await asyncio.wait_for(asyncio.gather(*play), 180)
        await assert_consistent(client.pg, client.redis, link, tally)

        # alone: nobody could do better, so it keeps its shards, and health says why nothing is written
        assert other.proc is not None
        other.kill9()
        await eventually(lambda: cut.shards() == ALL, 30, "the writer left alone writes every shard")
        relay.cut()
        try:
            await eventually(lambda: "no other live writer reaches Redis: keeping its shards" in cut.log.read_text(),
                             15, "the writer says it keeps its shards")
            assert cut.shards() == ALL
            assert "gives its shards up" not in cut.log.read_text().rsplit("claims its share again", 1)[1]
            await eventually(lambda: "ledger writer cut off from Redis: " in api.log.read_text(), 15,
                             "health says why nothing is written")
            assert "has not heard its Redis for" in api.log.read_text()
        finally:
            relay.heal()
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(end_all, [cut, other, api])
        await relay.close()


async def test_a_slow_postgresql_is_not_a_lost_lease(isolated: Isolated, tmp_path: Path) -> None:
    """The writer's PostgreSQL is 1.5 s away each way (a 3 s round trip, past the lease check's 2 s) for a while,
    under load: it keeps its shards at the same epochs, keeps appending, and never says its lease is lost."""
    await ledger.migrate(isolated.dsn)
    host, port = isolated.app_dsn.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)
    relay = await Relay(host, int(port)).start()
    slow_dsn = isolated.app_dsn.replace(f"@{host}:{port}/", f"@127.0.0.1:{relay.port}/")
    writer = role(isolated, tmp_path, "writer", 1, dsn=slow_dsn, lease_s=8)  # renewals wait lease/2: 4 s > 3 s
    api = role(isolated, tmp_path, "grpc", 1)
    client = None
    try:
        await asyncio.to_thread(start_all, [writer, api])
        await eventually(lambda: writer.shards() == ALL, 30, "the writer writes every shard")
        client = await Client.connect(api.target, isolated.dsn, isolated.redis_url)
        link, tables = await new_link_in(client, ALL, 2)
        before = await client.pg.fetch("SELECT shard, epoch, holder FROM writer_leases ORDER BY shard")
        tally = Tally()
        play = playing(api.target, tables, 25, tally)
        await eventually(lambda: len(tally.answers) >= 10, 60, "the tables are playing")
        relay.delay(1.5)
        delayed_at = time.monotonic()
        try:
            await eventually(lambda: "the lease check did not answer within 2 s" in writer.log.read_text(), 20,
                             "a lease check times out")
            until = delayed_at + SLOW_FOR_S  # the fault lasts this long: well past a few lease checks
            await eventually(lambda: time.monotonic() >= until, SLOW_FOR_S + 1, "the slow spell to end")
        finally:
            relay.heal()
        answered = len(tally.answers)
        await eventually(lambda: len(tally.answers) >= answered + 10, 30, "calls acknowledged again once healed")
        await asyncio.wait_for(asyncio.gather(*play), 180)
        await assert_consistent(client.pg, client.redis, link, tally)
        said = writer.log.read_text()
        assert "a writer lease is lost" not in said and "stopping at once" not in said, said[-3000:]
        assert writer.shards() == ALL
        assert await client.pg.fetch("SELECT shard, epoch, holder FROM writer_leases ORDER BY shard") == before
    finally:
        if client is not None:
            await client.close()
        await asyncio.to_thread(end_all, [writer, api])
        await relay.close()
