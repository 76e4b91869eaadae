"""A ledger export's two wire forms (API.md ExportLedgerPages): entries as LedgerEntry messages and a page's entries
as LedgerColumns. Each form made from the other, so that a client reads any server's export as columns."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from jackpotd.api.gen.jackpot.v1 import report_pb2

ENTRY_FIELDS = ("sequence", "at_ms", "kind", "request_id", "table_id", "round_id", "hash_hex", "prev_hash_hex",
                "entry_json")  # a LedgerEntry's and a LedgerColumns' fields of the same name, one value an entry


def columns_of(entries: Sequence[report_pb2.LedgerEntry]) -> report_pb2.LedgerColumns:
    """Entries (ExportLedger's, or an older server's pages) as columns: the same values, field by field."""
    c = report_pb2.LedgerColumns()
    if entries:
        c.link_id = entries[0].link_id
        c.export_first_sequence, c.export_last_sequence = entries[0].first_sequence, entries[0].last_sequence
    for name in ENTRY_FIELDS:
        getattr(c, name).extend([getattr(e, name) for e in entries])
    c.posting_count.extend([len(e.postings) for e in entries])
    postings = [p for e in entries for p in e.postings]
    c.account.extend([p.account for p in postings])
    c.amount_ucents.extend([p.amount_ucents for p in postings])
    c.balance_after_ucents.extend([p.balance_after_ucents for p in postings])
    return c


def entries_of(c: report_pb2.LedgerColumns) -> list[report_pb2.LedgerEntry]:
    """Columns as the LedgerEntry messages ExportLedger would have sent for them (their postings included)."""
    ends = list(accumulate(c.posting_count))
    out = []
    for i, end in enumerate(ends):
        e = report_pb2.LedgerEntry(link_id=c.link_id, first_sequence=c.export_first_sequence,
                                   last_sequence=c.export_last_sequence,
                                   **{name: getattr(c, name)[i] for name in ENTRY_FIELDS})
        for p in range(end - c.posting_count[i], end):
            e.postings.add(account=c.account[p], amount_ucents=c.amount_ucents[p],
                           balance_after_ucents=c.balance_after_ucents[p])
        out.append(e)
    return out
