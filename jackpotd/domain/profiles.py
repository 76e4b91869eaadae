"""Rule profiles (DOMAIN.md §4, §9): the NSW combined profile and the NZ split profile, as data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import hands as h
from .errors import InvalidInput
from .money import require_positive_cents
from .paytable import Paytable, default_paytable
from .pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec, require_pool_set
from .rates import RateSet


@dataclass(frozen=True, slots=True)
class LinkRules:
    """Everything that prices a link's money: pools, the rates in force, paytables per game, the wager amount."""

    mode: str
    pools: tuple[PoolSpec, ...]
    rates: RateSet
    paytables: Mapping[str, Paytable]
    wager_cents: int
    verification_threshold_cents: int = 0  # §7: 0 means every hit is paid at once

    def __post_init__(self) -> None:
        require_pool_set(self.mode, self.pools)
        names = self.pool_names
        self.rates.require_pools(names)
        for paytable in self.paytables.values():
            paytable.require_pools(names)
        require_positive_cents("wager_cents", self.wager_cents)

    @property
    def pool_names(self) -> tuple[str, ...]:
        """Names of the link's pools, in configuration order."""
        return tuple(p.name for p in self.pools)

    def pool(self, name: str) -> PoolSpec:
        """The spec of a pool of this link."""
        for p in self.pools:
            if p.name == name:
                return p
        raise InvalidInput("pool", name, f"not a pool of this link ({', '.join(self.pool_names)})")

    def paytable(self, game: str) -> Paytable:
        """The paytable of a game on this link."""
        table = self.paytables.get(game)
        if table is None:
            raise InvalidInput("game", game, "this link has no paytable for that game")
        return table


def nsw_combined_profile(*, jackpot_ppm: int, reserve_ppm: int, retained_ppm: int, reset_cents: int,
                         wager_cents: int = 100, cap_cents: int | None = None,
                         games: tuple[str, ...] = (h.CARIBBEAN_STUD,)) -> LinkRules:
    """One JACKPOT pool (NSW 11.5; NZ 11.6B) with a hidden RESERVE that funds resets."""
    return LinkRules(
        mode=COMBINED,
        pools=(PoolSpec(JACKPOT, reset_cents, cap_cents), PoolSpec(RESERVE)),
        rates=RateSet({JACKPOT: jackpot_ppm, RESERVE: reserve_ppm}, retained_ppm),
        paytables={g: default_paytable(g, COMBINED) for g in games},
        wager_cents=wager_cents,
    )


def nz_split_profile(*, major_ppm: int, minor_ppm: int, reserve_ppm: int, retained_ppm: int,
                     major_reset_cents: int, minor_reset_cents: int, wager_cents: int = 100,
                     major_cap_cents: int | None = None, minor_cap_cents: int | None = None,
                     games: tuple[str, ...] = (h.CARIBBEAN_STUD,)) -> LinkRules:
    """A Major and a Minor Prize Pool (NZ 11.6A) with a hidden RESERVE that funds resets."""
    return LinkRules(
        mode=SPLIT,
        pools=(PoolSpec(MAJOR, major_reset_cents, major_cap_cents), PoolSpec(MINOR, minor_reset_cents, minor_cap_cents),
               PoolSpec(RESERVE)),
        rates=RateSet({MAJOR: major_ppm, MINOR: minor_ppm, RESERVE: reserve_ppm}, retained_ppm),
        paytables={g: default_paytable(g, SPLIT) for g in games},
        wager_cents=wager_cents,
    )
