"""Hits awaiting verification (RULES.md §7): which hits wait, where their money waits, and the entries that
pay them (approval) or return them (rejection). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from .money import cents_to_uc
from .postings import OPERATOR_FUNDING, PAYOUTS, PENDING_PAYOUTS, Posting, pool_account
from .pricing import Payout


class HitStatus(StrEnum):
    """A hit's status (§7), as the journal, the ledger's hits and the API hold it (the value)."""

    PAID = "PAID"
    PENDING = "PENDING"  # above the verification threshold (or at the dual one): awaiting supervisors
    REJECTED = "REJECTED"


PAID, PENDING, REJECTED = HitStatus.PAID, HitStatus.PENDING, HitStatus.REJECTED


DUAL_CONTROL = "dual control (NM 15.1.24.12)"  # the rule a second approval by the same person breaks


def status_of(amount_cents: int, threshold_cents: int, dual_threshold_cents: int = 0) -> HitStatus:
    """§7: a hit above the link's verification threshold, or at or above its dual-approval threshold, waits as
    PENDING; 0 means no such threshold."""
    if (threshold_cents and amount_cents > threshold_cents) or needs_two(amount_cents, dual_threshold_cents):
        return PENDING
    return PAID


def needs_two(amount_cents: int, dual_threshold_cents: int) -> bool:
    """§7, NM 15.1.24.12: a hit at or above the link's dual-approval threshold (0: off) needs two supervisors."""
    return bool(dual_threshold_cents) and amount_cents >= dual_threshold_cents


def approvals_needed(amount_cents: int, threshold_cents: int, dual_threshold_cents: int) -> int:
    """How many distinct supervisors must approve a hit before it is paid: 0 (paid at settlement), 1 or 2."""
    if status_of(amount_cents, threshold_cents, dual_threshold_cents) == PAID:
        return 0
    return 2 if needs_two(amount_cents, dual_threshold_cents) else 1


def person_of(actor: str) -> str:
    """The person an audit actor names: the part after the last " for " ("console:floor-1 for supervisor:alice"
    is supervisor:alice), else the actor itself; so one person through a console and directly is one person."""
    _, sep, person = actor.rpartition(" for ")
    return person if sep else actor


@dataclass(frozen=True, slots=True)
class Pays:
    """The approval completes the hit's approvals: it is paid."""

    approved_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Awaits:
    """The first of two approvals (dual control): recorded, the hit still PENDING."""

    approved_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SamePerson:
    """Refused: the person approved this hit already; a second, different supervisor must approve."""

    earlier: str


ApprovalOutcome = Pays | Awaits | SamePerson


def approve(approved_by: Sequence[str], needed: int, actor: str) -> ApprovalOutcome:
    """§7, NM 15.1.24.12: an approval by `actor` of a hit that has `approved_by` and needs `needed` approvals
    (at least 1): paid once `needed` distinct persons (person_of) have approved, refused for the same person."""
    for earlier in approved_by:
        if person_of(earlier) == person_of(actor):
            return SamePerson(earlier)
    after = (*approved_by, actor)
    return Pays(after) if len(after) >= max(needed, 1) else Awaits(after)


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
