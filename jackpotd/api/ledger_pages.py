"""The exported ledger as messages (API.md ExportLedger, ExportLedgerPages): one LedgerEntry per entry, and pages
of them bounded in count and in encoded size, so that a page stays well under gRPC's 4 MB message limit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from ..service.ports import ExportedEntry
from .gen.jackpot.v1 import report_pb2

PAGE_ENTRIES = 1_000  # entries a page holds at most
PAGE_BYTES = 2_000_000  # a page's encoded size at most (unless one entry alone is larger: it has a page of its own)
ENTRY_FRAME = 6  # an entry's tag and length inside its page, at most (a length under 2**28 takes 4 bytes)


def _entry(make: Callable[..., report_pb2.LedgerEntry], link_id: str, first: int, last: int,
           e: ExportedEntry) -> report_pb2.LedgerEntry:
    """The entry's message made by `make` (a new message, or the next of a page's entries: built in place, which
    costs a third of a message built and then copied), its postings added in place too."""
    m = make(link_id=link_id, sequence=e.seq, at_ms=e.at_ms, kind=e.kind, request_id=e.request_id,
             table_id=e.table_id, round_id=e.round_id, hash_hex=e.hash_hex, prev_hash_hex=e.prev_hash_hex,
             entry_json=e.entry, first_sequence=first, last_sequence=last)
    posting = m.postings.add
    for account, uc, after in zip(e.accounts, e.amounts, e.afters, strict=True):
        posting(account=account, amount_ucents=uc, balance_after_ucents=after)
    return m


def entry_message(link_id: str, first: int, last: int, e: ExportedEntry) -> report_pb2.LedgerEntry:
    """The entry as ExportLedger streams it (`first`, `last`: the export's range, for progress)."""
    return _entry(report_pb2.LedgerEntry, link_id, first, last, e)


def _sealed(page: report_pb2.LedgerPage) -> report_pb2.LedgerPage:
    page.first_sequence = page.entries[0].sequence
    page.last_sequence = page.entries[-1].sequence
    return page


async def ledger_pages(link_id: str, first: int, last: int,
                       chunks: AsyncIterator[list[ExportedEntry]]) -> AsyncIterator[report_pb2.LedgerPage]:
    """The store's chunks of entries regrouped into pages of at most PAGE_ENTRIES entries and PAGE_BYTES encoded
    bytes (each entry's size as protobuf encodes it); never an empty page."""
    page = report_pb2.LedgerPage()
    size = 0
    async for chunk in chunks:
        for e in chunk:
            if len(page.entries) == PAGE_ENTRIES:
                yield _sealed(page)
                page, size = report_pb2.LedgerPage(), 0
            n = _entry(page.entries.add, link_id, first, last, e).ByteSize() + ENTRY_FRAME
            if size + n > PAGE_BYTES and len(page.entries) > 1:  # this entry starts the next page
                del page.entries[-1]
                yield _sealed(page)
                page, size = report_pb2.LedgerPage(), 0
                _entry(page.entries.add, link_id, first, last, e)
            size += n
    if page.entries:
        yield _sealed(page)
