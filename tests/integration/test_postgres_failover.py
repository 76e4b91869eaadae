"""PostgreSQL high availability (issue 13): a primary with a synchronous standby, the service given both hosts
with target_session_attrs=read-write. Under load the primary is killed -9 and the standby promoted: calls get
UNAVAILABLE while there is no primary and succeed after, without restarting the service, and every entry
the service acknowledged is on the new primary."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path
from urllib.parse import quote

import asyncpg

from chaos.stores import REPLICATION_HBA
from chaos.stores import standby as start_standby
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port
from jackpotd.embedded.postgres import OWNER_SECRET
from jackpotd.embedded.secrets import read_secret
from jackpotd.settings import Settings
from jackpotd.store import keys
from jackpotd.store.ledger import audit_link

from ..conftest import AUTH_KEY_FILE, unique
from .conftest import start_private
from .harness import Client, Commits, eventually


async def test_the_service_rides_through_a_primary_failover(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    primary = EmbeddedPostgres(tmp_path / "primary" / "pg" / "data", secrets=secrets).start()
    valkey = EmbeddedValkey(tmp_path / "valkey").start()
    standby: subprocess.Popen[bytes] | None = None
    task = stop = client = None
    try:
        password = read_secret(secrets / OWNER_SECRET) or ""
        hba = primary.data_dir / "pg_hba.conf"
        hba.write_text(hba.read_text() + REPLICATION_HBA)
        admin = await asyncpg.connect(primary.dsn)
        await admin.execute("SELECT pg_reload_conf()")
        standby_port = free_port()
        standby = start_standby(tmp_path / "standby" / "pg" / "data", secrets, f"127.0.0.1:{primary.port}",
                                standby_port)
        await eventually(lambda: admin.fetchval("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"),
                         60, "the standby streaming")
        await admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        await admin.execute("SELECT pg_reload_conf()")
        await eventually(lambda: admin.fetchval("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"),
                         30, "the standby synchronous")
        await admin.close()

        dsn = (f"postgresql://postgres:{quote(password, safe='')}@127.0.0.1:{primary.port},127.0.0.1:{standby_port}"
               "/postgres?target_session_attrs=read-write")
        settings = Settings(redis_url=valkey.url, postgres_dsn=dsn, listen=f"127.0.0.1:{free_port()}",
                            metrics_port=0, workers=0, auth_key_file=AUTH_KEY_FILE)
        task, stop = await start_private(settings)
        client = await Client.connect(settings.listen, dsn, valkey.url)
        link, tables = unique("ha"), [unique("t"), unique("t")]
        await client.create_link(link)
        for table in tables:
            await client.register(table, link)

        commits = Commits()

        playing = [asyncio.create_task(commits.play(client, table, 40)) for table in tables]
        await eventually(lambda: len(commits.acknowledged) >= 20, 60, "the tables are playing")
        assert primary.proc is not None
        os.killpg(primary.proc.pid, signal.SIGKILL)  # the primary and all its backends, at once, under load
        primary.proc.wait()
        primary.proc = None
        await eventually(lambda: commits.refused > 0, 60, "calls refused while there is no primary")
        stalled = len(commits.acknowledged)
        promoted = await asyncpg.connect(dsn.replace(f"{primary.port},127.0.0.1:", "").replace(
            "?target_session_attrs=read-write", ""))
        await promoted.execute("SELECT pg_promote()")
        await promoted.close()
        await asyncio.wait_for(asyncio.gather(*playing), 120)  # the service goes on, not restarted
        assert len(commits.acknowledged) == 80 and stalled < 80

        new_primary = await asyncpg.connect(dsn)
        try:
            assert await new_primary.fetchval("SELECT inet_server_port()") == standby_port  # the promoted standby
            held = {r["request_id"].rsplit(":", 1)[-1]: int(r["seq"]) for r in await new_primary.fetch(
                "SELECT request_id, seq FROM entries WHERE link_id = $1 AND kind = 'commit'", link)}
            assert held == commits.acknowledged  # every acknowledged entry, at the sequence it was told, nothing else
            balances = {k: int(v) for k, v in (await client.redis.hgetall(keys.balances(link))).items()}
            seq = int(await client.redis.get(keys.seq(link)))
            report = await audit_link(new_primary, link, balances, seq)
            assert report.ok, report.problems
        finally:
            await new_primary.close()
    finally:
        if client is not None:
            await client.close()
        if stop is not None and task is not None:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
        if standby is not None and standby.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(standby.pid, signal.SIGQUIT)
            standby.wait(30)
        if primary.proc is not None:
            primary.stop()
        valkey.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
