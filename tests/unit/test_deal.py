"""The simulator's dealing (jackpot_table.deal) is fair: every card equally likely at every position, every
ordered pair of cards equally likely at two positions, five-card hands at their combinatorial rates, and
the operating system's CSPRNG behind the tables by default. Chi-square at p = 0.001 on a seeded RNG, so a
run is reproducible; no servers."""

from __future__ import annotations

import math
import os
import random
from collections import Counter
from collections.abc import Sequence

import pytest
from jackpot_table.deal import DECK, LAYOUTS, deal, system_rng

from jackpotd.domain.hands import category5

SEED = 1_234_567
DEALS = 50_000
SEATS = range(1, 8)
POSITIONS = 7 * 5 + 5  # Caribbean stud at 7 seats: 35 seat cards then 5 to the dealer
INDEX = {c: i for i, c in enumerate(DECK)}


def chi2_critical(df: int, z: float = 3.090232) -> float:
    """The chi-square value exceeded with probability 0.001 (z is the normal's 0.999 quantile), by the
    Wilson-Hilferty approximation: within 0.1 % of the exact quantile for these degrees of freedom."""
    k = 2 / (9 * df)
    return df * (1 - k + z * math.sqrt(k)) ** 3


def chi2(observed: Sequence[int], expected: Sequence[float]) -> float:
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def dealt_positions(rng: random.Random, deals: int = DEALS) -> list[list[int]]:
    """Each deal as the deck indices of its cards in dealing order: seat 1's five, ..., seat 7's, the dealer's."""
    out = []
    for _ in range(deals):
        d = deal("caribbean-stud", SEATS, rng)
        out.append([INDEX[c] for seat in SEATS for c in d.hands[seat]] + [INDEX[c] for c in d.dealer])
    return out


@pytest.fixture(scope="module")
def seeded() -> list[list[int]]:
    return dealt_positions(random.Random(SEED))


def test_every_card_is_equally_likely_at_every_position(seeded: list[list[int]]) -> None:
    """Two million dealt cards: a 40 positions x 52 cards table, and the first card on its own."""
    assert len(seeded) * POSITIONS == 2_000_000
    table = [[0] * 52 for _ in range(POSITIONS)]
    for cards in seeded:
        assert len(set(cards)) == POSITIONS  # one deck: no card dealt twice
        for position, card in enumerate(cards):
            table[position][card] += 1
    expected = [len(seeded) / 52] * 52
    total = sum(chi2(row, expected) for row in table)
    assert total < chi2_critical(POSITIONS * 51), total
    first = chi2(table[0], expected)
    assert first < chi2_critical(51), (first, table[0])


@pytest.mark.parametrize(("a", "b"), [(0, 1), (0, POSITIONS - 1), (4, 5)],
                         ids=["seat 1's first two", "first and last", "seat 1's last, seat 2's first"])
def test_every_ordered_pair_of_cards_is_equally_likely_at_two_positions(seeded: list[list[int]], a: int,
                                                                         b: int) -> None:
    """Uniform positions alone allow a deck that is only cut (each card always followed by the next): the
    52 x 51 ordered pairs at two positions must be uniform as well."""
    pairs = Counter(cards[a] * 52 + cards[b] for cards in seeded)
    observed = [pairs[x * 52 + y] for x in range(52) for y in range(52) if x != y]
    assert sum(observed) == len(seeded)
    stat = chi2(observed, [len(seeded) / (52 * 51)] * len(observed))
    assert stat < chi2_critical(52 * 51 - 1), stat


# Five-card categories of all 2,598,960 hands; royal, straight flush and four of a kind share a bin so
# that every bin expects well over five of the 350,000 hands.
FIVE_CARD_BINS = {"royal_flush+straight_flush+four_of_a_kind": 4 + 36 + 624, "full_house": 3_744, "flush": 5_108,
                  "straight": 10_200, "three_of_a_kind": 54_912, "two_pair": 123_552, "pair": 1_098_240,
                  "high_card": 1_302_540}


def test_dealt_hands_come_at_their_combinatorial_rates(seeded: list[list[int]]) -> None:
    counts: Counter[str] = Counter()
    for cards in seeded:
        for seat in range(7):
            counts[category5(*cards[5 * seat:5 * seat + 5])] += 1
    total = sum(counts.values())
    assert total == 7 * len(seeded)
    observed = [counts["royal_flush"] + counts["straight_flush"] + counts["four_of_a_kind"],
                *(counts[k] for k in FIVE_CARD_BINS if "+" not in k)]
    stat = chi2(observed, [total * n / 2_598_960 for n in FIVE_CARD_BINS.values()])
    assert stat < chi2_critical(len(FIVE_CARD_BINS) - 1), (stat, counts)


def test_a_seed_deals_the_same_cards_again() -> None:
    assert dealt_positions(random.Random(SEED), 50) == dealt_positions(random.Random(SEED), 50)


@pytest.mark.parametrize("game", sorted(LAYOUTS))
def test_every_game_deals_its_layout_from_one_deck(game: str) -> None:
    layout = LAYOUTS[game]
    seats = range(1, layout.max_seats() + 1)
    d = deal(game, seats, random.Random(SEED))
    cards = [c for hand in d.hands.values() for c in hand] + d.dealer + d.board
    assert len(cards) == len(set(cards))
    assert [len(d.hands[s]) for s in seats] == [layout.per_seat] * len(seats)
    assert (len(d.dealer), len(d.board)) == (layout.dealer, layout.board)


def test_the_tables_deal_from_the_operating_systems_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    """system_rng(), what the simulator and `jackpot-table` deal with, draws every shuffle from os.urandom
    (random.SystemRandom): no seed, no state to predict."""
    rng = system_rng()
    assert isinstance(rng, random.SystemRandom)
    drawn: list[int] = []

    def urandom(n: int) -> bytes:
        drawn.append(n)
        return os.urandom(n)

    monkeypatch.setattr(random, "_urandom", urandom)
    d = deal("caribbean-stud", SEATS, rng)
    assert len(drawn) >= 51  # a Fisher-Yates shuffle of 52 cards draws at least 51 times
    assert len({c for hand in d.hands.values() for c in hand} | set(d.dealer)) == POSITIONS
