"""A private stand-in for part A's exact hand odds (jackpotd.odds.hand_odds) with the published counts, until it lands;
the simulation samples hands by these exact counts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..domain import hands as h
from ..domain.errors import InvalidInput

_FIVE = (4, 36, 624, 3_744, 5_108, 10_200, 54_912, 123_552, 1_098_240, 1_302_540)  # of C(52,5) = 2,598,960
_SEVEN = (4_324, 37_260, 224_848, 3_473_184, 4_047_644, 6_180_020, 6_461_620, 31_433_400, 58_627_800,
          23_294_460)  # best five of seven, of C(52,7) = 133,784,560
_THREE = (48, 52, 720, 1_096, 3_744, 16_440)  # of C(52,3) = 22,100
_COUNTS = {h.CARIBBEAN_STUD: _FIVE, h.HOLDEM_BONUS: _SEVEN, h.THREE_CARD: _THREE}


@dataclass(frozen=True, slots=True)
class HandOdds:
    """Every category's count of hands of `game`, of `total` equally likely hands."""

    game: str
    total: int
    counts: Mapping[str, int]
    method: str

    def probability(self, category: str) -> Fraction:
        """The exact chance of `category` for one seat."""
        return Fraction(self.counts[category], self.total)


def hand_odds(game: str) -> HandOdds:
    """The published counts of `game`'s categories (four-card is left to part A)."""
    if game not in _COUNTS:
        raise InvalidInput("game", game, "no published counts in the stand-in")
    counts = dict(zip(h.CATEGORIES_BY_GAME[game], _COUNTS[game], strict=True))
    return HandOdds(game, sum(counts.values()), counts, "published counts (stand-in)")
