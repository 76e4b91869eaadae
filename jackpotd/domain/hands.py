"""Hand categories per game (RULES.md §4; NSW 13.1; QLD sch 15-17). Only the category matters to the jackpot.

Five-card hands are classified by a prime-product table built once at import, so one evaluation is
a handful of integer operations; Caribbean Stud from card strings goes through a sum-code table (`_SUM5`).
Best-of-N games take the highest category by that game's ranking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations, combinations_with_replacement

from .cards import SPELLINGS, Card, parse_cards, rank_of, suit_of
from .errors import InvalidInput

ROYAL_FLUSH = "royal_flush"
STRAIGHT_FLUSH = "straight_flush"
FOUR_OF_A_KIND = "four_of_a_kind"
FULL_HOUSE = "full_house"
FLUSH = "flush"
STRAIGHT = "straight"
THREE_OF_A_KIND = "three_of_a_kind"
TWO_PAIR = "two_pair"
PAIR = "pair"
HIGH_CARD = "high_card"

CARIBBEAN_STUD = "caribbean-stud"
HOLDEM_BONUS = "holdem-bonus"
THREE_CARD = "three-card"
FOUR_CARD = "four-card"
GAMES = (CARIBBEAN_STUD, HOLDEM_BONUS, THREE_CARD, FOUR_CARD)

# Highest first. NSW 13.1 and QLD sch 15 s 8 for five-card hands.
FIVE_CARD_ORDER = (ROYAL_FLUSH, STRAIGHT_FLUSH, FOUR_OF_A_KIND, FULL_HOUSE, FLUSH, STRAIGHT,
                   THREE_OF_A_KIND, TWO_PAIR, PAIR, HIGH_CARD)
# QLD sch 16 s 9: straight flush > 3 of a kind > straight > flush > pair > odd cards.
THREE_CARD_ORDER = (STRAIGHT_FLUSH, THREE_OF_A_KIND, STRAIGHT, FLUSH, PAIR, HIGH_CARD)
# QLD sch 17 s 8: 4 of a kind > straight flush > 3 of a kind > flush > straight > 2 pairs > pair > odd.
FOUR_CARD_ORDER = (FOUR_OF_A_KIND, STRAIGHT_FLUSH, THREE_OF_A_KIND, FLUSH, STRAIGHT, TWO_PAIR,
                   PAIR, HIGH_CARD)

CARDS_PER_HAND = {CARIBBEAN_STUD: 5, HOLDEM_BONUS: 7, THREE_CARD: 3, FOUR_CARD: 5}
CATEGORIES_BY_GAME = {CARIBBEAN_STUD: FIVE_CARD_ORDER, HOLDEM_BONUS: FIVE_CARD_ORDER,
                      THREE_CARD: THREE_CARD_ORDER, FOUR_CARD: FOUR_CARD_ORDER}

_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
_PRIME = tuple(_PRIMES[rank_of(c)] for c in range(52))
_SUIT_BIT = tuple(1 << suit_of(c) for c in range(52))
_ACE = 12


def _is_run(ranks: Sequence[int]) -> bool:
    """Distinct ranks in sequence; the ace may also count low (NSW 13.1.6; QLD sch 16 s 9(5), sch 17 s 8(5))."""
    rs = sorted(set(ranks))
    if len(rs) != len(ranks):
        return False
    if rs[-1] - rs[0] == len(rs) - 1:
        return True
    return rs[-1] == _ACE and rs[:-1] == list(range(len(rs) - 1))  # ace low: A-2-3(-4-5)


def _by_counts(ranks: Sequence[int], suited: bool) -> str:
    """Category of 3, 4 or 5 ranks (suited or not) from rank counts and runs."""
    counts = sorted(Counter(ranks).values(), reverse=True)
    run = _is_run(ranks)
    if suited and run:
        # NSW 13.1.1: A K Q J 10 suited is royal; a five-high straight flush is not (§4).
        return ROYAL_FLUSH if len(ranks) == 5 and min(ranks) == 8 else STRAIGHT_FLUSH
    if counts[0] == 4:
        return FOUR_OF_A_KIND
    if counts[0] == 3 and len(counts) > 1 and counts[1] == 2:
        return FULL_HOUSE
    if suited:
        return FLUSH
    if run:
        return STRAIGHT
    if counts[0] == 3:
        return THREE_OF_A_KIND
    if counts[0] == 2 and len(counts) > 1 and counts[1] == 2:
        return TWO_PAIR
    if counts[0] == 2:
        return PAIR
    return HIGH_CARD


def _tables(size: int) -> tuple[dict[int, str], dict[int, str]]:
    """Prime product of ranks -> category, for unsuited and for suited hands of `size` cards."""
    plain: dict[int, str] = {}
    suited: dict[int, str] = {}
    for ranks in combinations_with_replacement(range(13), size):
        if max(Counter(ranks).values()) > 4:
            continue
        product = 1
        for r in ranks:
            product *= _PRIMES[r]
        plain[product] = _by_counts(ranks, suited=False)
        if len(set(ranks)) == size:
            suited[product] = _by_counts(ranks, suited=True)
    return plain, suited


_PLAIN5, _SUITED5 = _tables(5)
_PLAIN4, _SUITED4 = _tables(4)
_PLAIN3, _SUITED3 = _tables(3)


def category5(a: Card, b: Card, c: Card, d: Card, e: Card) -> str:
    """Category of five parsed cards (NSW 13.1); the hot path of every five-card game."""
    p = _PRIME[a] * _PRIME[b] * _PRIME[c] * _PRIME[d] * _PRIME[e]
    if _SUIT_BIT[a] & _SUIT_BIT[b] & _SUIT_BIT[c] & _SUIT_BIT[d] & _SUIT_BIT[e]:
        return _SUITED5[p]
    return _PLAIN5[p]


def category3(a: Card, b: Card, c: Card) -> str:
    """Three card poker category (QLD sch 16)."""
    p = _PRIME[a] * _PRIME[b] * _PRIME[c]
    if _SUIT_BIT[a] & _SUIT_BIT[b] & _SUIT_BIT[c]:
        return _SUITED3[p]
    return _PLAIN3[p]


def category4(a: Card, b: Card, c: Card, d: Card) -> str:
    """Four cards ranked as four card poker (QLD sch 17); no full house or royal exists in four cards."""
    p = _PRIME[a] * _PRIME[b] * _PRIME[c] * _PRIME[d]
    if _SUIT_BIT[a] & _SUIT_BIT[b] & _SUIT_BIT[c] & _SUIT_BIT[d]:
        return _SUITED4[p]
    return _PLAIN4[p]


_FIVE_RANK = {cat: i for i, cat in enumerate(FIVE_CARD_ORDER)}
_FOUR_RANK = {cat: i for i, cat in enumerate(FOUR_CARD_ORDER)}


def best_of_seven(cards: Sequence[Card]) -> str:
    """Hold'em bonus: the best five of two hole and five community cards (QLD sch 15 s 7, 8)."""
    return min((category5(*five) for five in combinations(cards, 5)), key=_FIVE_RANK.__getitem__)


