"""Issue 22, the writer's summaries by shape: entries counted per quarter hour and shape, their flows summed once,
give exactly the totals that adding each entry's own flows gives (what the audit and finance compare)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.store.ledger import summaries as s

LEGS = [["wagers", -700_000_000], ["pool:MAJOR", 140_000_000], ["pool:MINOR", 52_500_000],
        ["pool:RESERVE", 17_500_000], ["retained", 490_000_000]]


def commit(seats: int, rates_version: int = 1, overflow: list[list[Any]] | None = None) -> dict[str, Any]:
    data = {"game": "caribbean-stud", "rates_version": rates_version, "voided": [],
            "seats": {str(n): [0, 100, 0] for n in range(1, seats + 1)}}
    rnd = {"data": json.dumps(data), "state": "COMMITTED", "round_id": "r", "table_id": "t"}
    body: dict[str, Any] = {"kind": "commit", "postings": LEGS, "round": rnd}
    if overflow is not None:
        body["overflow"] = overflow
    return body


HIT = {"pool": "MAJOR", "hand": "ROYAL_FLUSH", "amount_cents": 1_000, "funded_by_operator_cents": 0, "status": "PAID"}
BODIES: list[tuple[dict[str, Any], str]] = [
    (commit(7), ""),
    (commit(3), ""),
    (commit(300), ""),
    (commit(7, 2), ""),
    (commit(7, overflow=[["MAJOR", "MINOR", 5]]), ""),
    ({"kind": "fund", "postings": [["operator_funding", -5], ["pool:MAJOR", 5]]}, ""),
    ({"kind": "settle", "postings": []}, ""),
    ({"kind": "settle", "postings": [["pool:MAJOR", -10_000_000], ["payouts", 10_000_000]], "hits": [HIT],
      "resets": []}, ""),
    ({"kind": "settle", "postings": [["pool:MAJOR", -1]], "hits": None}, ""),  # unreadable: its legs unexplained
    ({"kind": "commit", "postings": LEGS}, ""),  # no round: unreadable
    ({"kind": "commit", "postings": LEGS, "round": {"state": "COMMITTED"}}, ""),  # a round without data
    ({"kind": "commit", "postings": LEGS, "round": {"data": 7}}, ""),
    ({"kind": 5, "postings": [["x", 1]]}, ""),
    ({"kind": "split_pools", "postings": [["pool:MAJOR", -3], ["pool:MINOR", 3]]}, ""),
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(BODIES) - 1), st.integers(0, 3 * s.BUCKET_MS)), max_size=40),
       st.integers(1, 3))
def test_shaped_summaries_are_the_entries_own(picks: list[tuple[int, int]], parts: int) -> None:
    """Any run of entries, split into `parts` runs extended into one (as write_batch joins its links' rows)."""
    plain, shaped = s.Summaries(), s.Summaries()
    runs = [s.Summaries() for _ in range(parts)]
    for seq, (which, at) in enumerate(picks, 1):
        body, reply = BODIES[which]
        plain.add("L", seq, at, s.entry_flows(body, reply))
        runs[seq % parts].add_entry("L", seq, at, body, reply)
    for run in runs:
        shaped.extend(run)
    assert sorted(shaped.total_rows()) == sorted(plain.total_rows())
    assert sorted(shaped.bucket_rows()) == sorted(plain.bucket_rows())


def test_only_entries_whose_flows_follow_their_shape_have_one() -> None:
    assert s.flow_shape(commit(7)) == s.flow_shape(commit(7)) != s.flow_shape(commit(6))
    assert s.flow_shape(commit(7)) != s.flow_shape(commit(7, 2))
    assert s.flow_shape(commit(300)) is None  # a big round's data is not kept in the cache
    for kind in ("void", "approve_hit", "reject_hit"):
        assert s.flow_shape({"kind": kind, "postings": []}) is None
    assert s.flow_shape({"kind": "settle", "postings": [], "hits": [HIT]}) is None
    assert s.flow_shape({"kind": "settle", "postings": [], "hits": None}) is None
    assert s.flow_shape({"kind": "settle", "postings": []}) == s.flow_shape({"kind": "settle", "postings": [],
                                                                           "hits": []})
