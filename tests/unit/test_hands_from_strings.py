"""evaluate_hand's string fast path (issue 22, P4) against the pre-issue path: same categories, same refusals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import hands as h
from jackpotd.domain.cards import SPELLINGS, Card, card_name, parse_card, parse_cards
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.hands import categorize, category5, evaluate_hand

from . import reference_hands as ref

GAMES = (*h.GAMES, "baccarat")
SPELLING_LIST = sorted(SPELLINGS)
NOT_CARDS = ["1s", "Tx", "", " ", "A", "10", "Ass", "1Os", "11h", "ZZ", "Ac\x00", "♠A", "A s", "0s"]
PADDED = [" As", "kd ", "\t10h\n"]  # parse_card strips: these were accepted before the fast path and still are


def reference_evaluate(game: str, cards: Sequence[str]) -> str:
    """The path of the base commit (3037d07), copied: parse every card, check repeats, then categorize."""
    found = [SPELLINGS.get(t) for t in cards]
    if None in found:
        parsed: tuple[Card, ...] = tuple(parse_card(t, f"cards[{i}]") for i, t in enumerate(cards))
    else:
        parsed = tuple(c for c in found if c is not None)
    seen: set[Card] = set()
    for card in parsed:
        if card in seen:
            raise InvalidInput("cards", cards, f"card {card_name(card)} appears more than once")
        seen.add(card)
    if game == h.CARIBBEAN_STUD and len(parsed) == 5:
        return category5(*parsed)
    return categorize(game, parsed)


def outcome(fn: object, game: str, cards: Sequence[str]) -> tuple[object, ...]:
    """A category, or everything a refusal shows the caller: its type, field, value and message."""
    assert callable(fn)
    try:
        return ("category", fn(game, cards))
    except InvalidInput as err:
        return ("refused", type(err), err.field, err.value, str(err))


card_text = st.one_of(st.sampled_from(SPELLING_LIST), st.sampled_from(NOT_CARDS + PADDED), st.text(max_size=4))


@settings(max_examples=250)
@given(st.sampled_from(GAMES), st.lists(card_text, max_size=8))
def test_any_input_gives_what_the_reference_path_gives(game: str, cards: list[str]) -> None:
    assert outcome(evaluate_hand, game, cards) == outcome(reference_evaluate, game, cards)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(SPELLING_LIST), min_size=5, max_size=5), st.sampled_from([list, tuple]))
def test_five_spellings_with_repeats_give_what_the_reference_path_gives(cards: list[str], kind: type) -> None:
    hand = kind(cards)
    assert outcome(evaluate_hand, h.CARIBBEAN_STUD, hand) == outcome(reference_evaluate, h.CARIBBEAN_STUD, hand)


def test_every_table_entry_matches_the_prime_product_tables_and_the_naive_classifier() -> None:
    checked = 0
    for ranks in combinations_with_replacement(range(13), 5):
        if max(Counter(ranks).values()) > 4:
            continue
        seen: Counter[int] = Counter()
        mixed = []
        for r in ranks:  # suits in turn within each rank, and never all one suit: no flush
            mixed.append(r * 4 + seen[r])
            seen[r] += 1
        if len({c & 3 for c in mixed}) == 1:
            mixed[0] = mixed[0] - (mixed[0] & 3) + 1
        hands = [mixed] + ([[r * 4 + s for r in ranks] for s in range(4)] if len(set(ranks)) == 5 else [])
        for cards in hands:
            names = [card_name(c) for c in cards]
            expected = ref.classify([ref.parse(n) for n in names])
            assert category5(*cards) == expected
            assert evaluate_hand(h.CARIBBEAN_STUD, names) == expected
            checked += 1
    assert checked == len(h._SUM5)  # one hand per key of the string table: every entry was checked


def test_a_card_repeated_in_any_two_spellings_is_refused_naming_it() -> None:
    by_card: dict[Card, list[str]] = {}
    for text, card in SPELLINGS.items():
        by_card.setdefault(card, []).append(text)
    for card, texts in by_card.items():
        others = [card_name(c) for c in range(52) if c != card][card % 40:][:3]
        for first in texts:
            for second in texts:
                cards = [first, *others, second]
                with pytest.raises(InvalidInput) as err:
                    evaluate_hand(h.CARIBBEAN_STUD, cards)
                assert (err.value.field, err.value.value) == ("cards", cards)
                assert f"card {card_name(card)} appears more than once" in str(err.value)


def test_a_valid_hand_never_reaches_the_reference_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(texts: Sequence[str], field: str = "cards") -> tuple[Card, ...]:
        raise AssertionError(f"parse_cards({texts!r}) on the fast path")

    monkeypatch.setattr(h, "parse_cards", refuse)
    assert evaluate_hand(h.CARIBBEAN_STUD, ("10s", "js", "QS", "kS", "As")) == h.ROYAL_FLUSH
    with pytest.raises(AssertionError):
        evaluate_hand(h.CARIBBEAN_STUD, ("10s", "js", "QS", "kS", "Ts"))


def test_parse_cards_keeps_its_errors() -> None:
    assert parse_cards([" As", "kd "]) == (parse_card("As"), parse_card("Kd"))
    with pytest.raises(InvalidInput) as err:
        parse_cards(["As", "Kd", "1s"], "board_cards")
    assert (err.value.field, err.value.value) == ("board_cards[2]", "1s")
    with pytest.raises(TypeError):  # as before: an unhashable element is not a card string at all
        parse_cards(["1s", ["As"]])  # type: ignore[list-item]
