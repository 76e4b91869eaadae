"""A sharded deployment (issue 13): a three-primary Valkey Cluster, two `jackpotd grpc` replicas and two
`jackpotd writer` processes dividing the links between them. Eight tables on links spread over every Valkey
shard and both writers commit and settle with forced hits through both replicas. Under that load, kill -9 a
writer (the other takes its shards over) and one API replica (tables retry on the other): every call is answered
exactly once, the totals equal the ledger with no sequence gaps, and `jackpotd audit` passes against the
cluster."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import redis.asyncio as aioredis
from prometheus_client import REGISTRY
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from jackpotd.embedded import EmbeddedValkey, EmbeddedValkeyCluster, free_port
from jackpotd.settings import Settings
from jackpotd.store import keys
from jackpotd.store.ledger import audit_link
from jackpotd.store.shards import ALL, SHARDS, shard_of

from ..conftest import AUTH_KEY_FILE, Isolated, unique
from .checks import assert_consistent
from .conftest import start_private
from .harness import Client, Commits, eventually
from .load import Tally, run_table
from .process import ServerProcess
from .test_recovery import new_link

CLUSTER = {"JACKPOTD_REDIS_CLUSTER": "true"}


def _started(processes: list[ServerProcess]) -> None:
    for p in processes:
        p.start()


def _commits_served(api: ServerProcess) -> float:
    """CommitWagers calls a replica answered OK, from its metrics."""
    return sum(float(line.split()[-1]) for line in api.metrics().splitlines()
               if line.startswith("jackpotd_requests_total{") and "CommitWagers" in line and 'code="OK"' in line)


def _links_everywhere(cluster: RedisCluster, writers: list[set[int]], count: int) -> list[str]:
    """`count` new link ids whose hash tags fall on every primary of the cluster and whose writer shards are
    held by every writer: each Valkey shard and each writer has links to lose."""
    chosen: list[str] = []
    primaries = {node.port for node in cluster.get_primaries()}
    while len(chosen) < count:
        link = unique("shard")
        port = cluster.get_node_from_key(keys.journal(link)).port
        writer = next(n for n, shards in enumerate(writers) if shard_of(link) in shards)
        if (port, writer) not in {(cluster.get_node_from_key(keys.journal(c)).port,
                                   next(n for n, shards in enumerate(writers) if shard_of(c) in shards))
                                  for c in chosen}:
            chosen.append(link)
    assert {cluster.get_node_from_key(keys.journal(c)).port for c in chosen} == primaries
    assert {next(n for n, shards in enumerate(writers) if shard_of(c) in shards) for c in chosen} == {0, 1}
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
        await eventually(lambda: writers[0].shards() == ALL, 30, "the first writer writes every shard")
        await asyncio.to_thread(_started, [writers[1], *apis])
        await eventually(lambda: len(writers[0].shards()) == len(writers[1].shards()) == SHARDS // 2, 30,
                         "the writers share the shards")
        client = await Client.connect(apis[0].target, isolated.dsn, isolated.redis_url)
        await client.redis.aclose()
        client.redis = RedisCluster.from_url(valkey.url, decode_responses=True)
        await client.redis.initialize()
        links = _links_everywhere(client.redis, [w.shards() for w in writers], 6)
        tables: dict[str, list[str]] = {}
        for link in links:
            await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
            await client.fund(link, "MAJOR", 2_000_000)
            await client.fund(link, "MINOR", 200_000)
            tables[link] = [unique("ct") for _ in range(2 if link in links[:2] else 1)]  # eight tables
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
        await eventually(lambda: writers[1].shards() == ALL, 15, "the other writer takes every shard over")
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


@contextlib.asynccontextmanager
async def _service_on(valkey: EmbeddedValkeyCluster, isolated: Isolated) -> AsyncIterator[Client]:
    """`serve` in this process on the cluster and the isolated database, and a client whose Redis is the cluster."""
    settings = Settings(redis_url=valkey.url, postgres_dsn=isolated.dsn, redis_cluster=True,
                        listen=f"127.0.0.1:{free_port()}", metrics_port=0, workers=0, auth_key_file=AUTH_KEY_FILE)
    task, stop = await start_private(settings)
    client = await Client.connect(settings.listen, isolated.dsn, isolated.redis_url)
    await client.redis.aclose()
    client.redis = RedisCluster.from_url(valkey.url, decode_responses=True)
    await client.redis.initialize()
    try:
        yield client
    finally:
        await client.close()
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)


async def _node(node: EmbeddedValkey) -> aioredis.Redis:
    return aioredis.Redis(host="127.0.0.1", port=node.port, password=node.password, decode_responses=True)


async def _node_id(node: aioredis.Redis) -> str:
    return str(await node.execute_command("CLUSTER", "MYID"))


async def _agreed(client: Client, link: str, commits: Commits) -> None:
    """Every answer exactly once at the sequence it was told, and the cluster's copy agreeing with the ledger."""
    held = {r["request_id"].rsplit(":", 1)[-1]: int(r["seq"]) for r in await client.pg.fetch(  # the caller's id
        "SELECT request_id, seq FROM entries WHERE link_id = $1 AND kind = 'commit'", link)}
    assert held == commits.acknowledged
    balances = {k: int(v) for k, v in (await client.redis.hgetall(keys.balances(link))).items()}
    report = await audit_link(client.pg, link, balances, int(await client.redis.get(keys.seq(link))))
    assert report.ok, report.problems


