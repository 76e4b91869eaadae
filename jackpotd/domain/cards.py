"""Cards of one 52-card deck (API.md): rank 23456789TJQKA (or 10), suit cdhs, either case.

A card is an int 0..51: rank index * 4 + suit index, so evaluation works on small ints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from .errors import InvalidInput

RANKS = "23456789TJQKA"
SUITS = "cdhs"
Card = int


def _build_index() -> dict[str, Card]:
    index: dict[str, Card] = {}
    for r, rank in enumerate(RANKS):
        spellings = [rank, rank.lower()] + (["10"] if rank == "T" else [])
        for s, suit in enumerate(SUITS):
            for rs in spellings:
                for ss in (suit, suit.upper()):
                    index[rs + ss] = r * 4 + s
    return index


_INDEX = _build_index()
DECK: tuple[Card, ...] = tuple(range(52))


def rank_of(card: Card) -> int:
    """0 for a deuce up to 12 for an ace."""
    return card >> 2


def suit_of(card: Card) -> int:
    """0..3 for c, d, h, s."""
    return card & 3


def card_name(card: Card) -> str:
    """Canonical spelling, e.g. 'As', 'Td'."""
    return RANKS[rank_of(card)] + SUITS[suit_of(card)]


def parse_card(text: str, field: str = "card") -> Card:
    """One card from its text; an error names the card."""
    card = _INDEX.get(text.strip()) if isinstance(text, str) else None
    if card is None:
        raise InvalidInput(field, text, "not a card: rank 23456789TJQKA (or 10), suit cdhs")
    return card


def parse_cards(texts: Sequence[str], field: str = "cards") -> tuple[Card, ...]:
    """Several distinct cards (§4: distinct cards of one 52-card deck)."""
    get = _INDEX.get
    found = [get(t) for t in texts]
    if None in found:  # slow path only to name the bad card
        cards = tuple(parse_card(t, f"{field}[{i}]") for i, t in enumerate(texts))
    else:
        cards = cast(tuple[Card, ...], tuple(found))
    if len(set(cards)) != len(cards):
        require_distinct(cards, field, texts)
    return cards


def require_distinct(cards: Iterable[Card], field: str, shown: object) -> None:
    """§4: a round's cards must be distinct cards of one deck; names the repeated card."""
    seen: set[Card] = set()
    for card in cards:
        if card in seen:
            raise InvalidInput(field, shown, f"card {card_name(card)} appears more than once")
        seen.add(card)
