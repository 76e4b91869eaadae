"""Pools of a link (RULES.md §1, §9): JACKPOT, or MAJOR + MINOR, plus a hidden RESERVE."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidInput
from .money import require_non_negative_cents

JACKPOT = "JACKPOT"
MAJOR = "MAJOR"
MINOR = "MINOR"
RESERVE = "RESERVE"

SPLIT = "SPLIT"  # NZ 11.6A: a Major and a Minor Prize Pool
COMBINED = "COMBINED"  # NSW 11.5; NZ 11.6B: one jackpot pool
MODES = (SPLIT, COMBINED)
POOLS_BY_MODE = {SPLIT: (MAJOR, MINOR, RESERVE), COMBINED: (JACKPOT, RESERVE)}
VISIBLE = frozenset({JACKPOT, MAJOR, MINOR})


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A pool's configuration: reset value, optional cap and where the excess over the cap goes (§3)."""

    name: str
    reset_cents: int = 0
    cap_cents: int | None = None
    overflow_to: str = RESERVE

    def __post_init__(self) -> None:
        require_non_negative_cents(f"pools[{self.name}].reset_cents", self.reset_cents)
        if self.cap_cents is not None:
            require_non_negative_cents(f"pools[{self.name}].cap_cents", self.cap_cents)
            if self.cap_cents < self.reset_cents:
                raise InvalidInput(f"pools[{self.name}].cap_cents", self.cap_cents,
                                   "a cap below the reset value could never be honoured")
        if self.cap_cents is not None and self.overflow_to == self.name:
            raise InvalidInput(f"pools[{self.name}].overflow_to", self.overflow_to,
                               "a pool cannot overflow into itself")

    @property
    def visible(self) -> bool:
        """Shown on meters and signs (RESERVE is hidden)."""
        return self.name in VISIBLE


def require_pool_set(mode: str, pools: tuple[PoolSpec, ...]) -> None:
    """A link's pools are exactly those of its mode, and overflow targets are uncapped pools of the link."""
    if mode not in POOLS_BY_MODE:
        raise InvalidInput("mode", mode, f"must be one of {', '.join(MODES)}")
    names = tuple(p.name for p in pools)
    if sorted(names) != sorted(POOLS_BY_MODE[mode]):
        raise InvalidInput("pools", list(names), f"a {mode} link has pools {', '.join(POOLS_BY_MODE[mode])}")
    by_name = {p.name: p for p in pools}
    for p in pools:
        if p.cap_cents is None:
            continue
        target = by_name.get(p.overflow_to)
        if target is None:
            raise InvalidInput(f"pools[{p.name}].overflow_to", p.overflow_to, "not a pool of this link")
        if target.cap_cents is not None:
            raise InvalidInput(f"pools[{p.name}].overflow_to", p.overflow_to,
                               "the overflow target must have no cap, so nothing is ever lost")
