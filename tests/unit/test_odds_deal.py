"""One deck per round (issue 33): jackpotd/odds/deal.py (dealing, categories), round_law.py (the pair law) and the
simulation's hit rounds dealt from them."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import SPLIT
from jackpotd.odds.deal import BOARD, HOLE, categories, deal, deal_with_hit, max_seats, paying_hands, require_seats
from jackpotd.odds.hand_odds import hand_odds
from jackpotd.odds.round_law import pair_law, round_law
from jackpotd.odds.sampling import draw_hit_rounds, game_draw, sampler

CS, HOLDEM, THREE, FOUR = h.CARIBBEAN_STUD, h.HOLDEM_BONUS, h.THREE_CARD, h.FOUR_CARD


def _distinct_cards(game: str, hands: np.ndarray) -> bool:
    """Every round's seats hold distinct cards (hold'em: distinct hole cards, and none of them on the board)."""
    rounds, seats = hands.shape[:2]
    own = hands[:, :, :HOLE[game]].reshape(rounds, -1)
    every = np.concatenate([own, hands[:, 0, HOLE[game]:]], axis=1)
    ordered = np.sort(every, axis=1)
    return bool(np.all(np.diff(ordered, axis=1) > 0)) and every.shape[1] == seats * HOLE[game] + BOARD[game]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(h.GAMES), st.integers(0, 2**32 - 1), st.integers(1, 10), st.booleans())
def test_a_round_never_deals_a_card_twice(game: str, seed: int, seats: int, with_hit: bool) -> None:
    seats = min(seats, max_seats(game))
    rng = np.random.default_rng(seed)
    paying = frozenset({4})  # a flush (five-card order), four card's flush, three card's pair: common enough
    hands = deal_with_hit(rng, game, seats, 50, paying) if with_hit else deal(rng, game, seats, 50)
    assert hands.shape == (50, seats, h.CARDS_PER_HAND[game])
    assert _distinct_cards(game, hands)
    assert int(hands.min()) >= 0 and int(hands.max()) <= 51
    if with_hit:  # the proposal's first seat holds a paying hand
        assert set(categories(game, hands[:, 0]).tolist()) <= paying


def test_holdem_seats_share_one_board() -> None:
    hands = deal(np.random.default_rng(5), HOLDEM, 9, 200)
    assert np.all(hands[:, :, 2:] == hands[:, :1, 2:])  # the last five of every seat: the same board
    assert not np.all(hands[:, 0, 2:] == hands[0, 0, 2:])  # and a new board each round
    hit = deal_with_hit(np.random.default_rng(6), HOLDEM, 9, 200, frozenset({0, 1, 2, 3, 4}))
    assert np.all(hit[:, :, 2:] == hit[:, :1, 2:])


def test_one_deck_seats_are_limited_by_the_deck() -> None:
    assert {g: max_seats(g) for g in h.GAMES} == {CS: 10, HOLDEM: 23, THREE: 17, FOUR: 10}
    with pytest.raises(InvalidInput) as refused:
        require_seats(HOLDEM, 24)
    assert refused.value.field == "seats_filled"
    with pytest.raises(InvalidInput) as refused:  # the long run's round law too
        round_law(CS, {h.ROYAL_FLUSH: "MAJOR"}, 11)
    assert refused.value.field == "seats_filled"


@pytest.mark.parametrize("game", [CS, THREE, FOUR])
def test_dealt_categories_are_the_engines_on_every_hand(game: str) -> None:
    """The lookup tables categorise all C(52, n) hands exactly as hand_odds counts them (from the engine)."""
    order = h.CATEGORIES_BY_GAME[game]
    every = paying_hands(game, frozenset(range(len(order))))
    counts = np.bincount(categories(game, every), minlength=len(order)).tolist()
    assert counts == [hand_odds(game).counts[c] for c in order]


def test_holdem_categories_are_best_of_seven() -> None:
    hands = deal(np.random.default_rng(8), HOLDEM, 6, 300).reshape(-1, 7)
    order = h.FIVE_CARD_ORDER
    assert categories(HOLDEM, hands).tolist() == [order.index(h.best_of_seven(x.tolist())) for x in hands]


def test_three_card_pair_law_is_the_brute_force_count() -> None:
    """Every ordered pair of disjoint paying three-card hands, counted one by one."""
    cats = (h.STRAIGHT_FLUSH, h.THREE_OF_A_KIND)
    order = h.THREE_CARD_ORDER
    hands = paying_hands(THREE, frozenset(order.index(c) for c in cats)).tolist()
    named = [h.category3(*x) for x in hands]
    law = pair_law(THREE, cats)
    deals = math.comb(52, 3) * math.comb(49, 3)
    for a in cats:
        for b in cats:
            count = sum(1 for x, ca in zip(hands, named, strict=True) for y, cb in zip(hands, named, strict=True)
                        if ca == a and cb == b and not set(x) & set(y))
            assert law.pair[(a, b)] == Fraction(count, deals)
    assert law.exact


def test_two_royals_in_a_seven_seat_stud_round_are_counted_exactly() -> None:
    """Two seats with royals: 4 × 3 ordered pairs of disjoint royals (two royals of one suit cannot both be
    dealt) among C(52, 5)·C(47, 5) deals, so 21·12/(C(52,5)·C(47,5)) for a 7-seat round's expected pairs, above
    the independent draws' 21·(4/C(52,5))² (a royal leaves the other suits whole)."""
    law = pair_law(CS, (h.ROYAL_FLUSH,))
    exact = Fraction(4 * 3, math.comb(52, 5) * math.comb(47, 5))
    assert law.pair[(h.ROYAL_FLUSH, h.ROYAL_FLUSH)] == exact
    law = round_law(CS, {h.ROYAL_FLUSH: "MAJOR"}, 7)
    assert law.patterns[(h.ROYAL_FLUSH, h.ROYAL_FLUSH)] == 21 * exact
    assert law.patterns[(h.ROYAL_FLUSH,)] == 7 * Fraction(4, math.comb(52, 5)) - 2 * 21 * exact
    assert 21 * exact != 21 * Fraction(4, math.comb(52, 5)) ** 2


