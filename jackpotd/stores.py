"""The stores jackpotd runs on: the configured PostgreSQL and Redis, or embedded ones started under the state
directory (reused when another jackpotd on the same state directory runs them), with their secrets."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .embedded import EmbeddedPostgres, EmbeddedValkey, ports
from .settings import Settings, SettingsError
from .store import ledger
from .store.redis.errors import WrongTopology
from .store.redis.pools import RedisPools

log = logging.getLogger("jackpotd")


@dataclass
class Stores:
    """Connected stores, and the embedded servers behind them if we started them."""

    redis: RedisPools
    pg: ledger.Pool
    redis_url: str  # password included: in-process and to the workers (pickled), never logged or on a command line
    dsn: str  # the service's login (for the embedded server jackpotd_app), password included, likewise
    embedded: tuple[EmbeddedPostgres, EmbeddedValkey] | None = None
    owner_dsn: str = ""  # the ledger's owner: migrations and rebuilding projections


def _endpoints_file(settings: Settings) -> Path:
    return Path(settings.state_dir) / "endpoints.json"


@contextlib.asynccontextmanager
async def open_stores(settings: Settings, *, migrate: bool = True, application_name: str = "") -> AsyncIterator[Stores]:
    """Connect to the configured stores, or reuse or start the embedded ones under the state directory.

    Migrations run as the ledger's owner; the pool logs in as the service's role (docs/DECISIONS.md,
    Locked-down stores). Embedded: the owner is the superuser `postgres`, the service `jackpotd_app`, both with
    passwords from `<state>/secrets`. External: the DSN's role for both (migrate with the owner's DSN first, then
    serve with the service's: a role that may not migrate gets through when nothing is pending), passwords from
    `postgres_password_file` and `redis_password_file` when set. The pool's sessions carry `application_name` (a
    writer's: store/liveness.py).
    """
    embedded = None
    if settings.embedded:
        state = Path(settings.state_dir).resolve()
        endpoints = _endpoints_file(settings)
        running = json.loads(endpoints.read_text()) if endpoints.exists() else None
        if running and _alive(running["pid"]):  # another jackpotd on this state dir owns the servers
            redis_url, dsn = running["redis_url"], running["postgres_dsn"]
            owner_dsn = EmbeddedPostgres(state / "postgres" / "data", port=running["postgres_port"],
                                         secrets=state / "secrets").dsn if "postgres_port" in running else dsn
        else:
            state.mkdir(parents=True, exist_ok=True)
            try:  # the same ports as every earlier start: a writer or API replica pointed at them reconnects
                chosen = ports.claim(state)
            except ports.PortTaken as e:
                raise SettingsError(str(e)) from None
            # Started from this thread on purpose: they die with the thread that started them (PDEATHSIG).
            pg = EmbeddedPostgres(state / "postgres" / "data", port=chosen["postgres"], secrets=state / "secrets")
            pg.start()
            valkey = EmbeddedValkey(state / "valkey", port=chosen["valkey"], secrets=state / "secrets")
            try:
                valkey.start()
            except BaseException:
                pg.stop()
                raise
            embedded = (pg, valkey)
            ports.record(state, {"postgres": pg.port, "valkey": valkey.port})
            redis_url, dsn, owner_dsn = valkey.url, pg.app_dsn(), pg.dsn
            _write_private(endpoints, json.dumps({"pid": os.getpid(), "redis_url": redis_url, "postgres_dsn": dsn,
                                                  "postgres_port": pg.port, "valkey_port": valkey.port}))
    else:
        redis_url = _with_secret(settings.redis_url, settings.redis_password_file, "redis")
        dsn = owner_dsn = _with_secret(settings.postgres_dsn, settings.postgres_password_file, "postgres")
    try:
        if migrate:
            await ledger.migrate(owner_dsn)
        pool = await ledger.connect_pool(dsn, size=20, application_name=application_name)
        try:
            redis = await open_redis(settings, redis_url)
        except SettingsError:
            await pool.close()
            raise
        try:
            for problem in await ledger.role_problems(pool):
                log.warning("%s: the service could rewrite the ledger; let it log in as a role with only %s's grants "
                            "(docs/SERVICE.md, Pointing it at real Redis and PostgreSQL)", problem, ledger.APP_ROLE)
            yield Stores(redis, pool, redis_url, dsn, embedded, owner_dsn)
        finally:
            await redis.close()
            await pool.close()
    finally:
        if embedded:
            _endpoints_file(settings).unlink(missing_ok=True)
            embedded[1].stop()
            embedded[0].stop()


async def open_redis(settings: Settings, redis_url: str) -> RedisPools:
    """Redis at `redis_url` as the settings say to follow it (Sentinel, cluster): the one way the supervisor and the
    workers open it. SettingsError when the server is not what the settings describe."""
    try:
        return await RedisPools.open(redis_url, settings.redis_sentinels, settings.redis_master_name,
                                     cluster=settings.redis_cluster, sentinel_password=sentinel_password(settings))
    except WrongTopology as e:
        raise SettingsError(str(e)) from None


@contextlib.asynccontextmanager
async def worker_stores(settings: Settings) -> AsyncIterator[tuple[RedisPools, ledger.Pool]]:
    """A gRPC worker's connections to the stores its supervisor opened (the URLs it was handed carry the
    passwords), closed after: no migration, no embedded server, a smaller pool."""
    redis = await open_redis(settings, settings.redis_url)
    try:
        pg = await ledger.connect_pool(settings.postgres_dsn, size=10)
        try:
            yield redis, pg
        finally:
            await pg.close()
    finally:
        await redis.close()


def _write_private(path: Path, text: str) -> None:
    """`text` into `path`, readable by this user alone (it holds the stores' passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def _with_secret(url: str, password_file: str, store: str) -> str:
    """`url` with the password kept in `password_file` (none: `url` as it is), as its `password` parameter,
    which asyncpg and redis-py both read."""
    if not password_file:
        return url
    password = _password(password_file, f"{store}_password_file")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if parts.password or any(k == "password" for k, _ in query):
        raise SettingsError(f"the {store} URL carries a password and {store}_password_file is set: "
                            "keep the password in the file alone")
    return urlunsplit(parts._replace(query=urlencode([*query, ("password", password)])))


def _password(path: str, setting: str) -> str:
    """The password kept in the file `setting` names; SettingsError if it cannot be read or is empty."""
    try:
        password = Path(path).read_text().strip()
    except OSError as e:
        raise SettingsError(f"{setting}: cannot read {path}: {e.strerror or e}") from None
    if not password:
        raise SettingsError(f"{setting}: {path} is empty")
    return password


def sentinel_password(settings: Settings) -> str | None:
    """The Sentinels' own password, when they have one."""
    path = settings.redis_sentinel_password_file
    return _password(path, "redis_sentinel_password_file") if path else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()
