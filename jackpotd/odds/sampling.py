"""Sampling a period's hit rounds in numpy arrays by the hands' exact probabilities (issue 24, the simulation): only
rounds that hold a paying hand are drawn, so a year of a 20-table link is a few hundred thousand rows, not 63 M hands.

Pure: a numpy Generator in, arrays out. Probabilities are the exact counts of `hand_odds` turned into floats only to
drive the random draws (statistics of a model, not money).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..domain import hands as h
from ..domain.paytable import Paytable
from .hand_odds import hand_odds

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
_GAP_DRAWS_SIGMA = 6  # draw the expected gaps plus 6 standard deviations at once; the rare shortfall draws again


@dataclass(frozen=True, slots=True)
class GameDraw:
    """One game's paying categories (those its paytable lists, in the engine's order) and their exact chances."""

    game: str
    categories: tuple[str, ...]
    probabilities: tuple[Fraction, ...]

    @property
    def p_pay(self) -> Fraction:
        """The exact chance that one seat's hand pays."""
        return sum(self.probabilities, Fraction(0))

    def p_round(self, seats: int) -> float:
        """The chance that a round of `seats` seats holds at least one paying hand: 1 − (1 − p)^S (a float)."""
        p = float(self.p_pay)
        return 1.0 if p >= 1.0 else -math.expm1(seats * math.log1p(-p))


def game_draw(paytable: Paytable) -> GameDraw:
    """The paying categories of `paytable`'s game with their exact probabilities from the hand counts."""
    odds = hand_odds(paytable.game)
    cats = tuple(c for c in h.CATEGORIES_BY_GAME[paytable.game] if c in paytable.entries)
    return GameDraw(paytable.game, cats, tuple(odds.probability(c) for c in cats))


@dataclass(frozen=True, slots=True)
class Sampler:
    """What a path's draws need of one game, computed once per simulation: the round's hit chance and the
    cumulative distributions of the paying seats' number (given at least one) and of a paying hand's category."""

    draw: GameDraw
    tables: int
    offset: int  # the game's first table in the link's order of tables within a deal
    p_round: float
    seats_cdf: Floats  # P(K ≤ k | K ≥ 1) for k = 1.. (K binomial(S, p_pay)), truncated where the rest is < 1e-18
    category_cdf: Floats  # P(category ≤ i | paying)


def sampler(draw: GameDraw, tables: int, offset: int, seats: int) -> Sampler:
    """The sampler of `draw`'s game played at `tables` tables of `seats` seats each."""
    p = float(draw.p_pay)
    if p <= 0.0:
        return Sampler(draw, tables, offset, 0.0, np.ones(1), np.ones(max(1, len(draw.categories))))
    ks = np.arange(1, seats + 1, dtype=np.float64)
    if p >= 1.0:
        seats_cdf = np.zeros(seats)
        seats_cdf[-1] = 1.0
    else:
        log_choose = np.cumsum(np.log(seats - ks + 1) - np.log(ks))  # log C(S, k), k = 1..S
        log_pmf = log_choose + ks * math.log(p) + (seats - ks) * math.log1p(-p)
        weights = np.exp(log_pmf - log_pmf.max())
        keep = int(np.nonzero(weights >= 1e-18)[0][-1]) + 1
        seats_cdf = np.cumsum(weights[:keep]) / weights[:keep].sum()
    seats_cdf[-1] = 1.0
    probs = np.array([float(q / draw.p_pay) for q in draw.probabilities])
    category_cdf = np.cumsum(probs)
    category_cdf[-1] = 1.0
    return Sampler(draw, tables, offset, draw.p_round(seats), seats_cdf, category_cdf)


@dataclass(frozen=True, slots=True)
class HitRounds:
    """A period's hit rounds on the whole link in time order: round r's hits are rows first[r]..first[r]+count[r]
    of `seats` (1..S, distinct within a round) and `categories` (an index into its game's paying categories)."""

    round_index: Ints  # the link's round number: deal × tables on the link + the table's place
    game: Ints  # index into the samplers
    first: Ints
    count: Ints
    seats: Ints
    categories: Ints


def _hit_positions(rng: np.random.Generator, q: float, rounds: int) -> Ints:
    """The 0-based numbers of the rounds (of `rounds`) that hold a hit, each round independently with chance q:
    geometric gaps, cumulated."""
    if q <= 0.0 or rounds <= 0:
        return np.zeros(0, dtype=np.int64)
    mean = rounds * q
    size = int(mean + _GAP_DRAWS_SIGMA * math.sqrt(mean) + 16)
    ends: list[Ints] = []
    last = -1
    while last < rounds:
        pos = last + np.cumsum(rng.geometric(q, size).astype(np.int64))
        ends.append(pos)
        last = int(pos[-1])
    positions = np.concatenate(ends)
    return positions[positions < rounds]


def draw_hit_rounds(rng: np.random.Generator, samplers: Sequence[Sampler], deals: int, seats: int) -> HitRounds:
    """Every hit round of `deals` deals (each table of the link deals one round a deal, in the order of the
    samplers' offsets), with each round's paying seats and their categories; games are drawn one after another,
    then merged in time order."""
    link_tables = sum(s.tables for s in samplers)
    parts: list[tuple[Ints, Ints, Ints, Ints, Ints]] = []
    for g, s in enumerate(samplers):
        where = _hit_positions(rng, s.p_round, deals * s.tables)
        n = len(where)
        round_index = (where // s.tables) * link_tables + s.offset + where % s.tables
        count = np.searchsorted(s.seats_cdf, rng.random(n), side="right").astype(np.int64) + 1
        count = np.minimum(count, seats)
        total = int(count.sum())
        chosen = np.empty(total, dtype=np.int64)
        first = np.zeros(n, dtype=np.int64)
        if n:
            first[1:] = np.cumsum(count)[:-1]
        single = count == 1
        chosen[first[single]] = rng.integers(1, seats + 1, int(single.sum()))
        for r in np.nonzero(~single)[0].tolist():  # a few in a hundred rounds: distinct seats, uniformly
            chosen[first[r]:first[r] + count[r]] = rng.choice(seats, int(count[r]), replace=False) + 1
        categories = np.searchsorted(s.category_cdf, rng.random(total), side="right").astype(np.int64)
        parts.append((round_index, np.full(n, g, dtype=np.int64), count, chosen, categories))
    return _merged(parts)


def _merged(parts: Sequence[tuple[Ints, Ints, Ints, Ints, Ints]]) -> HitRounds:
    """The games' hit rounds in one time order (round numbers are distinct across games)."""
    round_index = np.concatenate([p[0] for p in parts])
    game = np.concatenate([p[1] for p in parts])
    count = np.concatenate([p[2] for p in parts])
    seats = np.concatenate([p[3] for p in parts])
    categories = np.concatenate([p[4] for p in parts])
    first = np.zeros(len(count), dtype=np.int64)
    if len(count):
        first[1:] = np.cumsum(count)[:-1]
    order = np.argsort(round_index, kind="stable")
    new_count = count[order]
    new_first = np.zeros(len(new_count), dtype=np.int64)
    if len(new_count):
        new_first[1:] = np.cumsum(new_count)[:-1]
    # each round's rows move with it: row j of a round at new_first holds old row first + (j − new_first)
    rows = np.repeat(first[order] - new_first, new_count) + np.arange(int(new_count.sum()), dtype=np.int64)
    return HitRounds(round_index[order], game[order], new_first, new_count, seats[rows], categories[rows])
