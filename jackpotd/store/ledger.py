"""PostgreSQL adapter: migrations, the group-committing ledger writer, and reads for recovery and audit."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from ..canonical import canonical_json
from ..domain.postings import PAYOUTS, pool_account
from .redis_pools import pairs

log = logging.getLogger("jackpotd.ledger")
MIGRATIONS = Path(__file__).parent / "migrations"
APP_ROLE = "jackpotd_app"


async def migrate(dsn: str) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; returns those applied."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                           "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        await conn.execute("SELECT pg_advisory_lock(4242)")  # replicas starting together migrate once
        done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
        applied = []
        for path in sorted(MIGRATIONS.glob("*.sql")):
            if path.name in done:
                continue
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
            applied.append(path.name)
            log.info("applied migration %s", path.name)
        await conn.execute("SELECT pg_advisory_unlock(4242)")
        return applied
    finally:
        await conn.close()


async def _as_app_role(conn: asyncpg.Connection) -> None:
    # Append-only by grants too: the service's sessions act as a role that cannot UPDATE or DELETE entries.
    try:
        await conn.execute(f"SET ROLE {APP_ROLE}")
    except asyncpg.PostgresError:
        log.warning("cannot SET ROLE %s; relying on the append-only triggers alone", APP_ROLE)


async def connect_pool(dsn: str, size: int = 10) -> asyncpg.Pool:
    """A connection pool whose sessions act as the application role."""
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=size, init=_as_app_role)
    assert pool is not None
    return pool


def chain_hash(prev: bytes, link_id: str, seq: int, entry: str, postings: Sequence[tuple[str, int, int]]) -> bytes:
    """sha256 over the previous hash and the entry's link, sequence, text and postings: any edit breaks the chain."""
    h = hashlib.sha256(prev)
    h.update(f"{link_id}\n{seq}\n".encode())
    h.update(entry.encode())
    h.update(canonical_json([list(p) for p in postings]).encode())
    return h.digest()


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journal stream entry as the atomic step wrote it."""

    link_id: str
    seq: int
    entry: str  # canonical JSON written by the service
    balances: dict[str, int]  # pool balances after, from Redis
    reply: str

    @property
    def body(self) -> dict[str, Any]:
        d: dict[str, Any] = orjson.loads(self.entry)
        return d


class LedgerMismatch(RuntimeError):
    """Redis and the ledger disagree about a balance: the writer stops rather than record it."""


@dataclass(slots=True)
class Head:
    """A link's chain head as the ledger holds it: last sequence, its hash, and every account's balance."""

    seq: int
    hash: bytes
    balances: dict[str, int]


HeadCache = dict[str, Head]

# One statement appends a whole batch: atomic without BEGIN/COMMIT round trips. Foreign keys are
# checked at its end, so a new link's head, its first entries and their postings can go in together.
_APPEND = """
WITH h AS (
    INSERT INTO links AS l (link_id, last_seq, last_hash)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[])
    ON CONFLICT (link_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, last_hash = EXCLUDED.last_hash
    WHERE l.last_seq = (SELECT p.seq FROM unnest($1::text[], $4::bigint[]) AS p(link_id, seq)
                        WHERE p.link_id = l.link_id)
    RETURNING 1
), e AS (
    INSERT INTO entries (link_id, seq, kind, request_id, request_hash, created_at, entry, reply, prev_hash, hash)
    SELECT * FROM unnest($5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                         $11::json[], $12::text[], $13::bytea[], $14::bytea[])
), p AS (
    INSERT INTO postings (link_id, seq, idx, account, amount_uc, balance_after_uc)
    SELECT * FROM unnest($15::text[], $16::bigint[], $17::int[], $18::text[], $19::bigint[], $20::bigint[])
), x AS (
    INSERT INTO hits (hit_id, link_id, seq, table_id, round_id, seat, hand, cards, pool, amount_cents,
                      funded_by_operator_cents, pool_before_uc, rule, status)
    SELECT hit_id, link_id, seq, table_id, round_id, seat, hand, string_to_array(cards, ','), pool, amount_cents,
           funded, pool_before_uc, rule, status
    FROM unnest($21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[], $26::int[], $27::text[],
                $28::text[], $29::text[], $30::bigint[], $31::bigint[], $32::bigint[], $33::text[], $34::text[])
         AS t(hit_id, link_id, seq, table_id, round_id, seat, hand, cards, pool, amount_cents, funded,
              pool_before_uc, rule, status)
), c AS (
    INSERT INTO link_configs (link_id, version, config)
    SELECT link_id, version, config::jsonb FROM unnest($35::text[], $36::bigint[], $37::text[])
        AS t(link_id, version, config)
), t AS (
    INSERT INTO tables (table_id, link_id) SELECT * FROM unnest($38::text[], $39::text[])
    ON CONFLICT (table_id) DO NOTHING
), r AS (
    INSERT INTO rounds (link_id, table_id, round_id, state, rev, data)
    SELECT * FROM unnest($40::text[], $41::text[], $42::text[], $43::text[], $44::bigint[], $45::text[])
    ON CONFLICT (link_id, table_id, round_id) DO UPDATE SET
        state = EXCLUDED.state, rev = EXCLUDED.rev, data = EXCLUDED.data
), b AS (
    INSERT INTO account_balances (link_id, account, balance_uc)
    SELECT * FROM unnest($46::text[], $47::text[], $48::bigint[])
    ON CONFLICT (link_id, account) DO UPDATE SET balance_uc = EXCLUDED.balance_uc
)
SELECT ledger_require((SELECT count(*) FROM h) = cardinality($1::text[]),
                      'a link head moved under this writer; the batch was not written')
