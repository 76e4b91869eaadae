"""The export's CSV from columns (jackpot_finance.ledger_csv.page_csv) is byte for byte what csv.writer writes of
spreadsheet.export_rows entry by entry, whatever the text (cells to quote or defuse, NUL), the amounts (any int64)
and the hits (a decision in a later page naming its hit's hand), and however the entries are cut into pages."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jackpot_finance.ledger_columns import columns_of
from jackpot_finance.ledger_csv import page_csv
from jackpot_finance.spreadsheet import export_rows, to_csv

from jackpotd.api.gen.jackpot.v1 import report_pb2

INT64 = st.integers(-(2**63), 2**63 - 1)
NASTY = st.text(alphabet=st.sampled_from(list('ab1,"\r\n\x00=+-@\t \'é')), max_size=6)  # csv quotes some
SAFE = st.text(alphabet=st.sampled_from(list("ab1:=+-@\t 'é")), max_size=6)  # nothing to quote; some to defuse
AMOUNT = st.one_of(INT64, st.integers(-(10**12), 10**12), st.integers(-(10**6), 10**6).map(lambda c: c * 10**6))
HIT = st.fixed_dictionaries({"hit_id": st.sampled_from(["h-1", "h-2"]), "seat": st.integers(1, 7),
                             "hand": st.sampled_from(["royal_flush", "flush", ""]),
                             "cards": st.lists(NASTY, max_size=2),
                             "pool": NASTY, "amount_cents": st.integers(0, 10**9), "pool_before_uc": AMOUNT,
                             "rule": NASTY, "status": st.sampled_from(["PAID", "PENDING"])})
BODY = st.one_of(st.just({"kind": "commit", "round": {"table_id": "t"}}), st.builds(lambda h: {"hits": h},
                 st.lists(HIT, max_size=2)),
                 st.builds(lambda i, s, a: {"decision": {"hit_id": i, "status": s}, "audit": {"actor": a}},
                           st.sampled_from(["h-1", "h-2", "h-9"]), st.sampled_from(["PAID", "REJECTED"]), NASTY))


@st.composite
def entries(draw: Any) -> list[report_pb2.LedgerEntry]:
    """Up to 8 entries; in a quarter of the examples their text may need quoting (the fallback), else not."""
    n = draw(st.integers(1, 8))
    ID = NASTY if draw(st.integers(0, 3)) == 0 else SAFE  # noqa: N806
    link = draw(ID)
    out = []
    for seq in range(1, n + 1):
        postings = draw(st.lists(st.tuples(st.one_of(st.sampled_from(["pool:MAJOR", "wagers"]), ID), AMOUNT,
                                           AMOUNT), max_size=4))
        out.append(report_pb2.LedgerEntry(
            link_id=link, sequence=seq, at_ms=draw(st.integers(0, 4_102_444_800_000)), kind=draw(ID),
            request_id=draw(ID), table_id=draw(ID), round_id=draw(ID),
            hash_hex=draw(st.one_of(st.just("ab" * 32), ID)), prev_hash_hex="cd" * 32,
            entry_json=json.dumps(draw(BODY)), first_sequence=1, last_sequence=n,
            postings=[report_pb2.LedgerPosting(account=a, amount_ucents=u, balance_after_ucents=b)
                      for a, u, b in postings]))
    return out


def expected(es: list[report_pb2.LedgerEntry]) -> str:
    seen: dict[str, dict[str, Any]] = {}
    return to_csv([row for e in es for row in export_rows(e, seen)])


@given(entries(), st.integers(1, 8))
@settings(max_examples=100, deadline=None)
def test_the_csv_of_column_pages_is_the_csv_of_entries(es: list[report_pb2.LedgerEntry], cut: int) -> None:
    seen: dict[str, dict[str, Any]] = {}
    got = page_csv(columns_of(es[:cut]), seen) + page_csv(columns_of(es[cut:]), seen)  # one `seen` across pages
    assert got == expected(es)


def test_plain_pages_take_the_fast_path_and_agree_on_every_kind_of_row() -> None:
    hit = {"hit_id": "h-1", "seat": 2, "hand": "royal_flush", "cards": ["As", "Ks"], "pool": "MAJOR",
           "amount_cents": 1_000, "pool_before_uc": 123_456_789_012, "rule": "NSW, 12.1", "status": "PENDING"}
    bodies = [{"kind": "commit"}, {"hits": [hit]}, {"decision": {"hit_id": "h-1", "status": "PAID"},
                                                    "audit": {"actor": "supervisor:alice", "agent": "console:f"}}]
    es = [report_pb2.LedgerEntry(link_id="demo", sequence=s, at_ms=1_714_525_323_456 + s, kind="settle",
                                 request_id=f"table:t-1:r{s}", table_id="t-1", round_id=f"r{s}", hash_hex="ab" * 32,
                                 prev_hash_hex="cd" * 32, entry_json=json.dumps(bodies[s % 3]),
                                 postings=[report_pb2.LedgerPosting(account="pool:MAJOR", amount_ucents=-uc,
                                                                    balance_after_ucents=uc * s)
                                           for uc in range(s % 3)])
          for s in range(1, 40)]
    got = page_csv(columns_of(es), {})
    assert got == expected(es)
    assert ",hit," in got and ",entry," in got and '"NSW, 12.1"' in got  # a hit's rule quoted by csv.writer
