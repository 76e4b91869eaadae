"""ExportLedgerPages' pages (jackpotd/api/ledger_pages.py), of entries and of columns: every entry once and in
order, exactly as ExportLedger sends it, never an empty page, at most PAGE_ENTRIES entries and PAGE_BYTES encoded
bytes a page (an entry larger than that alone in its page), whatever the entries' text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from jackpot_finance.ledger_columns import columns_of, entries_of

from jackpotd.api.gen.jackpot.v1 import report_pb2
from jackpotd.api.ledger_pages import (
    PAGE_BYTES,
    PAGE_ENTRIES,
    column_page,
    column_pages,
    entry_message,
    ledger_pages,
    size_bound,
)
from jackpotd.service.export_columns import ExportedColumns
from jackpotd.service.ports import ExportedEntry

LINK = "link-1"


def exported(seq: int, text: str = '{"kind":"commit"}', accounts: Sequence[str] = ("pool:MAJOR", "wagers"),
             request_id: str = "r-1") -> ExportedEntry:
    return ExportedEntry(seq, 1_700_000_000_000 + seq, "commit", request_id, "t-1", f"round-{seq}", "ab" * 32,
                         "cd" * 32, text, tuple(accounts), tuple(-(2**63) + i for i in range(len(accounts))),
                         tuple(2**63 - 1 - i for i in range(len(accounts))))


async def _chunks(entries: list[ExportedEntry], size: int) -> AsyncIterator[list[ExportedEntry]]:
    for at in range(0, len(entries), size):
        yield entries[at:at + size]


async def _pages(entries: list[ExportedEntry], chunk: int) -> list[report_pb2.LedgerPage]:
    last = entries[-1].seq if entries else 0
    return [p async for p in ledger_pages(LINK, 1, last, _chunks(entries, chunk))]


def _check(pages: list[report_pb2.LedgerPage], entries: list[ExportedEntry]) -> None:
    assert [e.sequence for p in pages for e in p.entries] == [e.seq for e in entries]
    assert [e for p in pages for e in p.entries] == [entry_message(LINK, 1, entries[-1].seq, e) for e in entries]
    for p in pages:
        assert p.entries and len(p.entries) <= PAGE_ENTRIES
        assert (p.first_sequence, p.last_sequence) == (p.entries[0].sequence, p.entries[-1].sequence)
        assert len(p.entries) == 1 or p.ByteSize() <= PAGE_BYTES, (len(p.entries), p.ByteSize())


async def test_pages_of_small_entries_hold_a_thousand_across_the_stores_chunks() -> None:
    entries = [exported(s) for s in range(1, 2_502)]
    pages = await _pages(entries, 700)  # chunks that do not line up with pages
    _check(pages, entries)
    assert [len(p.entries) for p in pages] == [1_000, 1_000, 501]


async def test_large_entries_make_smaller_pages_and_a_huge_one_is_alone() -> None:
    big = "x" * 600_000  # a round of thousands of seats
    entries = [exported(1, big), exported(2, big), exported(3, big), exported(4, big), exported(5, "é" * 2_100_000),
               exported(6), exported(7, big)]
    pages = await _pages(entries, 5_000)
    _check(pages, entries)
    assert [len(p.entries) for p in pages] == [3, 1, 1, 2]  # 3 x 600 kB; 1.8 MB more would pass 2 MB
    assert pages[2].ByteSize() > PAGE_BYTES  # 4.2 MB of UTF-8: alone (gRPC's limit is the receiver's to raise)


async def test_no_entries_no_page() -> None:
    assert [p async for p in ledger_pages(LINK, 1, 0, _chunks([], 10))] == []


@given(st.lists(st.tuples(st.integers(0, 700_000), st.text(max_size=20),
                          st.lists(st.text(min_size=1, max_size=80), max_size=8)), min_size=1, max_size=12))
@settings(max_examples=40)
def test_pages_stay_bounded_whatever_the_entries(shapes: list[tuple[int, str, list[str]]]) -> None:
    entries = [exported(seq, "é" * (size // 2) + text, accounts) for seq, (size, text, accounts) in
               enumerate(shapes, start=1)]  # up to 700 kB of two-byte characters each
    _check(asyncio.run(_pages(entries, 5)), entries)


# ---- the columnar form (ExportLedgerPages with `columns`) ----------------------------------------------------

def columns(entries: Sequence[ExportedEntry]) -> ExportedColumns:
    """The entries as the store's columns."""
    return ExportedColumns([e.seq for e in entries], [e.at_ms for e in entries], [e.kind for e in entries],
                           [e.request_id for e in entries], [e.table_id for e in entries],
                           [e.round_id for e in entries], [e.hash_hex for e in entries],
                           [e.prev_hash_hex for e in entries], [e.entry for e in entries],
                           [len(e.accounts) for e in entries], [a for e in entries for a in e.accounts],
                           [u for e in entries for u in e.amounts], [b for e in entries for b in e.afters])


