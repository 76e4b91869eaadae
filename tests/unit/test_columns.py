"""Issue 22, P3: the packed form of a big round (API.md Columns). Columns read into the same rows and the same
request content as the per-seat form (a retry in either form is one request), every bad column refused naming
its field and value, answers written as columns and read back by the table client."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st
from jackpot_table.packed import accepted_of, hand_columns, seats_of, wager_columns

from jackpotd.api import columns
from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.api.servicers import settle_of
from jackpotd.canonical import canonical_json
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.rounds import (
    NoHand,
    PackedHands,
    PackedWagers,
    SeatHand,
    Wager,
    evaluate_round,
    require_every_wagered_seat,
    validate_wagers,
    wager_seats,
)
from jackpotd.service.replies import Accepted, SeatResult

STUD = "caribbean-stud"
DEALER = ["2s", "3s", "Jd", "Ac", "Kc"]


def test_wager_columns_are_the_rows_and_the_content_of_the_per_seat_form() -> None:
    rows = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=s != 3) for s in (5, 1, 3, 70_000)]
    cols = table_pb2.WagerColumns(seats=[w.seat for w in rows], amount_cents=[w.amount_cents for w in rows],
                                  ante_placed=[w.ante_placed for w in rows])
    wagers, listed = columns.wagers_of(cols)
    assert isinstance(wagers, PackedWagers)
    assert wagers.rows() == [Wager(w.seat, w.amount_cents, w.ante_placed) for w in rows]
    per_seat = MessageToDict(table_pb2.CommitWagersRequest(wagers=rows), preserving_proto_field_name=True)
    # MessageToDict writes int64 as text and leaves defaults out; the servicer's content is [seat, cents, ante]
    assert listed == [[int(w.get("seat", 0)), int(w.get("amount_cents", 0)), w.get("ante_placed", False)]
                      for w in per_seat["wagers"]]


def same_content(listed: Any, content: dict[str, Any]) -> bool:
    """The packed form's `hands` content (its canonical JSON text) is what the per-seat form's list makes."""
    if listed is None:
        return "hands" not in content
    return canonical_json({"hands": listed}) == canonical_json({"hands": content["hands"]})


@pytest.mark.parametrize("hands", [
    [table_pb2.SeatHand(seat=1, cards=["As", "Ks", "Qs", "Js", "Ts"]),
     table_pb2.SeatHand(seat=2, no_hand=table_pb2.FOLDED)],
    [table_pb2.SeatHand(seat=0), table_pb2.SeatHand(seat=3, no_hand=table_pb2.DEAD),
     table_pb2.SeatHand(seat=4, cards=["10h", "2c"], no_hand=table_pb2.MUCKED), table_pb2.SeatHand(seat=5)],
])
def test_hand_columns_are_the_rows_and_the_content_of_the_per_seat_form(hands: list[table_pb2.SeatHand]) -> None:
    cols = table_pb2.HandColumns(seats=[h.seat for h in hands], cards=[" ".join(h.cards) for h in hands],
                                 no_hand=[h.no_hand for h in hands])
    per_seat_hands, content = settle_of(table_pb2.SettleRoundRequest(hands=hands))
    packed_hands, listed = columns.hands_of(cols)
    assert packed_hands.rows() == per_seat_hands and same_content(listed, content)
    assert packed_hands.reasons[1] in (NoHand.FOLDED, NoHand.DEAD)


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([(), ("As",), ("2c", "10h")]), st.integers(0, 3)),
                max_size=12))
def test_any_hands_in_columns_are_the_per_seat_forms_rows_and_content(rows: list[tuple[int, tuple[str, ...], int]]
                                                                      ) -> None:
    hands = [table_pb2.SeatHand(seat=s, cards=c, no_hand=v) for s, c, v in rows]  # type: ignore[arg-type]
    cols = table_pb2.HandColumns(seats=[s for s, _, _ in rows], cards=[" ".join(c) for _, c, _ in rows],
                                 no_hand=[v for _, _, v in rows])  # type: ignore[misc]
    per_seat_hands, content = settle_of(table_pb2.SettleRoundRequest(hands=hands))
    packed_hands, listed = columns.hands_of(cols)
    assert packed_hands.rows() == per_seat_hands and same_content(listed, content)


def test_the_table_client_sends_columns_the_server_reads_as_it_built_them() -> None:
    wagers, _ = columns.wagers_of(wager_columns([(1, 100), (2, 100), (9, 200)]))
    assert wagers.rows() == [Wager(1, 100, True), Wager(2, 100, True), Wager(9, 200, True)]
    hands, _ = columns.hands_of(hand_columns({4: ["As", "Ks"]}, {9: "FOLDED", 1: "DEAD"}))
    assert hands.rows() == [SeatHand(1, (), NoHand.DEAD), SeatHand(4, ("As", "Ks"), None),
                            SeatHand(9, (), NoHand.FOLDED)]


def test_answers_written_as_columns_are_read_back_by_the_table_client() -> None:
    accepted = [Accepted(1, 100, 30_000_000, 0), Accepted(2, 100, 25_000_000, 5_000_000)]
    committed = table_pb2.CommitWagersResponse()
    columns.accepted_columns(committed.accepted_columns, accepted)
    assert list(map(tuple, accepted_of(committed))) == list(map(tuple, accepted))
    rows = table_pb2.CommitWagersResponse(accepted=[table_pb2.AcceptedWager(
        seat=a.seat, amount_cents=a.amount_cents, contributed_ucents=a.contributed_uc,
        overflow_ucents=a.overflow_uc) for a in accepted])
    assert list(map(tuple, accepted_of(rows))) == list(map(tuple, accepted))
    seats = [SeatResult(1, "royal_flush", ""), SeatResult(2, "", "FOLDED"), SeatResult(3, "", "DEAD")]
    settled = table_pb2.SettleRoundResponse()
    columns.seat_columns(settled.seat_columns, seats)
    assert list(settled.seat_columns.no_hand) == [0, table_pb2.FOLDED, table_pb2.DEAD]
    assert list(map(tuple, seats_of(settled))) == list(map(tuple, seats))
    per_seat = table_pb2.SettleRoundResponse(seats=[table_pb2.SeatResult(seat=s.seat, hand=s.hand, no_hand=s.no_hand)
                                                    for s in seats])
    assert list(map(tuple, seats_of(per_seat))) == list(map(tuple, seats))


def refused(call: Any, *args: Any, **kwargs: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as e:
        call(*args, **kwargs)
    return e.value


@pytest.mark.parametrize(("cols", "field", "value"), [
    ({"seats": [1, 2], "amount_cents": [100], "ante_placed": [True, True]}, "wager_columns.amount_cents",
     "1 values"),
    ({"seats": [1, 2], "amount_cents": [100, 100], "ante_placed": [True, True, True]}, "wager_columns.ante_placed",
     "3 values"),
])
def test_wager_columns_of_unequal_lengths_are_refused_naming_the_column(cols: dict[str, Any], field: str,
                                                                        value: str) -> None:
    e = refused(columns.wagers_of, table_pb2.WagerColumns(**cols))
    assert (e.field, e.value) == (field, value) and "wager_columns.seats has 2" in e.reason


@pytest.mark.parametrize(("cols", "field", "value"), [
    ({"seats": [1, 2], "cards": [""], "no_hand": [1, 1]}, "hand_columns.cards", "1 values"),
    ({"seats": [1], "cards": [""], "no_hand": []}, "hand_columns.no_hand", "0 values"),
    ({"seats": [1, 2, 3], "cards": ["", "", ""], "no_hand": [1, 2, 7]}, "hand_columns.no_hand[2]", 7),
])
def test_bad_hand_columns_are_refused_naming_the_field(cols: dict[str, Any], field: str, value: object) -> None:
    e = refused(columns.hands_of, table_pb2.HandColumns(**cols))
    assert (e.field, e.value) == (field, value)


def test_both_forms_at_once_are_refused() -> None:
    e = refused(columns.one_form, 3, True, "wagers", "wager_columns")
    assert e.field == "wager_columns" and "not both" in e.reason
    columns.one_form(3, False, "wagers", "wager_columns")
    columns.one_form(0, True, "wagers", "wager_columns")


@pytest.mark.parametrize(("bad", "field", "value"), [
    (Wager(0, 100, True), "wager_columns.seats[17]", 0),
    (Wager(100_001, 100, True), "wager_columns.seats[17]", 100_001),
    (Wager(3, 100, True), "wager_columns.seats[17]", 3),  # a duplicate
    (Wager(18, 99, True), "wager_columns.amount_cents[17]", 99),
    (Wager(18, 100, False), "wager_columns.ante_placed[17]", False),
])
def test_a_bad_wager_in_columns_is_refused_naming_its_column_and_index(bad: Wager, field: str,
                                                                       value: object) -> None:
    wagers = [Wager(s, 100, True) for s in range(1, 18)] + [bad]
    e = refused(validate_wagers, wagers, 100_000, 100, columns=True)
    assert (e.field, e.value) == (field, value)
    packed = PackedWagers([w.seat for w in wagers], [w.amount_cents for w in wagers], [w.ante_placed for w in wagers])
    e = refused(wager_seats, packed, 100_000, 100)  # checked as columns, named as columns
    assert (e.field, e.value) == (field, value)
    assert wager_seats(PackedWagers([3, 1, 2], [100] * 3, [True] * 3), 3, 100) == [1, 2, 3]
    assert refused(validate_wagers, wagers, 100_000, 100).field == field.replace(  # rows: as before
        "wager_columns.seats[17]", "wagers[17].seat").replace("wager_columns.amount_cents[17]",
                                                              "wagers[17].amount_cents").replace(
        "wager_columns.ante_placed[17]", "wagers[17].ante_placed")
    assert refused(validate_wagers, [], 100, 100, columns=True).field == "wager_columns.seats"
    assert refused(wager_seats, PackedWagers([], [], []), 100, 100).field == "wager_columns.seats"


@pytest.mark.parametrize(("bad", "field", "value"), [
    (SeatHand(0, (), NoHand.FOLDED), "hand_columns.seats[2]", 0),
    (SeatHand(1, (), NoHand.FOLDED), "hand_columns.seats[2]", 1),  # a duplicate
    (SeatHand(3, ("Qh", "Qd", "Qc", "Qs", "2d"), NoHand.MUCKED), "hand_columns.cards[2]", "Qh Qd Qc Qs 2d"),
    (SeatHand(3, (), None), "hand_columns.cards[2]", ""),
    (SeatHand(3, ("Qh", "Qd", "Qc", "Qs"), None), "hand_columns.cards[2]", "Qh Qd Qc Qs"),
    (SeatHand(3, ("Qh", "Qd", "", "Qc", "Qs"), None), "hand_columns.cards[2][2]", ""),  # "Qh Qd  Qc Qs": two spaces
    (SeatHand(3, ("Qh", "Qd", "Qc", "Qs", "Zz"), None), "hand_columns.cards[2][4]", "Zz"),
])
def test_a_bad_hand_in_columns_is_refused_naming_its_column_and_index(bad: SeatHand, field: str,
                                                                      value: object) -> None:
    hands = [SeatHand(1, ("As", "Ks", "Qs", "Js", "Ts"), None), SeatHand(2, (), NoHand.FOLDED), bad]
    e = refused(evaluate_round, STUD, 100_000, [1, 2, 3], hands, (), DEALER, columns=True)
    assert (e.field, e.value) == (field, value)
    packed = PackedHands([h.seat for h in hands], [h.cards for h in hands], [h.no_hand for h in hands])
    e = refused(evaluate_round, STUD, 100_000, [1, 2, 3], packed, (), DEALER)  # checked as columns
    assert (e.field, e.value) == (field, value)


def test_packed_hands_are_evaluated_as_their_rows() -> None:
    hands = [SeatHand(s, (), NoHand.FOLDED) for s in range(1, 1001)]
    hands[499] = SeatHand(500, ("As", "Ks", "Qs", "Js", "Ts"), None)
    hands[9] = SeatHand(10, ("9c", "9d", "9h", "9s", "2c"), None)
    packed = PackedHands([h.seat for h in hands], [h.cards for h in hands], [h.no_hand for h in hands])
    assert evaluate_round(STUD, 1000, range(1, 1001), packed, (), DEALER) == evaluate_round(
        STUD, 1000, range(1, 1001), hands, (), DEALER)
    assert [i for i, _ in packed.looked_at()] == [9, 499]
    assert refused(require_every_wagered_seat, {1, 2, 1001}, packed, columns=True).value == [1001]


def test_a_wagered_seat_left_out_of_columns_is_named() -> None:
    e = refused(require_every_wagered_seat, {1, 2, 3}, [SeatHand(1, (), NoHand.FOLDED)], columns=True)
    assert (e.field, e.value) == ("hand_columns.seats", [2, 3])
