"""The exported ledger as messages (API.md ExportLedger, ExportLedgerPages): one LedgerEntry per entry, and pages
of them (or of their columns) bounded in count and in encoded size, well under gRPC's 4 MB message limit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from ..service.export_columns import ExportedColumns, columns_slice
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


def column_page(link_id: str, first: int, last: int, c: ExportedColumns) -> report_pb2.LedgerPage:
    """One page of all the columns `c` (LedgerPage.columns), each field filled by one `extend`."""
    page = report_pb2.LedgerPage(first_sequence=c.seqs[0], last_sequence=c.seqs[-1])
    m = page.columns
    m.link_id, m.export_first_sequence, m.export_last_sequence = link_id, first, last
    for field, values in zip(COLUMN_FIELDS, c, strict=True):
        getattr(m, field).extend(values)
    return page


COLUMN_FIELDS = ("sequence", "at_ms", "kind", "request_id", "table_id", "round_id", "hash_hex", "prev_hash_hex",
                 "entry_json", "posting_count", "account", "amount_ucents", "balance_after_ucents")  # ExportedColumns'


FIELD_FRAME = 6  # a field's tag and length, at most (a tag under 16 takes a byte; a length under 2**28, 4 more)
VARINT = 10  # bytes an integer takes at most (a negative int32 or int64 takes 10)


def size_bound(link_id: str, c: ExportedColumns) -> int:
    """An upper bound of the encoded size of `c`'s page, from its texts' lengths (a byte a character when all of a
    column is ASCII, which str.isascii says without reading it; 4 else), so that protobuf's own size (an encoding
    of the whole page, ByteSize) is asked only of a page near PAGE_BYTES. Tested never to be under ByteSize."""
    size = 4 * (1 + VARINT) + 2 * FIELD_FRAME + 4 * len(link_id)  # 4 sequences, 2 frames (columns, link_id)
    texts = [c.kinds, c.request_ids, c.table_ids, c.round_ids, c.hashes_hex, c.prev_hashes_hex, c.entries, c.accounts]
    for column in texts:  # each text its own tag and length
        chars = sum(map(len, column))
        size += (chars if all(map(str.isascii, column)) else 4 * chars) + FIELD_FRAME * len(column)
    integers = len(c) - len(texts)  # seqs, at_ms, posting_counts, amounts, afters; packed: a frame a column
    return size + FIELD_FRAME * integers + VARINT * (3 * len(c.seqs) + 2 * len(c.accounts))


def column_pages(link_id: str, first: int, last: int, c: ExportedColumns) -> list[report_pb2.LedgerPage]:
    """The columns `c` as pages of at most PAGE_ENTRIES entries and PAGE_BYTES encoded bytes (protobuf's size of
    the page, checked once a page; halved until it fits), an entry larger than that alone in its page."""
    n = len(c.seqs)
    if n == 0:
        return []
    if n > PAGE_ENTRIES:
        cut = PAGE_ENTRIES
    elif n > 1 and sum(map(len, c.entries)) > PAGE_BYTES:  # the entries' text alone is too much: no need to build
        cut = n // 2
    else:
        page = column_page(link_id, first, last, c)
        if n == 1 or size_bound(link_id, c) <= PAGE_BYTES or page.ByteSize() <= PAGE_BYTES:
            return [page]
        cut = n // 2
    split = sum(c.posting_counts[:cut])
    return (column_pages(link_id, first, last, columns_slice(c, 0, cut, 0, split))
            + column_pages(link_id, first, last, columns_slice(c, cut, n, split, len(c.accounts))))


async def ledger_column_pages(link_id: str, first: int, last: int,
                              chunks: AsyncIterator[ExportedColumns]) -> AsyncIterator[report_pb2.LedgerPage]:
    """The store's chunks of columns as pages (`column_pages`), in order; never an empty page."""
    async for chunk in chunks:
        for page in column_pages(link_id, first, last, chunk):
            yield page
