"""Exact counts of every hand category of each game (issue 24), from the paying engine's own evaluators.

Two independent routes: `hand_odds` by exact combinatorics (rank multisets × suit assignments, one representative
hand per class through `hands.category5/category3/best_four_of_five/best_of_seven`), and `enumerated_counts` by
brute force (every C(52, n) hand through the evaluator; hold'em by concrete classes with multiplicities).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations, combinations_with_replacement, starmap
from math import comb, prod

from ..domain import hands as h
from ..domain.cards import DECK, Card
from ..domain.errors import InvalidInput

SEVEN_CARD_TOTAL = comb(52, 7)  # hold'em bonus: one seat's 2 hole cards and 5 community cards


@dataclass(frozen=True, slots=True)
class HandOdds:
    """Exact counts of a game's categories, in `hands.CATEGORIES_BY_GAME[game]` order, summing to `total` hands."""

    game: str
    total: int
    counts: Mapping[str, int]
    method: str

    def probability(self, category: str) -> Fraction:
        """The exact chance that one seat's hand is `category`."""
        if category not in self.counts:
            raise InvalidInput("category", category, f"not a hand of {self.game}")
        return Fraction(self.counts[category], self.total)


def require_game(game: str) -> str:
    """A known game, or InvalidInput naming it."""
    if game not in h.CATEGORIES_BY_GAME:
        raise InvalidInput("game", game, f"unknown game; known games: {', '.join(h.GAMES)}")
    return game


def hand_odds(game: str) -> HandOdds:
    """The exact category counts of `game`, as shipped in COUNTS: free, so a service can price a paytable on every
    admin call (issue 33) without hold'em's 7-card count (seconds of CPU) ever running on a server's event loop.
    `counted_odds` finds them again by combinatorics, and tests/unit/test_odds_hands.py holds the two equal."""
    return _shipped(require_game(game))


def counted_odds(game: str) -> HandOdds:
    """The exact category counts of `game` by combinatorics (cached: a few seconds cold for hold'em, then free)."""
    return _hand_odds(require_game(game))


# Each game's category counts (the game's own category order), as `counted_odds` finds them.
COUNTS: Mapping[str, Mapping[str, int]] = {
    h.CARIBBEAN_STUD: {h.ROYAL_FLUSH: 4, h.STRAIGHT_FLUSH: 36, h.FOUR_OF_A_KIND: 624, h.FULL_HOUSE: 3_744,
                       h.FLUSH: 5_108, h.STRAIGHT: 10_200, h.THREE_OF_A_KIND: 54_912, h.TWO_PAIR: 123_552,
                       h.PAIR: 1_098_240, h.HIGH_CARD: 1_302_540},
    h.HOLDEM_BONUS: {h.ROYAL_FLUSH: 4_324, h.STRAIGHT_FLUSH: 37_260, h.FOUR_OF_A_KIND: 224_848,
                     h.FULL_HOUSE: 3_473_184, h.FLUSH: 4_047_644, h.STRAIGHT: 6_180_020,
                     h.THREE_OF_A_KIND: 6_461_620, h.TWO_PAIR: 31_433_400, h.PAIR: 58_627_800,
                     h.HIGH_CARD: 23_294_460},
    h.THREE_CARD: {h.STRAIGHT_FLUSH: 48, h.THREE_OF_A_KIND: 52, h.STRAIGHT: 720, h.FLUSH: 1_096, h.PAIR: 3_744,
                   h.HIGH_CARD: 16_440},
    h.FOUR_CARD: {h.FOUR_OF_A_KIND: 624, h.STRAIGHT_FLUSH: 2_072, h.THREE_OF_A_KIND: 58_656, h.FLUSH: 114_616,
                  h.STRAIGHT: 101_808, h.TWO_PAIR: 123_552, h.PAIR: 1_047_552, h.HIGH_CARD: 1_150_080},
}


