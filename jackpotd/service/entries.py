"""Journal entries, typed, and their one encoder: what a step hands the ledger through Redis's journal.

The entry's canonical JSON is chained by the ledger (every byte is covered by its hash), so each kind's keys are
written here exactly as earlier versions wrote them, absent keys included (a config act always carries "table",
null unless it registers one). The ledger reads entries of every version, tampered ones too, in store/ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from ..canonical import canonical_json
from ..domain.postings import Posting
from .commands import Audit, RtpOverride

FIRST_APPROVAL = "first_approval"  # the kind of a first of two approvals (§7, NM 15.1.24.12)


@dataclass(frozen=True, slots=True)
class RoundEntry:
    """The round as the entry carries it to the ledger's rounds table: its new state and stored data."""

    table_id: str
    round_id: str
    state: str
    data: str


@dataclass(frozen=True, slots=True)
class HitEntry:
    """A hit as the ledger's hits table records it (§10): what traces the payout to its round, seat and cards."""

    hit_id: str
    table_id: str
    round_id: str
    seat: int
    hand: str
    cards: tuple[str, ...]
    pool: str
    amount_cents: int
    funded_by_operator_cents: int
    pool_before_uc: int
    rule: str
    status: str
    pool_after_cents: int
    approvals_needed: int = 0  # §7: 0 paid at once, 1, or 2 under dual control (NM 15.1.24.12)


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    """§7: a supervisor's decision on a held hit."""

    hit_id: str
    table_id: str
    round_id: str
    seat: int
    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class CommitDetail:
    round: RoundEntry
    overflow: tuple[tuple[str, str, int], ...] = ()  # §10: (from pool, to pool, µ¢) passed on over a cap


@dataclass(frozen=True, slots=True)
class SettleDetail:
    round: RoundEntry
    hits: tuple[HitEntry, ...]
    # a round of more than RUNS_FROM seats (seat_runs) also writes its resets here, (pool, from reserve, from
    # operator) in cents, so the ledger writer need not parse its reply (the request's every seat) to read them
    resets: tuple[tuple[str, int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class VoidDetail:
    round: RoundEntry
    reason: str


@dataclass(frozen=True, slots=True)
class DecisionDetail:
    round: RoundEntry
    decision: DecisionEntry
    audit: Audit


@dataclass(frozen=True, slots=True)
class ApprovalEntry:
    """§7, NM 15.1.24.12: the first of the two approvals a hit under dual control needs (its audit names who)."""

    hit_id: str
    table_id: str
    round_id: str
    seat: int


@dataclass(frozen=True, slots=True)
class ApprovalDetail:
    """A first approval (kind first_approval): the round with the approval recorded, no postings."""

    round: RoundEntry
    approval: ApprovalEntry
    audit: Audit


@dataclass(frozen=True, slots=True)
class FundDetail:
    audit: Audit


@dataclass(frozen=True, slots=True)
class ConfigDetail:
    """A configuration act (§9): the whole new config, and the table it registers, if any."""

    config: Mapping[str, Any]  # LinkConfig.to_dict()
    audit: Audit
    table: str | None
    override: RtpOverride | None = None  # issue 33: the approval under which a game returns 100% or more at reset


@dataclass(frozen=True, slots=True)
class RestructureDetail:
    """Pools split or combined (NZ 11.6A/B): the new config."""

    config: Mapping[str, Any]
    audit: Audit


Detail = (CommitDetail | SettleDetail | VoidDetail | DecisionDetail | ApprovalDetail | FundDetail | ConfigDetail
          | RestructureDetail)


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal entry: the request it answers, its legs merged per account, and what its kind adds."""

    kind: str
    ts_ms: int
    request_id: str
    request_hash: str
    postings: Sequence[Posting]
    detail: Detail


def _audit(audit: Audit) -> dict[str, str]:
    return {"actor": audit.actor, "reason": audit.reason, "approval_ref": audit.approval_ref}


def _round(r: RoundEntry) -> dict[str, str]:
    return {"table_id": r.table_id, "round_id": r.round_id, "state": r.state, "data": r.data}


def _hit(h: HitEntry) -> dict[str, Any]:
    return {"hit_id": h.hit_id, "table_id": h.table_id, "round_id": h.round_id, "seat": h.seat, "hand": h.hand,
            "cards": list(h.cards), "pool": h.pool, "amount_cents": h.amount_cents,
            "funded_by_operator_cents": h.funded_by_operator_cents, "pool_before_uc": h.pool_before_uc,
            "rule": h.rule, "status": h.status, "pool_after_cents": h.pool_after_cents,
            # only under dual control: every other hit is written as it always was (the ledger reads 1)
            **({"approvals_needed": h.approvals_needed} if h.approvals_needed == 2 else {})}


def _detail(detail: Detail) -> dict[str, Any]:
    match detail:
        case CommitDetail(rnd, overflow):
            return {"round": _round(rnd), **({"overflow": [list(o) for o in overflow]} if overflow else {})}
        case SettleDetail(rnd, hits, resets):
            return {"round": _round(rnd), "hits": [_hit(h) for h in hits],
                    **({"resets": [list(r) for r in resets]} if resets is not None else {})}
        case VoidDetail(rnd, reason):
            return {"round": _round(rnd), "reason": reason}
        case DecisionDetail(rnd, d, audit):
            return {"round": _round(rnd), "audit": _audit(audit),
                    "decision": {"hit_id": d.hit_id, "table_id": d.table_id, "round_id": d.round_id, "seat": d.seat,
                                 "status": d.status, "reason": d.reason}}
        case ApprovalDetail(rnd, a, audit):
            return {"round": _round(rnd), "audit": _audit(audit),
                    "approval": {"hit_id": a.hit_id, "table_id": a.table_id, "round_id": a.round_id, "seat": a.seat}}
        case FundDetail(audit):
            return {"audit": _audit(audit)}
        case ConfigDetail(config, audit, table, override):
            said: dict[str, Any] = _audit(audit)
            if override is not None:  # in the chained entry itself, not only in the trail of acts
                said["rtp_override"] = {"approval_ref": override.approval_ref, "reason": override.reason}
            return {"config": config, "audit": said, "table": table}
        case RestructureDetail(config, audit):
            return {"config": config, "audit": _audit(audit)}
        case _:
            assert_never(detail)


def entry_form(entry: Entry) -> dict[str, Any]:
    """An entry as the journal carries it: its JSON object, field by field."""
    return {"kind": entry.kind, "ts_ms": entry.ts_ms, "request_id": entry.request_id,
            "request_hash": entry.request_hash, "postings": [[p.account, p.amount_uc] for p in entry.postings],
            **_detail(entry.detail)}


def encode_entry(entry: Entry) -> str:
    """The entry's canonical JSON, as the journal carries it and the ledger chains it."""
    return canonical_json(entry_form(entry))
