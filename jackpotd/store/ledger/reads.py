"""Reads of what the ledger holds: heads, a link's snapshot for recovery, and the answers that outlive
Redis's retention (stored replies, links, tables, rounds, hits)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from ...domain.rounds import OPEN
from ...domain.verification import PAID, PENDING, REJECTED
from ...service.ports import HitRecord, LastHit
from .chain import LAST_BALANCE, identity_of
from .fences import fence_text, kind_of
from .summaries import ms_of

# A link's newest config whose entry the ledger holds: a config row outliving its entry, removed by a truncation an
# operator accepted (store/unfence.py: its sequence number is a `lost` entry now), must not come back.
CURRENT_CONFIG = ("SELECT c.version, c.config::text AS config FROM link_configs c WHERE c.link_id = $1 AND EXISTS "
                  "(SELECT 1 FROM entries e WHERE e.link_id = c.link_id AND e.seq = c.version AND e.kind <> 'lost') "
                  "ORDER BY c.version DESC LIMIT 1")


async def heads(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, int]:
    """Last committed sequence per link."""
    return {r["link_id"]: int(r["last_seq"]) for r in await conn.fetch("SELECT link_id, last_seq FROM links")}


@dataclass(frozen=True, slots=True)
class LinkSnapshot:
    """Everything needed to rebuild a link's Redis keys from the ledger."""

    link_id: str
    last_seq: int
    last_identity: str
    last_hash: bytes
    config_version: int
    config: str
    pool_balances: dict[str, int]
    open_rounds: list[tuple[str, str, str, int, str]]  # (table, round, state, rev, data) of rounds still open
    tables: list[str]
    fence: str | None


async def snapshot(pool: asyncpg.Connection | asyncpg.Pool, link_id: str) -> LinkSnapshot:
    """Read a link's state from PostgreSQL (recovery: Redis behind, empty or forked), in one repeatable-read
    transaction, so the head, balances, open rounds and their count agree. Finished rounds and answered
    requests stay in the ledger: late retries are answered from it."""
    if isinstance(pool, asyncpg.Pool):
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            return await _snapshot(conn, link_id)
    async with pool.transaction(isolation="repeatable_read", readonly=True):
        return await _snapshot(pool, link_id)


async def _snapshot(conn: Any, link_id: str) -> LinkSnapshot:
    head = await conn.fetchrow("SELECT l.last_seq, l.last_hash, e.request_id, e.request_hash FROM links l LEFT JOIN "
                               "entries e ON e.link_id = l.link_id AND e.seq = l.last_seq WHERE l.link_id = $1",
                               link_id)
    cfg = await conn.fetchrow(CURRENT_CONFIG, link_id)
    assert head is not None and cfg is not None
    balances = {r["account"][5:]: int(r["balance_uc"]) for r in await conn.fetch(
        f"SELECT b.account, {LAST_BALANCE} AS balance_uc FROM account_balances b WHERE b.link_id = $1 "
        "AND b.account LIKE 'pool:%'", link_id)}  # as the postings leave them: the projection may be edited
    rounds = [(r["table_id"], r["round_id"], r["state"], int(r["rev"]), r["data"]) for r in await conn.fetch(
        "SELECT table_id, round_id, state, rev, data FROM rounds WHERE link_id = $1 AND state IN "  # the index's
        f"({', '.join(repr(s.value) for s in OPEN)})", link_id)]
    tables = [r["table_id"] for r in await conn.fetch("SELECT table_id FROM tables WHERE link_id = $1", link_id)]
    fenced = await conn.fetchrow("SELECT seq, reason, kind FROM link_fences WHERE link_id = $1", link_id)
    fence = None if fenced is None else fence_text(kind_of(fenced["kind"]), int(fenced["seq"]), fenced["reason"])
    return LinkSnapshot(link_id, int(head["last_seq"]), identity_of(head), bytes(head["last_hash"]),
                        int(cfg["version"]), cfg["config"],
                        balances, rounds, tables, fence)


async def stored_reply(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, request_id: str) -> str | None:
    """The reply recorded forever for a request id (Redis keeps it only for the retention)."""
    v: str | None = await conn.fetchval("SELECT reply FROM entries WHERE link_id = $1 AND request_id = $2",
                                        link_id, request_id)
    return v


