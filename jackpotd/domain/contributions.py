"""Contributions and their exact reversal (RULES.md §3, §6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import FailedPrecondition
from .money import MAX_SAFE_UC, ceil_cents, cents_to_uc
from .pools import PoolSpec
from .postings import OPERATOR_FUNDING, POOL_PREFIX, REFUNDS, RETAINED, WAGERS, Posting, pool_account
from .rates import RateSet


class SeatContribution(NamedTuple):
    """What one accepted wager put where, kept so a void can reverse exactly that (§6). A named tuple: a round
    may hold 100,000."""

    seat: int
    wager_cents: int
    postings: tuple[Posting, ...]
    overflow_uc: int  # µ¢ that a capped pool passed to its overflow target (§3)

    @property
    def to_pools_uc(self) -> int:
        """What the wager put into the pools, overflow included (µ¢)."""
        return sum(p.amount_uc for p in self.postings if p.account.startswith(POOL_PREFIX))


@dataclass(frozen=True, slots=True)
class Contribution:
    """All wagers of one commit, applied seat by seat; `balances_after` are the pool balances in µ¢."""

    seats: tuple[SeatContribution, ...]
    balances_after: Mapping[str, int]
    totals: Mapping[str, int]  # the commit's legs summed per account, for its ledger entry
    overflows: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (capped pool, target) -> µ¢ (§3)

    @property
    def postings(self) -> tuple[Posting, ...]:
        """Every leg of every seat, in order."""
        return tuple(p for s in self.seats for p in s.postings)

    @property
    def merged(self) -> tuple[Posting, ...]:
        """One leg per account: what the ledger entry of the commit records."""
        return tuple(Posting(a, v) for a, v in self.totals.items() if v)


def contribute(rates: RateSet, pools: Sequence[PoolSpec], balances: Mapping[str, int],
               wagers: Sequence[tuple[int, int]]) -> Contribution:
    """§3: each wager of w¢ adds w × rate µ¢ to each pool and to retained; a cap passes its excess on.

    `wagers` are (seat, cents) pairs, applied in the order given against running balances.
    """
    specs = {p.name: p for p in pools}
    if any(specs[n].cap_cents is not None for n in rates.pool_order):
        return _contribute_capped(rates, specs, balances, wagers)
    # No cap: a wager's legs depend on its amount alone, so equal wagers share one tuple of legs.
    legs_of: dict[int, tuple[Posting, ...]] = {}
    count: dict[int, int] = {}
    for cents in {cents for _, cents in wagers}:
        legs_of[cents] = _legs(rates, cents, {n: cents * rates.pools_ppm[n] for n in rates.pool_order})
        count[cents] = 0
    for _, cents in wagers:
        count[cents] += 1
    new = tuple.__new__  # a named tuple built in C: a round may hold 100,000 seats
    seats = [new(SeatContribution, (seat, cents, legs_of[cents], 0)) for seat, cents in wagers]
    totals: dict[str, int] = {}
    for cents, legs in legs_of.items():
        for p in legs:
            totals[p.account] = totals.get(p.account, 0) + count[cents] * p.amount_uc
    running = dict(balances)
    for name in rates.pool_order:
        running[name] = running.get(name, 0) + totals.get(pool_account(name), 0)
    return _checked(rates, Contribution(tuple(seats), running, totals))


def contribute_alike(rates: RateSet, pools: Sequence[PoolSpec], balances: Mapping[str, int], cents: int,
                     count: int) -> tuple[tuple[Posting, ...], Contribution]:
    """§3 for `count` wagers of `cents` each on pools without a cap: every wager has the same legs (as `contribute`
    gives each seat), built once and summed by multiplication, so a 100,000-seat round costs no step per seat.
    Returns the one wager's legs and the whole round's contribution (its `seats` empty: the caller holds them)."""
    specs = {p.name: p for p in pools}
    if any(specs[n].cap_cents is not None for n in rates.pool_order):
        raise ValueError("contribute_alike: a capped pool makes wagers differ; use contribute")
    legs = _legs(rates, cents, {n: cents * rates.pools_ppm[n] for n in rates.pool_order})
    totals: dict[str, int] = {}
    for p in legs:
        totals[p.account] = totals.get(p.account, 0) + count * p.amount_uc
    running = dict(balances)
    for name in rates.pool_order:
        running[name] = running.get(name, 0) + totals.get(pool_account(name), 0)
    return legs, _checked(rates, Contribution((), running, totals))


def _legs(rates: RateSet, cents: int, to_pools: Mapping[str, int]) -> tuple[Posting, ...]:
    """One wager's legs: out of wagers, into each pool (sorted by name) and retained."""
    built = [Posting(WAGERS, -cents_to_uc(cents))]
    built += [Posting(pool_account(n), v) for n, v in sorted(to_pools.items()) if v]
    if rates.retained_ppm:
        built.append(Posting(RETAINED, cents * rates.retained_ppm))
    return tuple(built)


