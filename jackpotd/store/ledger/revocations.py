"""The revocation list (migration 013): credentials revoked before they expire, read by every worker."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from .service_port import DRIVER_ERRORS, unavailable


@dataclass(frozen=True, slots=True)
class Revocation:
    credential: str  # "jti:<id>" or "serial:<hex>"
    holder: str
    reason: str
    revoked_by: str
    revoked_at: datetime


async def revoked_since(pool: asyncpg.Pool | asyncpg.Connection, after: int) -> tuple[int, list[str]]:
    """The credentials revoked after row `after`, and the last row's id (`after` when none is new)."""
    try:
        rows = await pool.fetch("SELECT id, credential FROM revoked_credentials WHERE id > $1 ORDER BY id", after)
    except DRIVER_ERRORS as error:
        raise unavailable(error) from error
    return (int(rows[-1]["id"]) if rows else after), [r["credential"] for r in rows]


async def revoke(pool: asyncpg.Pool | asyncpg.Connection, credential: str, holder: str, reason: str,
                 revoked_by: str) -> bool:
    """Add a credential to the list; False when it was revoked already."""
    return bool(await pool.fetchval(
        "WITH i AS (INSERT INTO revoked_credentials (credential, holder, reason, revoked_by) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (credential) DO NOTHING RETURNING 1) SELECT count(*) FROM i", credential, holder, reason,
        revoked_by))


async def revocations(pool: asyncpg.Pool | asyncpg.Connection) -> list[Revocation]:
    """The whole list, oldest first."""
    return [Revocation(r["credential"], r["holder"], r["reason"], r["revoked_by"], r["revoked_at"])
            for r in await pool.fetch("SELECT credential, holder, reason, revoked_by, revoked_at FROM "
                                      "revoked_credentials ORDER BY id")]
