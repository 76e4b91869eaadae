"""`jackpotd fenced` and `jackpotd unfence`: what stopped a link, and an operator's explicit, audited act to lift it.

A link fenced because the ledger was changed behind the writer's back (head_guard) is lifted only when the ledger
is again the one the anchors kept outside the database back: restored from a backup, or with `restore` its
removed entries put back from Redis's journal (only if they rebuild the anchored hashes). Otherwise the operator
may `accept` the ledger as it is: a truncation's missing sequence numbers become `lost` entries (sequence numbers
are never reused), and a signed acceptance is appended to the anchors. Every act needs a reason, is recorded in the
audit trail with the operator, and the writer checks the anchors again before it follows the link.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..canonical import canonical_json
from ..domain.rounds import RoundState
from ..service.replies import LostResult, Reply, encode_reply
from . import ledger, recovery
from .checkpoints import Acceptance, Anchor, Checkpointer, Lift, load_link
from .ledger import head_guard
from .ledger.head_guard import Backed, Tamper, Tampered, Verdict
from .redis.pools import RedisPools

log = logging.getLogger("jackpotd.unfence")
LOST = "lost"  # the kind of the entries that stand for sequence numbers an operator accepted as removed


@dataclass(frozen=True, slots=True)
class NotFenced:
    link_id: str


@dataclass(frozen=True, slots=True)
class StillTampered:
    """Refused: the ledger is still not the one the anchors back."""

    verdict: Tampered
    advice: str


@dataclass(frozen=True, slots=True)
class Lifted:
    head: int
    how: str


Outcome = NotFenced | StillTampered | Lifted


@dataclass(frozen=True, slots=True)
class Act:
    """Who lifts the fence, why, and how (`discard`: rebuild Redis from the ledger; `restore`: put removed entries
    back from Redis's journal; `accept`: accept the ledger as it is)."""

    actor: str
    reason: str
    discard: bool = False
    restore: bool = False
    accept: bool = False


async def current(pg: ledger.Pool, link: str, anchors: Checkpointer | None) -> Verdict:
    """The link's ledger head judged against its newest anchor (Backed when no anchors are kept). After a fence, the
    ledger must be exactly the head the writer anchored with it: nothing appends to a fenced link, so entries after
    it were written by something else."""
    line = anchors.last_line(link) if anchors is not None else None
    verdict = (await head_guard.check(pg, {link: None if line is None else line.head}))[link]
    if line is not None and line.fenced:
        verdict = head_guard.held_to(line.head, verdict)
    return verdict


async def unfence(redis: RedisPools, pg: ledger.Pool, link: str, act: Act, anchors: Checkpointer | None) -> Outcome:
    """Lift the link's fence if its ledger is backed by its anchors (after `restore` or `accept` when asked);
    record the act in the audit trail whatever the outcome, a failure included."""
    if link not in await ledger.fences(pg):
        return NotFenced(link)
    outcome: Outcome | None = None
    detail = "failed"
    try:
        outcome = await _lift(redis, pg, link, act, anchors)
        detail = (outcome.advice[:500] if isinstance(outcome, StillTampered) else
                  f"{outcome.how}; head {outcome.head}" if isinstance(outcome, Lifted) else "not fenced")
    except Exception as e:
        detail = f"failed: {type(e).__name__}: {e}"[:500]
        raise
    finally:
        await ledger.record_admin_act(pg, {"actor": act.actor.removeprefix("operator:"), "role": "operator",
                                           "method": "Unfence", "link_id": link, "reason": act.reason,
                                           "outcome": "OK" if isinstance(outcome, Lifted) else "FAILED_PRECONDITION",
                                           "detail": detail})
    return outcome


async def _lift(redis: RedisPools, pg: ledger.Pool, link: str, act: Act, anchors: Checkpointer | None) -> Outcome:
    verdict = await current(pg, link, anchors)
    how = "fence lifted"
    restorable = isinstance(verdict, Tampered) and act.restore and verdict.kind is Tamper.TRUNCATED
    if restorable and isinstance(verdict, Tampered) and await _restore(redis, pg, link, verdict):
        removed = f"{verdict.first_seq}..{verdict.anchor.seq}"
        verdict = await current(pg, link, anchors)
        how = f"entries {removed} put back from Redis's journal; fence lifted"
    if isinstance(verdict, Backed) or verdict.kind is Tamper.TRUNCATED:  # every anchor up to the head must hold
        head = verdict.head if isinstance(verdict, Backed) else verdict.found
        altered = await _anchored_mismatch(pg, link, anchors, head.seq)
        if altered is not None and isinstance(verdict, Tampered):  # truncated, and rewritten before: no accepting
            return StillTampered(verdict, f"{verdict.reason}; and entry {altered.seq}, which the anchors name, was "
                                          "rewritten too: restore the database from a backup (OPERATIONS.md, A "
                                          "fenced link after tampering)")
        if altered is not None:
            verdict = Tampered(Tamper.REWRITTEN, altered, head, altered.seq)
    if isinstance(verdict, Tampered) and act.accept:
        if verdict.kind is Tamper.HEAD_EDITED or anchors is None:
            return StillTampered(verdict, "the link's head row (table links) is not its last entry: restore the "
                                          "database from a backup (OPERATIONS.md, A fenced link after tampering)")
        accepted = await _accept(pg, link, verdict, act)
        anchors.record(link, accepted, accepted=Acceptance(
            act.actor, act.reason, verdict.kind.value, verdict.anchor,
            (verdict.first_seq, verdict.anchor.seq) if verdict.kind is Tamper.TRUNCATED else None))
        lost = verdict.kind is Tamper.TRUNCATED
        recorded = f", entries {verdict.first_seq}..{verdict.anchor.seq} recorded as lost" if lost else ""
        how = f"the ledger accepted as it is{recorded}; Redis rebuilt from the ledger; fence lifted"
        verdict = Backed(accepted)
    if isinstance(verdict, Tampered):
        return StillTampered(verdict, advice(verdict))
    if act.discard or act.accept:  # Redis goes back to what the ledger holds: entries it never took are dropped
        await recovery.rebuild(redis, pg, link)
        if how == "fence lifted":
            how = "Redis rebuilt from the ledger (entries it never took discarded); fence lifted"
    if anchors is not None and not act.accept:  # the writer lifts a fence only on an operator's line
        anchors.record(link, verdict.head, lifted=Lift(act.actor, act.reason))
    await ledger.clear_fence(pg, link)
    await redis.set_fence(link, None)
    log.warning("link %s: %s by %s: %s", link, how, act.actor, act.reason)
    return Lifted(verdict.head.seq, how)


async def _anchored_mismatch(pg: ledger.Pool, link: str, anchors: Checkpointer | None, upto: int) -> Anchor | None:
    """The first point the anchors name at or before entry `upto` whose entry has another hash in the ledger (points
    from before an operator's last acceptance do not count: it accepted what it found), or None."""
    if anchors is None:
        return None
    lines = load_link(anchors.directory, anchors.key, link)
    since = max((n for n, cp in enumerate(lines) if cp.accepted is not None), default=0)
    points = {p.seq: p.hash for cp in lines[since:] for p in cp.points() if 0 < p.seq <= upto}
    if not points:
        return None
    found = {int(r["seq"]): bytes(r["hash"]) for r in await pg.fetch(
        "SELECT seq, hash FROM entries WHERE link_id = $1 AND seq = ANY($2::bigint[])", link, list(points))}
    bad = sorted(seq for seq, digest in points.items() if found.get(seq) != digest)
    return Anchor(bad[0], points[bad[0]]) if bad else None


def advice(verdict: Tampered) -> str:
    """What an operator can do about a tampered ledger."""
    if verdict.kind is Tamper.TRUNCATED:
        return (f"{verdict.reason}. Put the removed entries back: restore the database from a backup, or "
                "`jackpotd unfence LINK --restore --reason ...` if they are still in Redis's journal; or accept "
                "their loss with `--accept --reason ...` (they are recorded as lost entries, sequence numbers are "
                "never reused). OPERATIONS.md, A fenced link after tampering")
    if verdict.kind in (Tamper.REWRITTEN, Tamper.EXTENDED):
        return (f"{verdict.reason}. Restore the database from a backup, then `jackpotd unfence LINK --reason ...`; "
                "`jackpotd audit` names the first altered entry. Or accept the rewritten ledger with `--accept "
                "--reason ...`. OPERATIONS.md, A fenced link after tampering")
    return f"{verdict.reason}. Restore the database from a backup (OPERATIONS.md, A fenced link after tampering)"


async def _restore(redis: RedisPools, pg: ledger.Pool, link: str, verdict: Tampered) -> bool:
    """Append the removed entries again from Redis's journal, in one transaction kept only if the head they make
    is exactly the anchored one (same sequence, same hash): the very entries that were removed, nothing else."""
    rows = await redis.journal_after(link, verdict.found.seq, count=verdict.anchor.seq - verdict.found.seq)
    entries = [e for e in ledger.journal_entries(link, rows) if e.seq <= verdict.anchor.seq]
    if not entries or entries[-1].seq != verdict.anchor.seq:
        log.error("link %s: Redis's journal no longer holds entries %d..%d", link, verdict.first_seq,
                  verdict.anchor.seq)
        return False
    try:
        async with pg.acquire() as conn, conn.transaction():
            appended = await ledger.write_batch(conn, entries)
            head = (await head_guard.found_heads(conn, {link: verdict.anchor}))[link]
            if link in appended.refused or head.head != verdict.anchor:
                raise _Rollback
    except _Rollback:
        log.error("link %s: the entries in Redis's journal do not rebuild the anchored head %d: not restored", link,
                  verdict.anchor.seq)
        return False
    return True


class _Rollback(Exception):
    """Undo a restore whose entries do not make the anchored head."""


async def _accept(pg: ledger.Pool, link: str, verdict: Tampered, act: Act) -> Anchor:
    """Accept the ledger as it is: a truncation's removed sequence numbers become `lost` entries chained onto the
    head (so none is ever reused), the balances are what the postings make them, and rounds whose entries were
    removed go back to their state at the head (LOST when none is left). In one transaction that holds the link's
    head, judged again inside it. Returns the new head."""
    async with pg.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM links WHERE link_id = $1 FOR UPDATE", link)
        now = (await head_guard.found_heads(conn, {link: verdict.anchor}))[link]
        if now.head != verdict.found:
            raise RuntimeError(f"link {link}: its ledger head moved to {now.head.seq} while it was being accepted")
        if verdict.kind is Tamper.TRUNCATED:
            balances = await _pool_balances(conn, link)
            at = int(time.time() * 1000)
            lost = [_lost_entry(link, seq, at, act, verdict, balances)
                    for seq in range(verdict.first_seq, verdict.anchor.seq + 1)]
            appended = await ledger.write_batch(conn, lost)
            if [w.seq for w in appended.written.get(link, [])] != [e.seq for e in lost]:
                raise RuntimeError(f"link {link}: the lost entries could not be written ({appended.refused})")
            await _repair_projections(conn, link, verdict.found.seq)
        found = (await head_guard.found_heads(conn, {link: None}))[link]
    return found.head


async def _pool_balances(conn: Any, link: str) -> dict[str, int]:
    rows = await conn.fetch("SELECT account, sum(amount_uc) AS uc FROM postings WHERE link_id = $1 AND account "
                            "LIKE 'pool:%' GROUP BY account", link)
    return {r["account"][5:]: int(r["uc"]) for r in rows}


def _lost_entry(link: str, seq: int, now_ms: int, act: Act, verdict: Tampered,
                balances: dict[str, int]) -> ledger.JournalEntry:
    content = {"lost": seq, "link_id": link}
    request_hash = hashlib.sha256(canonical_json(content).encode()).hexdigest()
    entry = {"kind": LOST, "ts_ms": now_ms, "request_id": f"ledger:lost:{seq}", "request_hash": request_hash,
             "postings": [], "lost": {"accepted_by": act.actor, "reason": act.reason,
                                      "removed": [verdict.first_seq, verdict.anchor.seq]}}
    reply = encode_reply(Reply(seq, LostResult(), balances, content, request_hash))
    return ledger.JournalEntry(link, seq, canonical_json(entry), {}, reply)


async def _repair_projections(conn: Any, link: str, head: int) -> None:
    """After a truncation is accepted: balances from the postings, and each round the removed entries touched back
    to its last state the ledger holds (LOST when it holds none)."""
    await conn.execute("UPDATE account_balances b SET balance_uc = coalesce((SELECT sum(p.amount_uc) FROM postings p "
                       "WHERE p.link_id = b.link_id AND p.account = b.account), 0) WHERE b.link_id = $1", link)
    for r in await conn.fetch("SELECT table_id, round_id FROM rounds WHERE link_id = $1 AND rev > $2", link, head):
        last = await conn.fetchrow(
            "SELECT seq, entry::json -> 'round' ->> 'state' AS state, entry::json -> 'round' ->> 'data' AS data "
            "FROM entries WHERE link_id = $1 AND seq <= $2 AND entry::json -> 'round' ->> 'table_id' = $3 "
            "AND entry::json -> 'round' ->> 'round_id' = $4 ORDER BY seq DESC LIMIT 1",
            link, head, r["table_id"], r["round_id"])
        if last is None:
            await conn.execute("UPDATE rounds SET state = $4 WHERE link_id = $1 AND table_id = $2 AND round_id = $3",
                               link, r["table_id"], r["round_id"], RoundState.LOST)
        else:
            await conn.execute("UPDATE rounds SET state = $4, rev = $5, data = $6 WHERE link_id = $1 AND "
                               "table_id = $2 AND round_id = $3", link, r["table_id"], r["round_id"], last["state"],
                               int(last["seq"]), last["data"])


@dataclass(frozen=True, slots=True)
class FenceView:
    """A fenced link as `jackpotd fenced` shows it: the fence, the entry it names, and what the ledger is now."""

    fence: ledger.Fence
    entry: str
    verdict: Verdict | None  # None: no anchors are kept, the ledger cannot be judged


async def fenced(redis: RedisPools, pg: ledger.Pool, anchors: Checkpointer | None) -> list[FenceView]:
    """Every fenced link with its entry and, for tampering, the ledger's head judged against its anchors now."""
    out = []
    for f, entry in await recovery.fenced_links(redis, pg):
        verdict = await current(pg, f.link_id, anchors) if anchors is not None else None
        out.append(FenceView(f, entry, verdict))
    return out
