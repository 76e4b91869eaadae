"""The ledger's schema: migrations applied in order by the ledger's owner, and the service's pool, whose
sessions are the application role itself (docs/DECISIONS.md, Locked-down stores)."""

from __future__ import annotations

import logging
from pathlib import Path

import asyncpg

from .summaries import backfill

Pool = asyncpg.Pool  # the pool and connection types, for modules that must not import the driver
Connection = asyncpg.Connection

log = logging.getLogger("jackpotd.ledger")
MIGRATIONS = Path(__file__).parent.parent / "migrations"  # jackpotd/store/migrations
# What a migration needs beyond its SQL, in its transaction: data that only the service's own code can derive.
AFTER = {"011_reports.sql": backfill}  # the summaries of the entries already written
APP_ROLE = "jackpotd_app"  # may SELECT and INSERT the ledger; the service logs in as it (or a role like it)


class MigrationRefused(RuntimeError):
    """Pending migrations the connected role may not apply: they need the ledger's owner."""


async def migrate(dsn: str) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; returns those applied.

    Run as the ledger's owner. A role that may not change the schema (the service's own) gets through when
    nothing is pending, and otherwise MigrationRefused, saying to migrate as the owner.
    """
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock(4242)")  # replicas starting together migrate once; close unlocks
        try:
            if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
                await conn.execute("CREATE TABLE schema_migrations "
                                   "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
            applied = []
            for path in sorted(MIGRATIONS.glob("*.sql")):
                if path.name in done:
                    continue
                async with conn.transaction():
                    await conn.execute(path.read_text())
                    if path.name in AFTER:
                        await AFTER[path.name](conn)
                    await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
                applied.append(path.name)
                log.info("applied migration %s", path.name)
            return applied
        except asyncpg.InsufficientPrivilegeError as e:
            user = await conn.fetchval("SELECT current_user")
            raise MigrationRefused(f"the ledger's schema needs migrating and PostgreSQL role {user!r} may not do it "
                                   f"({e}): run `jackpotd migrate` with the owner's DSN") from None
    finally:
        await conn.close()


async def connect_pool(dsn: str, size: int = 10, application_name: str = "") -> asyncpg.Pool:
    """A connection pool logged in as `dsn` says: for the service, the application role, whose sessions can
    only read and append (there is no SET ROLE to undo). A writer's sessions carry its `application_name`, so a
    standby can end them all should it fall silent (store/liveness.py)."""
    settings = {"application_name": application_name} if application_name else None
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=size, server_settings=settings)
    assert pool is not None
    return pool


async def role_problems(pg: asyncpg.Pool) -> list[str]:
    """Why the pool's role is more than the service needs (empty: it cannot change or delete ledger rows)."""
    row = await pg.fetchrow(
        "SELECT current_user AS name, r.rolsuper, r.rolbypassrls, "
        "CASE WHEN c.oid IS NULL THEN false ELSE pg_has_role(c.relowner, 'USAGE') END AS owner, "
        "CASE WHEN c.oid IS NULL THEN false ELSE has_table_privilege(c.oid, 'UPDATE, DELETE, TRUNCATE') END AS edit "
        "FROM pg_roles r LEFT JOIN pg_class c ON c.oid = to_regclass('entries') WHERE r.rolname = current_user")
    if row is None:  # a role that is not in pg_roles: nothing to say
        return []
    problems = []
    if row["rolsuper"]:
        problems.append("is a superuser")
    if row["owner"]:
        problems.append("owns the ledger's tables (or is a member of their owner)")
    if row["edit"]:
        problems.append("may UPDATE, DELETE or TRUNCATE entries")
    if row["rolbypassrls"]:
        problems.append("bypasses row security")
    return [f"PostgreSQL role {row['name']!r} {p}" for p in problems]


async def ping(pg: asyncpg.Pool, timeout: float) -> None:
    """SELECT 1 within `timeout` seconds (health checks)."""
    async with pg.acquire(timeout=timeout) as conn:
        await conn.fetchval("SELECT 1", timeout=timeout)
