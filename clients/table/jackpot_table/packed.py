"""The packed form of a big round (API.md Columns): a table controller sends a round of more than COLUMNS_FROM
seats as columns (no message per seat on either side) and reads the answer in whichever form it came."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from jackpotd.api.gen.jackpot.v1 import table_pb2

COLUMNS_FROM = 64  # a round of more seats than any real table goes packed (the server stores such rounds as runs)
_NAMES = {v: name for name, v in table_pb2.NoHand.items() if v}  # no_hand's wire value -> FOLDED, MUCKED, DEAD


class AcceptedRow(NamedTuple):
    """One accepted wager, as either form answers it."""

    seat: int
    amount_cents: int
    contributed_ucents: int
    overflow_ucents: int


class SeatRow(NamedTuple):
    """One wagered seat of a settle: its hand ("" without one) and why it had none ("" with a hand)."""

    seat: int
    hand: str
    no_hand: str


def wager_columns(wagers: Sequence[tuple[int, int]]) -> table_pb2.WagerColumns:
    """(seat, cents) wagers, each with its ante, as columns."""
    return table_pb2.WagerColumns(seats=[s for s, _ in wagers], amount_cents=[c for _, c in wagers],
                                  ante_placed=[True] * len(wagers))


def hand_columns(hands: Mapping[int, Sequence[str]], no_hands: Mapping[int, str]) -> table_pb2.HandColumns:
    """Seats with cards and seats without a hand (and why), in seat order, as columns: a seat's cards joined by
    single spaces."""
    seats = sorted([*hands, *no_hands])
    codes = {why: table_pb2.NoHand.Value(why) for why in set(no_hands.values())}
    return table_pb2.HandColumns(seats=seats, cards=[" ".join(hands.get(s, ())) for s in seats],
                                 no_hand=[codes[no_hands[s]] if s in no_hands else table_pb2.NO_HAND_UNSPECIFIED
                                          for s in seats])


def accepted_of(response: table_pb2.CommitWagersResponse) -> list[AcceptedRow]:
    """A commit's accepted wagers, from `accepted_columns` when it came packed, else from `accepted`."""
    if response.HasField("accepted_columns"):
        c = response.accepted_columns
        return list(map(AcceptedRow._make, zip(c.seats, c.amount_cents, c.contributed_ucents, c.overflow_ucents,
                                               strict=True)))
    return [AcceptedRow(a.seat, a.amount_cents, a.contributed_ucents, a.overflow_ucents) for a in response.accepted]


def seats_of(response: table_pb2.SettleRoundResponse) -> list[SeatRow]:
    """A settle's seat results, from `seat_columns` when it came packed, else from `seats`."""
    if response.HasField("seat_columns"):
        c = response.seat_columns
        return [SeatRow(s, hand, _NAMES.get(v, "")) for s, hand, v in zip(c.seats, c.hand, c.no_hand, strict=True)]
    return [SeatRow(s.seat, s.hand, s.no_hand) for s in response.seats]
