"""Dealing real rounds: a fresh 52-card deck shuffled by a cryptographic RNG for every round."""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jackpotd.domain.cards import RANKS, SUITS

DECK = tuple(r + s for r in RANKS for s in SUITS)


@dataclass(frozen=True, slots=True)
class Layout:
    """Cards per seat, to the dealer, and to the board, per game (QLD sch 15-17; NSW 7)."""

    per_seat: int
    dealer: int
    board: int = 0

    def max_seats(self) -> int:
        return (len(DECK) - self.dealer - self.board) // self.per_seat


LAYOUTS: Mapping[str, Layout] = {
    "caribbean-stud": Layout(5, 5),
    "holdem-bonus": Layout(2, 2, 5),
    "three-card": Layout(3, 3),
    "four-card": Layout(5, 6),
}


@dataclass(frozen=True, slots=True)
class Deal:
    hands: dict[int, list[str]]
    dealer: list[str]
    board: list[str]


def system_rng() -> random.Random:
    """The operating system's CSPRNG behind the random.Random interface."""
    return secrets.SystemRandom()


def deal(game: str, seats: Sequence[int], rng: random.Random, forced: Mapping[int, Sequence[str]] | None = None
         ) -> Deal:
    """Shuffle a full deck and deal every seat, the dealer and the board; forced hands are taken out first."""
    layout = LAYOUTS[game]
    if len(seats) > layout.max_seats():
        raise ValueError(f"{game} deals at most {layout.max_seats()} seats from one deck")
    forced = forced or {}
    taken = {c.lower() for cards in forced.values() for c in cards}
    deck = [c for c in DECK if c.lower() not in taken]
    rng.shuffle(deck)
    hands = {}
    for seat in seats:  # NSW 7.2.2: seat 1, at the dealer's left, is dealt first
        hands[seat] = list(forced[seat]) if seat in forced else [deck.pop() for _ in range(layout.per_seat)]
    dealer = [deck.pop() for _ in range(layout.dealer)]
    board = [deck.pop() for _ in range(layout.board)]
    return Deal(hands, dealer, board)
