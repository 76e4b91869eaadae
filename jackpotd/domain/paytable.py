"""Paytables (RULES.md §4; NSW 12.1): what each qualifying hand pays and from which pool. Data, not code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import hands as h
from .errors import InvalidInput
from .money import PPM, require_non_negative_cents
from .pools import COMBINED, JACKPOT, MAJOR, MINOR, SPLIT


@dataclass(frozen=True, slots=True)
class PaytableEntry:
    """A qualifying hand: the greater of `min_cents` or `percent_ppm` of `pool`; may mark its pool for reset."""

    category: str
    pool: str
    min_cents: int
    percent_ppm: int = 0
    resets_pool: bool = True

    def __post_init__(self) -> None:
        require_non_negative_cents(f"paytable[{self.category}].min_cents", self.min_cents)
        if not 0 <= self.percent_ppm <= PPM:
            raise InvalidInput(f"paytable[{self.category}].percent_ppm", self.percent_ppm,
                               "must be from 0 to 1,000,000 ppm")
        if self.min_cents == 0 and self.percent_ppm == 0:
            raise InvalidInput(f"paytable[{self.category}]", 0, "an entry must pay a fixed amount or a percentage")

    @property
    def is_share(self) -> bool:
        """A percentage entry: several hits of it in one round share an aggregate (NSW 12.3)."""
        return self.percent_ppm > 0


@dataclass(frozen=True, slots=True)
class Paytable:
    """One game's paytable on a link; hands not listed do not qualify."""

    game: str
    entries: Mapping[str, PaytableEntry]

    def __post_init__(self) -> None:
        if self.game not in h.CATEGORIES_BY_GAME:
            raise InvalidInput("game", self.game, f"unknown game; known games: {', '.join(h.GAMES)}")
        for cat, entry in self.entries.items():
            if cat != entry.category or cat not in h.CATEGORIES_BY_GAME[self.game]:
                raise InvalidInput("paytable.category", cat, f"not a hand of {self.game}")

    def require_pools(self, pools: tuple[str, ...]) -> None:
        """Every entry draws from a pool of the link."""
        for entry in self.entries.values():
            if entry.pool not in pools:
                raise InvalidInput(f"paytable[{entry.category}].pool", entry.pool, "not a pool of this link")


# (category, tier, min_cents, percent_ppm). Tier "major" is MAJOR on a split link, JACKPOT on a combined one.
_Row = tuple[str, str, int, int]
# NSW 12.1; NZ 11.6A for the split.
_CARIBBEAN_STUD_ROWS: tuple[_Row, ...] = (
    (h.ROYAL_FLUSH, "major", 1_000_000, PPM),
    (h.STRAIGHT_FLUSH, "major", 100_000, 100_000),
    (h.FOUR_OF_A_KIND, "minor", 50_000, 0),
    (h.FULL_HOUSE, "minor", 15_000, 0),
    (h.FLUSH, "minor", 10_000, 0),
)
# Each other game: the top hand takes a share of the major pool and the next hands fixed minor awards, like the
# progressive side bets casinos run on it, scaled to the game's odds so it returns 50-90% at the reset values
# (issue 33; RULES.md §4 says where each row comes from; tests/unit/test_default_paytables.py pins the returns).
_DEFAULT_ROWS: Mapping[str, tuple[_Row, ...]] = {
    h.CARIBBEAN_STUD: _CARIBBEAN_STUD_ROWS,
    # Texas hold'em bonus (QLD sch 15 s 8 ranks): the best five of seven cards makes a royal 1 in 30,940 and a
    # straight flush 1 in 3,591, so the straight flush takes 5% (not stud's 10%) and only four of a kind (1 in 595)
    # of the smaller hands pays; a full house or flush (1 in 39, 1 in 33) is too common for a link award.
    h.HOLDEM_BONUS: (
        (h.ROYAL_FLUSH, "major", 1_000_000, PPM),
        (h.STRAIGHT_FLUSH, "major", 50_000, 50_000),
        (h.FOUR_OF_A_KIND, "minor", 10_000, 0),
    ),
    # Three card poker (QLD sch 16 s 9 ranks): its top hand, the straight flush, comes 1 in 460, so it takes 1% of
    # the major pool (at least $200); three of a kind (1 in 425) a fixed award; a straight (1 in 31) none.
    h.THREE_CARD: (
        (h.STRAIGHT_FLUSH, "major", 20_000, 10_000),
        (h.THREE_OF_A_KIND, "minor", 10_000, 0),
    ),
    # Four card poker (QLD sch 17 s 8 ranks): four of a kind (1 in 4,165) ranks above the straight flush (1 in 1,254)
    # and takes stud's straight-flush share; three of a kind (1 in 44) is too common for a link award.
    h.FOUR_CARD: (
        (h.FOUR_OF_A_KIND, "major", 100_000, 100_000),
        (h.STRAIGHT_FLUSH, "minor", 50_000, 0),
    ),
}


def default_paytable(game: str, mode: str) -> Paytable:
    """The default paytable of a game for a SPLIT or COMBINED link (RULES.md §4 table)."""
    if game not in _DEFAULT_ROWS:
        raise InvalidInput("game", game, f"unknown game; known games: {', '.join(h.GAMES)}")
    if mode not in (SPLIT, COMBINED):
        raise InvalidInput("mode", mode, "must be SPLIT or COMBINED")
    tiers = {"major": MAJOR, "minor": MINOR} if mode == SPLIT else {"major": JACKPOT, "minor": JACKPOT}
    return Paytable(game, {
        cat: PaytableEntry(cat, tiers[tier], min_cents, percent)
        for cat, tier, min_cents, percent in _DEFAULT_ROWS[game]
    })
