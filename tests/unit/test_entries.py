"""Journal entries are written byte for byte as earlier versions wrote them: the ledger chains these bytes."""

from __future__ import annotations

from dataclasses import replace
from typing import get_args

import pytest

from jackpotd.domain.postings import Posting
from jackpotd.service.commands import Audit
from jackpotd.service.entries import (
    ApprovalDetail,
    ApprovalEntry,
    CommitDetail,
    ConfigDetail,
    DecisionDetail,
    DecisionEntry,
    Detail,
    Entry,
    FundDetail,
    HitEntry,
    RestructureDetail,
    RoundEntry,
    SettleDetail,
    VoidDetail,
    encode_entry,
)

AUDIT = Audit("sup", "why", "APP-9")
ROUND = RoundEntry("T", "r1", "SETTLED", '{"game":"caribbean-stud"}')
HIT = HitEntry("L:T:r1:1", "T", "r1", 1, "royal_flush", ("As", "Ks", "Qs", "Js", "Ts"), "MAJOR", 1_200_000, 0,
               1_200_000_000_000, "NSW 12.1", "PAID", 0)
HEAD = '"postings":[["a",-5],["b",5]],"request_hash":"h","request_id":"c-r1"'
ROUND_JSON = '"round":{"data":"{\\"game\\":\\"caribbean-stud\\"}","round_id":"r1","state":"SETTLED","table_id":"T"}'
AUDIT_JSON = '"audit":{"actor":"sup","approval_ref":"APP-9","reason":"why"}'

# (kind, detail, the entry exactly as the version before typed entries wrote it)
PINNED: list[tuple[str, Detail, str]] = [
    ("commit", CommitDetail(ROUND), '{"kind":"commit",' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    ("commit", CommitDetail(ROUND, (("MAJOR", "RESERVE", 20_000_000),)),
     '{"kind":"commit","overflow":[["MAJOR","RESERVE",20000000]],' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    ("settle", SettleDetail(ROUND, (HIT,)),
     '{"hits":[{"amount_cents":1200000,"cards":["As","Ks","Qs","Js","Ts"],"funded_by_operator_cents":0,'
     '"hand":"royal_flush","hit_id":"L:T:r1:1","pool":"MAJOR","pool_after_cents":0,"pool_before_uc":1200000000000,'
     '"round_id":"r1","rule":"NSW 12.1","seat":1,"status":"PAID","table_id":"T"}],"kind":"settle",' + HEAD + ","
     + ROUND_JSON + ',"ts_ms":7}'),
    ("settle", SettleDetail(ROUND, ()), '{"hits":[],"kind":"settle",' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    ("void", VoidDetail(ROUND, "misdeal"),
     '{"kind":"void","postings":[["a",-5],["b",5]],"reason":"misdeal","request_hash":"h","request_id":"c-r1",'
     + ROUND_JSON + ',"ts_ms":7}'),
    ("reject_hit", DecisionDetail(ROUND, DecisionEntry("L:T:r1:1", "T", "r1", 1, "REJECTED", "fouled"), AUDIT),
     "{" + AUDIT_JSON + ',"decision":{"hit_id":"L:T:r1:1","reason":"fouled","round_id":"r1","seat":1,'
     '"status":"REJECTED","table_id":"T"},"kind":"reject_hit",' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    # dual control (NM 15.1.24.12): a hit needing two approvals says so; its first approval is an entry of its own
    ("settle", SettleDetail(ROUND, (replace(HIT, approvals_needed=2),)),
     '{"hits":[{"amount_cents":1200000,"approvals_needed":2,"cards":["As","Ks","Qs","Js","Ts"],'
     '"funded_by_operator_cents":0,"hand":"royal_flush","hit_id":"L:T:r1:1","pool":"MAJOR","pool_after_cents":0,'
     '"pool_before_uc":1200000000000,"round_id":"r1","rule":"NSW 12.1","seat":1,"status":"PAID","table_id":"T"}],'
     '"kind":"settle",' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    ("first_approval", ApprovalDetail(ROUND, ApprovalEntry("L:T:r1:1", "T", "r1", 1), AUDIT),
     '{"approval":{"hit_id":"L:T:r1:1","round_id":"r1","seat":1,"table_id":"T"},' + AUDIT_JSON
     + ',"kind":"first_approval",' + HEAD + "," + ROUND_JSON + ',"ts_ms":7}'),
    ("fund", FundDetail(AUDIT), "{" + AUDIT_JSON + ',"kind":"fund",' + HEAD + ',"ts_ms":7}'),
    ("suspend_table", ConfigDetail({"link_id": "L"}, AUDIT, None),
     "{" + AUDIT_JSON + ',"config":{"link_id":"L"},"kind":"suspend_table",' + HEAD + ',"table":null,"ts_ms":7}'),
    ("register_table", ConfigDetail({"link_id": "L"}, AUDIT, "T2"),
     "{" + AUDIT_JSON + ',"config":{"link_id":"L"},"kind":"register_table",' + HEAD + ',"table":"T2","ts_ms":7}'),
    ("combine_pools", RestructureDetail({"mode": "COMBINED"}, AUDIT),
     "{" + AUDIT_JSON + ',"config":{"mode":"COMBINED"},"kind":"combine_pools",' + HEAD + ',"ts_ms":7}'),
]


@pytest.mark.parametrize(("kind", "detail", "text"), PINNED)
def test_each_kind_of_entry_is_written_as_before(kind: str, detail: Detail, text: str) -> None:
    entry = Entry(kind, 7, "c-r1", "h", (Posting("a", -5), Posting("b", 5)), detail)
    assert encode_entry(entry) == text


def test_every_kind_of_detail_is_pinned() -> None:
    assert {type(detail) for _, detail, _ in PINNED} == set(get_args(Detail))
