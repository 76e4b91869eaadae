"""Fences: links the ledger refused an entry of, stopped until an operator acts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg


@dataclass(frozen=True, slots=True)
class Fence:
    """A link stopped because the ledger refused its entry `seq`."""

    link_id: str
    seq: int
    reason: str
    fenced_at: datetime


async def fences(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, Fence]:
    """Every fenced link, by link id."""
    return {r["link_id"]: Fence(r["link_id"], int(r["seq"]), r["reason"], r["fenced_at"]) for r in await conn.fetch(
        "SELECT link_id, seq, reason, fenced_at FROM link_fences ORDER BY link_id")}


async def set_fence(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, seq: int, reason: str) -> None:
    """Fence a link at its refused entry; a link fenced already keeps its first fence."""
    await conn.execute("INSERT INTO link_fences (link_id, seq, reason) VALUES ($1, $2, $3) ON CONFLICT (link_id) "
                       "DO NOTHING", link_id, seq, reason)


async def clear_fence(conn: asyncpg.Connection | asyncpg.Pool, link_id: str) -> bool:
    """Lift a link's fence (an operator's act); whether it was fenced."""
    return bool(await conn.fetchval("WITH d AS (DELETE FROM link_fences WHERE link_id = $1 RETURNING 1) "
                                    "SELECT count(*) FROM d", link_id))


def refused_entry(seq: int, reason: str) -> str:
    """Why a link is fenced, as calls on it are told."""
    return f"the ledger refused entry {seq}: {reason}"[:500]
