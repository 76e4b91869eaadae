"""Beyond one process (issue 13): two `jackpotd writer` processes share the writer lease and two stateless
`jackpotd grpc` replicas serve the tables. Under load, kill -9 the leading writer and one API replica: the
standby writer takes over, tables retrying on the other replica see every call answered exactly once, nothing
acknowledged is lost or doubled, and the audit passes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from jackpotd.embedded import free_port

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
    await eventually(lambda: writers[0].leading(), 30, "the first writer leads")
    await asyncio.to_thread(_started, [writers[1], *apis])
    assert not writers[1].leading()  # one lease: the second stands by
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
        writers[0].kill9()  # the leader dies mid-batch
        assert len(tally.answers) < total  # ... while the tables play
        await eventually(lambda: writers[1].leading(), 15, "the standby writer takes the lease")
        took_over = time.monotonic()
        await eventually(lambda: len(tally.answers) >= 120, 60, "play goes on after the writer's failover")
        apis[0].kill9()  # an API replica dies with calls in flight
        assert len(tally.answers) < total
        await asyncio.wait_for(asyncio.gather(*play), 240)
        assert time.monotonic() - took_over < 240
        await assert_consistent(client.pg, client.redis, link, tally)  # every answer exactly once in the ledger
        assert len(tally.answers) == total
        assert "holds the writer lease" in writers[1].log.read_text()
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
