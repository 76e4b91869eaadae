"""Exact hand counts of every game (issue 24): the combinatorial route against the published counts and against
brute force through the engine's own evaluators (every C(52, n) hand; hold'em by concrete classes)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import combinations
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import hands as h
from jackpotd.domain.cards import rank_of, suit_of
from jackpotd.domain.errors import InvalidInput
from jackpotd.odds.hand_odds import SEVEN_CARD_TOTAL, counted_odds, enumerated_counts, hand_odds

FIVE = {h.ROYAL_FLUSH: 4, h.STRAIGHT_FLUSH: 36, h.FOUR_OF_A_KIND: 624, h.FULL_HOUSE: 3_744, h.FLUSH: 5_108,
        h.STRAIGHT: 10_200, h.THREE_OF_A_KIND: 54_912, h.TWO_PAIR: 123_552, h.PAIR: 1_098_240,
        h.HIGH_CARD: 1_302_540}
SEVEN = {h.ROYAL_FLUSH: 4_324, h.STRAIGHT_FLUSH: 37_260, h.FOUR_OF_A_KIND: 224_848, h.FULL_HOUSE: 3_473_184,
         h.FLUSH: 4_047_644, h.STRAIGHT: 6_180_020, h.THREE_OF_A_KIND: 6_461_620, h.TWO_PAIR: 31_433_400,
         h.PAIR: 58_627_800, h.HIGH_CARD: 23_294_460}
THREE = {h.STRAIGHT_FLUSH: 48, h.THREE_OF_A_KIND: 52, h.STRAIGHT: 720, h.FLUSH: 1_096, h.PAIR: 3_744,
         h.HIGH_CARD: 16_440}
# Four card poker, best four of five (as published for the game); asserted below against brute force too.
FOUR = {h.FOUR_OF_A_KIND: 624, h.STRAIGHT_FLUSH: 2_072, h.THREE_OF_A_KIND: 58_656, h.FLUSH: 114_616,
        h.STRAIGHT: 101_808, h.TWO_PAIR: 123_552, h.PAIR: 1_047_552, h.HIGH_CARD: 1_150_080}
PUBLISHED = {h.CARIBBEAN_STUD: FIVE, h.HOLDEM_BONUS: SEVEN, h.THREE_CARD: THREE, h.FOUR_CARD: FOUR}


@pytest.mark.parametrize("game", h.GAMES)
def test_combinatorial_counts_are_the_published_ones_in_the_games_order(game: str) -> None:
    odds = counted_odds(game)
    assert odds.game == game
    assert dict(odds.counts) == PUBLISHED[game]
    assert tuple(odds.counts) == h.CATEGORIES_BY_GAME[game]
    assert sum(odds.counts.values()) == odds.total == comb(52, h.CARDS_PER_HAND[game])
    assert odds.method
    assert sum(odds.probability(c) for c in odds.counts) == 1


@pytest.mark.parametrize("game", h.GAMES)
def test_the_shipped_counts_are_the_counted_ones(game: str) -> None:
    """hand_odds serves constants (issue 33: an admin call prices paytables without counting 7-card hands); the
    combinatorics count them again here, every run."""
    shipped, counted = hand_odds(game), counted_odds(game)
    assert shipped.counts == counted.counts and tuple(shipped.counts) == tuple(counted.counts)
    assert (shipped.game, shipped.total, shipped.method) == (counted.game, counted.total, counted.method)
    assert hand_odds(game) is shipped  # one object per game


def test_totals_and_probabilities() -> None:
    assert hand_odds(h.HOLDEM_BONUS).total == SEVEN_CARD_TOTAL == 133_784_560
    assert hand_odds(h.CARIBBEAN_STUD).probability(h.ROYAL_FLUSH) == Fraction(1, 649_740)
    assert hand_odds(h.THREE_CARD).probability(h.STRAIGHT_FLUSH) == Fraction(12, 5_525)
    assert hand_odds(h.CARIBBEAN_STUD) is hand_odds(h.CARIBBEAN_STUD)  # cached


@pytest.mark.parametrize("game", [h.CARIBBEAN_STUD, h.THREE_CARD, h.FOUR_CARD])
def test_brute_force_over_every_hand_through_the_evaluator_agrees(game: str) -> None:
    """Every C(52, n) hand through hands.category5 / category3 / best_four_of_five (four card: about 10 s)."""
    counts = enumerated_counts(game)
    assert sum(counts.values()) == comb(52, h.CARDS_PER_HAND[game])
    assert dict(counts) == PUBLISHED[game] == dict(hand_odds(game).counts)


def test_seven_card_classes_through_best_of_seven_agree() -> None:
    """Hold'em by a second route: per rank multiset every suited rank set as a concrete hand, with multiplicity."""
    counts = enumerated_counts(h.HOLDEM_BONUS)
    assert sum(counts.values()) == SEVEN_CARD_TOTAL
    assert dict(counts) == SEVEN


