"""Read decisions (ARCHITECTURE.md, Reads; RULES.md §8): what signs and meters announce. Pure."""

from __future__ import annotations

from ...domain.ids import parse_hit_id
from ...domain.money import floor_cents
from ...domain.verification import PAID, PENDING
from ..entries import FIRST_APPROVAL
from ..replies import HitDecision, HitResult, Reply
from ..results import HitAnnouncement, payouts_of

METER_INTERVAL = 0.1  # ARCHITECTURE.md, Reads: at most ten updates a second per link
HEARTBEAT = 2.0  # seconds between updates on a quiet link, well inside a table's 10 s silence limit (§8)
DECISIONS = ("approve_hit", "reject_hit", FIRST_APPROVAL)


def hits_of(reply: Reply) -> tuple[HitAnnouncement, ...]:
    """The hits a settle announces, each with its status (§7: PENDING above the verification threshold) and its
    pool's amount after the round (other replies: none)."""
    return tuple(HitAnnouncement(str(reply.content.get("table_id", "")), p.seat, p.hand, p.amount_cents, p.pool,
                                 p.hit_id, reply.seq, floor_cents(reply.balances.get(p.pool, 0)), p.status,
                                 0, p.approvals_needed if p.status == PENDING else 0)
                 for p in payouts_of(reply))


def announcements(kind: str, reply: Reply) -> tuple[HitAnnouncement, ...]:
    """What an entry announces on every sign (§8): a settle its hits (a PENDING one with 0 of its approvals), a
    hit decision (§7) the hit's new status (PAID, or REJECTED with its pool's amount after the return), a first
    approval the hit still PENDING with 1 of its 2 approvals (NM 15.1.24.12)."""
    if kind not in DECISIONS or not isinstance(reply.result, HitResult):
        return hits_of(reply)
    hit = reply.result.hit
    _, table_id, _, seat = parse_hit_id(hit.hit_id)
    return (HitAnnouncement(table_id, seat, hit.hand, hit.amount_cents, hit.pool, hit.hit_id, reply.seq,
                            floor_cents(reply.balances.get(hit.pool, 0)), hit.status, approvals_of(hit),
                            hit.approvals_needed),)


def approvals_of(hit: HitDecision) -> int:
    """The approvals a decided hit has: those its reply names (dual control), else its one approval if paid."""
    return len(hit.approved_by) if hit.approved_by else int(hit.status == PAID)