async def test_a_links_slot_moved_to_another_shard_under_load(isolated: Isolated, tmp_path: Path) -> None:
    """Resharding: the link's slot migrates key by key to another primary while its tables commit. Steps that
    find the slot half-moved are refused UNAVAILABLE (TRYAGAIN) and retried; reads of moved keys follow ASK;
    once moved, every command follows MOVED to the new owner."""
    valkey = await asyncio.to_thread(EmbeddedValkeyCluster(tmp_path / "cluster", primaries=2).start)
    try:
        async with _service_on(valkey, isolated) as client:
            link, tables = await new_link(client, 2)
            commits = Commits()
            playing = [asyncio.create_task(commits.play(client, table, 120, pace=0.02)) for table in tables]
            await eventually(lambda: len(commits.acknowledged) >= 40, 60, "the tables are playing")
            slot = key_slot(keys.tag(link).encode())
            owner = client.redis.get_node_from_key(keys.tag(link)).port
            src, dst = [await _node(n) for n in sorted(valkey.nodes, key=lambda n: n.port != owner)]
            src_id, dst_id = await _node_id(src), await _node_id(dst)
            await dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
            await src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
            moved = 0
            while batch := await src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10):
                await src.execute_command("MIGRATE", "127.0.0.1", dst.connection_pool.connection_kwargs["port"],
                                          "", 0, 5000, "AUTH", valkey.nodes[0].password, "KEYS", *batch)
                moved += len(batch)
                await asyncio.sleep(0.05)  # the tables keep playing while the slot is half here, half there
            for node in (dst, src):
                await node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
            during = len(commits.acknowledged)
            await asyncio.wait_for(asyncio.gather(*playing), 180)
            assert moved > 0 and during < 240  # keys moved while the tables played
            await client.redis.nodes_manager.initialize()
            assert client.redis.get_node_from_key(keys.tag(link)).port != owner
            await _agreed(client, link, commits)
            for node in (src, dst):
                await node.aclose()
    finally:
        await asyncio.to_thread(valkey.stop)


async def test_a_lagging_replica_promoted_in_the_cluster_is_rebuilt_before_it_serves(
        isolated: Isolated, tmp_path: Path) -> None:
    """The link's primary dies while its replica had stopped replicating (frozen): the cluster promotes the
    replica, which misses the last writes. The ledger writer finds the link behind the ledger and rebuilds it;
    meanwhile the link answers UNAVAILABLE, never from the stale copy, and no acknowledged entry is lost."""
    valkey = await asyncio.to_thread(EmbeddedValkeyCluster(
        tmp_path / "cluster", primaries=3, replicas=1, options=("--cluster-replica-validity-factor", "0")).start)
    try:
        async with _service_on(valkey, isolated) as client:
            link, tables = await new_link(client, 4)  # round ids restart at r0 per table: a table per phase
            commits = Commits()
            await commits.play(client, tables[0], 10)
            owner = client.redis.get_node_from_key(keys.tag(link)).port
            primary = next(n for n in valkey.nodes if n.port == owner)
            node = await _node(primary)
            primary_id = await _node_id(node)
            await node.aclose()
            replica = None
            for n in valkey.nodes:
                node = await _node(n)
                mine = next(line for line in (await node.execute_command("CLUSTER", "NODES")).splitlines()
                            if "myself" in line)
                await node.aclose()
                if mine.split()[3] == primary_id:  # CLUSTER NODES: id address flags primary-id ...
                    replica = n
            assert replica is not None and replica.proc is not None and primary.proc is not None
            await eventually(lambda: _replica_synced(replica, owner), 30, "the replica in sync")
            replica.proc.send_signal(signal.SIGSTOP)  # frozen, and cut off: from here on it misses every write
            node = await _node(primary)
            await node.execute_command("CLIENT", "KILL", "TYPE", "replica")
            await node.aclose()
            await commits.play(client, tables[1], 10)
            missed = max(commits.acknowledged.values())
            playing = [asyncio.create_task(commits.play(client, table, 60, pace=0.02)) for table in tables[2:]]
            await eventually(lambda: len(commits.acknowledged) >= 40, 60, "the tables are playing")
            primary.proc.kill()  # the primary dies; the frozen replica wakes up and is promoted
            primary.proc.wait()
            replica.proc.send_signal(signal.SIGCONT)
            await asyncio.wait_for(asyncio.gather(*playing), 180)
            assert commits.refused > 0  # the failover reached the tables
            await client.redis.nodes_manager.initialize()
            assert client.redis.get_node_from_key(keys.tag(link)).port == replica.port
            await _agreed(client, link, commits)
            # the promoted copy was found behind (or forked from) the ledger and rebuilt, and the link went on
            rebuilds = sum(REGISTRY.get_sample_value("jackpotd_link_rebuilds_total", {"link": link, "reason": why})
                           or 0 for why in ("behind", "forked"))
            assert rebuilds >= 1
            assert await client.pg.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1", link) > missed
    finally:
        await asyncio.to_thread(valkey.stop)