def test_a_sample_of_hands_as_strings_lands_in_its_counted_category() -> None:
    """evaluate_hand (the strings path tables use) and category5 agree on every royal and straight flush."""
    suits = "cdhs"
    royals = [[r + s for r in "AKQJT"] for s in suits]
    assert {h.evaluate_hand(h.CARIBBEAN_STUD, cards) for cards in royals} == {h.ROYAL_FLUSH}
    runs = ["A2345", *("23456789TJQKA"[i:i + 5] for i in range(8))]
    straight_flushes = [[r + s for r in run] for run in runs for s in suits]
    assert len(straight_flushes) == FIVE[h.STRAIGHT_FLUSH]
    assert {h.evaluate_hand(h.CARIBBEAN_STUD, cards) for cards in straight_flushes} == {h.STRAIGHT_FLUSH}


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidInput) as bad:
        hand_odds("baccarat")
    assert bad.value.field == "game" and bad.value.value == "baccarat"
    with pytest.raises(InvalidInput) as bad:
        enumerated_counts("baccarat")
    assert bad.value.field == "game"
    with pytest.raises(InvalidInput) as bad:
        hand_odds(h.THREE_CARD).probability(h.ROYAL_FLUSH)
    assert bad.value.field == "category" and bad.value.value == h.ROYAL_FLUSH


@st.composite
def flush_hands(draw: st.DrawFn) -> list[int]:
    """Seven cards with 5 to 7 of one suit (rare among random hands: about 3%)."""
    suit = draw(st.integers(0, 3))
    k = draw(st.integers(5, 7))
    suited = [r * 4 + suit for r in draw(st.lists(st.integers(0, 12), min_size=k, max_size=k, unique=True))]
    others = [c for c in range(52) if suit_of(c) != suit]
    return suited + draw(st.lists(st.sampled_from(others), min_size=7 - k, max_size=7 - k, unique=True))


@settings(max_examples=300)
@given(st.lists(st.integers(0, 51), min_size=7, max_size=7, unique=True) | flush_hands())
def test_a_seven_card_hand_is_decided_as_the_counting_assumes(cards: list[int]) -> None:
    """The claims _seven_card counts by: with 5+ cards of a suit the hand is its suited cards' best five (royal,
    straight flush or flush); without, it is its ranks' hand whatever the suits (here: suits dealt round)."""
    by_suit = Counter(suit_of(c) for c in cards)
    suit, most = by_suit.most_common(1)[0]
    category = h.best_of_seven(cards)
    if most >= 5:
        suited = [c for c in cards if suit_of(c) == suit]
        best = min((h.category5(*five) for five in combinations(suited, 5)), key=h.FIVE_CARD_ORDER.index)
        assert category == best and category in (h.ROYAL_FLUSH, h.STRAIGHT_FLUSH, h.FLUSH)
    else:
        ranks = sorted(rank_of(c) for c in cards)
        assert category == h.best_of_seven([r * 4 + i % 4 for i, r in enumerate(ranks)])
