"""The ledger's entries read for export as columns (ExportLedgerPages' columnar form): a chunk's entries as rows
turned into columns with one `zip`, its postings as four arrays PostgreSQL builds, so no Python object a posting
row and a few a chunk; chunks read ahead on other connections while the caller sends the current one."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import asyncpg

from ...service.export_columns import ExportedColumns
from .reports import round_of

CHUNK = 1_000  # entries read a statement
AHEAD = 1  # a chunk in flight besides the one being used (PostgreSQL works on another core meanwhile): an
# export holds at most two of the pool's connections, as the pages of entries did

# The entries as rows: cheaper for PostgreSQL than arrays of large texts (array_agg copies each entry twice and
# its binary output once more: about 3 µs an entry against 1). The hashes as bytes, made hex here (bytes.hex).
ENTRY_ROWS = (
    "SELECT seq, floor(extract(epoch FROM created_at) * 1000)::bigint, kind, request_id, entry::text, hash, "
    "prev_hash FROM entries WHERE link_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq")
# The postings as arrays in (seq, idx) order, aggregated from the primary key's order (no sort).
POSTING_ARRAYS = (
    "SELECT array_agg(seq ORDER BY seq, idx), array_agg(account ORDER BY seq, idx), "
    "array_agg(amount_uc ORDER BY seq, idx), array_agg(balance_after_uc ORDER BY seq, idx) "
    "FROM postings WHERE link_id = $1 AND seq BETWEEN $2 AND $3")


async def _chunk(pool: asyncpg.Pool, link_id: str, first: int, last: int) -> ExportedColumns | None:
    """Entries first..last as columns (None when there are none)."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        # one snapshot for both statements: the entries and their postings as one moment of the ledger holds them
        rows = await conn.fetch(ENTRY_ROWS, link_id, first, last)
        legs = await conn.fetchrow(POSTING_ARRAYS, link_id, first, last)
    if not rows:
        return None
    seqs, at_ms, kinds, request_ids, entries, hashes, prevs = zip(*rows, strict=True)
    posting_seqs, accounts, amounts, afters = ([], [], [], []) if legs is None or legs[0] is None else legs
    per = Counter(posting_seqs)
    counts = list(map(per.__getitem__, seqs))
    if sum(counts) != len(accounts):  # a posting of an entry outside the chunk: impossible with the foreign key
        raise RuntimeError(f"export of {link_id} {first}..{last}: postings do not match their entries")
    tables, rounds = zip(*map(round_of, entries), strict=True)
    return ExportedColumns(seqs, at_ms, kinds, request_ids, tables, rounds, list(map(bytes.hex, hashes)),
                           list(map(bytes.hex, prevs)), entries, counts, accounts, amounts, afters)


async def entry_columns(pool: asyncpg.Pool, link_id: str, first: int, last: int,
                        chunk: int = CHUNK) -> AsyncIterator[ExportedColumns]:
    """The entries [first, last] with their postings as columns, a chunk at a time, in sequence order, the next
    AHEAD chunks' reads in flight; a read not wanted (the caller stopped) is cancelled."""
    spans = iter([(at, min(last, at + chunk - 1)) for at in range(first, last + 1, chunk)])
    ahead: list[asyncio.Task[ExportedColumns | None]] = []

    def more() -> None:
        span = next(spans, None)
        if span is not None:
            ahead.append(asyncio.ensure_future(_chunk(pool, link_id, *span)))

    for _ in range(AHEAD + 1):
        more()
    try:
        while ahead:
            columns = await ahead[0]
            ahead.pop(0)
            more()
            if columns is not None:
                yield columns
    finally:
        for task in ahead:
            task.cancel()
            task.add_done_callback(_retrieved)


def _retrieved(task: asyncio.Task[ExportedColumns | None]) -> None:
    """A chunk read ahead and not wanted: its end (cancelled, or a failure) is nobody's to report."""
    if not task.cancelled():
        task.exception()
