"""Hand categories (RULES.md §4; NSW 13.1; QLD sch 15-17)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import evaluate_hand
from jackpotd.domain.cards import RANKS, SUITS, card_name, parse_card
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.hands import category3, category5

from . import reference_hands as ref

ALL_CARDS = [r + s for r in RANKS for s in SUITS]


@pytest.mark.slow
def test_all_2598960_five_card_hands_give_the_classic_table() -> None:
    counts = Counter(category5(*hand) for hand in combinations(range(52), 5))
    assert counts == {
        "royal_flush": 4, "straight_flush": 36, "four_of_a_kind": 624, "full_house": 3_744, "flush": 5_108,
        "straight": 10_200, "three_of_a_kind": 54_912, "two_pair": 123_552, "pair": 1_098_240,
        "high_card": 1_302_540,
    }


def test_all_22100_three_card_hands_give_the_known_table() -> None:
    counts = Counter(category3(*hand) for hand in combinations(range(52), 3))
    assert counts == {"straight_flush": 48, "three_of_a_kind": 52, "straight": 720, "flush": 1_096,
                      "pair": 3_744, "high_card": 16_440}


@pytest.mark.parametrize(("game", "cards", "category"), [
    ("caribbean-stud", ["As", "Ks", "Qs", "Js", "10s"], "royal_flush"),
    ("caribbean-stud", ["ah", "kh", "qh", "jh", "th"], "royal_flush"),
    ("caribbean-stud", ["5d", "4d", "3d", "2d", "Ad"], "straight_flush"),  # ace low is not a royal (§4)
    ("caribbean-stud", ["9c", "Kc", "Qc", "Jc", "Tc"], "straight_flush"),
    ("caribbean-stud", ["Ac", "Kc", "Qc", "Jc", "9c"], "flush"),
    ("caribbean-stud", ["Ac", "2d", "3h", "4s", "5c"], "straight"),
    ("caribbean-stud", ["Qc", "Kd", "Ah", "2s", "3c"], "high_card"),  # no wrap-around straight
    ("caribbean-stud", ["7c", "7d", "7h", "7s", "2c"], "four_of_a_kind"),
    ("caribbean-stud", ["7c", "7d", "7h", "2s", "2c"], "full_house"),
    ("holdem-bonus", ["2c", "7d", "As", "Ks", "Qs", "Js", "Ts"], "royal_flush"),
    ("holdem-bonus", ["2c", "2d", "2h", "Ks", "Kd", "3s", "3c"], "full_house"),
    ("holdem-bonus", ["9s", "8s", "7s", "6s", "5s", "4s", "Ah"], "straight_flush"),
    ("three-card", ["Ah", "2h", "3h"], "straight_flush"),  # QLD sch 16 s 9(5): A-2-3 counts the ace low
    ("three-card", ["Qh", "Kh", "Ah"], "straight_flush"),
    ("three-card", ["Kh", "Ah", "2h"], "flush"),
    ("three-card", ["9c", "9d", "9h"], "three_of_a_kind"),
    ("three-card", ["4c", "5d", "6h"], "straight"),
    ("four-card", ["Ah", "2h", "3h", "4h", "9c"], "straight_flush"),  # QLD sch 17 s 8(5)
    ("four-card", ["9c", "9d", "9h", "9s", "Kh"], "four_of_a_kind"),
    ("four-card", ["9c", "9d", "9h", "Ks", "Kh"], "three_of_a_kind"),  # no full house among four cards
    ("four-card", ["2h", "7h", "9h", "Kh", "3c"], "flush"),
    ("four-card", ["8c", "9d", "Th", "Js", "2c"], "straight"),
])
def test_known_hands(game: str, cards: list[str], category: str) -> None:
    assert evaluate_hand(game, cards) == category


@settings(max_examples=400)
@given(st.lists(st.sampled_from(ALL_CARDS), min_size=7, max_size=7, unique=True))
def test_seven_card_best_five_matches_an_independent_reference(cards: list[str]) -> None:
    expected = ref.best([ref.parse(c) for c in cards], 5, ref.ORDER5)
    assert evaluate_hand("holdem-bonus", cards) == expected


@settings(max_examples=400)
@given(st.lists(st.sampled_from(ALL_CARDS), min_size=5, max_size=5, unique=True))
def test_four_card_best_four_matches_an_independent_reference(cards: list[str]) -> None:
    expected = ref.best([ref.parse(c) for c in cards], 4, ref.ORDER4)
    assert evaluate_hand("four-card", cards) == expected


@settings(max_examples=300)
@given(st.lists(st.sampled_from(ALL_CARDS), min_size=5, max_size=5, unique=True))
def test_five_card_matches_an_independent_reference(cards: list[str]) -> None:
    assert evaluate_hand("caribbean-stud", cards) == ref.classify([ref.parse(c) for c in cards])


def test_every_spelling_parses_to_its_card() -> None:
    for i, name in enumerate(ALL_CARDS):
        assert parse_card(name) == i
        assert parse_card(name.lower()) == i
        assert parse_card(name.upper()) == i
        assert card_name(i) == name
    assert parse_card("10h") == parse_card("Th")


@pytest.mark.parametrize(("game", "cards", "field", "value"), [
    ("caribbean-stud", ["As", "Ks", "Qs", "Js", "1s"], "cards[4]", "1s"),
    ("caribbean-stud", ["As", "Ks", "Qs", "Js", "Tx"], "cards[4]", "Tx"),
    ("caribbean-stud", ["As", "Ks", "Qs", "Js", "AS"], "cards", None),
    ("caribbean-stud", ["As", "Ks", "Qs", "Js"], "cards", 4),
    ("three-card", ["As", "Ks", "Qs", "Js"], "cards", 4),
    ("holdem-bonus", ["As", "Ks", "Qs", "Js", "Ts"], "cards", 5),
    ("baccarat", ["As", "Ks", "Qs", "Js", "Ts"], "game", "baccarat"),
])
def test_bad_hands_are_rejected_naming_the_problem(game: str, cards: list[str], field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as err:
        evaluate_hand(game, cards)
    assert err.value.field == field
    if value is not None:
        assert err.value.value == value
    if field == "cards" and value is None:
        assert "As appears more than once" in str(err.value)
