"""A sharded deployment (issue 13): a three-primary Valkey Cluster, two `jackpotd grpc` replicas and two
`jackpotd writer` processes. Eight tables on links spread over every shard commit and settle with forced hits
through both replicas. Under that load, kill -9 the leading writer (the standby takes over) and one API
replica (tables retry on the other): every call is answered exactly once, the totals equal the ledger with
no sequence gaps, and `jackpotd audit` passes against the cluster."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from redis.asyncio.cluster import RedisCluster

from jackpotd.embedded import EmbeddedValkeyCluster, free_port
from jackpotd.store import keys

from ..conftest import Isolated, unique
from .checks import assert_consistent
from .harness import Client, eventually
from .load import Tally, run_table
from .process import ServerProcess

CLUSTER = {"JACKPOTD_REDIS_CLUSTER": "true"}


def _started(processes: list[ServerProcess]) -> None:
    for p in processes:
        p.start()


def _commits_served(api: ServerProcess) -> float:
    """CommitWagers calls a replica answered OK, from its metrics."""
    return sum(float(line.split()[-1]) for line in api.metrics().splitlines()
               if line.startswith("jackpotd_requests_total{") and "CommitWagers" in line and 'code="OK"' in line)


def _links_on_every_shard(cluster: RedisCluster, shards: int, count: int) -> list[str]:
    """`count` new link ids whose hash tags fall on every one of the cluster's `shards` primaries."""
    chosen: list[str] = []
    seen: set[int] = set()
    while len(chosen) < count:
        link = unique("shard")
        port = cluster.get_node_from_key(keys.journal(link)).port
        if port not in seen or len(seen) == shards:
            seen.add(port)
            chosen.append(link)
    assert len(seen) == shards
    return chosen


async def test_a_cluster_with_replicas_and_standby_writer_loses_and_doubles_nothing(
        isolated: Isolated, tmp_path: Path) -> None:
    valkey = await asyncio.to_thread(EmbeddedValkeyCluster(tmp_path / "cluster", primaries=3).start)

    def role(command: str, n: int) -> ServerProcess:
        return ServerProcess(free_port(), tmp_path / f"{command}-{n}.log", redis_url=valkey.url, dsn=isolated.dsn,
                             metrics_port=free_port(), command=command, env=CLUSTER,
                             workers=0 if command == "grpc" else None)

    writers = [role("writer", 1), role("writer", 2)]
    apis = [role("grpc", 1), role("grpc", 2)]
    client: Client | None = None
    try:
        await asyncio.to_thread(_started, [writers[0]])
        await eventually(lambda: writers[0].leading(), 30, "the first writer leads")
        await asyncio.to_thread(_started, [writers[1], *apis])
        assert not writers[1].leading()
        client = await Client.connect(apis[0].target, isolated.dsn, isolated.redis_url)
        await client.redis.aclose()
        client.redis = RedisCluster.from_url(valkey.url, decode_responses=True)
        await client.redis.initialize()
        links = _links_on_every_shard(client.redis, 3, 4)
        tables: dict[str, list[str]] = {}
        for link in links:
            await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
            await client.fund(link, "MAJOR", 2_000_000)
            await client.fund(link, "MINOR", 200_000)
            tables[link] = [unique("ct") for _ in range(2)]
            for t in tables[link]:
                await client.register(t, link)  # the table index lives on its own slot: found from any replica
        # half the tables prefer one replica, half the other; each falls back on the other when its own dies
        targets = ["ipv4:" + ",".join(a.target for a in order) for order in (apis, apis[::-1])]
        tallies = {link: Tally() for link in links}
        rounds = 40
        total = 8 * rounds * 2  # a commit and a settle (or a void) per round
        order = [t for link in links for t in tables[link]]
        link_of = {t: link for link in links for t in tables[link]}
        play = [asyncio.create_task(run_table(targets[n % 2], t, rounds, tallies[link_of[t]], seed=n, hit_every=4))
                for n, t in enumerate(order)]

        def answered() -> int:
            return sum(len(t.answers) for t in tallies.values())

        def answered_at(table: str) -> int:
            return sum(1 for tally in tallies.values() for _, t, _ in tally.answers if t == table)

        await eventually(lambda: answered() >= 80, 90, "the tables are playing")
        writers[0].kill9()
        assert answered() < total
        await eventually(lambda: writers[1].leading(), 15, "the standby writer takes the lease")
        await eventually(lambda: answered() >= 240, 90, "play goes on after the writer's failover")
        assert all(_commits_served(api) > 0 for api in apis)  # both replicas serve the tables
        apis[0].kill9()
        # tables that preferred the dead replica still have rounds to play: they go on through the other one
        assert any(answered_at(t) < 2 * rounds for n, t in enumerate(order) if n % 2 == 0)
        await asyncio.wait_for(asyncio.gather(*play), 300)
        assert answered() == total
        for link in links:
            await assert_consistent(client.pg, client.redis, link, tallies[link])
            assert sum(tallies[link].hits.values()) > 0 and tallies[link].paid_cents > 0  # forced hits were paid
        audit = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "jackpotd.cli", "audit"], capture_output=True, text=True,
            timeout=120, env={**os.environ, "JACKPOTD_REDIS_URL": valkey.url, "JACKPOTD_POSTGRES_DSN": isolated.dsn,
                              **CLUSTER})
        assert audit.returncode == 0, audit.stdout + audit.stderr
        assert all(link in audit.stdout for link in links), audit.stdout
    finally:
        if client is not None:
            await client.close()
        for p in [*writers, *apis]:
            if p.proc is not None and p.proc.poll() is None:
                p.kill9()
        await asyncio.to_thread(valkey.stop)
