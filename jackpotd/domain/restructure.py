"""Splitting and combining a link's pools (RULES.md §9; NZ 11.6A/B): only between rounds, with an approval
reference, keeping every µ¢. Pure: from the config and the balances, the new config and the movement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .errors import FailedPrecondition, InvalidInput
from .link import LinkConfig
from .money import cents_to_uc
from .paytable import default_paytable
from .pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from .postings import Posting, pool_account
from .rates import RateSet

SPLIT_POOLS = (MAJOR, MINOR)


def _require_room(spec: PoolSpec, field: str, holds_uc: int) -> None:
    """§3: a capped pool never holds more than its cap, so it cannot be given more by a restructure."""
    if spec.cap_cents is not None and holds_uc > cents_to_uc(spec.cap_cents):
        raise FailedPrecondition(field, spec.cap_cents, f"the pool would hold {holds_uc} µ¢, more than its cap")


def _restructured(config: LinkConfig, mode: str, moved: Sequence[PoolSpec], rates: RateSet,
                  now_ms: int) -> LinkConfig:
    """The link in `mode`: the new pools beside the ones it keeps (RESERVE), the default paytables of the mode
    (§4), and `rates` as the one rate set of the new config (§3: the ledger keeps every earlier set). It is in
    force from the act because the config version it arrives with is: its own effective time is 0, so a worker
    whose clock is a moment behind the act's still finds rates in force."""
    scheduled = [r for r in config.rate_sets if r.effective_at_ms > now_ms]
    if scheduled:  # an approved change must not vanish silently with the pools it names
        raise FailedPrecondition("rates", scheduled[0].version, "a rate set scheduled for a later time names "
                                 "the current pools; let it take effect first")
    kept = tuple(p for p in config.pools if p.name == RESERVE)
    version = max(r.version for r in config.rate_sets) + 1
    in_force = replace(rates, version=version, effective_at_ms=0)
    return replace(config, mode=mode, pools=(*moved, *kept), rate_sets=(in_force,),
                   paytables={game: default_paytable(game, mode) for game in config.paytables})


def combine(config: LinkConfig, balances: Mapping[str, int], jackpot: PoolSpec, rates: RateSet,
            now_ms: int) -> tuple[LinkConfig, list[Posting]]:
    """NZ 11.6B: MAJOR and MINOR become one JACKPOT holding both balances exactly."""
    if config.mode != SPLIT:
        raise FailedPrecondition("mode", config.mode, "only a SPLIT link's pools can be combined")
    if jackpot.name != JACKPOT:
        raise InvalidInput("jackpot.pool", jackpot.name, f"the combined pool is {JACKPOT}")
    held = sum(balances.get(p, 0) for p in SPLIT_POOLS)
    _require_room(jackpot, "jackpot.cap_cents", held)
    new = _restructured(config, COMBINED, (jackpot,), rates, now_ms)
    legs = [Posting(pool_account(p), -balances.get(p, 0)) for p in SPLIT_POOLS]
    legs.append(Posting(pool_account(JACKPOT), held))
    return new, legs


def split(config: LinkConfig, balances: Mapping[str, int], pools: Sequence[PoolSpec],
          allocation: Mapping[str, int], rates: RateSet, now_ms: int) -> tuple[LinkConfig, list[Posting]]:
    """NZ 11.6A: JACKPOT becomes MAJOR and MINOR, its balance allocated explicitly, to the µ¢."""
    if config.mode != COMBINED:
        raise FailedPrecondition("mode", config.mode, "only a COMBINED link's pool can be split")
    if sorted(p.name for p in pools) != sorted(SPLIT_POOLS):
        raise InvalidInput("pools", [p.name for p in pools], f"a split names exactly {MAJOR} and {MINOR}")
    if sorted(allocation) != sorted(SPLIT_POOLS):
        raise InvalidInput("allocation", sorted(allocation), f"allocate to exactly {MAJOR} and {MINOR}")
    for name, uc in allocation.items():
        if isinstance(uc, bool) or not isinstance(uc, int) or uc < 0:
            raise InvalidInput(f"allocation[{name}].amount_ucents", uc, "must be a whole, non-negative number of µ¢")
    held = balances.get(JACKPOT, 0)
    if sum(allocation.values()) != held:
        raise FailedPrecondition("allocation", sum(allocation.values()),
                                 f"must add up to {JACKPOT}'s balance of exactly {held} µ¢")
    for spec in pools:
        _require_room(spec, f"pools[{spec.name}].cap_cents", allocation[spec.name])
    new = _restructured(config, SPLIT, pools, rates, now_ms)
    legs = [Posting(pool_account(JACKPOT), -held)]
    legs += [Posting(pool_account(p), allocation[p]) for p in SPLIT_POOLS]
    return new, legs
