"""Validating a round's wagers and hands before anything moves (DOMAIN.md §1, §4; ARCHITECTURE write path 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import hands as h
from .cards import Card, parse_card, require_distinct
from .errors import InvalidInput
from .pricing import Hit
from .seats import require_seat

COMMITTED = "COMMITTED"
PENDING = "PENDING"  # §7: settled, with a hit above the verification threshold not yet approved or rejected
SETTLED = "SETTLED"
VOIDED = "VOIDED"
OPEN = (COMMITTED, PENDING)  # NZ 11.6A/B: pools are split or combined only when no round is open


@dataclass(frozen=True, slots=True)
class Wager:
    """A jackpot side wager as a table sends it."""

    seat: int
    amount_cents: int
    ante_placed: bool


@dataclass(frozen=True, slots=True)
class SeatHand:
    """A seat's cards as a table sends them (for hold'em: the two hole cards)."""

    seat: int
    cards: tuple[str, ...]


def validate_wagers(wagers: Sequence[Wager], seats: int, wager_cents: int) -> tuple[tuple[int, int], ...]:
    """§1: one wager per seat, of the sign's amount (NSW 11.3), only with an ante (11.1). Returns (seat, cents)."""
    if not wagers:
        raise InvalidInput("wagers", [], "a commit needs at least one wager")
    seen: set[int] = set()
    for i, w in enumerate(wagers):
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
    return [parse_card(c, f"{field}[{i}]") for i, c in enumerate(cards)]


def evaluate_round(game: str, seats: int, wagered: Sequence[int], hands: Sequence[SeatHand],
                   board: Sequence[str] = (), dealer: Sequence[str] = ()) -> tuple[Hit, ...]:
    """§4: the service evaluates the cards itself; all cards of the round must be distinct cards of one deck.

    Returns the category of every seat holding a wager and cards; other seats are ignored and a wagered
    seat without cards is a loss.
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
    for i, hand in enumerate(hands):
        require_seat(f"hands[{i}].seat", hand.seat, seats)
        if hand.seat in parsed:
            raise InvalidInput(f"hands[{i}].seat", hand.seat, "duplicate seat: one hand per seat")
        cards = _parse(hand.cards, f"hands[{i}].cards")
        if len(cards) != per_seat:
            raise InvalidInput(f"hands[{i}].cards", list(hand.cards), f"{game} needs exactly {per_seat} cards a seat")
        parsed[hand.seat] = cards
        all_cards += cards
    require_distinct(all_cards, "cards", "the round")
    wagered_set = set(wagered)
    return tuple(Hit(seat, h.categorize(game, cards + board_cards))
                 for seat, cards in sorted(parsed.items()) if seat in wagered_set)
