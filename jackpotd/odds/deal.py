"""One deck per round (issue 33): a table's round dealt from one shuffled deck in numpy, and every dealt hand's
category by lookup tables built from the engine's own evaluator (`hands.category5/4/3` on one representative hand
per rank multiset), so a dealt hand is categorised as the paying engine categorises it (a test holds every 3- and
5-card hand against `hand_odds`'s exact counts).

Each seat of a round gets its own cards from the one deck (no card twice in a round); in hold'em bonus every seat
gets 2 hole cards and all seats share one 5-card board. The dealer's cards are not dealt: they are unseen cards of
the same shuffled deck, so leaving them out does not change the seats' joint law (the deck is exchangeable).
Pure: a numpy Generator in, arrays out; cards are 0..51 (rank × 4 + suit), categories are indices into
`hands.CATEGORIES_BY_GAME[game]` (0 the highest).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from functools import cache
from itertools import chain, combinations, combinations_with_replacement
from math import comb, prod

import numpy as np
import numpy.typing as npt

from ..domain import hands as h
from ..domain.errors import InvalidInput
from .hand_odds import hand_odds

Ints = npt.NDArray[np.int64]
Cards = npt.NDArray[np.int8]
HOLE = {h.CARIBBEAN_STUD: 5, h.HOLDEM_BONUS: 2, h.THREE_CARD: 3, h.FOUR_CARD: 5}  # a seat's own cards
BOARD = {h.CARIBBEAN_STUD: 0, h.HOLDEM_BONUS: 5, h.THREE_CARD: 0, h.FOUR_CARD: 0}  # shared by every seat
_PRIMES = np.array((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41), dtype=np.int64)  # a rank multiset's key
_ORDER = {5: h.FIVE_CARD_ORDER, 4: h.FOUR_CARD_ORDER, 3: h.THREE_CARD_ORDER}
_SEVEN_FIVES = np.array(list(combinations(range(7), 5)))
_BEST_OF = {h.HOLDEM_BONUS: _SEVEN_FIVES,  # best five of seven (QLD sch 15)
            h.FOUR_CARD: np.array(list(combinations(range(5), 4)))}  # best four of five (QLD sch 17)
_ROWS = 1 << 15  # hands categorised at once (bounds the temporary arrays: hold'em's 21 fives per hand)


def max_seats(game: str) -> int:
    """The most seats one deck can deal a round to (the seats' own cards and the board)."""
    return (52 - BOARD[game]) // HOLE[game]


def require_seats(game: str, seats: int) -> int:
    """`seats` if one deck deals them a round, else InvalidInput naming the limit."""
    if not 1 <= seats <= max_seats(game):
        raise InvalidInput("seats_filled", seats, f"one deck deals a round of {game} to at most {max_seats(game)} "
                                                  "seats")
    return seats


def _category(size: int, cards: Sequence[int]) -> str:
    """The engine's category of 5, 4 or 3 distinct cards."""
    if size == 5:
        return h.category5(*cards)
    return h.category4(*cards) if size == 4 else h.category3(*cards)


@cache
def _lookup(size: int) -> tuple[Ints, Ints, Ints]:
    """The sorted prime products of every rank multiset of `size` cards, and the category index of its unsuited and
    its suited hand (−1 where ranks repeat: no suited hand), each from the engine's evaluator on one hand."""
    order = _ORDER[size]
    rows: list[tuple[int, int, int]] = []
    for ranks in combinations_with_replacement(range(13), size):
        if max(Counter(ranks).values()) > 4:
            continue
        plain = order.index(_category(size, [r * 4 + i % 4 for i, r in enumerate(ranks)]))  # suits 0,1,2,3,0: no flush
        suited = order.index(_category(size, [r * 4 for r in ranks])) if len(set(ranks)) == size else -1
        rows.append((prod(int(_PRIMES[r]) for r in ranks), plain, suited))
    rows.sort()
    table = np.array(rows, dtype=np.int64)
    return table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()


def _of_size(cards: Ints) -> Ints:
    """The category index of each hand of 3, 4 or 5 cards (the last axis), in that size's order."""
    keys, plain, suited = _lookup(cards.shape[-1])
    product = np.prod(_PRIMES[cards // 4], axis=-1)
    suits = cards % 4
    flush = np.all(suits == suits[..., :1], axis=-1)
    where = np.searchsorted(keys, product)
    out: Ints = np.where(flush, suited[where], plain[where])
    return out


def categories(game: str, hands: npt.NDArray[np.integer]) -> Ints:
    """The category index (in `hands.CATEGORIES_BY_GAME[game]`) of each hand: the last axis holds a seat's
    `CARDS_PER_HAND[game]` cards; the best five of seven (hold'em) or four of five (four card) as the engine."""
    size = h.CARDS_PER_HAND[game]
    flat = hands.reshape(-1, size).astype(np.int64)
    out = np.empty(len(flat), dtype=np.int64)
    best = _BEST_OF.get(game)
    for start in range(0, len(flat), _ROWS):
        part = flat[start:start + _ROWS]
        out[start:start + _ROWS] = _of_size(part) if best is None else _of_size(part[:, best]).min(axis=1)
    return out.reshape(hands.shape[:-1])


def _seat_hands(game: str, seats: int, cards: Cards) -> Cards:
    """rounds × seats × hand: seat s's own cards are cards[:, s·HOLE:(s+1)·HOLE]; the board (the last BOARD cards)
    is every seat's."""
    rounds, hole, board = len(cards), HOLE[game], BOARD[game]
    own = cards[:, :seats * hole].reshape(rounds, seats, hole)
    if not board:
        return own
    shared = np.broadcast_to(cards[:, seats * hole:seats * hole + board][:, None, :], (rounds, seats, board))
    return np.concatenate([own, shared], axis=2)


def deal(rng: np.random.Generator, game: str, seats: int, rounds: int) -> Cards:
    """`rounds` rounds of `game` at `seats` seats, each round from its own shuffled deck: rounds × seats × hand."""
    require_seats(game, seats)
    need = seats * HOLE[game] + BOARD[game]
    decks = rng.permuted(np.broadcast_to(np.arange(52, dtype=np.int8), (rounds, 52)), axis=1)
    return _seat_hands(game, seats, decks[:, :need])


@cache
def _every(game: str) -> tuple[Cards, Ints]:
    """Every hand of a 3- or 5-card game (hands × cards) and its category index, enumerated once."""
    size = h.CARDS_PER_HAND[game]
    every = np.fromiter(chain.from_iterable(combinations(range(52), size)), dtype=np.int8,
                        count=comb(52, size) * size).reshape(-1, size)
    return every, categories(game, every)


@cache
def paying_hands(game: str, paying: frozenset[int]) -> Cards:
    """Every hand of a 3- or 5-card game whose category index is in `paying` (hands × cards)."""
    every, cats = _every(game)
    return every[np.isin(cats, list(paying))].copy()


def _paying_sevens(rng: np.random.Generator, paying: Collection[int], rounds: int) -> Cards:
    """`rounds` seven-card sets drawn uniformly among those whose hold'em category is in `paying`: the category by
    its exact count (`hand_odds`), then a set uniformly among that category's (`sevens_of`), cards in random order."""
    odds = hand_odds(h.HOLDEM_BONUS)
    keep = sorted(paying)
    weights = np.array([odds.counts[h.FIVE_CARD_ORDER[i]] for i in keep], dtype=np.float64)
    many = rng.multinomial(rounds, weights / weights.sum())
    found = np.concatenate([sevens_of(rng, i, int(n)) for i, n in zip(keep, many.tolist(), strict=True)])
    return rng.permuted(found[rng.permutation(rounds)], axis=1)


def sevens_of(rng: np.random.Generator, ia: int, count: int) -> Cards:
    """`count` seven-card sets drawn uniformly among those whose best five is of category index `ia`: a five of
    `ia` (uniformly) and two other cards, kept with chance 1/(the set's fives of `ia`) when `ia` is its best; each
    such set is then drawn with the same chance (every five of `ia` in it proposes it)."""
    fives = paying_hands(h.CARIBBEAN_STUD, frozenset({ia}))
    found: list[Cards] = []
    have = 0
    while have < count:
        m = min(_ROWS, 2 * (count - have) + 64)
        pick = fives[rng.integers(0, len(fives), m)]
        used = np.zeros((m, 52), dtype=bool)
        used[np.arange(m)[:, None], pick.astype(np.int64)] = True
        rest = np.broadcast_to(np.arange(52, dtype=np.int8), (m, 52))[~used].reshape(m, 47)
        sevens = np.concatenate([pick, rng.permuted(rest, axis=1)[:, :2]], axis=1)
        each = categories(h.CARIBBEAN_STUD, sevens[:, _SEVEN_FIVES])
        ways = (each == ia).sum(axis=1)
        keep = (each.min(axis=1) == ia) & (rng.random(m) * ways < 1)
        found.append(sevens[keep])
        have += int(keep.sum())
    return np.concatenate(found)[:count] if found else np.zeros((0, 7), dtype=np.int8)


def deal_with_hit(rng: np.random.Generator, game: str, seats: int, rounds: int, paying: frozenset[int]) -> Cards:
    """`rounds` rounds as `deal` gives them but conditioned on seat 0 (the first) holding a hand of `paying`: its hand
    (hold'em: its 2 hole cards and the board) drawn uniformly among those, the other seats dealt from the rest of
    the deck. Weighted by 1/N (N the round's paying seats), these are the rounds with at least one paying seat."""
    require_seats(game, seats)
    size, hole = h.CARDS_PER_HAND[game], HOLE[game]
    if game == h.HOLDEM_BONUS:
        first = _paying_sevens(rng, paying, rounds)
    else:
        table = paying_hands(game, paying)
        first = table[rng.integers(0, len(table), rounds)]
    used = np.zeros((rounds, 52), dtype=bool)
    used[np.arange(rounds)[:, None], first.astype(np.int64)] = True
    rest = np.broadcast_to(np.arange(52, dtype=np.int8), (rounds, 52))[~used].reshape(rounds, 52 - size)
    others = rng.permuted(rest, axis=1)[:, :(seats - 1) * hole]
    cards = np.concatenate([first[:, :hole], others, first[:, hole:]], axis=1)  # hold'em: seat 0's last 5 = board
    return _seat_hands(game, seats, cards)
