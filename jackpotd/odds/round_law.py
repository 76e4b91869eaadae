"""A round's hit law at one table dealt from one deck (issue 33), for the long-run model: per round, the chance of
each pool's hit pattern (the categories of its hits in that round: one, two, or more).

Seats' hands of one deck are not independent: a royal flush in one hand leaves fewer royals for the next, a flush
leaves the deck's suits uneven (more flushes for the others), and in hold'em every seat plays the same board (a
board of four of a kind pays every seat at once). So:
- Caribbean Stud, three card, four card poker (each seat's own cards): exact, as Fractions, to two hits of a pool
  a round. The pair law P(seat 1 holds a, seat 2 holds b) by inclusion-exclusion over the cards two hands share:
  #{(A, B) disjoint} = Σ_T (−1)^|T| n_a(T)·n_b(T), n_a(T) the hands of category a holding every card of T, over
  the enumerated paying hands (`deal.paying_hands`). Two hits {a, b}: C(S, 2)·(p_ab + p_ba) (C(S, 2)·p_aa when
  a = b); one hit of a: S·p_a less a's place in the pairs, so each category's mean hits stay exact; three or more
  hits of one pool in a round (order (S·p_pool)³: under 3e-7 a round for the defaults) count as single hits.
- Hold'em bonus (a shared board): three or more hits are common (a board's four of a kind or royal is every
  seat's) and exact counting is out of reach (boards × hole cards^S), so every pattern is estimated by a seeded
  Monte Carlo of the simulation's own one-deck rounds (`deal.deal_with_hit`): a uniformly chosen seat holds one of
  the pool's hands, the others are dealt from the rest of the deck and the board, and the pattern is weighted 1/N
  (N the pool's hits), so S·p_pool × the mean weight is the pattern's chance a round (`sampling`'s module doc).
  Validated against the simulation's rounds (tests/unit/test_odds_deal.py); its standard error is stated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations
from math import comb

import numpy as np

from ..domain import hands as h
from .deal import categories, deal_with_hit, paying_hands, require_seats
from .hand_odds import hand_odds

ROUND_SAMPLES = 40_000  # hold'em rounds sampled a pool (the estimate's standard error is stated)
ROUND_SEED = 33


@dataclass(frozen=True, slots=True)
class PairLaw:
    """P(seat 1 holds a and seat 2 holds b) in one round, exact, for the paying categories a, b of a game whose
    seats hold their own cards (one deck)."""

    game: str
    categories: tuple[str, ...]
    pair: Mapping[tuple[str, str], Fraction]
    exact: bool
    method: str


def pair_law(game: str, cats: Sequence[str]) -> PairLaw:
    """The one-deck pair law of `game`'s categories `cats` (cached per game and categories)."""
    return _pair_law(game, tuple(c for c in h.CATEGORIES_BY_GAME[game] if c in cats))


@cache
def _pair_law(game: str, cats: tuple[str, ...]) -> PairLaw:
    """pair_law, memoised (each seat's own cards: not hold'em, whose board is shared)."""
    if game == h.HOLDEM_BONUS:
        raise ValueError("hold'em's seats share a board: its round law is sampled (round_law)")
    exact = _exact_pairs(game, cats) if cats else {}
    return PairLaw(game, cats, exact, True, "exact: disjoint pairs of paying hands by inclusion-exclusion over "
                                            "shared cards")


def _exact_pairs(game: str, cats: tuple[str, ...]) -> dict[tuple[str, str], Fraction]:
    """Counted pairs of disjoint hands (module doc) over C(52, k)·C(52 − k, k) ordered deals of two seats."""
    order = h.CATEGORIES_BY_GAME[game]
    hands = paying_hands(game, frozenset(order.index(c) for c in cats)).astype(np.int64)
    lut = np.full(len(order), -1, dtype=np.int64)
    lut[[order.index(c) for c in cats]] = np.arange(len(cats))
    col = lut[categories(game, hands)]
    n, k = len(cats), hands.shape[1]
    per = np.bincount(col, minlength=n).astype(object)
    total = np.outer(per, per)  # T = ∅: every pair
    for t in range(1, k + 1):
        subsets = np.array(list(combinations(range(k), t)))
        keys = (np.int64(1) << hands[:, subsets]).sum(axis=2).ravel()  # the cards of T as a bit set
        uniq, inv = np.unique(keys, return_inverse=True)
        held = np.bincount(inv * n + np.repeat(col, len(subsets)), minlength=len(uniq) * n).reshape(-1, n)
        total = total + (-1) ** t * (held.T @ held).astype(object)
    deals = comb(52, k) * comb(52 - k, k)
    return {(a, b): Fraction(int(total[i, j]), deals) for i, a in enumerate(cats) for j, b in enumerate(cats)}