async def link_known(conn: asyncpg.Connection | asyncpg.Pool, link_id: str) -> bool:
    """Whether the ledger holds the link: then Redis not knowing it means Redis forgot it."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM links WHERE link_id = $1)", link_id))


async def table_link(conn: asyncpg.Connection | asyncpg.Pool, table_id: str) -> str | None:
    """The link the ledger has the table on."""
    v: str | None = await conn.fetchval("SELECT link_id FROM tables WHERE table_id = $1", table_id)
    return v


async def last_hit(conn: asyncpg.Connection | asyncpg.Pool, link_id: str) -> LastHit | None:
    """The link's latest hit (signs show it on connecting)."""
    row = await conn.fetchrow(_HITS + "ORDER BY h.seq DESC, h.hit_id DESC LIMIT 1", link_id)
    if row is None:
        return None
    hit = (await hit_records(conn, link_id, [row]))[0]
    return LastHit(hit.hit_id, hit.table_id, hit.seat, hit.hand, hit.amount_cents, hit.pool, hit.seq, hit.status,
                   len(hit.approved_by), hit.approvals_needed)


# A hit's status is its decision's (§7: PAID or REJECTED) once a supervisor has decided it, else its own; a hit
# recorded PENDING before approval existed was paid at settlement (its entry posted nothing to pending_payouts).
HIT_STATUS = (
    f"coalesce(d.status, CASE WHEN h.status = '{PENDING}' AND NOT EXISTS (SELECT 1 FROM postings p WHERE "
    f"p.link_id = h.link_id AND p.seq = h.seq AND p.account = 'pending_payouts') THEN '{PAID}' ELSE h.status END)")
HIT_DECISION = ("LEFT JOIN hit_decisions d ON d.link_id = h.link_id AND d.table_id = h.table_id "
                "AND d.round_id = h.round_id AND d.seat = h.seat")
# Who approved a hit first of two: hit_approvals (NM 15.1.24.12). Who decided it is its decision entry's audit actor
# (§7), read from the entry's text by `deciders`: never with PostgreSQL's JSON operators, which refuse a whole entry
# holding a NUL anywhere in its free text ("\u0000 cannot be converted to text").
_APPROVERS = (
    "ARRAY(SELECT a.actor FROM hit_approvals a WHERE a.link_id = h.link_id AND a.table_id = h.table_id AND "
    "a.round_id = h.round_id AND a.seat = h.seat ORDER BY a.seq)")
_HIT_COLUMNS = ("h.hit_id, h.link_id, h.table_id, h.round_id, h.seat, h.hand, h.cards, h.pool, h.amount_cents, "
                f"h.funded_by_operator_cents, h.pool_before_uc, h.rule, {HIT_STATUS} AS status, h.seq, "
                f"{_APPROVERS} AS approved_by, CASE WHEN h.status = '{PENDING}' THEN h.approvals_needed ELSE 0 END "
                "AS approvals_needed, d.status AS decision, d.seq AS decision_seq")
_HITS = (f"SELECT {_HIT_COLUMNS}, e.created_at FROM hits h {HIT_DECISION} "
         "JOIN entries e ON e.link_id = h.link_id AND e.seq = h.seq WHERE h.link_id = $1 ")
# A link's hits with the time their settle is dated (reports): add conditions after it; read them with hit_records.
DATED_HITS = _HITS


Conn = asyncpg.Connection | asyncpg.Pool | asyncpg.pool.PoolConnectionProxy  # whatever runs a query


async def deciders(conn: Conn, link_id: str, seqs: Sequence[int]) -> dict[int, str]:
    """The audit actor of each of these decision entries, from the entry's exact text."""
    if not seqs:
        return {}
    rows = await conn.fetch("SELECT seq, entry::text AS entry FROM entries WHERE link_id = $1 AND seq = ANY($2)",
                            link_id, sorted(set(seqs)))
    return {int(r["seq"]): str((orjson.loads(r["entry"]).get("audit") or {}).get("actor", "")) for r in rows}


async def hit_records(conn: Conn, link_id: str,
                      rows: Sequence[asyncpg.Record]) -> list[HitRecord]:
    """Rows of _HITS or DATED_HITS as the port's HitRecords, with who decided each decided one."""
    by = await deciders(conn, link_id, [int(r["decision_seq"]) for r in rows if r["decision_seq"] is not None])
    return [hit_record(r, by.get(int(r["decision_seq"]), "") if r["decision_seq"] is not None else "")
            for r in rows]


def hit_record(r: asyncpg.Record, decider: str = "") -> HitRecord:
    """A row of _HITS or DATED_HITS as the port's HitRecord; `decider` is who approved (the last approver) or
    rejected it (`deciders`)."""
    created = r.get("created_at")
    approved = tuple(r["approved_by"]) + ((decider,) if r["decision"] == PAID else ())
    return HitRecord(r["hit_id"], r["link_id"], r["table_id"], r["round_id"], int(r["seat"]), r["hand"],
                     tuple(r["cards"]), r["pool"], int(r["amount_cents"]), int(r["funded_by_operator_cents"]),
                     int(r["pool_before_uc"]), r["rule"], r["status"], int(r["seq"]),
                     0 if created is None else ms_of(created), approved, int(r["approvals_needed"]),
                     decider if r["decision"] == REJECTED else "")