async def _replica_synced(replica: EmbeddedValkey, primary_port: int) -> bool:
    node = await _node(replica)
    info = await node.info("replication")
    await node.aclose()
    return bool(info.get("master_port") == primary_port and info.get("master_link_status") == "up")


def _migrate(redis_url: str, dsn: str, cluster: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jackpotd.cli", "migrate"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "JACKPOTD_REDIS_URL": redis_url, "JACKPOTD_POSTGRES_DSN": dsn,
                                            **(CLUSTER if cluster else {"JACKPOTD_REDIS_CLUSTER": "false"})})


async def test_a_store_that_is_not_what_the_settings_say_is_refused_at_start(isolated: Isolated,
                                                                            tmp_path: Path) -> None:
    """redis_cluster set for a lone Valkey, or not set for a cluster's node: jackpotd says which, names the
    address (never the password) and exits 2 before serving anything."""
    lone = await asyncio.to_thread(EmbeddedValkey(tmp_path / "lone").start)
    valkey = await asyncio.to_thread(EmbeddedValkeyCluster(tmp_path / "cluster", primaries=3).start)
    try:
        lone_refused = await asyncio.to_thread(_migrate, lone.url_for(0, tcp=True), isolated.dsn, True)
        assert lone_refused.returncode == 2, lone_refused.stderr
        assert f"127.0.0.1:{lone.port} is not a cluster node" in lone_refused.stderr
        refused = await asyncio.to_thread(_migrate, valkey.url, isolated.dsn, False)
        assert refused.returncode == 2, refused.stderr
        assert "is a cluster node: set redis_cluster" in refused.stderr
        for password, said in ((lone.password, lone_refused.stderr), (valkey.nodes[0].password, refused.stderr)):
            assert password and password not in said
        accepted = await asyncio.to_thread(_migrate, valkey.url, isolated.dsn, True)
        assert accepted.returncode == 0, accepted.stderr
    finally:
        await asyncio.to_thread(valkey.stop)
        await asyncio.to_thread(lone.stop)


async def test_a_dead_primary_stops_only_its_own_links_and_comes_back_rebuilt(isolated: Isolated,
                                                                              tmp_path: Path) -> None:
    """A primary without a replica dies (kill -9) under load, in a cluster that serves what it still covers:
    links on the other primaries go on committing meanwhile, those on the dead one are refused UNAVAILABLE.
    It comes back empty (no persistence): its links are rebuilt from the ledger, and nothing acknowledged is lost
    or doubled on either."""
    valkey = await asyncio.to_thread(EmbeddedValkeyCluster(
        tmp_path / "cluster", primaries=3, options=("--cluster-require-full-coverage", "no")).start)
    try:
        async with _service_on(valkey, isolated) as client:
            # the primary that dies holds links only: not the list of links, the heartbeats or the channel's slot
            shared = {client.redis.get_node_from_key(k).port for k in (keys.LINKS, keys.health(0),
                                                                        keys.DURABLE_CHANNEL)}
            node = next(n for n in valkey.nodes if n.port not in shared)
            found: dict[int, tuple[str, list[str]]] = {}
            while len(found) < 2:  # a link on the primary that will die, one on another
                link, tables = await new_link(client, 2)
                on_it = client.redis.get_node_from_key(keys.tag(link)).port == node.port
                if on_it == (0 not in found):
                    found[0 if on_it else 1] = (link, tables)
            (dead_link, dead_tables), (live_link, live_tables) = found[0], found[1]
            dead, live = Commits(), Commits()
            playing = [asyncio.create_task(commits.play(client, table, 100, pace=0.03))
                       for commits, tables in ((dead, dead_tables), (live, live_tables)) for table in tables]
            await eventually(lambda: len(live.acknowledged) >= 20 and len(dead.acknowledged) >= 20, 60,
                             "both links playing")
            assert node.proc is not None
            node.proc.kill()
            node.proc.wait()
            before = (len(dead.acknowledged), len(live.acknowledged))
            await eventually(lambda: len(live.acknowledged) >= before[1] + 30, 60,
                             "the other primary's link goes on while one primary is dead")
            assert len(dead.acknowledged) <= before[0] + 2  # (answers already on their way)
            await asyncio.to_thread(node.start)  # back, empty, with its slots (nodes.conf)
            await asyncio.wait_for(asyncio.gather(*playing), 180)
            assert dead.refused > 0
            for link, commits in ((dead_link, dead), (live_link, live)):
                await _agreed(client, link, commits)
            assert (REGISTRY.get_sample_value("jackpotd_link_rebuilds_total", {"link": dead_link, "reason": "lost"})
                    or 0) >= 1
    finally:
        await asyncio.to_thread(valkey.stop)
