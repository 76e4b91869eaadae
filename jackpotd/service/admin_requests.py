"""What an administrative request means where it leaves a field unset (the defaults), and the checks of its shape
the domain's types do not make: the servicers translate proto into these calls and decide nothing themselves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..domain.errors import InvalidInput
from ..domain.link import LinkConfig, TableConfig
from ..domain.paytable import default_paytable
from ..domain.pools import JACKPOT, RESERVE, PoolSpec
from ..domain.rates import RateSet

DEFAULT_GAME = "caribbean-stud"  # a link's game, and a table's, when the request names none
DEFAULT_GAMING_DAY_START = "06:00"
DEFAULT_TIME_ZONE = "UTC"


def pool_spec(name: str, reset_cents: int, cap_cents: int | None, overflow_to: str) -> PoolSpec:
    """A pool as requested; what overflows its cap goes to the reserve unless it names another pool."""
    return PoolSpec(name, reset_cents, cap_cents, overflow_to or RESERVE)


def rate_set(pools_ppm: Mapping[str, int], retained_ppm: int, effective_at_ms: int, approval_ref: str) -> RateSet:
    """A requested rate set, as version 1 (a new link's, or a restructure's first), under its approval."""
    return RateSet(pools_ppm, retained_ppm, 1, effective_at_ms, approval_ref)


def new_link(link_id: str, mode: str, wager_cents: int, pools: tuple[PoolSpec, ...], rates: RateSet,
             games: Sequence[str], verification_threshold_cents: int, gaming_day_start: str,
             time_zone: str, dual_approval_threshold_cents: int = 0) -> LinkConfig:
    """A new link's config: the default paytable of each game (DEFAULT_GAME when none is named), the gaming day from
    06:00 in UTC unless the request says otherwise."""
    return LinkConfig(
        link_id=link_id, mode=mode, wager_cents=wager_cents, pools=pools, rate_sets=(rates,),
        paytables={g: default_paytable(g, mode) for g in (list(games) or [DEFAULT_GAME])},
        verification_threshold_cents=verification_threshold_cents,
        gaming_day_start=gaming_day_start or DEFAULT_GAMING_DAY_START, time_zone=time_zone or DEFAULT_TIME_ZONE,
        dual_approval_threshold_cents=dual_approval_threshold_cents)


def table_config(table_id: str, game: str, seats: int) -> TableConfig:
    """A table to register, playing DEFAULT_GAME unless the request names its game."""
    return TableConfig(table_id, game or DEFAULT_GAME, seats)


def combined_jackpot(pool: PoolSpec) -> PoolSpec:
    """The one pool CombinePools leaves, named JACKPOT unless the request names it."""
    return replace(pool, name=pool.name or JACKPOT)


def allocation_of(amounts: Iterable[tuple[str, int]]) -> dict[str, int]:
    """SplitPools' allocation (pool, µ¢) as a map; a pool allocated twice is refused."""
    allocation: dict[str, int] = {}
    for i, (pool, amount_ucents) in enumerate(amounts):
        if pool in allocation:
            raise InvalidInput(f"allocation[{i}].pool", pool, "allocated twice")
        allocation[pool] = amount_ucents
    return allocation


def rejection_act_reason(audit_reason: str, rejection_reason: str) -> str:
    """A rejected hit's audit reason: the audit's own, else the rejection's (the rejection's reason is the act's)."""
    return audit_reason or rejection_reason
