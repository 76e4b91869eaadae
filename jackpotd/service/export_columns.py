"""Exported ledger entries as the store gives them: one at a time (ExportedEntry), or a run of them as columns
(ExportedColumns, ExportLedgerPages' columnar form: one list per field, so that the store fills it and the API
copies it into a page with a call per field, not an object per entry)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple


class ExportedEntry(NamedTuple):
    """A ledger entry as exported: a tuple (cheap to make), its postings as three columns in index order."""

    seq: int
    at_ms: int
    kind: str
    request_id: str
    table_id: str
    round_id: str
    hash_hex: str
    prev_hash_hex: str
    entry: str  # exactly as chained
    accounts: Sequence[str] = ()
    amounts: Sequence[int] = ()  # µ¢
    afters: Sequence[int] = ()  # the account's balance after the posting, µ¢


class ExportedColumns(NamedTuple):
    """Consecutive entries, entry i being seqs[i], at_ms[i], ...; its postings the next posting_counts[i] values
    of accounts, amounts and afters, in the entry's order. Each field as ExportedEntry has it."""

    seqs: Sequence[int]
    at_ms: Sequence[int]
    kinds: Sequence[str]
    request_ids: Sequence[str]
    table_ids: Sequence[str]
    round_ids: Sequence[str]
    hashes_hex: Sequence[str]
    prev_hashes_hex: Sequence[str]
    entries: Sequence[str]  # exactly as chained
    posting_counts: Sequence[int]
    accounts: Sequence[str]
    amounts: Sequence[int]  # µ¢
    afters: Sequence[int]  # the account's balance after the posting, µ¢


ENTRY_FIELDS = 10  # seqs .. posting_counts: one value an entry; the rest one a posting


def columns_slice(c: ExportedColumns, lo: int, hi: int, first_posting: int, end_posting: int) -> ExportedColumns:
    """Entries lo..hi-1, whose postings are first_posting..end_posting-1 (the sum of the earlier counts)."""
    fields: list[Any] = [f[lo:hi] for f in c[:ENTRY_FIELDS]] + [f[first_posting:end_posting]
                                                                for f in c[ENTRY_FIELDS:]]
    return ExportedColumns(*fields)
