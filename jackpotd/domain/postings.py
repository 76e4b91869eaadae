"""Double-entry postings (ARCHITECTURE.md, the ledger): every money movement sums to zero over accounts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

# Counter-accounts outside the pools. Pools are named "pool:<NAME>".
WAGERS = "wagers"  # players' jackpot wagers flow out of here (goes negative)
REFUNDS = "refunds"  # voided wagers returned to players (§6)
RETAINED = "retained"  # the operator's retained portion (NSW 11.6; NZ 11.6(a))
PAYOUTS = "payouts"  # jackpot prizes paid to players
PENDING_PAYOUTS = "pending_payouts"  # §7: prizes taken from their pool, awaiting a supervisor's verification
OPERATOR_FUNDING = "operator_funding"  # seed, top-ups and shortfalls (NZ 11.6(b)); goes negative


POOL_PREFIX = "pool:"


def pool_account(pool: str) -> str:
    """Ledger account of a pool."""
    return POOL_PREFIX + pool


def pool_legs(postings: Iterable[Posting]) -> list[tuple[str, int]]:
    """The legs that move pools, as (pool name, µ¢)."""
    return [(p.account[len(POOL_PREFIX):], p.amount_uc) for p in postings if p.account.startswith(POOL_PREFIX)]


class Posting(NamedTuple):
    """One leg of an entry: `amount_uc` is added to `account`'s balance (µ¢). A named tuple, so legs hash
    and compare in C: equal leg sets are found by value on the commit path (round_record.encode)."""

    account: str
    amount_uc: int


def require_balanced(postings: Iterable[Posting]) -> None:
    """Double entry: the legs of one movement sum to zero, or it is a bug that must not reach the ledger."""
    total = sum(p.amount_uc for p in postings)
    if total != 0:
        raise AssertionError(f"postings do not balance: they sum to {total} µ¢")


def merge(postings: Iterable[Posting]) -> tuple[Posting, ...]:
    """Sum legs per account, keeping first-seen order; zero legs are dropped."""
    totals: dict[str, int] = {}
    for p in postings:
        totals[p.account] = totals.get(p.account, 0) + p.amount_uc
    return tuple(Posting(a, v) for a, v in totals.items() if v != 0)
