"""The exported ledger as messages (API.md ExportLedger, ExportLedgerPages): one LedgerEntry per entry, and pages
of them bounded in count and in encoded size, so that a page stays well under gRPC's 4 MB message limit."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..service.ports import ExportedEntry
from .gen.jackpot.v1 import report_pb2

PAGE_ENTRIES = 1_000  # entries a page holds at most
PAGE_BYTES = 2_000_000  # a page's encoded size at most (unless one entry alone is larger: it has a page of its own)
# Bytes an encoded entry may take besides its strings' own bytes: each field's tag and length (at most 2 bytes of
# length for the short strings, 5 for entry_json), 10 bytes for each of the 4 int64s, the two 64-character hashes,
# and the entry's own tag and length inside the page.
ENTRY_FRAME = 5 * 3 + 4 * 11 + 2 * 66 + 6 + 6
POSTING_FRAME = 3 + 3 + 2 * 11  # a posting's tag and length, its account's tag and length, its two int64s


def _utf8(text: str) -> int:
    """The UTF-8 length of `text` (an ASCII string knows it is one: no encoding then)."""
    return len(text) if text.isascii() else len(text.encode())


def encoded_bound(link_id: str, e: ExportedEntry) -> int:
    """At least the bytes the entry's LedgerEntry takes inside a page, computed from its strings' lengths (cheaper
    than encoding it to measure)."""
    size = ENTRY_FRAME + _utf8(link_id) + _utf8(e.kind) + _utf8(e.request_id) + _utf8(e.table_id) \
        + _utf8(e.round_id) + _utf8(e.entry)
    for account, _, _ in e.postings:
        size += POSTING_FRAME + _utf8(account)
    return size


def entry_message(link_id: str, first: int, last: int, e: ExportedEntry) -> report_pb2.LedgerEntry:
    """The entry as ExportLedger streams it (`first`, `last`: the export's range, for progress)."""
    posting = report_pb2.LedgerPosting
    return report_pb2.LedgerEntry(
        link_id=link_id, sequence=e.seq, at_ms=e.at_ms, kind=e.kind, request_id=e.request_id, table_id=e.table_id,
        round_id=e.round_id, hash_hex=e.hash_hex, prev_hash_hex=e.prev_hash_hex, entry_json=e.entry,
        first_sequence=first, last_sequence=last,
        postings=[posting(account=a, amount_ucents=uc, balance_after_ucents=after) for a, uc, after in e.postings])


async def ledger_pages(link_id: str, first: int, last: int,
                       chunks: AsyncIterator[list[ExportedEntry]]) -> AsyncIterator[report_pb2.LedgerPage]:
    """The store's chunks of entries regrouped into pages of at most PAGE_ENTRIES entries and PAGE_BYTES bytes;
    never an empty page."""
    page: list[report_pb2.LedgerEntry] = []
    size = 0
    async for chunk in chunks:
        for e in chunk:
            n = encoded_bound(link_id, e)
            if page and (len(page) == PAGE_ENTRIES or size + n > PAGE_BYTES):
                yield report_pb2.LedgerPage(entries=page, first_sequence=page[0].sequence,
                                            last_sequence=page[-1].sequence)
                page, size = [], 0
            page.append(entry_message(link_id, first, last, e))
            size += n
    if page:
        yield report_pb2.LedgerPage(entries=page, first_sequence=page[0].sequence, last_sequence=page[-1].sequence)