def test_hit_rounds_keep_each_seats_exact_chance() -> None:
    """Marginals unchanged: each paying category's hits over a month of 50 tables lie within 5√λ + 5 of
    wagers × its exact chance (a chance under 1 in a million of failing); holds for three card and four card."""
    for game, deals in ((THREE, 30 * 24 * 60), (FOUR, 10 * 24 * 60)):
        s = sampler(game_draw(default_paytable(game, SPLIT)), 50, 0, 6)
        drawn = draw_hit_rounds(np.random.default_rng(3), [s], deals, 6)
        counts = np.bincount(drawn.categories, minlength=len(s.draw.categories)).tolist()
        wagers = deals * 50 * 6
        for cat, p, seen in zip(s.draw.categories, s.draw.probabilities, counts, strict=True):
            expected = float(wagers * p)
            assert abs(seen - expected) <= 5 * math.sqrt(expected) + 5, (game, cat, seen, expected)


def test_holdem_round_law_agrees_with_the_simulation() -> None:
    """The long-run model's hold'em round law (a seeded estimate) against the simulation's rounds of the default
    paytable, drawn apart (another seed): each pool's rounds with 1, 2 and 3+ hits a round within 4 combined
    standard errors. The shared board makes several hits far likelier than independent draws: a board of four of
    a kind pays every seat."""
    seats, tables, deals = 6, 20, 5_000
    table = default_paytable(HOLDEM, SPLIT)
    pools = {c: e.pool for c, e in table.entries.items()}
    law = round_law(HOLDEM, pools, seats)
    assert not law.exact
    s = sampler(game_draw(table), tables, 0, seats)
    drawn = draw_hit_rounds(np.random.default_rng(9), [s], deals, seats)
    rounds = deals * tables
    row_round = np.repeat(np.arange(len(drawn.count)), drawn.count)
    for pool in set(pools.values()):
        mine = np.array([pools[c] == pool for c in s.draw.categories])[drawn.categories]
        per_round = np.bincount(row_round[mine], minlength=len(drawn.count))
        p = float(sum((q for c, q in zip(s.draw.categories, s.draw.probabilities, strict=True) if pools[c] == pool),
                      Fraction(0)))
        for k, most in ((1, 1), (2, 2), (3, seats)):
            model = sum(float(q) for pat, q in law.patterns.items() if k <= len(pat) <= most and pools[pat[0]] == pool)
            model_error = math.sqrt(sum(e * e for pat, e in law.error.items()
                                        if k <= len(pat) <= most and pools[pat[0]] == pool))
            seen = float(((per_round >= k) & (per_round <= most)).sum()) / rounds
            sim_error = math.sqrt(max(seen, 1 / rounds) / rounds)
            assert abs(seen - model) <= 4 * math.hypot(model_error, sim_error) + 1e-12, (pool, k, seen, model)
        several = sum(float(q) for pat, q in law.patterns.items() if len(pat) >= 2 and pools[pat[0]] == pool)
        assert several > 5 * math.comb(seats, 2) * p * p  # independent draws' chance of 2+ hits, far below


def test_a_deal_with_a_hit_draws_paying_hands_uniformly() -> None:
    """The proposal's seat holds each paying category in proportion to its exact count (stud: flush or better)."""
    paying = frozenset(range(5))
    hands = deal_with_hit(np.random.default_rng(4), CS, 6, 40_000, paying)
    counts = np.bincount(categories(CS, hands[:, 0]), minlength=10)[:5]
    exact = [hand_odds(CS).counts[c] for c in h.FIVE_CARD_ORDER[:5]]
    for seen, n in zip(counts.tolist(), exact, strict=True):
        expected = 40_000 * n / sum(exact)
        assert abs(seen - expected) <= 5 * math.sqrt(expected) + 5


def test_combinations_helper_matches_itertools() -> None:
    every = paying_hands(THREE, frozenset(range(6)))
    assert every.tolist() == [list(c) for c in combinations(range(52), 3)]
