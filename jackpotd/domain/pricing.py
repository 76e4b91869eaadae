"""Pricing a round's hits in the prescribed order (RULES.md §5; NSW 12; NZ 11.10).

Pure: given the pool balances as they stand and the round's hits, it returns every payout in payment
order, the resets, and the postings, which sum to zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import hands as h
from .errors import InvalidInput
from .money import UC_PER_CENT, ceil_cents, cents_to_uc, floor_cents, percent_of_cents
from .paytable import Paytable, PaytableEntry
from .pools import RESERVE, PoolSpec
from .postings import OPERATOR_FUNDING, PAYOUTS, Posting, pool_account
from .seats import require_seat

# §5.3 (NSW 12.4; NZ 11.10(a)): straight flushes before royal flushes; royals are paid last, together.
PAID_LAST = frozenset({h.ROYAL_FLUSH})


@dataclass(frozen=True, slots=True)
class Hit:
    """A qualifying hand on a seat that holds an accepted jackpot wager."""

    seat: int
    category: str


@dataclass(frozen=True, slots=True)
class Payout:
    """One payment, with what a finance officer needs to trace it (§10)."""

    seat: int
    category: str
    pool: str
    amount_cents: int
    funded_by_operator_cents: int  # §5.7: shortfall the operator added before the pool paid
    pool_before_uc: int
    pool_after_uc: int
    rule: str  # which rule priced it, e.g. "NSW 12.3.2 share of 2"


@dataclass(frozen=True, slots=True)
class Reset:
    """§5.8: a pool brought up to its reset value, from RESERVE first, then the operator."""

    pool: str
    from_reserve_cents: int
    from_operator_cents: int


@dataclass(frozen=True, slots=True)
class RoundPrice:
    """The priced round: payouts in payment order, resets, postings and pool balances after (µ¢)."""

    payouts: tuple[Payout, ...]
    resets: tuple[Reset, ...]
    postings: tuple[Posting, ...]
    balances_after: Mapping[str, int]

    @property
    def operator_funding_cents(self) -> int:
        """All the operator put in this round: shortfalls and resets."""
        return sum(p.funded_by_operator_cents for p in self.payouts) + sum(r.from_operator_cents for r in self.resets)


def require_seats(hits: Sequence[Hit], seats: int) -> None:
    """Seats are 1..N (§1), one hand each."""
    seen: set[int] = set()
    for hit in hits:
        require_seat("seat", hit.seat, seats)
        if hit.seat in seen:
            raise InvalidInput("seat", hit.seat, "appears more than once in the round")
        seen.add(hit.seat)


def payment_order(paytable: Paytable, hits: Sequence[Hit]) -> list[tuple[PaytableEntry, list[Hit]]]:
    """§5.2-5.5: right to left from seat N; a share group at its rightmost member; PAID_LAST groups at the end."""
    qualifying = sorted((hit for hit in hits if hit.category in paytable.entries), key=lambda x: -x.seat)
    groups: dict[str, list[Hit]] = {}
    order: list[tuple[PaytableEntry, list[Hit]]] = []
    last: list[tuple[PaytableEntry, list[Hit]]] = []
    for hit in qualifying:
        entry = paytable.entries[hit.category]
        if not entry.is_share:  # §5.6: a fixed payout stands alone at its own position
            order.append((entry, [hit]))
            continue
        if hit.category in groups:
            groups[hit.category].append(hit)
            continue
        groups[hit.category] = [hit]
        (last if hit.category in PAID_LAST else order).append((entry, groups[hit.category]))
    return order + last


def price_round(paytable: Paytable, pools: Sequence[PoolSpec], balances: Mapping[str, int],
                hits: Sequence[Hit], seats: int) -> RoundPrice:
    """Price all of a round's hits at once against `balances` (µ¢ per pool), as §5 prescribes."""
    require_seats(hits, seats)
    specs = {p.name: p for p in pools}
    bal = {name: balances.get(name, 0) for name in specs}
    postings: list[Posting] = []
    payouts: list[Payout] = []
    drawn: list[str] = []

    def pay(entry: PaytableEntry, hit: Hit, amount_cents: int, rule: str) -> None:
        pool = entry.pool
        before = bal[pool]
        need = cents_to_uc(amount_cents)
        funded = ceil_cents(need - before) if need > before else 0  # §5.7: operator makes up the difference first
        if funded:
            postings.append(Posting(OPERATOR_FUNDING, -cents_to_uc(funded)))
            postings.append(Posting(pool_account(pool), cents_to_uc(funded)))
        postings.append(Posting(pool_account(pool), -need))
        postings.append(Posting(PAYOUTS, need))
        bal[pool] = before + cents_to_uc(funded) - need
        payouts.append(Payout(hit.seat, hit.category, pool, amount_cents, funded, before, bal[pool], rule))
        if entry.resets_pool and pool not in drawn:
            drawn.append(pool)

    for entry, members in payment_order(paytable, hits):
        if entry.pool not in bal:
            raise InvalidInput(f"paytable[{entry.category}].pool", entry.pool, "not a pool of this link")
        if not entry.is_share:
            pay(entry, members[0], entry.min_cents, "NSW 12.1 fixed payout")
            continue
        # §5.4 (NSW 12.3.2): a percentage of the pool, then of what remains, once per member; shared equally.
        # With 100% (the royal, §5.5; NZ 11.10(b)) this is simply what the pool holds, shared.
        remaining = bal[entry.pool]
        aggregate = 0
        for _ in members:
            step = percent_of_cents(remaining, entry.percent_ppm)
            aggregate += step
            remaining -= step * UC_PER_CENT
        share = aggregate // len(members)  # §2: a share is floored to the cent; the rest stays in the pool
        amount = max(share, entry.min_cents)
        rule = "NSW 12.1" if len(members) == 1 else f"NSW 12.3 share of {len(members)}"
        for hit in members:
            pay(entry, hit, amount, rule)

    resets: list[Reset] = []
    for pool in drawn:  # §5.8: after the round, from RESERVE first (whole cents), then the operator
        target = cents_to_uc(specs[pool].reset_cents)
        if bal[pool] >= target:
            continue
        deficit = ceil_cents(target - bal[pool])
        reserve_cents = 0
        if RESERVE in bal and pool != RESERVE:
            reserve_cents = min(deficit, floor_cents(bal[RESERVE]))
        operator_cents = deficit - reserve_cents
        if reserve_cents:
            postings.append(Posting(pool_account(RESERVE), -cents_to_uc(reserve_cents)))
            bal[RESERVE] -= cents_to_uc(reserve_cents)
        if operator_cents:
            postings.append(Posting(OPERATOR_FUNDING, -cents_to_uc(operator_cents)))
        postings.append(Posting(pool_account(pool), cents_to_uc(deficit)))
        bal[pool] += cents_to_uc(deficit)
        resets.append(Reset(pool, reserve_cents, operator_cents))

    return RoundPrice(tuple(payouts), tuple(resets), tuple(postings), bal)
