"""Hand categories per game (RULES.md §4; NSW 13.1; QLD sch 15-17). Only the category matters to the jackpot.

Five-card hands are classified by a prime-product table built once at import, so one evaluation is
a handful of integer operations. Best-of-N games take the highest category by that game's ranking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations, combinations_with_replacement

from .cards import Card, parse_cards, rank_of, suit_of
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


def evaluate_hand(game: str, cards: Sequence[str]) -> str:
    """The category of a hand given as card strings, e.g. evaluate_hand('caribbean-stud', ['As', ...])."""
    cards_ = parse_cards(cards)
    if game == CARIBBEAN_STUD and len(cards_) == 5:  # the hot path skips the general dispatch
        return category5(*cards_)
    return categorize(game, cards_)
