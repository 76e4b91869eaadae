"""Contribution rates (RULES.md §2-3): versioned, approved, effective from a time, never retroactive."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInput
from .money import PPM


@dataclass(frozen=True, slots=True)
class RateSet:
    """One approved rate set: ppm per pool plus the retained portion, summing to exactly 1,000,000 (§2)."""

    pools_ppm: Mapping[str, int]
    retained_ppm: int
    version: int = 1
    effective_at_ms: int = 0
    approval_ref: str = ""
    pool_order: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        for name, ppm in {**self.pools_ppm, "retained": self.retained_ppm}.items():
            if isinstance(ppm, bool) or not isinstance(ppm, int) or ppm < 0 or ppm > PPM:
                raise InvalidInput(f"rates[{name}]", ppm, "must be a whole number of ppm from 0 to 1,000,000")
        total = sum(self.pools_ppm.values()) + self.retained_ppm
        if total != PPM:
            raise InvalidInput("rates", total,
                               "pool rates and the retained portion must add up to exactly 1,000,000 ppm")
        if self.version < 1:
            raise InvalidInput("rates.version", self.version, "versions start at 1")
        object.__setattr__(self, "pool_order", tuple(sorted(self.pools_ppm)))

    def require_pools(self, pools: Sequence[str]) -> None:
        """Every rated pool exists on the link."""
        for name in self.pools_ppm:
            if name not in pools:
                raise InvalidInput(f"rates[{name}]", self.pools_ppm[name], "not a pool of this link")


def rate_set_of(d: Mapping[str, Any]) -> RateSet:
    """A rate set from its stored form (LinkConfig.to_dict)."""
    return RateSet(d["pools_ppm"], d["retained_ppm"], d["version"], d["effective_at_ms"], d["approval_ref"])


def rates_in_force(rate_sets: Sequence[RateSet], at_ms: int) -> RateSet:
    """§3: a wager uses the newest rate set whose effective time has come; no change is retroactive."""
    best: RateSet | None = None
    for rs in rate_sets:
        if rs.effective_at_ms > at_ms:
            continue
        if best is None or (rs.effective_at_ms, rs.version) > (best.effective_at_ms, best.version):
            best = rs
    if best is None:
        raise InvalidInput("rates", at_ms, "no rate set is in force at this time")
    return best


def newest_rates(rate_sets: Sequence[RateSet]) -> RateSet:
    """The rate set in force once every approved change has taken effect (§3): the latest effective time, then the
    highest version, as rates_in_force orders them."""
    return max(rate_sets, key=lambda rs: (rs.effective_at_ms, rs.version))