@cache
def _shipped(game: str) -> HandOdds:
    """hand_odds, memoised per game: one HandOdds object per game."""
    order = h.CATEGORIES_BY_GAME[game]
    return HandOdds(game, comb(52, h.CARDS_PER_HAND[game]), {cat: COUNTS[game].get(cat, 0) for cat in order},
                    _METHODS[game])


_METHODS = {
    h.CARIBBEAN_STUD: "exact combinatorics: each of the 6,175 rank multisets of 5 cards, its flush suit assignments "
                      "(4 when the ranks are distinct) and the rest (the product of C(4, c) less those), one "
                      "representative hand of each class through hands.category5",
    h.THREE_CARD: "exact enumeration: all 22,100 three-card hands through hands.category3",
    h.FOUR_CARD: "exact combinatorics: each rank multiset of 5 cards split into its suit classes (5 suited, 4 "
                 "suited with the odd card named, no 4 suited) with their multiplicities, one representative "
                 "hand of each class through hands.best_four_of_five",
    h.HOLDEM_BONUS: "exact combinatorics: every rank multiset of 7 cards counted as the product of C(4, c) with its "
                    "category from a flushless representative through hands.best_of_seven, less the hands with 5 "
                    "or more cards of one suit, counted per suited rank set S (4 suits) and the rank multiset m "
                    "of the other cards (the product of C(3, m_r)) and moved to S's category (best_of_seven)",
}


@cache
def _hand_odds(game: str) -> HandOdds:
    """counted_odds, memoised per game."""
    counting = {h.CARIBBEAN_STUD: _five_card, h.THREE_CARD: _three_card, h.FOUR_CARD: _four_card,
                h.HOLDEM_BONUS: _seven_card}[game]
    counts = counting()
    order = h.CATEGORIES_BY_GAME[game]
    ordered = {cat: counts.get(cat, 0) for cat in order}
    if set(counts) - set(order):
        raise AssertionError(f"{game}: categories outside the game's order: {set(counts) - set(order)}")
    return HandOdds(game, comb(52, h.CARDS_PER_HAND[game]), ordered, _METHODS[game])


def _ways(ranks: Sequence[int], suits: int) -> int:
    """Suit assignments of a rank multiset with `suits` suits to draw from: the product of C(suits, count)."""
    return prod(comb(suits, c) for c in Counter(ranks).values())


def _spread(ranks: Sequence[int]) -> list[Card]:
    """Cards of sorted `ranks` dealt suits 0, 1, 2, 3, 0, ...: distinct cards, at most 2 of a suit in 7 or fewer."""
    return [r * 4 + i % 4 for i, r in enumerate(sorted(ranks))]


def _suited(ranks: Sequence[int], suit: int = 0) -> list[Card]:
    """Cards of distinct `ranks`, all of one suit."""
    return [r * 4 + suit for r in ranks]


def _multisets(size: int, most: int) -> Iterator[tuple[int, ...]]:
    """Sorted rank multisets of `size` cards with at most `most` cards of a rank."""
    for ranks in combinations_with_replacement(range(13), size):
        if max(Counter(ranks).values(), default=0) <= most:
            yield ranks


def _five_card() -> Counter[str]:
    """Caribbean Stud: per rank multiset, 4 flush assignments when the ranks differ, the rest unsuited."""
    counts: Counter[str] = Counter()
    for ranks in _multisets(5, 4):
        flushes = 4 if len(set(ranks)) == 5 else 0
        if flushes:
            counts[h.category5(*_suited(ranks))] += flushes
        counts[h.category5(*_spread(ranks))] += _ways(ranks, 4) - flushes
    return counts


def _three_card() -> Counter[str]:
    """Three card poker: all 22,100 hands (fast enough to need no classes)."""
    return Counter(starmap(h.category3, combinations(DECK, 3)))


