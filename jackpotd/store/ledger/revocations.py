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


async def revoked(pool: asyncpg.Pool | asyncpg.Connection) -> set[str]:
    """Every revoked credential. The whole list every time: it is small (credentials expire within a month or a
    year), and reading only rows after the last id seen would miss one committed out of id order, or every one
    after a restore of the database rewound the sequence."""
    try:
        return {r["credential"] for r in await pool.fetch("SELECT credential FROM revoked_credentials")}
    except DRIVER_ERRORS as error:
        raise unavailable(error) from error


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
