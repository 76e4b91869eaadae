"""What a PostgreSQL superuser who knows the code does to the ledger, for the tamper tests: recompute the chain
after rewriting rows, or cut the last entries off and fix the projections so the rows agree."""

from __future__ import annotations

import asyncpg

from jackpotd.store.ledger import chain_hash
from jackpotd.store.ledger.summaries import ms_of

GUARDED = ("entries", "postings", "hits", "hit_decisions", "hit_approvals", "links", "link_configs")


async def recompute_chain(conn: asyncpg.Connection, link: str) -> None:
    """Every hash again from the stored rows, and the head."""
    legs: dict[int, list[tuple[str, int, int]]] = {}
    for r in await conn.fetch("SELECT seq, account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                              "ORDER BY seq, idx", link):
        legs.setdefault(int(r["seq"]), []).append((r["account"], int(r["amount_uc"]), int(r["balance_after_uc"])))
    prev = b""
    for r in await conn.fetch("SELECT seq, entry::text AS entry, reply, chain_version, created_at FROM entries "
                              "WHERE link_id = $1 ORDER BY seq", link):
        seq = int(r["seq"])
        digest = chain_hash(prev, link, seq, r["entry"], legs.get(seq, []),
                            r["reply"] if r["chain_version"] >= 2 else None,
                            ms_of(r["created_at"]) if r["chain_version"] >= 3 else None)
        await conn.execute("UPDATE entries SET prev_hash = $3, hash = $4 WHERE link_id = $1 AND seq = $2",
                           link, seq, prev, digest)
        prev = digest
    await conn.execute("UPDATE links SET last_hash = $2 WHERE link_id = $1", link, prev)


async def unguarded(conn: asyncpg.Connection, on: bool) -> None:
    """The append-only triggers off (a superuser's first step) or on again."""
    for t in GUARDED:
        await conn.execute(f"ALTER TABLE {t} {'DISABLE' if on else 'ENABLE'} TRIGGER ALL")


async def truncate(conn: asyncpg.Connection, link: str, keep: int) -> None:
    """Delete the link's entries after `keep` with their rows, and make the head and balances agree."""
    await unguarded(conn, True)
    try:
        for t in ("hit_decisions", "hit_approvals", "hits", "postings", "entries"):
            await conn.execute(f"DELETE FROM {t} WHERE link_id = $1 AND seq > $2", link, keep)
        await conn.execute("UPDATE links SET last_seq = $2, last_hash = (SELECT hash FROM entries WHERE link_id = $1 "
                           "AND seq = $2) WHERE link_id = $1", link, keep)
        await conn.execute("UPDATE account_balances b SET balance_uc = coalesce((SELECT sum(p.amount_uc) FROM "
                           "postings p WHERE p.link_id = b.link_id AND p.account = b.account), 0) "
                           "WHERE b.link_id = $1", link)
    finally:
        await unguarded(conn, False)


async def rewrite_reply(conn: asyncpg.Connection, link: str, seq: int) -> None:
    """Change one stored reply and recompute the chain: nothing inside the database disagrees afterwards."""
    await unguarded(conn, True)
    try:
        await conn.execute("UPDATE entries SET reply = reply || ' ' WHERE link_id = $1 AND seq = $2", link, seq)
        await recompute_chain(conn, link)
    finally:
        await unguarded(conn, False)


async def append_forged(conn: asyncpg.Connection, link: str) -> int:
    """Append a copy of the link's last entry (under another request id) after it, chained and with the head moved
    on: what a superuser who wants an entry of its own in the books does. Returns its sequence."""
    await unguarded(conn, True)
    try:
        seq = int(await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link))
        await conn.execute("INSERT INTO entries (link_id, seq, kind, request_id, request_hash, created_at, entry, "
                           "reply, prev_hash, hash, chain_version) SELECT link_id, seq + 1, kind, request_id || "
                           "'-forged', request_hash, created_at, entry, reply, hash, hash, chain_version FROM entries "
                           "WHERE link_id = $1 AND seq = $2", link, seq)
        await conn.execute("INSERT INTO postings (link_id, seq, idx, account, amount_uc, balance_after_uc) "
                           "SELECT link_id, seq + 1, idx, account, amount_uc, balance_after_uc + amount_uc "
                           "FROM postings WHERE link_id = $1 AND seq = $2", link, seq)
        await conn.execute("UPDATE links SET last_seq = $2 WHERE link_id = $1", link, seq + 1)
        await recompute_chain(conn, link)
    finally:
        await unguarded(conn, False)
    return seq + 1