def _four_card() -> Counter[str]:
    """Four card poker (best four of five): only whether 4 or 5 cards share a suit, and which, changes the hand."""
    counts: Counter[str] = Counter()
    for ranks in _multisets(5, 4):
        flushes = 4 if len(set(ranks)) == 5 else 0
        if flushes:
            counts[h.best_four_of_five(_suited(ranks))] += flushes
        four_suited = 0
        for odd in sorted(set(ranks)):
            rest = list(ranks)
            rest.remove(odd)
            if len(set(rest)) < 4:
                continue
            # exactly four suited: their suit (4 ways), the odd card's suit among the other three (3 ways)
            counts[h.best_four_of_five([*_suited(rest), odd * 4 + 1])] += 12
            four_suited += 12
        rest_ways = _ways(ranks, 4) - flushes - four_suited
        if rest_ways:
            counts[h.best_four_of_five(_spread(ranks))] += rest_ways
    return counts


def _seven_card() -> Counter[str]:
    """Hold'em bonus, best five of seven: by rank multiset, then the flush hands moved to their suited ranks' hand.

    With 5 or more cards of one suit neither four of a kind nor a full house fits in 7 cards, so such a hand is a
    royal, straight flush or flush, decided by the suited ranks S alone (one best_of_seven per S)."""
    plain: dict[tuple[int, ...], str] = {}
    counts: Counter[str] = Counter()
    for ranks in _multisets(7, 4):
        plain[ranks] = cat = h.best_of_seven(_spread(ranks))
        counts[cat] += _ways(ranks, 4)
    for k in (5, 6, 7):
        others = list(_multisets(7 - k, 3))
        for suited in combinations(range(13), k):
            filler = [suited[0] * 4 + 1, suited[0] * 4 + 2][: 7 - k]  # any other cards: S alone decides
            cat = h.best_of_seven([*_suited(suited), *filler])
            for m in others:
                moved = 4 * _ways(m, 3)
                counts[plain[tuple(sorted(suited + m))]] -= moved
                counts[cat] += moved
    return counts


def enumerated_counts(game: str) -> Mapping[str, int]:
    """Category counts by brute force through the engine's evaluator (cached): the enumeration the certificate's
    cross-check and `returns.return_by_pricing` rest on. Seconds cold (four card about ten), then free."""
    return _enumerated(require_game(game))


@cache
def _enumerated(game: str) -> Mapping[str, int]:
    """enumerated_counts, memoised per game."""
    if game == h.CARIBBEAN_STUD:
        counts = Counter(starmap(h.category5, combinations(DECK, 5)))
    elif game == h.THREE_CARD:
        counts = Counter(starmap(h.category3, combinations(DECK, 3)))
    elif game == h.FOUR_CARD:
        counts = Counter(map(h.best_four_of_five, combinations(DECK, 5)))
    else:
        counts = _seven_card_classes()
    return {cat: counts.get(cat, 0) for cat in h.CATEGORIES_BY_GAME[game]}


def _seven_card_classes() -> Counter[str]:
    """All 133,784,560 seven-card hands as concrete classes, each through best_of_seven with its multiplicity: per
    rank multiset v, every suited rank set S (5 to 7 of v's distinct ranks, 4 suits, the other cards in the other
    3 suits) and the flushless rest (the product of C(4, c) less those). A second route to `_seven_card`."""
    counts: Counter[str] = Counter()
    for ranks in _multisets(7, 4):
        rank_counts = Counter(ranks)
        flushless = _ways(ranks, 4)
        for k in (5, 6, 7):
            for suited in combinations(sorted(rank_counts), k):
                rest = rank_counts.copy()
                rest.subtract(suited)
                ways = 4 * prod(comb(3, c) for c in rest.values())
                if not ways:
                    continue
                cards = _suited(suited) + [r * 4 + 1 + i for r, c in sorted(rest.items()) for i in range(c)]
                counts[h.best_of_seven(cards)] += ways
                flushless -= ways
        counts[h.best_of_seven(_spread(ranks))] += flushless
    return counts
