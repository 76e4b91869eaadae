"""Real embedded PostgreSQL and Valkey for every test that touches storage; never fakes."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from hypothesis import settings

from jackpotd.auth.tokens import new_key
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port

# Property tests check what is computed, never how fast: hypothesis's per-example deadline (200 ms) fails a correct
# test on a busy machine (a 2-core CI runner beside embedded servers), so it is off for the whole suite.
settings.register_profile("jackpotd", deadline=None)
settings.load_profile("jackpotd")

# One signing key for the session's bearer tokens: every jackpotd the tests start (in-process through
# Settings(auth_key_file=AUTH_KEY_FILE), or as a process through $JACKPOTD_AUTH_KEY_FILE) trusts it, and the
# harness mints tokens with it (jackpotd.auth.client.TableTokens).
_KEY_DIR = tempfile.mkdtemp(prefix="jackpotd-test-auth-")
AUTH_KEY_FILE = os.path.join(_KEY_DIR, "auth.key")
AUTH_KEY = new_key()
with open(os.open(AUTH_KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as _f:
    _f.write(AUTH_KEY)
os.environ["JACKPOTD_AUTH_KEY_FILE"] = AUTH_KEY_FILE
atexit.register(shutil.rmtree, _KEY_DIR, True)  # every session, servers or not, leaves no key behind

# Helpers that assert: their failures explain themselves as a test's own asserts do.
pytest.register_assert_rewrite("tests.integration.harness", "tests.integration.checks", "tests.integration.load")


@dataclass(frozen=True)
class Servers:
    """The embedded servers of this test session."""

    pg: EmbeddedPostgres
    valkey: EmbeddedValkey
    root: Path

    def dsn(self, database: str = "postgres") -> str:
        """The owner's (superuser's) DSN, password included: migrations, and tests that tamper."""
        return self.pg.owner_dsn(database)

    def app_dsn(self, database: str = "postgres") -> str:
        """The service's role (jackpotd_app: read and append only), password included."""
        return self.pg.app_dsn(database)

    def redis_url(self, db: int = 0) -> str:
        return self.valkey.url_for(db)


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = Path(tempfile.mkdtemp(prefix="jackpotd-test-"))
        os.chmod(root, 0o755)
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
        valkey = EmbeddedValkey(root / "valkey").start()
    try:
        yield Servers(pg, valkey, root)
    finally:
        valkey.stop()
        if pg.proc is not None:  # immediate shutdown: the data is thrown away, so no shutdown checkpoint of it
            pg.proc.send_signal(signal.SIGQUIT)
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)  # a session's servers hold about 1 GB: leave nothing behind


@dataclass(frozen=True)
class Isolated:
    """A database and a Redis db number of their own, for tests that flush, kill or rebuild."""

    dsn: str  # the owner's (superuser's)
    redis_url: str
    app_dsn: str = ""  # the service's role, jackpotd_app, on the same database


_next_db = itertools.cycle(range(1, 16))  # db 0 belongs to the shared in-process server; flushed before reuse


@pytest_asyncio.fixture
async def isolated(servers: Servers) -> AsyncIterator[Isolated]:
    yield await isolated_stores(servers)


async def isolated_stores(servers: Servers) -> Isolated:
    """A new database and a flushed Redis db number, for stores of a test's own."""
    name = "t_" + uuid.uuid4().hex[:12]
    conn = await asyncpg.connect(servers.dsn())
    await conn.execute(f"CREATE DATABASE {name}")
    await conn.close()
    db = next(_next_db)
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(servers.redis_url(db))
    await client.flushdb()
    await client.aclose()
    return Isolated(servers.dsn(name), servers.redis_url(db), servers.app_dsn(name))


@pytest.fixture
def port() -> int:
    return free_port()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