async def hits(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, table_id: str, status: str,
               limit: int) -> list[HitRecord]:
    """A link's hits, newest first; `table_id` and `status` narrow them when given."""
    rows = await conn.fetch(_HITS + f"AND ($2 = '' OR h.table_id = $2) AND ($3 = '' OR {HIT_STATUS} = $3) "
                            "ORDER BY h.seq DESC, h.seat LIMIT $4", link_id, table_id, status, limit)
    return await hit_records(conn, link_id, rows)


async def hit(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, table_id: str, round_id: str,
              seat: int) -> HitRecord | None:
    """One hit with its current status, or None when the ledger holds no such hit."""
    row = await conn.fetchrow(_HITS + "AND h.table_id = $2 AND h.round_id = $3 AND h.seat = $4", link_id, table_id,
                              round_id, seat)
    return None if row is None else (await hit_records(conn, link_id, [row]))[0]


# What signs need of a range of committed entries (issue 11): every entry's kind (a config change is re-read),
# and the reply of those that announce something (a settle that paid a hit, a hit decision, a first of two
# approvals) and of the last.
ROUND_ENDS = "('settle', 'void')"  # the kinds of entry that end a table's round (TableStatus.last_round_at_ms)
# The table whose round a settle or void moved: the table that asked, from its request id ("table:<id>:<request>"),
# which is text. Never the entry's JSON: PostgreSQL's JSON operators refuse a whole entry that holds a NUL anywhere
# in its free text (a void's reason may), which would refuse the entry itself through an index on them.
_ROUND_TABLE = "CASE WHEN e.request_id LIKE 'table:%' THEN split_part(e.request_id, ':', 2) END"
_AT_MS = "(extract(epoch FROM e.created_at) * 1000)::bigint"
_COMMITTED = (
    "SELECT e.seq, e.kind, CASE WHEN e.seq = $3 OR e.kind IN ('approve_hit', 'reject_hit', 'first_approval') "
    "OR (e.kind = 'settle' "
    "AND EXISTS (SELECT 1 FROM hits h WHERE h.link_id = e.link_id AND h.seq = e.seq)) THEN e.reply END AS reply, "
    f"CASE WHEN e.kind IN {ROUND_ENDS} THEN {_ROUND_TABLE} END AS round_table, {_AT_MS} AS at_ms "
    "FROM entries e WHERE e.link_id = $1 AND e.seq > $2 AND e.seq <= $3 ORDER BY e.seq")


async def entries_between(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, after: int,
                    upto: int) -> list[tuple[int, str, str | None, str, int]]:
    """(seq, kind, reply or None, the table whose round it settled or voided or '', its time in ms) of the link's
    entries after `after` up to `upto`, as the ledger holds them."""
    return [(int(r["seq"]), r["kind"], r["reply"], r["round_table"] or "", int(r["at_ms"]))
            for r in await conn.fetch(_COMMITTED, link_id, after, upto)]


_LAST_ROUNDS = (
    f"SELECT t.table_id, (SELECT {_AT_MS} FROM entries e WHERE e.link_id = $1 AND e.kind IN {ROUND_ENDS} "
    "AND split_part(e.request_id, ':', 2) = t.table_id AND e.request_id LIKE 'table:%' ORDER BY e.seq DESC LIMIT 1) "
    "AS at_ms "
    "FROM unnest($2::text[]) AS t(table_id)")


async def last_rounds(conn: asyncpg.Connection | asyncpg.Pool, link_id: str,
                      table_ids: Sequence[str]) -> dict[str, int]:
    """When each of the tables' last round settled or was voided (ms), for those that had one: one probe of
    migration 015's index per table."""
    return {r["table_id"]: int(r["at_ms"]) for r in await conn.fetch(_LAST_ROUNDS, link_id, list(table_ids))
            if r["at_ms"] is not None}


async def entry_identities(conn: asyncpg.Connection | asyncpg.Pool, link_id: str,
                           seqs: Sequence[int]) -> dict[int, str]:
    """The request identity of each of these entries the ledger holds."""
    return {int(r["seq"]): identity_of(r) for r in await conn.fetch(
        "SELECT seq, request_id, request_hash FROM entries WHERE link_id = $1 AND seq = ANY($2::bigint[])",
        link_id, list(seqs))}
