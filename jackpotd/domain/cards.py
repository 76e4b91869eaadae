"""Cards of one 52-card deck (API.md): rank 23456789TJQKA (or 10), suit cdhs, either case.

A card is an int 0..51: rank index * 4 + suit index, so evaluation works on small ints.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

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
# Every accepted spelling (canonical, either case, 10 for T) -> its card: one dict lookup parses a card string.
SPELLINGS: Mapping[str, Card] = _INDEX
_CARD_OF = _INDEX.__getitem__
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


def parse_each(texts: Iterable[str], field: str) -> list[Card]:
    """Cards in order, repeats not checked (a round checks them across all its cards); an error names field[i].

    One dict lookup per card string; the per-card path (stripping, naming the card) runs only on a failure.
    """
    try:
        return list(map(_CARD_OF, texts))
    except (KeyError, TypeError):  # a spelling not in the table (or unhashable): name the first bad card
        return [parse_card(t, f"{field}[{i}]") for i, t in enumerate(texts)]


def parse_cards(texts: Sequence[str], field: str = "cards") -> tuple[Card, ...]:
    """Several distinct cards (§4: distinct cards of one 52-card deck)."""
    try:
        cards = tuple(map(_CARD_OF, texts))
    except (KeyError, TypeError):  # slow path only to name the bad card
        cards = _parse_named(texts, field)
    require_distinct(cards, field, texts)
    return cards


def _parse_named(texts: Sequence[str], field: str) -> tuple[Card, ...]:
    """The path of a failed lookup, as before: an unhashable element is a TypeError, else the first bad card is
    named (a spelling with spaces around it is still accepted, as parse_card strips it)."""
    if None in [_INDEX.get(t) for t in texts]:
        return tuple(parse_card(t, f"{field}[{i}]") for i, t in enumerate(texts))
    return tuple(_INDEX[t] for t in texts)


def require_distinct(cards: Collection[Card], field: str, shown: object) -> None:
    """§4: a round's cards must be distinct cards of one deck; names the repeated card."""
    if len(set(cards)) == len(cards):
        return
    seen: set[Card] = set()
    for card in cards:
        if card in seen:
            raise InvalidInput(field, shown, f"card {card_name(card)} appears more than once")
        seen.add(card)
