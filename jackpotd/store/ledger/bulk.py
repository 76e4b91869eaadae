"""How write_batch's append reaches PostgreSQL: a small batch in its one statement; a large one (a catch-up, a bulk
build) with its entries and postings in binary COPY, in one transaction that moves the heads first (issue 22)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .unnest import columns

BULK = 256  # entries from which a batch's entries and postings go by COPY: fewer round trips below it
# the append's $1..$4 (the heads), $69 (the hashes they replace) and $78, $79 (the shards' lease epochs, checked FOR
# SHARE: the lock lasts to the commit, so the first statement's check covers the whole transaction)
HEAD_PARAMS = frozenset({0, 1, 2, 3, 68, 77, 78})
COPIED_PARAMS = frozenset(range(4, 20))  # its $5..$14 (entries) and $15..$20 (postings)
ENTRY_COLUMNS = ("link_id", "seq", "kind", "request_id", "request_hash", "created_at", "entry", "reply", "prev_hash",
                 "hash", "chain_version")
POSTING_COLUMNS = ("link_id", "seq", "idx", "account", "amount_uc", "balance_after_uc")


async def run(conn: Any, append: str, heads: list[list[Any]], entries: Sequence[tuple[Any, ...]],
              postings: Sequence[tuple[Any, ...]], rest: list[list[Any]], chain_version: int) -> None:
    """Run the append statement: its parameters are the `heads` columns ($1..$4), the entries' and postings' columns
    ($5..$20), then `rest` ($21..). For `BULK` entries and more: the statement with the heads alone (it checks and
    moves them, holding their rows until the end), the entries and postings copied in binary, then the statement
    again with the other rows. One transaction: all or nothing, with the same checks at the same points (the heads
    before any entry, the references at the end of each insert)."""
    if len(entries) < BULK:
        await conn.execute(append, *heads, *columns(entries, 10), *columns(postings, 6), *rest)
        return
    copied: list[list[Any]] = [[] for _ in COPIED_PARAMS]
    args = [*heads, *copied, *rest]
    async with conn.transaction():
        await conn.execute(append, *[a if i in HEAD_PARAMS else [] for i, a in enumerate(args)])
        await conn.copy_records_to_table("entries", records=[(*e, chain_version) for e in entries],
                                         columns=ENTRY_COLUMNS)
        await conn.copy_records_to_table("postings", records=postings, columns=POSTING_COLUMNS)
        await conn.execute(append, *[[] if i in HEAD_PARAMS else a for i, a in enumerate(args)])
