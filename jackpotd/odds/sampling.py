"""Sampling a period's hit rounds in numpy arrays (issue 24, the simulation; one deck per round, issue 33): only
rounds that hold a paying hand are drawn, so a year of a 20-table link is a few hundred thousand rows, not 63 M hands.

Each drawn round is dealt from one deck (`deal.py`: no card twice in a round; hold'em's board shared by every seat),
so simultaneous hits are counted as they occur. Exact, with no per-round chance to compute: a round proposes a hit
with chance S·p (S seats, p one seat's exact chance to pay, from `hand_odds`); a proposal deals a uniformly chosen
seat a paying hand and the other seats the rest of the deck, and is kept with chance 1/N (N the round's paying
seats). A round's deal d with N(d) ≥ 1 is then kept with chance S·p · Σ_seats P(d | that seat pays)/S · 1/N(d) =
P(d): exactly the one-deck law of the rounds with a hit. (When S·p ≥ 1 every round is dealt.)

Pure: a numpy Generator in, arrays out. Probabilities are floats only to drive the draws (statistics of a model).
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
from .deal import categories, deal, deal_with_hit, require_seats
from .hand_odds import hand_odds

Ints = npt.NDArray[np.int64]
_GAP_DRAWS_SIGMA = 6  # draw the expected gaps plus 6 standard deviations at once; the rare shortfall draws again
_CHUNK = 1 << 15  # proposed rounds dealt at once (bounds the deck arrays)


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


def game_draw(paytable: Paytable) -> GameDraw:
    """The paying categories of `paytable`'s game with their exact probabilities from the hand counts."""
    odds = hand_odds(paytable.game)
    cats = tuple(c for c in h.CATEGORIES_BY_GAME[paytable.game] if c in paytable.entries)
    return GameDraw(paytable.game, cats, tuple(odds.probability(c) for c in cats))


@dataclass(frozen=True, slots=True)
class Sampler:
    """What a path's draws need of one game, computed once per simulation: its tables, seats and paying hands."""

    draw: GameDraw
    tables: int
    offset: int  # the game's first table in the link's order of tables within a deal
    seats: int
    p_propose: float  # S·p_pay: a round proposes a hit at this chance (≥ 1: every round is dealt)
    to_paying: Ints  # a category's index in the game's order → its index in draw.categories (−1: does not pay)

    @property
    def paying(self) -> frozenset[int]:
        """The paying categories' indices in the game's order."""
        return frozenset(np.nonzero(self.to_paying >= 0)[0].tolist())


def sampler(draw: GameDraw, tables: int, offset: int, seats: int) -> Sampler:
    """The sampler of `draw`'s game played at `tables` tables of `seats` seats each (refused past one deck)."""
    require_seats(draw.game, seats)
    order = h.CATEGORIES_BY_GAME[draw.game]
    to_paying = np.array([draw.categories.index(c) if c in draw.categories else -1 for c in order], dtype=np.int64)
    return Sampler(draw, tables, offset, seats, seats * float(draw.p_pay), to_paying)


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


def round_hits(rng: np.random.Generator, s: Sampler, rounds: int) -> tuple[Ints, Ints, Ints, Ints]:
    """The hits of `rounds` proposed rounds of `s` (module doc), each dealt from one deck: which are kept, and per
    kept round its number of hits, then per hit its seat (1..S) and paying category, rounds in order."""
    game, seats = s.draw.game, s.seats
    propose = s.p_propose < 1.0
    wanted = s.paying
    kept: list[Ints] = []
    counts: list[Ints] = []
    seat_rows: list[Ints] = []
    cat_rows: list[Ints] = []
    for start in range(0, rounds, _CHUNK):
        n = min(_CHUNK, rounds - start)
        cards = deal_with_hit(rng, game, seats, n, wanted) if propose else deal(rng, game, seats, n)
        paying = s.to_paying[categories(game, cards)]  # n × S
        pays = paying >= 0
        many = pays.sum(axis=1)
        keep = rng.random(n) * many < 1.0 if propose else many >= 1
        # the proposal's seat 0 is a uniformly chosen seat; the others follow it round the table
        turn = rng.integers(0, seats, n) if propose else np.zeros(n, dtype=np.int64)
        seat_no = (np.arange(seats)[None, :] + turn[:, None]) % seats + 1
        kept.append(np.nonzero(keep)[0] + start)
        counts.append(many[keep])
        seat_rows.append(seat_no[keep][pays[keep]])
        cat_rows.append(paying[keep][pays[keep]])
    if not kept:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    return (np.concatenate(kept), np.concatenate(counts).astype(np.int64),
            np.concatenate(seat_rows).astype(np.int64), np.concatenate(cat_rows).astype(np.int64))


def draw_hit_rounds(rng: np.random.Generator, samplers: Sequence[Sampler], deals: int, seats: int) -> HitRounds:
    """Every hit round of `deals` deals (each table of the link deals one round a deal, in the order of the
    samplers' offsets), with each round's paying seats and their categories, each round dealt from one deck;
    games are drawn one after another, then merged in time order. (`seats`: the samplers' seats, checked.)"""
    link_tables = sum(s.tables for s in samplers)
    parts: list[tuple[Ints, Ints, Ints, Ints, Ints]] = []
    for g, s in enumerate(samplers):
        if s.seats != seats:
            raise ValueError(f"sampler of {s.draw.game} deals {s.seats} seats, not {seats}")
        rounds = deals * s.tables
        if s.p_propose < 1.0:
            proposed = _hit_positions(rng, s.p_propose, rounds)
        else:
            proposed = np.arange(rounds if s.p_propose > 0 else 0, dtype=np.int64)
        kept, count, chosen, cats = round_hits(rng, s, len(proposed))
        where = proposed[kept]
        round_index = (where // s.tables) * link_tables + s.offset + where % s.tables
        parts.append((round_index, np.full(len(where), g, dtype=np.int64), count, chosen, cats))
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
