"""Hit decisions (RULES.md §7): a supervisor approves a PENDING hit, so it is paid (under dual control, NM
15.1.24.12, once a second, different supervisor has approved it too), or rejects it, so a reversing entry returns
its prize. Pure: the round's live record says which hits still wait."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import assert_never

from ...domain import verification as v
from ...domain.errors import FailedPrecondition, NotFound
from ...domain.link import LinkConfig
from ...domain.money import cents_to_uc
from ...domain.rounds import PENDING, SETTLED
from ..commands import DecideHit
from ..entries import FIRST_APPROVAL, ApprovalDetail, ApprovalEntry, DecisionDetail, DecisionEntry, RoundEntry
from ..errors import Unavailable
from ..ports import LiveRound, Step
from ..replies import HitDecision, HitResult
from ..round_record import HeldHit, RoundRecord
from .steps import step


@dataclass(frozen=True, slots=True)
class HitState:
    """What a hit decision reads: the clock, the hit's round as the live store holds it, and the hit's status
    as the ledger holds it (None: the ledger has no such hit)."""

    now_ms: int
    round: LiveRound | None
    ledger_status: str | None


@dataclass(frozen=True, slots=True)
class HitPlace:
    """Where a hit id points: its link, table, round and seat (domain.ids.parse_hit_id)."""

    link_id: str
    table_id: str
    round_id: str
    seat: int


def decide_hit(cmd: DecideHit, where: HitPlace, config: LinkConfig, version: str, state: HitState) -> Step:
    """§7: the held prize is paid (approval) or goes back to its pool and the operator (rejection)."""
    rnd = state.round
    record = RoundRecord.decode(rnd.data) if rnd is not None else None
    if record is not None and record.decided and where.seat in record.decided:
        raise FailedPrecondition("hit_id", cmd.hit_id, f"the hit was decided already: {record.decided[where.seat]}")
    if rnd is None or record is None or rnd.state != PENDING or not record.held or where.seat not in record.held:
        if state.ledger_status is None:
            raise NotFound("hit_id", cmd.hit_id, "no such hit")
        if state.ledger_status == v.PENDING:  # the ledger holds it waiting, the live store does not: it lost it
            raise Unavailable(f"link {where.link_id}: Redis does not hold pending hit {cmd.hit_id}; retry with "
                              "the same request_id")
        raise FailedPrecondition("hit_id", cmd.hit_id, f"the hit is {state.ledger_status}; only a PENDING hit "
                                 "is approved or rejected")
    hit = record.held[where.seat]
    earlier = (record.approvals or {}).get(where.seat, ())
    if cmd.approve:
        outcome = v.approve(earlier, hit.approvals_needed, cmd.audit.actor)
        match outcome:
            case v.SamePerson(first):
                raise FailedPrecondition("hit_id", cmd.hit_id, f"{v.DUAL_CONTROL}: {first} approved it already; a "
                                         "second, different supervisor must approve")
            case v.Awaits(approved_by):
                return _first_approval(cmd, where, record, rnd, hit, approved_by, version, state.now_ms)
            case v.Pays(approved_by):
                pass
            case _:
                assert_never(outcome)
    else:
        approved_by = earlier  # §7: one supervisor rejects, before or after a first approval
    status = v.PAID if cmd.approve else v.REJECTED
    legs = (v.approval(hit.amount_cents) if cmd.approve
            else v.rejection(hit.pool, hit.amount_cents, hit.funded_by_operator_cents))
    still = {s: h for s, h in record.held.items() if s != where.seat}
    approvals = {s: a for s, a in (record.approvals or {}).items() if s != where.seat}
    after = replace(record, held=still or None, decided={**(record.decided or {}), where.seat: status},
                    approvals=approvals or None)
    new_state = PENDING if still else SETTLED
    round_data = after.encode()
    returned_uc = 0 if cmd.approve else cents_to_uc(hit.amount_cents - hit.funded_by_operator_cents)
    hand = (record.hands or {}).get(where.seat, "")
    result = HitResult(HitDecision(hit.hit_id, status, hand, hit.amount_cents, hit.pool, returned_uc,
                                   0 if cmd.approve else hit.funded_by_operator_cents,
                                   tuple(approved_by) if hit.approvals_needed == 2 else (), hit.approvals_needed))
    return step(where.link_id, cmd.request, "approve_hit" if cmd.approve else "reject_hit", version, state.now_ms,
                postings=legs, result=result,
                detail=DecisionDetail(RoundEntry(where.table_id, where.round_id, new_state, round_data),
                                      DecisionEntry(hit.hit_id, where.table_id, where.round_id, where.seat, status,
                                                    cmd.reason), cmd.audit),
                round=(where.table_id, where.round_id), round_expect=PENDING, round_rev=rnd.rev,
                round_new_state=new_state, round_data=round_data, refusal_field=("hit_id", cmd.hit_id))


def _first_approval(cmd: DecideHit, where: HitPlace, record: RoundRecord, rnd: LiveRound, hit: HeldHit,
                    approved_by: tuple[str, ...], version: str, now_ms: int) -> Step:
    """§7, NM 15.1.24.12: the first of two approvals, recorded in the round and chained as its own entry
    (first_approval, no postings); the hit stays PENDING, its prize in pending_payouts."""
    after = replace(record, approvals={**(record.approvals or {}), where.seat: approved_by})
    round_data = after.encode()
    hand = (record.hands or {}).get(where.seat, "")
    result = HitResult(HitDecision(hit.hit_id, v.PENDING, hand, hit.amount_cents, hit.pool, 0, 0, approved_by,
                                   hit.approvals_needed))
    return step(where.link_id, cmd.request, FIRST_APPROVAL, version, now_ms, result=result,
                detail=ApprovalDetail(RoundEntry(where.table_id, where.round_id, PENDING, round_data),
                                      ApprovalEntry(hit.hit_id, where.table_id, where.round_id, where.seat), cmd.audit),
                round=(where.table_id, where.round_id), round_expect=PENDING, round_rev=rnd.rev,
                round_new_state=PENDING, round_data=round_data, refusal_field=("hit_id", cmd.hit_id))
