"""`jackpotd audit`: every balance recomputed from the postings, the hash chain verified, the projections
(postings, hits, balances, the link's head) re-derived from the entries, Redis compared, and the chain checked
against checkpoints kept outside the database (docs/DECISIONS.md, Hash chain)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson

from ...domain.money import cents_to_uc
from ...domain.postings import PAYOUTS, PENDING_PAYOUTS, merge
from ...domain.verification import PAID, PENDING, REJECTED, approval, person_of, rejection
from ...service.ports import AuditReport
from ..checkpoints import Checkpoint
from . import anchor_audit
from .chain import chain_hash
from .reads import HIT_DECISION, HIT_STATUS
from .rows import approval_row, decision_row
from .summaries import Summaries, entry_flows, ms_of, time_of

PROBLEMS_MAX = 200


_HIT = ("hit_id", "table_id", "round_id", "seat", "hand", "cards", "pool", "amount_cents",
        "funded_by_operator_cents", "pool_before_uc", "rule", "status")
_NEEDED = "approvals_needed"  # a settle's hit carries it only under dual control (2); the row holds 1 otherwise


def _hit(source: Any) -> tuple[Any, ...]:
    """A hit's fields, from a hits row or from the entry's JSON, comparable."""
    return (*(tuple(source[k]) if k == "cards" else source[k] for k in _HIT),
            source.get(_NEEDED, 1))


def approval_problem(first: dict[str, Any], held: dict[tuple[str, str, int], tuple[str, int, int, str]],
                     needs: dict[tuple[str, str, int], int], posted: dict[str, int]) -> str:
    """What is wrong with a first approval's entry (§7, NM 15.1.24.12) ('' when nothing is): it approves a hit
    held for two approvals, and moves no money."""
    where = (first["table_id"], first["round_id"], first["seat"])
    hit = held.get(where)
    if hit is None or hit[3] != PENDING or needs.get(where) != 2:
        return f"it approves hit {first['hit_id']} first of two, which was not held for two approvals"
    if any(posted.values()):
        return f"it posts {posted} but a first approval moves nothing"
    return ""


def decision_problem(kind: str, decision: dict[str, Any], held: dict[tuple[str, str, int], tuple[str, int, int, str]],
                      posted: dict[str, int]) -> str:
    """What is wrong with a hit decision's entry, given the hit it decides ('' when nothing is)."""
    hit = held.get((decision["table_id"], decision["round_id"], decision["seat"]))
    if hit is None or hit[3] != PENDING:
        return f"it decides hit {decision['hit_id']}, which was not held for verification"
    pool, amount, funded, _ = hit
    expected = {"approve_hit": (PAID, approval(amount)),
                "reject_hit": (REJECTED, rejection(pool, amount, funded))}.get(kind)
    if expected is None or decision["status"] != expected[0]:
        return f"a {kind} entry records the decision {decision['status']}"
    legs = {p.account: p.amount_uc for p in merge(expected[1])}
    if posted != legs:
        return f"it posts {posted} but deciding hit {decision['hit_id']} moves {legs}"
    return ""