"""


def _columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows as one array per column, for unnest()."""
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


async def _heads_of(conn: Any, link_ids: Sequence[str]) -> HeadCache:
    """The ledger's heads and account balances of these links (a link not there yet starts empty)."""
    out = {link: Head(0, b"", {}) for link in link_ids}
    for r in await conn.fetch("SELECT link_id, last_seq, last_hash FROM links WHERE link_id = ANY($1)", link_ids):
        out[r["link_id"]] = Head(int(r["last_seq"]), bytes(r["last_hash"]), {})
    for r in await conn.fetch("SELECT link_id, account, balance_uc FROM account_balances WHERE link_id = ANY($1)",
                              link_ids):
        out[r["link_id"]].balances[r["account"]] = int(r["balance_uc"])
    return out


async def write_batch(conn: Any, batch: Sequence[JournalEntry], cache: HeadCache | None = None) -> dict[str, int]:
    """Append journal entries to the ledger in one statement; idempotent on (link, seq).

    Returns the new head sequence per link. Entries at or below a link's head are skipped. `cache`
    keeps each link's head between batches; the statement refuses to run if the ledger's head has
    moved since (another writer), and the cache is then dropped so the next batch reads it afresh.
    """
    by_link: dict[str, list[JournalEntry]] = {}
    for e in batch:
        by_link.setdefault(e.link_id, []).append(e)
    cache = {} if cache is None else cache
    missing = [link for link in by_link if link not in cache]
    known = {link: cache[link] for link in by_link if link in cache}
    if missing:
        known.update(await _heads_of(conn, missing))
    heads: dict[str, int] = {}
    fresh: HeadCache = {}
    entry_rows: list[tuple[Any, ...]] = []
    posting_rows: list[tuple[Any, ...]] = []
    hit_rows: list[tuple[Any, ...]] = []
    config_rows: list[tuple[Any, ...]] = []
    round_rows: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    table_rows: list[tuple[Any, ...]] = []
    balance_rows: list[tuple[str, str, int]] = []
    head_rows: list[tuple[str, int, bytes, int]] = []  # (link, new seq, new hash, the seq it replaces)
    for link_id, items in sorted(by_link.items()):
        items.sort(key=lambda e: e.seq)
        start = known[link_id]
        last_seq, last_hash, balances = start.seq, start.hash, dict(start.balances)
        for e in items:
            if e.seq <= last_seq:
                continue
            if e.seq != last_seq + 1:
                break  # a gap: wait for the missing entry rather than record out of order
            body = e.body
            legs = []
            for idx, (account, amount) in enumerate(body["postings"]):
                balances[account] = balances.get(account, 0) + int(amount)
                legs.append((account, int(amount), balances[account]))
                posting_rows.append((link_id, e.seq, idx, account, int(amount), balances[account]))
            for pool, bal in e.balances.items():
                if balances.get(pool_account(pool), 0) != bal:
                    raise LedgerMismatch(f"link {link_id} seq {e.seq}: Redis has {pool}={bal} µ¢, "
                                         f"the ledger {balances.get(pool_account(pool), 0)} µ¢")
            digest = chain_hash(last_hash, link_id, e.seq, e.entry, legs)
            created = datetime.fromtimestamp(body["ts_ms"] / 1000, UTC)
            entry_rows.append((link_id, e.seq, body["kind"], body["request_id"], body["request_hash"], created,
                               e.entry, e.reply, last_hash, digest))
            if body.get("config") is not None:
                config_rows.append((link_id, e.seq, canonical_json(body["config"])))
            rnd = body.get("round")
            if rnd is not None:
                round_rows[(link_id, rnd["table_id"], rnd["round_id"])] = (
                    link_id, rnd["table_id"], rnd["round_id"], rnd["state"], e.seq, rnd["data"])
            if body.get("table") is not None:
                table_rows.append((body["table"], link_id))
            for hit in body.get("hits", ()):
                hit_rows.append((hit["hit_id"], link_id, e.seq, hit["table_id"], hit["round_id"], hit["seat"],
                                 hit["hand"], ",".join(hit["cards"]), hit["pool"], hit["amount_cents"],
                                 hit["funded_by_operator_cents"], hit["pool_before_uc"], hit["rule"],
                                 hit["status"]))
            last_seq, last_hash = e.seq, digest
        heads[link_id] = last_seq
        fresh[link_id] = Head(last_seq, last_hash, balances)
        if last_seq > start.seq:
            balance_rows += [(link_id, a, b) for a, b in balances.items()]
            head_rows.append((link_id, last_seq, last_hash, start.seq))
    if entry_rows:
        try:
            await conn.execute(_APPEND, *_columns(head_rows, 4), *_columns(entry_rows, 10),
                               *_columns(posting_rows, 6), *_columns(hit_rows, 14), *_columns(config_rows, 3),
                               *_columns(table_rows, 2), *_columns(list(round_rows.values()), 6),
                               *_columns(balance_rows, 3))
        except BaseException:
            for link in by_link:  # whatever happened, read the heads afresh next time
                cache.pop(link, None)
            raise
    cache.update(fresh)
    return heads


