"""Issue 22, P3: seat lists of a round of more than RUNS_FROM seats are stored as runs and read back exactly; rounds
of a real table's size are stored byte for byte as before; a settle's content is what MessageToDict made."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import orjson
import pytest
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.api.servicers import settle_of
from jackpotd.canonical import canonical_json
from jackpotd.domain.contributions import SeatContribution, contribute
from jackpotd.domain.errors import FailedPrecondition, InvalidInput
from jackpotd.domain.link import LinkConfig, TableConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.postings import Posting
from jackpotd.domain.rates import RateSet
from jackpotd.domain.rounds import NoHand, SeatHand, Wager, validate_wagers
from jackpotd.service.commands import Commit, Request, Settle, Void
from jackpotd.service.decide.table import TableState, decide_commit, decide_settle, decide_void
from jackpotd.service.entries import entry_form
from jackpotd.service.ports import LiveRound
from jackpotd.service.replies import (
    Accepted,
    CommitResult,
    SeatResult,
    SettleResult,
    VoidResult,
    decode_result,
    encode_result,
    stored_form,
)
from jackpotd.service.round_record import RoundRecord, new_round
from jackpotd.service.seat_runs import RUNS_FROM, as_runs, from_runs, result_runs
from jackpotd.store.ledger.summaries import entry_facts

RATES = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "A-1")
POOLS = (PoolSpec(MAJOR, 1_000, 5_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE))


@given(st.lists(st.tuples(st.integers(1, 300), st.sampled_from(["a", "b"]), st.integers(0, 1)),
                unique_by=lambda r: r[0]))
def test_runs_hold_every_seat_and_its_values(rows: list[tuple[int, str, int]]) -> None:
    rows.sort()
    runs = as_runs(rows)
    assert [(seat, *values) for seat, values in from_runs(runs)] == rows
    assert all(a[1] + 1 < b[0] or a[2:] != b[2:] for a, b in pairwise(runs))  # maximal runs


def test_a_run_that_is_none_is_refused() -> None:
    with pytest.raises(ValueError, match="seat run"):
        list(from_runs([[5, 4, "x"]]))


def capped_round(seats: list[int]) -> RoundRecord:
    """A round on a capped MAJOR: the seats before the cap fills and after it have different legs and overflow."""
    c = contribute(RATES, POOLS, {MAJOR: 4_000 * 1_000_000}, [(s, 100) for s in seats])
    return new_round("caribbean-stud", 1, c.seats)


def test_a_big_round_is_stored_as_runs_and_read_back_seat_by_seat() -> None:
    seats = [s for s in range(1, 20_001) if s % 1000 != 7]
    record = capped_round(seats)
    text = record.encode()
    stored = orjson.loads(text)
    assert "seats" not in stored and len(stored["seat_runs"]) < 60 and len(stored["legs"]) >= 2
    back = RoundRecord.decode(text)
    assert back.seats == record.seats and back.active == seats and len(back.seats) == len(seats)
    assert 1007 not in back.seats and back.seats[19_999] == record.seats[19_999]
    with pytest.raises(KeyError):
        back.seats[1007]
    assert back.encode() == text  # settled or voided, it is stored again as it was read
    facts = entry_facts({"kind": "commit", "postings": [], "round": {"data": text}}, "")
    assert facts.wagers == len(seats)


def test_a_table_sized_round_is_stored_per_seat_as_before() -> None:
    record = capped_round(list(range(1, RUNS_FROM + 1)))
    stored = orjson.loads(record.encode())
    assert "seat_runs" not in stored and len(stored["seats"]) == RUNS_FROM
    legs = [[list(p) for p in c.postings] for c in record.seats.values()]
    distinct = [legs[i] for i in range(len(legs)) if legs[i] not in legs[:i]]
    assert stored["legs"] == distinct
    assert stored["seats"]["1"] == [0, 100, record.seats[1].overflow_uc]
    assert RoundRecord.decode(record.encode()) == record


def test_a_void_of_some_seats_of_a_big_round_reverses_their_legs() -> None:
    record = capped_round(list(range(1, 1001)))
    text = RoundRecord(record.game, 1, RoundRecord.decode(record.encode()).seats,
                       void_reasons=({"seats": [3, 999], "reason": "absent"},)).encode()
    facts = entry_facts({"kind": "void", "postings": [], "round": {"data": text}}, "")
    expected: dict[str, int] = {}
    for s in (3, 999):
        for p in record.seats[s].postings:
            expected[p.account] = expected.get(p.account, 0) + p.amount_uc
    assert facts.reversed == expected and facts.wagers == 2


def test_big_results_are_stored_as_runs_and_small_ones_as_before() -> None:
    big = CommitResult(tuple(Accepted(s, 100, 30_000_000, 0) for s in range(1, 50_001)))
    assert stored_form(big) == {"accepted_runs": [[1, 50_000, 100, 30_000_000, 0]]}
    assert decode_result(orjson.loads(canonical_json(stored_form(big)))) == big
    seats = tuple(SeatResult(s, "flush" if s == 9 else "", "" if s == 9 else "FOLDED") for s in range(1, 101))
    settle = SettleResult((), (), seats, (200,))
    assert stored_form(settle)["seat_runs"] == [[1, 8, "", "FOLDED"], [9, 9, "flush", ""], [10, 100, "", "FOLDED"]]
    assert decode_result(orjson.loads(canonical_json(stored_form(settle)))) == settle
    small = CommitResult((Accepted(1, 100, 30_000_000, 0),))
    assert stored_form(small) == {"accepted": [{"seat": 1, "amount_cents": 100, "contributed_uc": 30_000_000,
                                                "overflow_uc": 0}]}


@pytest.mark.parametrize("hands", [
    [],
    [table_pb2.SeatHand(seat=1, cards=["As", "Ks", "Qs", "Js", "Ts"]), table_pb2.SeatHand(seat=2, no_hand=1)],
    [table_pb2.SeatHand(seat=0), table_pb2.SeatHand(seat=3, no_hand=table_pb2.DEAD),
     table_pb2.SeatHand(seat=4, cards=[""])],
])
def test_a_settles_content_is_what_message_to_dict_made(hands: list[table_pb2.SeatHand]) -> None:
    for request in (table_pb2.SettleRoundRequest(request_id="q", table_id="t", round_id="r", hands=hands,
                                                 dealer_cards=["2s"], board_cards=["3s", "4s"]),
                    table_pb2.SettleRoundRequest(request_id="q", hands=hands)):
        content = MessageToDict(request, preserving_proto_field_name=True)
        content.pop("request_id")
        assert settle_of(request)[1] == content


def test_an_unknown_no_hand_is_refused_naming_the_hand() -> None:
    request = table_pb2.SettleRoundRequest(hands=[table_pb2.SeatHand(seat=1), table_pb2.SeatHand(seat=2, no_hand=9)])
    with pytest.raises(InvalidInput, match=r"hands\[1\]\.no_hand"):
        settle_of(request)


def test_a_whole_round_checked_at_once_gives_what_the_seat_by_seat_check_gives() -> None:
    wagers = [Wager(s, 100, True) for s in range(100_000, 0, -1)]
    assert validate_wagers(wagers, 100_000, 100) == tuple((s, 100) for s in range(1, 100_001))
    for bad, field in ((Wager(0, 100, True), "wagers[1].seat"), (Wager(3, 100, True), "wagers[1].seat"),
                       (Wager(2, 99, True), "wagers[1].amount_cents"), (Wager(2, 100, False), "wagers[1].ante_placed"),
                       (Wager(True, 100, True), "wagers[1].seat")):
        with pytest.raises(InvalidInput) as refused:
            validate_wagers([Wager(3, 100, True), bad], 100_000, 100)
        assert refused.value.field == field
    assert SeatContribution(1, 100, (Posting("wagers", -1),), 0).to_pools_uc == 0


def test_a_big_round_voided_in_part_then_whole_reverses_exactly_what_was_contributed() -> None:
    config = LinkConfig(link_id="L", mode=SPLIT, wager_cents=100, pools=POOLS, rate_sets=(RATES,),
                        paytables={"caribbean-stud": default_paytable("caribbean-stud", SPLIT)},
                        tables={"T": TableConfig("T", "caribbean-stud", 100_000)})
    balances = {MAJOR: 4_000 * 1_000_000}
    made = decide_commit(Commit(Request("c", {"x": 1}), "T", "r1", [Wager(s, 100, True) for s in range(1, 20_001)]),
                         config, "v1", TableState(0, balances, None, None))
    assert "seat_runs" in orjson.loads(made.round_data)
    after_commit = {p: balances.get(p, 0) + v for p, v in made.deltas}
    part = decide_void(Void(Request("v1", {"x": 2}), "T", "r1", "absent", [17_000, 5]), config, "v1",
                       TableState(0, after_commit, LiveRound("COMMITTED", "1", made.round_data), None))
    record = RoundRecord.decode(made.round_data)
    assert isinstance(part.result, VoidResult)
    assert [(r.seat, r.amount_cents) for r in part.result.refunds] == [(5, 100), (17_000, 100)]
    expected: dict[str, int] = {}
    for s in (5, 17_000):
        for p in record.seats[s].postings:
            if p.account.startswith("pool:"):
                expected[p.account[5:]] = expected.get(p.account[5:], 0) - p.amount_uc
    assert dict(part.deltas) == expected
    left = RoundRecord.decode(part.round_data)
    assert len(left.active) == 19_998 and 5 not in left.active and left.seats == record.seats
    rest = decide_void(Void(Request("v2", {"x": 3}), "T", "r1", "misdeal"), config, "v1",
                       TableState(0, after_commit, LiveRound("COMMITTED", "2", part.round_data), None))
    assert isinstance(rest.result, VoidResult)
    assert len(rest.result.refunds) == 19_998 and rest.round_new_state == "VOIDED"
    total = {p: v + dict(rest.deltas).get(p, 0) for p, v in part.deltas}
    assert total == {p: -v for p, v in made.deltas}  # every µ¢ the commit put in is taken back
    assert replace(left, voided=(), void_reasons=()).encode() == made.round_data  # seats stored again as read


def test_a_big_settle_writes_its_resets_in_its_entry_so_the_writer_need_not_read_its_reply() -> None:
    config = LinkConfig(link_id="L", mode=SPLIT, wager_cents=100, pools=POOLS, rate_sets=(RATES,),
                        paytables={"caribbean-stud": default_paytable("caribbean-stud", SPLIT)},
                        tables={"T": TableConfig("T", "caribbean-stud", 100_000)})
    balances = {MAJOR: 4_000 * 1_000_000, RESERVE: 500 * 1_000_000}
    for seats, written in ((RUNS_FROM + 1, True), (7, False)):
        wagers = [Wager(s, 100, True) for s in range(1, seats + 1)]
        made = decide_commit(Commit(Request("c", {"x": 1}), "T", "r1", wagers), config, "v1",
                             TableState(0, balances, None, None))
        hands = [SeatHand(1, ("As", "Ks", "Qs", "Js", "Ts"))] + [SeatHand(s, (), NoHand.FOLDED)
                                                                  for s in range(2, seats + 1)]
        after = {p: balances.get(p, 0) + v for p, v in made.deltas}
        step = decide_settle(Settle(Request("s", {"x": 2}), "T", "r1", hands, ["2s", "3s", "Jd", "Ac", "Kc"], []),
                             config, "v1", TableState(0, after, LiveRound("COMMITTED", "1", made.round_data), None))
        body = entry_form(step.entry)
        resets = stored_form(step.result)["resets"]
        assert resets  # the royal took MAJOR, which is reset
        if written:
            assert body["resets"] == [[r["pool"], r["from_reserve_cents"], r["from_operator_cents"]] for r in resets]
            facts = entry_facts(orjson.loads(canonical_json(body)), "")  # no reply at all: the entry says it
            assert [(r.pool, r.from_reserve_cents, r.from_operator_cents) for r in facts.resets or ()] == [
                tuple(x) for x in body["resets"]]
        else:
            assert "resets" not in body  # a table's settle is written as it always was


def test_a_big_commit_without_caps_is_priced_once_and_stored_as_seat_by_seat_would_store_it() -> None:
    pools = (PoolSpec(MAJOR, 1_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE))
    config = LinkConfig(link_id="L", mode=SPLIT, wager_cents=100, pools=pools, rate_sets=(RATES,),
                        paytables={"caribbean-stud": default_paytable("caribbean-stud", SPLIT)},
                        tables={"T": TableConfig("T", "caribbean-stud", 100_000)})
    balances = {MAJOR: 4_000 * 1_000_000}
    seats = [s for s in range(1, 30_001) if s % 997 and s != 2]  # gaps: several runs
    made = decide_commit(Commit(Request("c", {"x": 1}), "T", "r1", [Wager(s, 100, True) for s in reversed(seats)]),
                         config, "v1", TableState(0, balances, None, None))
    c = contribute(RATES, pools, balances, [(s, 100) for s in seats])  # seat by seat, as before
    rows = tuple(Accepted(s.seat, s.wager_cents, s.to_pools_uc, s.overflow_uc) for s in c.seats)
    assert made.round_data == new_round("caribbean-stud", 1, c.seats).encode()
    assert encode_result(made.result) == encode_result(CommitResult(rows))
    assert isinstance(made.result, CommitResult) and made.result.accepted == rows
    assert len(made.result.accepted) == 29_969 and {type(a) for a in made.result.accepted} == {Accepted}
    assert entry_form(made.entry)["postings"] == entry_form(replace(made.entry, postings=c.merged))["postings"]
    assert dict(made.deltas) == {p: c.balances_after[p] - balances.get(p, 0) for p in (MAJOR, MINOR, RESERVE)}
    with pytest.raises(FailedPrecondition, match="2\\^53"):  # the range check of a seat-by-seat commit holds
        decide_commit(Commit(Request("c", {"x": 1}), "T", "r1", [Wager(s, 100, True) for s in seats]), config, "v1",
                      TableState(0, {MAJOR: 2**53 - 10}, None, None))


@given(st.lists(st.tuples(st.integers(1, 60), st.sampled_from(["", "flush", "pair"]),
                          st.sampled_from([None, NoHand.FOLDED, NoHand.DEAD])), unique_by=lambda r: r[0]))
def test_a_settles_result_runs_are_the_runs_of_its_rows(rows: list[tuple[int, str, NoHand | None]]) -> None:
    rows.sort()
    seats = [s for s, _, _ in rows]
    hands = {s: h for s, h, _ in rows if h}
    reasons = {s: r for s, _, r in rows}
    assert result_runs(seats, hands, reasons) == as_runs(
        [(s, hands.get(s, ""), "" if r is None else r.value) for s, _, r in rows])