def _contribute_capped(rates: RateSet, specs: Mapping[str, PoolSpec], balances: Mapping[str, int],
                       wagers: Sequence[tuple[int, int]]) -> Contribution:
    """§3 with caps: seat by seat against running balances, each capped pool passing its excess on."""
    running = dict(balances)
    totals: dict[str, int] = {}
    overflows: dict[tuple[str, str], int] = {}
    seats: list[SeatContribution] = []
    for seat, cents in wagers:
        overflow = 0
        to_pools: dict[str, int] = {}
        for name in rates.pool_order:
            amount = cents * rates.pools_ppm[name]  # §2: w¢ × ppm is exactly the µ¢ contributed
            spec = specs[name]
            if spec.cap_cents is not None:
                room = max(0, cents_to_uc(spec.cap_cents) - running.get(name, 0))
                if amount > room:  # §3: a capped pool never passes its cap; nothing is lost
                    excess = amount - room
                    overflow += excess
                    route = (name, spec.overflow_to)
                    overflows[route] = overflows.get(route, 0) + excess
                    amount = room
                    to_pools[spec.overflow_to] = to_pools.get(spec.overflow_to, 0) + excess
                    running[spec.overflow_to] = running.get(spec.overflow_to, 0) + excess
            to_pools[name] = to_pools.get(name, 0) + amount
            running[name] = running.get(name, 0) + amount
        legs = _legs(rates, cents, to_pools)
        for p in legs:
            totals[p.account] = totals.get(p.account, 0) + p.amount_uc
        seats.append(SeatContribution(seat, cents, legs, overflow))
    return _checked(rates, Contribution(tuple(seats), running, totals, overflows))


def _checked(rates: RateSet, c: Contribution) -> Contribution:
    for name in rates.pool_order:
        if c.balances_after.get(name, 0) > MAX_SAFE_UC:
            raise FailedPrecondition(f"pool:{name}", c.balances_after[name],
                                     "balance would pass the exact range of 2^53 µ¢")
    return c


def reversal(seats: Sequence[SeatContribution], balances: Mapping[str, int]) -> tuple[Posting, ...]:
    """§6: the same µ¢ out of the same pools and the retained account; the wager goes back as a refund.

    Our reading of §5.7 for voids: a pool that has paid out since the commit may hold less than it must
    give back; operator funding makes up the difference first (whole cents), then the pool gives back.
    """
    legs: list[Posting] = []
    owed: dict[str, int] = {}
    for s in seats:
        for p in s.postings:
            if p.account == WAGERS:
                legs.append(Posting(REFUNDS, -p.amount_uc))
            else:
                legs.append(Posting(p.account, -p.amount_uc))
                if p.account.startswith("pool:"):
                    owed[p.account] = owed.get(p.account, 0) + p.amount_uc
    funding: list[Posting] = []
    for account, amount in owed.items():
        held = balances.get(account.removeprefix("pool:"), 0)
        if amount > held:
            cents = ceil_cents(amount - held)
            funding += [Posting(OPERATOR_FUNDING, -cents_to_uc(cents)), Posting(account, cents_to_uc(cents))]
    return (*funding, *legs)
