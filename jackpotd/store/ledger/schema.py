"""The ledger's schema: migrations applied in order, and a pool whose sessions act as the append-only role."""

from __future__ import annotations

import logging
from pathlib import Path

import asyncpg

Pool = asyncpg.Pool  # the pool and connection types, for modules that must not import the driver
Connection = asyncpg.Connection

log = logging.getLogger("jackpotd.ledger")
MIGRATIONS = Path(__file__).parent.parent / "migrations"  # jackpotd/store/migrations
APP_ROLE = "jackpotd_app"


async def migrate(dsn: str) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; returns those applied."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                           "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        await conn.execute("SELECT pg_advisory_lock(4242)")  # replicas starting together migrate once
        done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
        applied = []
        for path in sorted(MIGRATIONS.glob("*.sql")):
            if path.name in done:
                continue
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
            applied.append(path.name)
            log.info("applied migration %s", path.name)
        await conn.execute("SELECT pg_advisory_unlock(4242)")
        return applied
    finally:
        await conn.close()


async def _as_app_role(conn: asyncpg.Connection) -> None:
    # Append-only by grants too: the service's sessions act as a role that cannot UPDATE or DELETE entries.
    try:
        await conn.execute(f"SET ROLE {APP_ROLE}")
    except asyncpg.PostgresError:
        log.warning("cannot SET ROLE %s; relying on the append-only triggers alone", APP_ROLE)


async def connect_pool(dsn: str, size: int = 10) -> asyncpg.Pool:
    """A connection pool whose sessions act as the application role."""
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=size, init=_as_app_role)
    assert pool is not None
    return pool


async def ping(pg: asyncpg.Pool, timeout: float) -> None:
    """SELECT 1 within `timeout` seconds (health checks)."""
    async with pg.acquire(timeout=timeout) as conn:
        await conn.fetchval("SELECT 1", timeout=timeout)
