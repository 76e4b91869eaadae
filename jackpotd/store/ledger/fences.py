"""Fences: links stopped until an operator acts, because the ledger refused one of their entries or was changed
behind the writer's back (kinds: FenceKind)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

import asyncpg


class FenceKind(Enum):
    """Why a link is fenced: the ledger refused an entry, or it was tampered with (head_guard.Tamper's values)."""

    REFUSED = "refused"
    TRUNCATED = "truncated"
    REWRITTEN = "rewritten"
    HEAD_EDITED = "head-edited"
    EXTENDED = "extended"

    @property
    def tampered(self) -> bool:
        return self is not FenceKind.REFUSED


@dataclass(frozen=True, slots=True)
class Fence:
    """A link stopped at entry `seq` (the one the ledger refused, or the first one tampering removed or changed)."""

    link_id: str
    seq: int
    reason: str
    fenced_at: datetime
    kind: FenceKind = FenceKind.REFUSED

    @property
    def text(self) -> str:
        return fence_text(self.kind, self.seq, self.reason)


def kind_of(value: str) -> FenceKind:
    """A stored kind; one this version does not know is treated as the strictest."""
    try:
        return FenceKind(value)
    except ValueError:
        return FenceKind.REWRITTEN


async def fences(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, Fence]:
    """Every fenced link, by link id."""
    return {r["link_id"]: Fence(r["link_id"], int(r["seq"]), r["reason"], r["fenced_at"], kind_of(r["kind"]))
            for r in await conn.fetch("SELECT link_id, seq, reason, fenced_at, kind FROM link_fences ORDER BY link_id")}


async def set_fence(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, seq: int, reason: str,
                    kind: FenceKind = FenceKind.REFUSED) -> None:
    """Fence a link at entry `seq`; a link fenced already keeps its first fence."""
    await conn.execute("INSERT INTO link_fences (link_id, seq, reason, kind) VALUES ($1, $2, $3, $4) "
                       "ON CONFLICT (link_id) DO NOTHING", link_id, seq, reason, kind.value)


async def clear_fence(conn: asyncpg.Connection | asyncpg.Pool, link_id: str) -> bool:
    """Lift a link's fence (an operator's act); whether it was fenced."""
    return bool(await conn.fetchval("WITH d AS (DELETE FROM link_fences WHERE link_id = $1 RETURNING 1) "
                                    "SELECT count(*) FROM d", link_id))


def refused_entry(seq: int, reason: str) -> str:
    """Why a link is fenced because the ledger refused its entry, as calls on it are told."""
    return f"the ledger refused entry {seq}: {reason}"[:500]


def fence_text(kind: FenceKind, seq: int, reason: str) -> str:
    """Why a link is fenced, as calls on it are told (and its health, and `jackpotd fenced`)."""
    if kind is FenceKind.REFUSED:
        return refused_entry(seq, reason)
    return f"fenced: {reason}"[:500]