def _check_columns(pages: list[report_pb2.LedgerPage], entries: list[ExportedEntry]) -> None:
    """Column pages in bounds, never empty, carrying exactly the entries ExportLedger sends for them."""
    last = entries[-1].seq
    assert [e for p in pages for e in entries_of(p.columns)] == [entry_message(LINK, 1, last, e) for e in entries]
    for p in pages:
        assert not p.entries and 1 <= len(p.columns.sequence) <= PAGE_ENTRIES
        assert (p.first_sequence, p.last_sequence) == (p.columns.sequence[0], p.columns.sequence[-1])
        assert len(p.columns.sequence) == 1 or p.ByteSize() <= PAGE_BYTES, (len(p.columns.sequence), p.ByteSize())


def test_column_pages_hold_a_thousand_and_split_what_would_pass_the_size() -> None:
    small = [exported(s) for s in range(1, 2_502)]
    pages = column_pages(LINK, 1, 2_501, columns(small))  # a chunk larger than a page
    _check_columns(pages, small)
    assert [len(p.columns.sequence) for p in pages] == [1_000, 1_000, 501]
    big = "x" * 600_000
    entries = [exported(1, big), exported(2, big), exported(3, big), exported(4, big), exported(5, "é" * 2_100_000),
               exported(6), exported(7, big)]
    pages = column_pages(LINK, 1, 7, columns(entries))
    _check_columns(pages, entries)
    assert max(len(p.columns.sequence) for p in pages) == 3  # 3 x 600 kB; a fourth would pass 2 MB
    assert any(p.ByteSize() > PAGE_BYTES and len(p.columns.sequence) == 1 for p in pages)  # 4.2 MB: alone
    assert column_pages(LINK, 1, 0, columns([])) == []


@given(st.lists(st.tuples(st.integers(0, 700_000), st.text(max_size=20),
                          st.lists(st.text(min_size=1, max_size=80), max_size=8)), min_size=1, max_size=12))
@settings(max_examples=40)
def test_column_pages_stay_bounded_and_exact_whatever_the_entries(shapes: list[tuple[int, str, list[str]]]) -> None:
    entries = [exported(seq, "é" * (size // 2) + text, accounts, request_id=text or "r") for seq, (size, text, accounts)
               in enumerate(shapes, start=1)]
    _check_columns(column_pages(LINK, 1, len(entries), columns(entries)), entries)
    for n in range(1, len(entries) + 1):  # the bound that spares ByteSize is never under it
        assert size_bound(LINK, columns(entries[:n])) >= column_page(LINK, 1, 1, columns(entries[:n])).ByteSize()
    assert columns_of(entries_of(column_pages(LINK, 1, len(entries), columns(entries[:1]))[0].columns)) == \
        column_pages(LINK, 1, len(entries), columns(entries[:1]))[0].columns  # the client's two conversions agree