def best_four_of_five(cards: Sequence[Card]) -> str:
    """Four card poker: the best four of the player's five cards (QLD sch 17 s 7, 8)."""
    return min((category4(*four) for four in combinations(cards, 4)), key=_FOUR_RANK.__getitem__)


def categorize(game: str, cards: Sequence[Card]) -> str:
    """Category of already parsed, distinct cards; the count must match the game."""
    expected = CARDS_PER_HAND.get(game)
    if expected is None:
        raise InvalidInput("game", game, f"unknown game; known games: {', '.join(GAMES)}")
    if len(cards) != expected:
        raise InvalidInput("cards", len(cards), f"{game} needs exactly {expected} cards")
    if game == CARIBBEAN_STUD:
        return category5(*cards)
    if game == HOLDEM_BONUS:
        return best_of_seven(cards)
    if game == THREE_CARD:
        return category3(*cards)
    return best_four_of_five(cards)


# Caribbean Stud straight from five card strings: each accepted spelling maps to one int code, and the masked
# sum of the five codes is the key of one table (`_SUM5`), so a hand is 5 dict lookups, 4 additions, an AND
# and a lookup, with no per-card object. A code adds, in separate bit fields that never carry into each other:
# 1 to its rank's 3-bit count (at most 4 for distinct cards, 5 with repeats: the rank counts stay exact);
# 7 to its suit's 6-bit field, which reaches 35 >= 32 (bit 5) only when all five cards share the suit: a flush;
# 1 to its own card's 3-bit slot, which reaches 2 or more (bit 1 or 2) only when a card repeats.
# The key keeps the rank counts, the four flush bits and the repeat bits: a repeat's key is in no table, so a
# repeated (or unknown) card falls to the reference path, which names it exactly as before.
_SUIT_AT = 13 * 3
_SLOT_AT = _SUIT_AT + 4 * 6


def _code(card: Card) -> int:
    """The sum code of one card (above)."""
    return (1 << (3 * rank_of(card))) + (7 << (_SUIT_AT + 6 * suit_of(card))) + (1 << (_SLOT_AT + 3 * card))


_FLUSH_BITS = tuple(1 << (_SUIT_AT + 6 * s + 5) for s in range(4))
_KEY_MASK = ((1 << _SUIT_AT) - 1) | sum(_FLUSH_BITS) | sum(6 << (_SLOT_AT + 3 * c) for c in range(52))
_CODE = {text: _code(card) for text, card in SPELLINGS.items()}


def _sum_table() -> dict[int, str]:
    """Masked code sum -> category of every five distinct cards, from the prime-product tables."""
    table: dict[int, str] = {}
    for ranks in combinations_with_replacement(range(13), 5):
        if max(Counter(ranks).values()) > 4:
            continue
        key = sum(1 << (3 * r) for r in ranks)
        product = 1
        for r in ranks:
            product *= _PRIMES[r]
        table[key] = _PLAIN5[product]
        if len(set(ranks)) == 5:
            for flush in _FLUSH_BITS:
                table[key | flush] = _SUITED5[product]
    return table


_SUM5 = _sum_table()


def _reference(game: str, cards: Sequence[str]) -> str:
    """Parse, then categorize: every hand the fast path does not settle, and every refusal, goes this way."""
    cards_ = parse_cards(cards)
    if game == CARIBBEAN_STUD and len(cards_) == 5:
        return category5(*cards_)
    return categorize(game, cards_)


def evaluate_hand(game: str, cards: Sequence[str]) -> str:
    """The category of a hand given as card strings, e.g. evaluate_hand('caribbean-stud', ['As', ...])."""
    if game == CARIBBEAN_STUD:  # the hot path: strings to category with no per-card object (_SUM5 above)
        try:
            a, b, c, d, e = cards
            return _SUM5[(_CODE[a] + _CODE[b] + _CODE[c] + _CODE[d] + _CODE[e]) & _KEY_MASK]
        except (ValueError, KeyError, TypeError):  # not five known, distinct spellings: let the reference say why
            pass
    return _reference(game, cards)