@dataclass(frozen=True, slots=True)
class RoundLaw:
    """Per round of a game at S seats: each pool's hit patterns (sorted categories, in the game's order) and their
    chances; `exact`: Fractions (to two hits of a pool), else seeded estimates with `error` (standard errors)."""

    game: str
    seats: int
    patterns: Mapping[tuple[str, ...], Fraction | float]
    error: Mapping[tuple[str, ...], float]
    exact: bool
    method: str


def round_law(game: str, pools: Mapping[str, str], seats: int) -> RoundLaw:
    """The round law of `game` at `seats` seats, for its paying categories `pools` (category → pool), cached;
    more seats than one deck deals are refused (InvalidInput naming seats_filled)."""
    require_seats(game, seats)
    order = h.CATEGORIES_BY_GAME[game]
    return _round_law(game, tuple(sorted(pools.items(), key=lambda kv: order.index(kv[0]))), seats)


@cache
def _round_law(game: str, pools: tuple[tuple[str, str], ...], seats: int) -> RoundLaw:
    """round_law, memoised."""
    if game == h.HOLDEM_BONUS:
        return _sampled(game, dict(pools), seats)
    pool_of = dict(pools)
    law = pair_law(game, list(pool_of))
    odds = hand_odds(game)
    pairs_of_seats = comb(seats, 2)
    patterns: dict[tuple[str, ...], Fraction | float] = {(a,): seats * odds.probability(a) for a in law.categories}
    for i, a in enumerate(law.categories):
        for b in law.categories[i:]:
            if pool_of[a] != pool_of[b] or not pairs_of_seats:
                continue
            q = pairs_of_seats * (law.pair[(a, b)] if a == b else law.pair[(a, b)] + law.pair[(b, a)])
            if q:
                patterns[(a, b)] = q
                patterns[(a,)] -= q
                patterns[(b,)] -= q
    return RoundLaw(game, seats, patterns, dict.fromkeys(patterns, 0.0), True, law.method)


def _sampled(game: str, pool_of: Mapping[str, str], seats: int) -> RoundLaw:
    """The hold'em estimate (module doc): per pool, ROUND_SAMPLES proposed rounds with a hit of the pool."""
    rng = np.random.default_rng(ROUND_SEED)
    order = h.CATEGORIES_BY_GAME[game]
    odds = hand_odds(game)
    patterns: dict[tuple[str, ...], Fraction | float] = {}
    error: dict[tuple[str, ...], float] = {}
    for pool in dict.fromkeys(pool_of.values()):
        wanted = sorted(order.index(c) for c, p in pool_of.items() if p == pool)
        p_pool = sum(float(odds.probability(order[i])) for i in wanted)
        cards = deal_with_hit(rng, game, seats, ROUND_SAMPLES, frozenset(wanted))
        got = np.sort(categories(game, cards), axis=1)  # a round's categories, best first
        hit = np.isin(got, wanted)
        weight = 1.0 / hit.sum(axis=1)
        keys = [tuple(order[i] for i in row[mask].tolist()) for row, mask in zip(got, hit, strict=True)]
        for key in dict.fromkeys(keys):
            w = np.where(np.array([k == key for k in keys]), weight, 0.0)
            patterns[key] = seats * p_pool * float(w.mean())
            error[key] = seats * p_pool * float(w.std() / np.sqrt(ROUND_SAMPLES))
    return RoundLaw(game, seats, patterns, error, False,
                    f"seeded Monte Carlo of one-deck rounds with a hit (seed {ROUND_SEED}, {ROUND_SAMPLES:,} rounds "
                    "a pool), each weighted 1/its pool's hits; a shared board")
