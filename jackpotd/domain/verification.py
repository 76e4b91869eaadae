"""Hits awaiting verification (RULES.md §7): which hits wait, where their money waits, and the entries that
pay them (approval) or return them (rejection). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from .money import cents_to_uc
from .postings import OPERATOR_FUNDING, PAYOUTS, PENDING_PAYOUTS, Posting, pool_account
from .pricing import Payout


class HitStatus(StrEnum):
    """A hit's status (§7), as the journal, the ledger's hits and the API hold it (the value)."""

    PAID = "PAID"
    PENDING = "PENDING"  # above the link's verification threshold: awaiting a supervisor
    REJECTED = "REJECTED"


PAID, PENDING, REJECTED = HitStatus.PAID, HitStatus.PENDING, HitStatus.REJECTED


def status_of(amount_cents: int, threshold_cents: int) -> HitStatus:
    """§7: a hit above the link's verification threshold waits as PENDING; 0 means no threshold."""
    return PENDING if threshold_cents and amount_cents > threshold_cents else PAID


def held(payouts: Sequence[Payout], statuses: Sequence[str]) -> list[Posting]:
    """§7: pools are reduced at settlement; a PENDING prize waits in pending_payouts instead of being paid."""
    legs: list[Posting] = []
    for payout, status in zip(payouts, statuses, strict=True):
        if status == PENDING:
            need = cents_to_uc(payout.amount_cents)
            legs += [Posting(PAYOUTS, -need), Posting(PENDING_PAYOUTS, need)]
    return legs


def approval(amount_cents: int) -> list[Posting]:
    """§7: an approved hit is paid: its prize leaves pending_payouts for payouts."""
    need = cents_to_uc(amount_cents)
    return [Posting(PENDING_PAYOUTS, -need), Posting(PAYOUTS, need)]


def rejection(pool: str, amount_cents: int, funded_by_operator_cents: int) -> list[Posting]:
    """§7: a rejected hit's prize is reversed: what its pool paid goes back to the pool, and the shortfall the
    operator advanced for it (§5.7) back to the operator. The reset that followed (§5.8) stands: later
    rounds were priced against it."""
    need, funded = cents_to_uc(amount_cents), cents_to_uc(funded_by_operator_cents)
    return [Posting(PENDING_PAYOUTS, -need), Posting(pool_account(pool), need - funded),
            Posting(OPERATOR_FUNDING, funded)]
