"""Validating a round's wagers and hands before anything moves (RULES.md §1, §4; ARCHITECTURE.md, write path 1)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import Enum, StrEnum
from itertools import repeat
from typing import NamedTuple

from . import hands as h
from .cards import Card, parse_each, require_distinct
from .errors import InvalidInput
from .pricing import Hit
from .seats import require_seat


class RoundState(StrEnum):
    """A round's state, as the live store, the journal and the ledger's rounds table hold it (the value)."""

    COMMITTED = "COMMITTED"
    PENDING = "PENDING"  # §7: settled, with a hit above the verification threshold not yet approved or rejected
    SETTLED = "SETTLED"
    VOIDED = "VOIDED"
    LOST = "LOST"  # in the ledger only: a round whose entries an unfence removed, never open again (store/unfence)


COMMITTED, PENDING, SETTLED, VOIDED = RoundState.COMMITTED, RoundState.PENDING, RoundState.SETTLED, RoundState.VOIDED
OPEN = (COMMITTED, PENDING)  # NZ 11.6A/B: pools are split or combined only when no round is open
FINISHED = (SETTLED, VOIDED)  # a finished round never changes again: the live store lets it expire


class Wager(NamedTuple):
    """A jackpot side wager as a table sends it (a named tuple: a round may hold 100,000, built in C)."""

    seat: int
    amount_cents: int
    ante_placed: bool


class NoHand(Enum):
    """Why a seat that wagered has no hand to evaluate (API.md SettleRound): its jackpot wager is a loss."""

    FOLDED = "FOLDED"
    MUCKED = "MUCKED"
    DEAD = "DEAD"


class SeatHand(NamedTuple):
    """A seat as a table settles it: its cards (for hold'em: the two hole cards), or why it has none."""

    seat: int
    cards: tuple[str, ...]
    no_hand: NoHand | None = None


def require_every_wagered_seat(wagered: Collection[int], hands: Sequence[SeatHand]) -> None:
    """Each seat that wagered appears in the settle, with its cards or stated as having no hand: a seat left out
    (a wrong seat number, a forgotten one) must never silently lose a hit. Refused, naming the seats."""
    missing = sorted(set(wagered) - {hand.seat for hand in hands})
    if missing:
        listed = ", ".join(map(str, missing))
        raise InvalidInput("hands", missing, f"seat{'s' if len(missing) > 1 else ''} {listed} wagered in this round "
                                             "and must each appear once: with the cards, or with no_hand "
                                             "(FOLDED, MUCKED or DEAD)")


def validate_wagers(wagers: Sequence[Wager], seats: int, wager_cents: int) -> tuple[tuple[int, int], ...]:
    """§1: one wager per seat, of the sign's amount (NSW 11.3), only with an ante (11.1). Returns (seat, cents)."""
    if not wagers:
        raise InvalidInput("wagers", [], "a commit needs at least one wager")
    seat_list = [w.seat for w in wagers]
    if (all(type(s) is int for s in seat_list) and min(seat_list) >= 1 and max(seat_list) <= seats
            and len(set(seat_list)) == len(seat_list) and all(w.amount_cents == wager_cents for w in wagers)
            and all(w.ante_placed is True for w in wagers)):  # the whole round at once; a fault is found below
        return tuple(zip(sorted(seat_list), repeat(wager_cents)))
    seen: set[int] = set()
    for i, w in enumerate(wagers):
        if type(w.seat) is not int or not 1 <= w.seat <= seats:  # the field's name is built only for a refusal
            require_seat(f"wagers[{i}].seat", w.seat, seats)
        if w.seat in seen:
            raise InvalidInput(f"wagers[{i}].seat", w.seat, "duplicate seat: one jackpot wager per seat per round")
        seen.add(w.seat)
        if w.amount_cents != wager_cents:
            raise InvalidInput(f"wagers[{i}].amount_cents", w.amount_cents,
                               f"must be the link's jackpot wager of {wager_cents} cents")
        if not w.ante_placed:
            raise InvalidInput(f"wagers[{i}].ante_placed", False, "a jackpot wager needs an ante first (NSW 11.1)")
    return tuple(sorted((w.seat, w.amount_cents) for w in wagers))


def _parse(cards: Sequence[str], field: str) -> list[Card]:
    """A seat's (or the board's) cards, repeats checked later across the round; an error names field[i]."""
    return parse_each(cards, field)


def evaluate_round(game: str, seats: int, wagered: Sequence[int], hands: Sequence[SeatHand],
                   board: Sequence[str] = (), dealer: Sequence[str] = ()) -> tuple[Hit, ...]:
    """§4: the service evaluates the cards itself; all cards of the round must be distinct cards of one deck.

    Returns the category of every seat holding a wager and cards; other seats' cards are only checked, and a
    seat stated as having no hand (no cards) is a loss. A seat with neither cards nor a reason is refused.
    """
    if game not in h.CARDS_PER_HAND:
        raise InvalidInput("game", game, f"unknown game; known games: {', '.join(h.GAMES)}")
    per_seat = h.CARDS_PER_HAND[game]
    board_cards = _parse(board, "board_cards")
    if game == h.HOLDEM_BONUS:
        if len(board_cards) != 5:
            raise InvalidInput("board_cards", list(board), "hold'em bonus needs the 5 community cards")
        per_seat = 2
    elif board_cards:
        raise InvalidInput("board_cards", list(board), f"{game} has no community cards")
    all_cards: list[Card] = list(board_cards) + _parse(dealer, "dealer_cards")
    parsed: dict[int, list[Card]] = {}
    stated: set[int] = set()
    seat_list = [hand.seat for hand in hands]
    checked = (bool(seat_list) and all(type(s) is int for s in seat_list) and min(seat_list) >= 1
               and max(seat_list) <= seats and len(set(seat_list)) == len(seat_list))  # all at once: a big round
    for i, hand in enumerate(hands):
        if not checked:  # a fault is named seat by seat
            require_seat(f"hands[{i}].seat", hand.seat, seats)
            if hand.seat in stated:
                raise InvalidInput(f"hands[{i}].seat", hand.seat, "duplicate seat: one hand per seat")
            stated.add(hand.seat)
        if hand.no_hand is not None:
            if hand.cards:
                raise InvalidInput(f"hands[{i}].cards", list(hand.cards), f"seat {hand.seat} is stated as "
                                   f"{hand.no_hand.value}: send its cards or no_hand, not both")
            continue
        if not hand.cards:
            raise InvalidInput(f"hands[{i}].cards", [], f"seat {hand.seat} has no cards: send them, or say why it "
                               "has none with no_hand (FOLDED, MUCKED or DEAD)")
        cards = _parse(hand.cards, f"hands[{i}].cards")
        if len(cards) != per_seat:
            raise InvalidInput(f"hands[{i}].cards", list(hand.cards), f"{game} needs exactly {per_seat} cards a seat")
        parsed[hand.seat] = cards
        all_cards += cards
    require_distinct(all_cards, "cards", "the round")
    wagered_set = set(wagered)
    return tuple(Hit(seat, h.categorize(game, cards + board_cards))
                 for seat, cards in sorted(parsed.items()) if seat in wagered_set)
