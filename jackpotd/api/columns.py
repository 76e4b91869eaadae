"""The packed wire form of a big round (API.md, Columns): CommitWagers' `wager_columns` and SettleRound's
`hand_columns`, read as whole columns (list() of a packed field runs in C, with no message per seat) into the
same rows and the same request content as the per-seat form, and answered in kind by extending columns."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import ne, not_
from typing import Any

import orjson

from ..domain.errors import InvalidInput
from ..domain.rounds import NoHand, PackedHands, PackedWagers
from ..service.replies import Accepted, SeatResult
from ..service.seat_runs import RunRows
from .gen.jackpot.v1 import table_pb2

# NoHand by its wire value, and back: 0 (unset) is a seat whose cards are given
_REASONS: dict[int, NoHand | None] = {0: None, **{table_pb2.NoHand.Value(r.value): r for r in NoHand}}
_NAMES: dict[int, str] = {v: r.value for v, r in _REASONS.items() if r is not None}
_VALUES: dict[str, table_pb2.NoHand.ValueType] = {
    "": table_pb2.NO_HAND_UNSPECIFIED, **{r.value: table_pb2.NoHand.Value(r.value) for r in NoHand}}


def one_form(rows: int, has_columns: bool, rows_field: str, columns_field: str) -> None:
    """A request carries its seats in rows or in columns, never both."""
    if rows and has_columns:
        raise InvalidInput(columns_field, f"set with {rows} {rows_field}",
                           f"send {rows_field} or {columns_field}, not both")


def equal_lengths(form: str, columns: dict[str, Sequence[Any]]) -> None:
    """Every column of a packed form has one value per seat; a shorter or longer one is named with its length."""
    seats = len(columns["seats"])
    for name, values in columns.items():
        if len(values) != seats:
            raise InvalidInput(f"{form}.{name}", f"{len(values)} values",
                               f"must have one value per seat: {form}.seats has {seats}")


def wagers_of(cols: table_pb2.WagerColumns) -> tuple[PackedWagers, list[list[Any]]]:
    """The wagers of `wager_columns` as the domain checks them (columns, no row per seat), and the request
    content's `wagers` exactly as the per-seat form's ([seat, amount_cents, ante_placed] each), so a retry in
    either form is the same request."""
    seats, amounts, antes = list(cols.seats), list(cols.amount_cents), list(cols.ante_placed)
    equal_lengths("wager_columns", {"seats": seats, "amount_cents": amounts, "ante_placed": antes})
    return PackedWagers(seats, amounts, antes), list(map(list, zip(seats, amounts, antes, strict=True)))


def _hand_content(seat: int, cards: str, value: int) -> dict[str, Any]:
    """One seat of the content as the per-seat form names it (servicers.settle_of: proto3 leaves defaults out)."""
    d: dict[str, Any] = {"seat": seat} if seat else {}
    if cards:
        d["cards"] = cards.split(" ")
    if value:
        d["no_hand"] = _NAMES[value]
    return d


def hands_of(cols: table_pb2.HandColumns) -> tuple[PackedHands, orjson.Fragment | None]:
    """The hands of `hand_columns` as the domain checks them (columns, each seat's cards split at single spaces,
    no row per seat), and the request content's `hands` as the canonical JSON the per-seat form's list makes
    (None when no hand was sent), so a retry in either form is the same request."""
    seats, cards, values = list(cols.seats), list(cols.cards), list(cols.no_hand)
    equal_lengths("hand_columns", {"seats": seats, "cards": cards, "no_hand": values})
    if not set(values) <= _REASONS.keys():
        i, bad = next((i, v) for i, v in enumerate(values) if v not in _REASONS)
        raise InvalidInput(f"hand_columns.no_hand[{i}]", bad,
                           "must be FOLDED, MUCKED or DEAD (or unset, with cards)")
    count = len(seats)
    dealt: list[tuple[str, ...]] = [()] * count  # most seats of a big round hold no cards
    others = set(compress(range(count), cards))  # only the seats that sent cards, found in C
    for i in others:
        dealt[i] = tuple(cards[i].split(" "))
    # seats the content names otherwise than {"no_hand", "seat"}: cards, no reason or seat 0 (each looked for in
    # C only when there is one)
    if 0 in values:
        others.update(compress(range(count), map(not_, values)))
    if 0 in seats:
        others.update(compress(range(count), map(not_, seats)))
    content = orjson.Fragment(_hands_text(seats, cards, values, others)) if count else None
    return PackedHands(seats, dealt, list(map(_REASONS.__getitem__, values))), content


def _hands_text(seats: list[int], cards: list[str], values: Sequence[int], others: set[int]) -> bytes:
    """canonical_json of the per-seat form's `hands` list, without an object per seat: a stretch of seats with one
    reason is their numbers as orjson writes a list, each comma widened to the next seat's opening (keys sorted:
    "no_hand" before "seat"); each of `others` is made whole."""
    count = len(seats)
    starts = {0, *compress(range(1, count), map(ne, values[1:], values))}  # where the reason changes, in C
    for i in others:
        starts |= {i, i + 1}
    ordered = sorted(starts - {count})
    parts: list[bytes] = []
    for a, b in zip(ordered, [*ordered[1:], count], strict=True):
        if a in others:  # a stretch of its own (the next seat starts one)
            parts.append(orjson.dumps(_hand_content(seats[a], cards[a], values[a]), option=orjson.OPT_SORT_KEYS))
        else:
            head = b'{"no_hand":"' + _NAMES[values[a]].encode() + b'","seat":'
            parts.append(head + orjson.dumps(seats[a:b])[1:-1].replace(b",", b"}," + head) + b"}")
    return b"[" + b",".join(parts) + b"]"


def accepted_columns(out: table_pb2.AcceptedColumns, accepted: Sequence[Accepted]) -> None:
    """A commit's accepted wagers written as columns, each extended at once (from a big round's runs: a few
    extends per run, no row per seat)."""
    if isinstance(accepted, RunRows):
        for first, last, amount, contributed, overflow in accepted.runs:
            n = last - first + 1
            out.seats.extend(range(first, last + 1))
            out.amount_cents.extend(repeat(amount, n))
            out.contributed_ucents.extend(repeat(contributed, n))
            out.overflow_ucents.extend(repeat(overflow, n))
    elif accepted:
        seats, amounts, contributed, overflow = zip(*accepted, strict=True)
        out.seats.extend(seats)
        out.amount_cents.extend(amounts)
        out.contributed_ucents.extend(contributed)
        out.overflow_ucents.extend(overflow)


def seat_columns(out: table_pb2.SeatResultColumns, seats: Sequence[SeatResult]) -> None:
    """A settle's seat results written as columns, each extended at once (`no_hand` as its enum value; from a big
    round's runs: a few extends per run, no row per seat)."""
    if isinstance(seats, RunRows):
        for first, last, hand, reason in seats.runs:
            n = last - first + 1
            out.seats.extend(range(first, last + 1))
            out.hand.extend(repeat(hand, n))
            out.no_hand.extend(repeat(_VALUES[reason], n))
    elif seats:
        numbers, hands, reasons = zip(*seats, strict=True)
        out.seats.extend(numbers)
        out.hand.extend(hands)
        out.no_hand.extend(map(_VALUES.__getitem__, reasons))