async def heads(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, int]:
    """Last committed sequence per link."""
    return {r["link_id"]: int(r["last_seq"]) for r in await conn.fetch("SELECT link_id, last_seq FROM links")}


@dataclass(frozen=True, slots=True)
class LinkSnapshot:
    """Everything needed to rebuild a link's Redis keys from the ledger."""

    link_id: str
    last_seq: int
    config_version: int
    config: str
    pool_balances: dict[str, int]
    rounds: list[tuple[str, str, str, int, str]]
    tables: list[str]
    replies: list[tuple[str, str]]  # (request_id, reply) of recent requests


async def snapshot(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, reply_days: int = 7) -> LinkSnapshot:
    """Read a link's state from PostgreSQL (recovery: Redis behind or empty)."""
    head = await conn.fetchrow("SELECT last_seq FROM links WHERE link_id = $1", link_id)
    cfg = await conn.fetchrow("SELECT version, config::text AS config FROM link_configs WHERE link_id = $1 "
                              "ORDER BY version DESC LIMIT 1", link_id)
    assert head is not None and cfg is not None
    balances = {r["account"][5:]: int(r["balance_uc"]) for r in await conn.fetch(
        "SELECT account, balance_uc FROM account_balances WHERE link_id = $1 AND account LIKE 'pool:%'", link_id)}
    rounds = [(r["table_id"], r["round_id"], r["state"], int(r["rev"]), r["data"]) for r in await conn.fetch(
        "SELECT table_id, round_id, state, rev, data FROM rounds WHERE link_id = $1", link_id)]
    tables = [r["table_id"] for r in await conn.fetch("SELECT table_id FROM tables WHERE link_id = $1", link_id)]
    replies = [(r["request_id"], r["reply"]) for r in await conn.fetch(
        "SELECT request_id, reply FROM entries WHERE link_id = $1 AND created_at > now() - make_interval(days => $2)",
        link_id, reply_days)]
    return LinkSnapshot(link_id, int(head["last_seq"]), int(cfg["version"]), cfg["config"], balances, rounds, tables,
                        replies)


