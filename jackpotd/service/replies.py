"""Stored replies: what a request's atomic step answered, typed, and its one codec.

apply.lua stores a reply as JSON (Redis for the retention, the ledger's `entries.reply` forever):
`{"seq", "result", "balances", "content", "hash"}`, where `result` is the text `encode_result` made. Retries
are answered from it byte for byte, and the ledger's hash chain covers it, so the stored keys never change:
each type below is written and read field by field here, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, assert_never

import orjson

from ..canonical import canonical_json
from ..domain.pricing import Reset
from .seat_runs import RUNS_FROM, RunRows, as_runs, from_runs

# ---- rows of results ------------------------------------------------------------------------------


class Accepted(NamedTuple):
    """A commit's wager (§3): what it put into the pools and passed on over a cap, µ¢ (a named tuple: a round
    may hold 100,000)."""

    seat: int
    amount_cents: int
    contributed_uc: int
    overflow_uc: int


@dataclass(frozen=True, slots=True)
class Payout:
    """A settle's hit, priced (§5), and its status: PAID, or PENDING above the verification threshold (§7)."""

    seat: int
    hand: str
    amount_cents: int
    pool: str
    funded_by_operator_cents: int
    hit_id: str
    status: str
    pool_before_uc: int
    rule: str
    approvals_needed: int = 0  # §7: 0 paid at once, 1, or 2 under dual control (stored only when 2)


class SeatResult(NamedTuple):
    """A wagered seat of a settle: the category evaluated ("" without a hand), or why it had none."""

    seat: int
    hand: str
    no_hand: str = ""  # FOLDED, MUCKED or DEAD (replies stored before it: absent, read as "")


@dataclass(frozen=True, slots=True)
class Refund:
    """A void's refunded wager (§6)."""

    seat: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class HitDecision:
    """§7: a PENDING hit approved (PAID) or rejected (REJECTED), and what a rejection gave back."""

    hit_id: str
    status: str
    hand: str
    amount_cents: int
    pool: str
    returned_to_pool_uc: int
    returned_to_operator_cents: int
    # under dual control (NM 15.1.24.12) only: the audit actors who approved it, in order, and 2; a hit needing one
    # approval is stored as it always was (its approver is the entry's audit actor)
    approved_by: tuple[str, ...] = ()
    approvals_needed: int = 1


# ---- what each kind of step answers ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitResult:
    accepted: Sequence[Accepted]  # a tuple, or a big round's RunRows (seat_runs): no row per seat


@dataclass(frozen=True, slots=True)
class SettleResult:
    payouts: tuple[Payout, ...]
    resets: tuple[Reset, ...]  # §5.8, as the domain priced them
    seats: Sequence[SeatResult]  # a tuple, or a big round's RunRows (seat_runs): no row per seat
    unwagered: tuple[int, ...] = ()  # seats whose hands were sent without a jackpot wager: never paid


@dataclass(frozen=True, slots=True)
class VoidResult:
    refunds: tuple[Refund, ...]


@dataclass(frozen=True, slots=True)
class HitResult:
    hit: HitDecision


@dataclass(frozen=True, slots=True)
class LinkResult:
    """A configuration act: the link, and its new mode when the act changed the pools (NZ 11.6A/B)."""

    link_id: str
    mode: str | None = None


@dataclass(frozen=True, slots=True)
class NoResult:
    """A funding: the sequence and pools say it all."""


@dataclass(frozen=True, slots=True)
class LostResult:
    """A sequence number an operator accepted as removed from the ledger (`jackpotd unfence --accept`)."""


Result = CommitResult | SettleResult | VoidResult | HitResult | LinkResult | NoResult | LostResult


@dataclass(frozen=True, slots=True)
class Reply:
    """What the atomic step stored for a request: identical on every retry, kept by Redis for the retention
    and by the ledger forever."""

    seq: int
    result: Result
    balances: dict[str, int]
    content: Mapping[str, Any]  # the request content the id was first used for
    hash: str


# ---- the codec ------------------------------------------------------------------------------------