async def audit_link(conn: Any, link_id: str, redis_pools: dict[str, int],
                     redis_seq: int, checkpoints: Sequence[Checkpoint] = (), *,
                     redis_compared: bool = True) -> AuditReport:
    """Recompute every balance from the postings, verify the hash chain (each entry with its own chain version)
    and that each entry sums to zero; re-derive the postings, hits, balances and head rows from the entries and
    name the first entry that differs; check the chain against `checkpoints` (already MAC-verified). Not
    `redis_compared` (an embedded Valkey the audit itself started, empty): Redis's pools and seq are not compared."""
    problems: list[str] = []
    altered: dict[int, list[str]] = {}  # seq -> what of it differs
    prev = b""
    recomputed_prev = b""
    recomputed: dict[int, bytes] = {}  # each entry's hash recomputed from its stored bytes along the chain
    balances: dict[str, int] = {}
    derived: dict[str, int] = {}  # balances from the entries' own postings
    count = 0
    balanced = True
    chain_ok = True
    expected_seq = 1
    rows = await conn.fetch("SELECT seq, created_at, entry::text AS entry, reply, chain_version, prev_hash, hash "
                            "FROM entries WHERE link_id = $1 ORDER BY seq", link_id)
    sums = Summaries()  # finance's summaries re-derived from the entries
    last_ms = 0
    legs_by_seq: dict[int, list[tuple[str, int, int]]] = {}
    for r in await conn.fetch("SELECT seq, account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                              "ORDER BY seq, idx", link_id):
        legs_by_seq.setdefault(int(r["seq"]), []).append(
            (r["account"], int(r["amount_uc"]), int(r["balance_after_uc"])))
    hits_by_seq: dict[int, list[tuple[Any, ...]]] = {}
    held: dict[tuple[str, str, int], tuple[str, int, int, str]] = {}  # (table, round, seat) -> pool, amount, ...
    needs: dict[tuple[str, str, int], int] = {}
    for r in await conn.fetch("SELECT seq, " + ", ".join((*_HIT, _NEEDED)) + " FROM hits WHERE link_id = $1",
                              link_id):
        hits_by_seq.setdefault(int(r["seq"]), []).append(_hit(r))
        needs[(r["table_id"], r["round_id"], int(r["seat"]))] = int(r[_NEEDED])
        held[(r["table_id"], r["round_id"], int(r["seat"]))] = (r["pool"], int(r["amount_cents"]),
                                                                  int(r["funded_by_operator_cents"]), r["status"])
    decisions_by_seq: dict[int, list[tuple[Any, ...]]] = {}
    for r in await conn.fetch("SELECT link_id, table_id, round_id, seat, hit_id, seq, status, reason "
                              "FROM hit_decisions WHERE link_id = $1", link_id):
        decisions_by_seq.setdefault(int(r["seq"]), []).append(tuple(r.values()))
    approvals_by_seq: dict[int, list[tuple[Any, ...]]] = {}
    for r in await conn.fetch("SELECT link_id, table_id, round_id, seat, hit_id, seq, actor "
                              "FROM hit_approvals WHERE link_id = $1", link_id):
        approvals_by_seq.setdefault(int(r["seq"]), []).append(tuple(r.values()))
    firsts: dict[tuple[str, str, int], str] = {}  # the first of two approvals of each hit, as the entries say
    seqs = set()
    drifted: set[str] = set()  # accounts whose balance_after was already reported wrong (once each)
    for n, r in enumerate(rows):
        if n % 1000 == 999:
            await asyncio.sleep(0)  # a long audit (VerifyLedger) must not hold up the calls beside it
        seq = int(r["seq"])
        seqs.add(seq)
        count += 1
        if seq != expected_seq:
            problems.append(f"sequence gap: expected {expected_seq}, found {seq}")
        expected_seq = seq + 1
        legs = legs_by_seq.get(seq, [])
        if sum(a for _, a, _ in legs) != 0:
            balanced = False
            problems.append(f"entry {seq} does not sum to zero")
        for account, amount, after in legs:
            balances[account] = balances.get(account, 0) + amount
            if balances[account] != after and account not in drifted:
                drifted.add(account)  # every later balance_after differs too: the first names the entry
                problems.append(f"entry {seq}: {account} balance_after {after} but recomputed {balances[account]}")
        canonical = r["entry"]  # stored as `json`: the very text the service wrote
        version = int(r["chain_version"])
        if version not in (1, 2, 3):
            altered.setdefault(seq, []).append(f"unknown chain version {version}")
        reply = r["reply"] if version >= 2 else None
        created_ms = ms_of(r["created_at"])
        dated = created_ms if version >= 3 else None
        if (bytes(r["prev_hash"]) != prev
                or chain_hash(prev, link_id, seq, canonical, legs, reply, dated) != bytes(r["hash"])):
            chain_ok = False
            problems.append(f"hash chain broken at entry {seq}")
            altered.setdefault(seq, []).append("its stored bytes do not make its hash")
        recomputed_prev = recomputed[seq] = chain_hash(recomputed_prev, link_id, seq, canonical, legs, reply, dated)
        prev = bytes(r["hash"])
        try:  # the projections re-derived from the entry itself
            body = orjson.loads(canonical)
            want = []
            for account, amount in body["postings"]:
                derived[account] = derived.get(account, 0) + int(amount)
                want.append((account, int(amount), derived[account]))
            want_hits = sorted(_hit(h) for h in body.get("hits", ()))
            ts = int(body["ts_ms"])
            # chain.py dates an entry in time order, never later than its own ts_ms unless the one before is
            # (version 3, whose hash covers the date); entries written before it are dated by ts_ms alone
            if (not last_ms <= created_ms <= max(ts, last_ms)) if version >= 3 else created_ms != ts:
                due = time_of(max(ts, last_ms)).isoformat()
                altered.setdefault(seq, []).append(f"created_at {r['created_at'].isoformat()} but its ts_ms {ts} "
                                                   f"and the entry before make it at most {due}")
            last_ms = max(last_ms, created_ms)
            sums.add(link_id, seq, created_ms, entry_flows(body, r["reply"]))
            decision = body.get("decision")
            want_decisions = [] if decision is None else [decision_row(link_id, seq, decision)]
            approved = body.get("approval")
            want_approvals = [] if approved is None else [approval_row(link_id, seq, approved, body["audit"])]
        except (KeyError, TypeError, ValueError) as e:
            altered.setdefault(seq, []).append(f"its entry cannot be read ({type(e).__name__}: {e})")
            continue
        if want != legs:
            altered.setdefault(seq, []).append(f"postings rows {legs} but the entry posts {want}")
        if want_hits != sorted(hits_by_seq.get(seq, [])):
            altered.setdefault(seq, []).append(f"hits rows {sorted(hits_by_seq.get(seq, []))} but the entry "
                                               f"records {want_hits}")
        if decision is not None:  # §7: a decision moves exactly its hit's held prize, the way its kind says
            problem = decision_problem(body["kind"], decision, held, {a: v for a, v, _ in want})
            if problem:
                altered.setdefault(seq, []).append(problem)
        if want_decisions != decisions_by_seq.get(seq, []):
            altered.setdefault(seq, []).append(f"hit_decisions rows {decisions_by_seq.get(seq, [])} but the entry "
                                               f"records {want_decisions}")
        if approved is not None and (problem := approval_problem(approved, held, needs, {a: v for a, v, _ in want})):
            altered.setdefault(seq, []).append(problem)
        if approved is not None:
            firsts[(approved["table_id"], approved["round_id"], approved["seat"])] = body["audit"]["actor"]
        if decision is not None and body["kind"] == "approve_hit":  # NM 15.1.24.12: two distinct persons
            where = (decision["table_id"], decision["round_id"], decision["seat"])
            if needs.get(where) == 2 and (where not in firsts or person_of(firsts[where])
                                          == person_of(body["audit"]["actor"])):
                altered.setdefault(seq, []).append(f"it pays hit {decision['hit_id']}, which needs two distinct "
                                                   f"supervisors, after {firsts.get(where, 'no')} first approval")
        if want_approvals != approvals_by_seq.get(seq, []):
            altered.setdefault(seq, []).append(f"hit_approvals rows {approvals_by_seq.get(seq, [])} but the entry "
                                               f"records {want_approvals}")
    for seq in sorted(set(legs_by_seq) - seqs):
        altered.setdefault(seq, []).append("postings rows without an entry")
    for seq in sorted(set(hits_by_seq) - seqs):
        altered.setdefault(seq, []).append("hits rows without an entry")
    for seq in sorted(set(decisions_by_seq) - seqs):
        altered.setdefault(seq, []).append("hit_decisions rows without an entry")
    for seq in sorted(set(approvals_by_seq) - seqs):
        altered.setdefault(seq, []).append("hit_approvals rows without an entry")
    summaries_ok = await _summaries_match(conn, link_id, sums, problems)
    stored = {r["account"]: int(r["balance_uc"]) for r in await conn.fetch(
        "SELECT account, balance_uc FROM account_balances WHERE link_id = $1", link_id)}
    for account in set(stored) | set(balances):
        if stored.get(account, 0) != balances.get(account, 0):
            problems.append(f"{account}: balance table {stored.get(account, 0)} but postings sum to "
                            f"{balances.get(account, 0)}")
    for account in set(stored) | set(derived):
        if stored.get(account, 0) != derived.get(account, 0):
            problems.append(f"{account}: balance table {stored.get(account, 0)} but the entries' postings sum to "
                            f"{derived.get(account, 0)}")
    head = await conn.fetchrow("SELECT last_seq, last_hash FROM links WHERE link_id = $1", link_id)
    if rows and (head is None or int(head["last_seq"]) != int(rows[-1]["seq"])
                 or bytes(head["last_hash"]) != bytes(rows[-1]["hash"])):
        problems.append(f"the link's head {None if head is None else int(head['last_seq'])} is not its last entry "
                        f"{int(rows[-1]['seq'])} and that entry's hash")
    ledger_pools = {a[5:]: v for a, v in balances.items() if a.startswith("pool:")}
    for pool in set(ledger_pools) | set(redis_pools) if redis_compared else ():
        if ledger_pools.get(pool, 0) != redis_pools.get(pool, 0):
            problems.append(f"pool {pool}: ledger {ledger_pools.get(pool, 0)} µ¢, Redis {redis_pools.get(pool, 0)} µ¢")
    if redis_compared and redis_seq != count:
        problems.append(f"sequence: Redis at {redis_seq}, ledger at {count}")
    if balances.get(PAYOUTS, 0) < 0:
        problems.append("payouts account is negative")
    waiting = await conn.fetchval(  # §7: what pending_payouts holds is exactly the prizes still awaiting a decision
        f"SELECT coalesce(sum(h.amount_cents), 0) FROM hits h {HIT_DECISION} WHERE h.link_id = $1 "
        f"AND {HIT_STATUS} = '{PENDING}'", link_id)
    if balances.get(PENDING_PAYOUTS, 0) != cents_to_uc(int(waiting)):
        problems.append(f"pending_payouts holds {balances.get(PENDING_PAYOUTS, 0)} µ¢ but the hits awaiting a "
                        f"decision come to {cents_to_uc(int(waiting))} µ¢")
    anchored = anchor_audit.compare(recomputed, max(recomputed, default=0), altered, checkpoints)
    first = min([*altered, *([] if anchored.first_altered is None else [anchored.first_altered])], default=None)
    range_end = anchored.range_end if first == anchored.first_altered and first not in altered else None
    if first is not None and first in altered:
        problems[:0] = [f"first altered entry: seq {first}: {'; '.join(altered[first])}", *anchored.problems]
        problems += [f"entry {s} altered: {'; '.join(altered[s])}" for s in sorted(altered) if s != first]
    else:  # the anchors name it (a truncation, a rewrite whose rows agree): they come first
        problems[:0] = anchored.problems
    if len(problems) > PROBLEMS_MAX:  # a reply must stay readable (gRPC's 4 MB): the first ones name the damage
        problems[PROBLEMS_MAX:] = [f"... and {len(problems) - PROBLEMS_MAX} more problems"]
    return AuditReport(link_id, count, chain_ok, balanced, summaries_ok, ledger_pools, redis_pools, redis_seq,
                       problems, first, len(checkpoints), range_end, anchored.notes)


async def _summaries_match(conn: Any, link_id: str, derived: Summaries, problems: list[str]) -> bool:
    """Whether the stored summaries are exactly what the entries make them; each difference is a problem."""
    found: list[str] = []
    rows = await conn.fetch("SELECT bucket, account, flow, detail, amount_uc, items FROM flow_totals "
                            "WHERE link_id = $1", link_id)
    stored_totals = {(link_id, ms_of(r["bucket"]), r["account"], r["flow"], r["detail"]):
                     [int(r["amount_uc"]), int(r["items"])] for r in rows}
    for key in sorted(set(stored_totals) | set(derived.totals)):
        have, want = stored_totals.get(key, [0, 0]), derived.totals.get(key, [0, 0])
        if have != want:
            found.append(f"summary {time_of(key[1]).isoformat()} {key[2]} {key[3]} {key[4] or '-'}: stored "
                         f"{have[0]} µ¢ ({have[1]} items) but the entries make {want[0]} µ¢ ({want[1]} items)")
    stored_buckets = {(link_id, ms_of(r["bucket"])): [int(r["first_seq"]), int(r["last_seq"]), int(r["entries"])]
                      for r in await conn.fetch("SELECT bucket, first_seq, last_seq, entries FROM flow_buckets "
                                                "WHERE link_id = $1", link_id)}
    for where in sorted(set(stored_buckets) | set(derived.buckets)):
        was, made = stored_buckets.get(where), derived.buckets.get(where)
        if was != made:
            found.append(f"summary of quarter hour {time_of(where[1]).isoformat()}: stored entries {was} "
                         f"(first, last, count) but the entries make {made}")
    problems += found[:20] + ([f"... and {len(found) - 20} more summary differences"] if len(found) > 20 else [])
    return not found