async def stored_reply(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, request_id: str) -> str | None:
    """The reply recorded forever for a request id (Redis keeps it only for days)."""
    v: str | None = await conn.fetchval("SELECT reply FROM entries WHERE link_id = $1 AND request_id = $2",
                                        link_id, request_id)
    return v


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What `jackpotd audit` found for one link."""

    link_id: str
    entries: int
    chain_ok: bool
    balanced: bool
    ledger_pools: dict[str, int]
    redis_pools: dict[str, int]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


async def audit_link(conn: asyncpg.Connection | asyncpg.Pool, link_id: str, redis_pools: dict[str, int],
                     redis_seq: int) -> AuditReport:
    """Recompute every balance from the postings, verify the hash chain and each entry sums to zero."""
    problems: list[str] = []
    prev = b""
    balances: dict[str, int] = {}
    count = 0
    balanced = True
    chain_ok = True
    expected_seq = 1
    rows = await conn.fetch("SELECT seq, entry::text AS entry, prev_hash, hash FROM entries WHERE link_id = $1 "
                            "ORDER BY seq", link_id)
    legs_by_seq: dict[int, list[tuple[str, int, int]]] = {}
    for r in await conn.fetch("SELECT seq, account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                              "ORDER BY seq, idx", link_id):
        legs_by_seq.setdefault(int(r["seq"]), []).append(
            (r["account"], int(r["amount_uc"]), int(r["balance_after_uc"])))
    for r in rows:
        seq = int(r["seq"])
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
            if balances[account] != after:
                problems.append(f"entry {seq}: {account} balance_after {after} but recomputed {balances[account]}")
        canonical = r["entry"]  # stored as `json`: the very text the service wrote
        if bytes(r["prev_hash"]) != prev or chain_hash(prev, link_id, seq, canonical, legs) != bytes(r["hash"]):
            chain_ok = False
            problems.append(f"hash chain broken at entry {seq}")
        prev = bytes(r["hash"])
    stored = {r["account"]: int(r["balance_uc"]) for r in await conn.fetch(
        "SELECT account, balance_uc FROM account_balances WHERE link_id = $1", link_id)}
    for account in set(stored) | set(balances):
        if stored.get(account, 0) != balances.get(account, 0):
            problems.append(f"{account}: balance table {stored.get(account, 0)} but postings sum to "
                            f"{balances.get(account, 0)}")
    ledger_pools = {a[5:]: v for a, v in balances.items() if a.startswith("pool:")}
    for pool in set(ledger_pools) | set(redis_pools):
        if ledger_pools.get(pool, 0) != redis_pools.get(pool, 0):
            problems.append(f"pool {pool}: ledger {ledger_pools.get(pool, 0)} µ¢, Redis {redis_pools.get(pool, 0)} µ¢")
    if redis_seq != count:
        problems.append(f"sequence: Redis at {redis_seq}, ledger at {count}")
    if balances.get(PAYOUTS, 0) < 0:
        problems.append("payouts account is negative")
    return AuditReport(link_id, count, chain_ok, balanced, ledger_pools, redis_pools, problems)


def journal_entries(link_id: str, rows: Iterable[tuple[int, dict[str, str]]]) -> list[JournalEntry]:
    """Journal stream rows as entries."""
    out = []
    for seq, fields in rows:
        balances = pairs(orjson.loads(fields["balances"]))
        out.append(JournalEntry(link_id, seq, fields["entry"], balances, fields["reply"]))
    return out