def stored_form(result: Result) -> dict[str, Any]:
    """A result as stored: its JSON object, field by field."""
    match result:
        case CommitResult(accepted):
            if isinstance(accepted, RunRows):  # built as runs (decide_commit): stored as they are
                return {"accepted_runs": accepted.runs}
            if len(accepted) > RUNS_FROM:  # [first, last, amount_cents, contributed_uc, overflow_uc] (seat_runs)
                return {"accepted_runs": as_runs(accepted)}
            return {"accepted": [{"seat": a.seat, "amount_cents": a.amount_cents, "contributed_uc": a.contributed_uc,
                                  "overflow_uc": a.overflow_uc} for a in accepted]}
        case SettleResult(payouts, resets, seats, unwagered):
            fields: dict[str, Any] = {
                "payouts": [{"seat": p.seat, "hand": p.hand, "amount_cents": p.amount_cents, "pool": p.pool,
                             "funded_by_operator_cents": p.funded_by_operator_cents, "hit_id": p.hit_id,
                             "status": p.status, "pool_before_uc": p.pool_before_uc, "rule": p.rule,
                             **({"approvals_needed": p.approvals_needed} if p.approvals_needed == 2 else {})}
                            for p in payouts],
                "resets": [{"pool": r.pool, "from_reserve_cents": r.from_reserve_cents,
                            "from_operator_cents": r.from_operator_cents} for r in resets],
                # `no_hand` only for a seat without a hand: a seat with cards is stored as it always was
                **({"seat_runs": seats.runs if isinstance(seats, RunRows) else as_runs(seats)}  # [first, last, hand,
                   if len(seats) > RUNS_FROM else  # no_hand] in a round of more than RUNS_FROM seats (seat_runs)
                   {"seats": [{"seat": s.seat, "hand": s.hand, **({"no_hand": s.no_hand} if s.no_hand else {})}
                              for s in seats]})}
            if unwagered:
                fields["unwagered"] = list(unwagered)
            return fields
        case VoidResult(refunds):
            return {"refunds": [{"seat": r.seat, "amount_cents": r.amount_cents} for r in refunds]}
        case HitResult(h):
            return {"hit": {"hit_id": h.hit_id, "status": h.status, "hand": h.hand, "amount_cents": h.amount_cents,
                            "pool": h.pool, "returned_to_pool_uc": h.returned_to_pool_uc,
                            "returned_to_operator_cents": h.returned_to_operator_cents,
                            **({"approved_by": list(h.approved_by)} if h.approved_by else {}),
                            **({"approvals_needed": h.approvals_needed} if h.approvals_needed != 1 else {})}}
        case LinkResult(link_id, mode):
            return {"link_id": link_id} if mode is None else {"link_id": link_id, "mode": mode}
        case NoResult():
            return {}
        case LostResult():
            return {"lost": True}
        case _:
            assert_never(result)


# id -> (a small commit's result, its text); the result is held, so its id stays its own. Equal commits share one
# result (decide/table.py, shared_shape), so its text is made once; all are dropped when ENCODED_KEPT are held.
_ENCODED: dict[int, tuple[Result, str]] = {}
ENCODED_KEPT = 4096


def encode_result(result: Result) -> str:
    """The stored text of a result (canonical JSON), as apply.lua embeds it in the reply. A small commit's
    result is encoded once per process: results are immutable, and equal commits share one."""
    known = _ENCODED.get(id(result))
    if known is not None and known[0] is result:
        return known[1]
    text = canonical_json(stored_form(result))
    if isinstance(result, CommitResult) and len(result.accepted) <= RUNS_FROM:
        if len(_ENCODED) >= ENCODED_KEPT:
            _ENCODED.clear()
        _ENCODED[id(result)] = (result, text)
    return text


def decode_result(d: Mapping[str, Any]) -> Result:
    """A stored result, by the keys it holds (each kind's are distinct); ValueError for a shape none has."""
    if "accepted_runs" in d:
        return CommitResult(tuple(Accepted(seat, *values) for seat, values in from_runs(d["accepted_runs"])))
    if "accepted" in d:
        return CommitResult(tuple(Accepted(a["seat"], a["amount_cents"], a["contributed_uc"], a["overflow_uc"])
                                  for a in d["accepted"]))
    if "payouts" in d:
        return SettleResult(
            tuple(Payout(p["seat"], p["hand"], p["amount_cents"], p["pool"], p["funded_by_operator_cents"],
                         p["hit_id"], p["status"], p["pool_before_uc"], p["rule"],
                         p.get("approvals_needed", 1 if p["status"] == "PENDING" else 0)) for p in d["payouts"]),
            tuple(Reset(r["pool"], r["from_reserve_cents"], r["from_operator_cents"]) for r in d["resets"]),
            tuple(SeatResult(seat, *values) for seat, values in from_runs(d["seat_runs"])) if "seat_runs" in d else
            tuple(SeatResult(s["seat"], s["hand"], s.get("no_hand", "")) for s in d["seats"]),
            tuple(d.get("unwagered", ())))
    if "refunds" in d:
        return VoidResult(tuple(Refund(r["seat"], r["amount_cents"]) for r in d["refunds"]))
    if "hit" in d:
        h = d["hit"]
        return HitResult(HitDecision(h["hit_id"], h["status"], h["hand"], h["amount_cents"], h["pool"],
                                     h["returned_to_pool_uc"], h["returned_to_operator_cents"],
                                     tuple(h.get("approved_by", ())), h.get("approvals_needed", 1)))
    if "link_id" in d:
        return LinkResult(d["link_id"], d.get("mode"))
    if d.get("lost") is True:
        return LostResult()
    if not d:
        return NoResult()
    raise ValueError(f"a stored result of no known kind: keys {sorted(d)}")


def pairs(flat: Sequence[str]) -> dict[str, int]:
    """A flat [k, v, k, v] of integer strings (HGETALL's shape; cjson writes an empty one as {})."""
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


def encode_reply(reply: Reply) -> str:
    """A reply written by Python rather than apply.lua (an accepted loss's): the same fields, canonical JSON."""
    flat = [x for pool, uc in sorted(reply.balances.items()) for x in (pool, str(uc))]
    return canonical_json({"seq": reply.seq, "result": stored_form(reply.result), "balances": flat,
                           "content": reply.content, "hash": reply.hash})


def decode_reply(raw: str | bytes) -> Reply:
    """A stored reply: result, balances and content embedded as JSON (since e98de99; see DECISIONS)."""
    d = orjson.loads(raw)
    return Reply(int(d["seq"]), decode_result(d["result"]), pairs(d["balances"]), d["content"], d["hash"])
