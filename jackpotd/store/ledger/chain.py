"""The hash chain and the group-committing append: journal entries (from Redis) checked against each link's
head and written as ledger rows in one statement."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from ...canonical import canonical_json, request_identity
from ...clock import Clock, now_ms
from ...domain.postings import pool_account
from ...domain.rounds import FINISHED
from ...metrics import FUTURE_DATED, HITS
from ...service.replies import pairs
from ..shards import shard_of
from . import bulk
from .errors import lease_fenced
from .rows import approval_row, decision_row
from .summaries import Summaries, buckets_upsert, ms_of, time_of, totals_upsert
from .unnest import columns

log = logging.getLogger("jackpotd.ledger")
CHAIN_VERSION = 3  # the version new entries are written with (entries.chain_version)
# An account's balance as its last posting leaves it (what the chain covers), not as the account_balances projection
# says: a projection edited outside jackpotd must not flow into new postings or into Redis. An index lookup each.
LAST_BALANCE = ("coalesce((SELECT p.balance_after_uc FROM postings p WHERE p.link_id = b.link_id "
                "AND p.account = b.account ORDER BY p.seq DESC LIMIT 1), 0)")
FUTURE_SLACK_MS = 1_000  # an entry is never dated later than this past the writer's clock


def chain_hash(prev: bytes, link_id: str, seq: int, entry: str, postings: Sequence[tuple[str, int, int]],
               reply: str | None = None, created_ms: int | None = None) -> bytes:
    """sha256 over the previous hash and the entry's link, sequence, text and postings: any edit breaks the chain.

    Version 1 (reply None) covers just those; version 2 (the reply given) also covers the stored reply, its
    length first, so every stored byte of the entry is chained (docs/DECISIONS.md, Hash chain); version 3
    (created_ms given) also covers the time the entry is dated, which decides its gaming day."""
    h = hashlib.sha256(prev)
    h.update(f"{link_id}\n{seq}\n".encode())
    h.update(entry.encode())
    h.update(orjson.dumps(list(postings)))  # canonical_json's text: a list of arrays has no keys to sort
    if reply is not None:
        data = reply.encode()
        h.update(f"\nreply {len(data)}\n".encode())
        h.update(data)
    if created_ms is not None:
        h.update(f"\ncreated {created_ms}\n".encode())
    return h.digest()


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journal stream entry as the atomic step wrote it."""

    link_id: str
    seq: int
    entry: str  # canonical JSON written by the service
    balances: dict[str, int]  # pool balances after, from Redis
    reply: str
    after: str | None = None  # the identity of the request this one follows in Redis (None: not recorded)
    problem: str | None = None  # why the stream entry could not be read, when it could not

    @property
    def body(self) -> dict[str, Any]:
        d: dict[str, Any] = orjson.loads(self.entry)
        return d


@dataclass(slots=True)
class Head:
    """A link's chain head as the ledger holds it: last sequence, its hash, every account's balance, and the
    identity of its last entry's request (which the next journal entry must name as the one it follows)."""

    seq: int
    hash: bytes
    balances: dict[str, int]
    identity: str = ""
    created_ms: int = 0  # the last entry's time: an entry is never dated before the one it follows


class Written(NamedTuple):
    """An entry just appended: what its caller waits for, and the Redis keys it leaves behind (a NamedTuple: one
    is made per entry, at a fraction of a frozen dataclass's cost)."""

    seq: int
    request_id: str
    identity: str  # canonical.request_identity of the entry's request
    finished_round: tuple[str, str] | None  # (table, round) of a round now settled or voided
    hits: tuple[tuple[str, str], ...] = ()  # (hand, pool) of each hit the entry pays, for the hits metric
    hash: bytes = b""  # its chain hash: the writer anchors some of them outside the database (checkpoints)


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a link's entries were not appended: Redis forked from the ledger (rebuild it) or the ledger
    refused the entry (fence the link)."""

    seq: int
    reason: str
    malformed: bool = False  # the entry cannot be read: a fault to stop at, not a Redis to rebuild


@dataclass
class Appended:
    """What one write_batch did: each link's new head, the entries appended, and the links refused."""

    heads: dict[str, int] = field(default_factory=dict)
    written: dict[str, list[Written]] = field(default_factory=dict)
    refused: dict[str, Refused] = field(default_factory=dict)


HeadCache = dict[str, Head]

# One statement appends a whole batch: atomic without BEGIN/COMMIT round trips. Foreign keys are
# checked at its end, so a new link's head, its first entries and their postings can go in together.
_APPEND = """
WITH h AS (
    INSERT INTO links AS l (link_id, last_seq, last_hash)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[])
    ON CONFLICT (link_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, last_hash = EXCLUDED.last_hash
    WHERE EXISTS (  -- the head is the very one the writer left: its sequence and hash, in the row and the entry
        SELECT 1 FROM unnest($1::text[], $4::bigint[], $69::bytea[]) AS p(link_id, seq, hash)
        WHERE p.link_id = l.link_id AND l.last_seq = p.seq AND l.last_hash = p.hash
          AND (p.seq = 0 OR EXISTS (SELECT 1 FROM entries x WHERE x.link_id = p.link_id AND x.seq = p.seq
                                                            AND x.hash = p.hash)))
    RETURNING 1
), e AS (
    INSERT INTO entries (link_id, seq, kind, request_id, request_hash, created_at, entry, reply, prev_hash, hash,
                         chain_version)
    SELECT *, 3::smallint FROM unnest($5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                         $11::json[], $12::text[], $13::bytea[], $14::bytea[])
), p AS (
    INSERT INTO postings (link_id, seq, idx, account, amount_uc, balance_after_uc)
    SELECT * FROM unnest($15::text[], $16::bigint[], $17::int[], $18::text[], $19::bigint[], $20::bigint[])
), x AS (
    INSERT INTO hits (hit_id, link_id, seq, table_id, round_id, seat, hand, cards, pool, amount_cents,
                      funded_by_operator_cents, pool_before_uc, rule, status, approvals_needed)
    SELECT hit_id, link_id, seq, table_id, round_id, seat, hand, string_to_array(cards, ','), pool, amount_cents,
           funded, pool_before_uc, rule, status, needed
    FROM unnest($21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[], $26::int[], $27::text[],
                $28::text[], $29::text[], $30::bigint[], $31::bigint[], $32::bigint[], $33::text[], $34::text[],
                $70::smallint[])
         AS t(hit_id, link_id, seq, table_id, round_id, seat, hand, cards, pool, amount_cents, funded,
              pool_before_uc, rule, status, needed)
), c AS (
    INSERT INTO link_configs (link_id, version, config)
    SELECT link_id, version, config::json FROM unnest($35::text[], $36::bigint[], $37::text[])
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
), d AS (
    INSERT INTO hit_decisions (link_id, table_id, round_id, seat, hit_id, seq, status, reason)
    SELECT * FROM unnest($49::text[], $50::text[], $51::text[], $52::int[], $53::text[], $54::bigint[],
                         $55::text[], $56::text[])
), a AS (  -- §7, NM 15.1.24.12: first approvals of hits under dual control
    INSERT INTO hit_approvals (link_id, table_id, round_id, seat, hit_id, seq, actor)
    SELECT * FROM unnest($71::text[], $72::text[], $73::text[], $74::int[], $75::text[], $76::bigint[], $77::text[])
), ft AS (  -- the summaries finance reads (summaries.py, migration 011), added to in the same statement
    """ + totals_upsert(57) + """
), fb AS (
    """ + buckets_upsert(64) + """
)
SELECT ledger_lease_held($78::smallint[], $79::bigint[]),  -- first: a fenced writer learns it is fenced
       ledger_require((SELECT count(*) FROM h) = cardinality($1::text[]),
                      'a link head is not the one this writer left (another writer moved it, or it was changed '
                      'outside jackpotd); the batch was not written')
"""


async def heads_of(conn: Any, link_ids: Sequence[str] | None) -> HeadCache:
    """The ledger's heads and account balances of these links (None: every link); a link not there yet
    starts empty. One statement, so the heads and the balances come from one snapshot: read apart, a
    writer committing in between would pair a head with balances of another entry."""
    out = {link: Head(0, b"", {}) for link in link_ids or ()}
    where = "" if link_ids is None else "WHERE {t}.link_id = ANY($1)"
    args = [] if link_ids is None else [list(link_ids)]
    rows = await conn.fetch(
        "SELECT l.link_id, l.last_seq, l.last_hash, e.request_id, e.request_hash, e.created_at, "
        "NULL::text AS account, NULL::bigint AS balance_uc, NULL::bigint AS stored_uc FROM links l "
        "LEFT JOIN entries e ON e.link_id = l.link_id AND e.seq = l.last_seq " + where.format(t="l") + " UNION ALL "
        "SELECT b.link_id, NULL, NULL, NULL, NULL, NULL, b.account, " + LAST_BALANCE + ", b.balance_uc "
        "FROM account_balances b " + where.format(t="b"), *args)
    for r in rows:
        if r["account"] is None:
            created = r["created_at"]
            out[r["link_id"]] = Head(int(r["last_seq"]), bytes(r["last_hash"]), {}, identity_of(r),
                                     0 if created is None else ms_of(created))
    for r in rows:
        if r["account"] is not None:
            out.setdefault(r["link_id"], Head(0, b"", {})).balances[r["account"]] = int(r["balance_uc"])
            if r["balance_uc"] != r["stored_uc"]:
                log.error("link %s: account_balances holds %s µ¢ for %s but its last posting leaves %s µ¢ (changed "
                          "outside jackpotd?): the postings' balance is used, and written back with the next entry",
                          r["link_id"], r["stored_uc"], r["account"], r["balance_uc"])
    return out


@dataclass
class _Rows:
    """The rows of one link's new entries, added to the statement only if the whole link checks out."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    postings: list[tuple[Any, ...]] = field(default_factory=list)
    hits: list[tuple[Any, ...]] = field(default_factory=list)
    decisions: list[tuple[Any, ...]] = field(default_factory=list)
    approvals: list[tuple[Any, ...]] = field(default_factory=list)
    configs: list[tuple[Any, ...]] = field(default_factory=list)
    tables: list[tuple[Any, ...]] = field(default_factory=list)
    rounds: dict[tuple[str, str, str], tuple[Any, ...]] = field(default_factory=dict)
    summaries: Summaries = field(default_factory=Summaries)
    written: list[Written] = field(default_factory=list)

    def extend(self, other: _Rows) -> None:
        self.entries += other.entries
        self.postings += other.postings
        self.hits += other.hits
        self.decisions += other.decisions
        self.approvals += other.approvals
        self.configs += other.configs
        self.tables += other.tables
        self.rounds.update(other.rounds)
        self.summaries.extend(other.summaries)


def _link_rows(link_id: str, items: Sequence[JournalEntry], start: Head,
               writer_ms: int) -> tuple[_Rows, Head] | Refused:
    """One link's entries after its head as ledger rows, or why they cannot be appended: the journal does
    not follow the ledger's last entry, or Redis's balances are not what the postings make them."""
    rows = _Rows()
    last_seq, last_hash, balances, last_request = start.seq, start.hash, dict(start.balances), start.identity
    last_ms = start.created_ms
    for e in items:
        if e.seq <= last_seq:
            continue
        if e.seq != last_seq + 1:
            break  # a gap: wait for the missing entry rather than record out of order
        if e.problem is not None:
            return Refused(e.seq, f"journal entry {e.seq} is malformed: {e.problem}", malformed=True)
        if e.after is not None and e.after != last_request:
            return Refused(e.seq, f"journal entry {e.seq} follows request {e.after[:16] or '(none)'} but the "
                                  f"ledger's entry {last_seq} is request {last_request[:16] or '(none)'}")
        try:
            body = e.body
            legs = []
            for idx, (account, amount) in enumerate(body["postings"]):
                uc = int(amount)
                after = balances[account] = balances.get(account, 0) + uc
                legs.append((account, uc, after))
                rows.postings.append((link_id, e.seq, idx, account, uc, after))
            for pool, bal in e.balances.items():
                if balances.get(pool_account(pool), 0) != bal:
                    return Refused(e.seq, f"Redis has {pool}={bal} µ¢ after entry {e.seq}, the ledger's postings "
                                          f"make it {balances.get(pool_account(pool), 0)} µ¢")
            # Dated by the service that decided it, never before the entry it follows (replicas' clocks differ): a
            # link's entries are in time order, so a period is a run of sequences. Never past the writer's clock
            # either: one replica with a clock ahead must not carry every later entry into the future.
            ts_ms = int(body["ts_ms"])
            created_ms = max(min(ts_ms, writer_ms + FUTURE_SLACK_MS), last_ms)
            if ts_ms > writer_ms + FUTURE_SLACK_MS:
                FUTURE_DATED.labels(link_id).inc()
            digest = chain_hash(last_hash, link_id, e.seq, e.entry, legs, e.reply, created_ms)  # version 3
            created = time_of(created_ms)
            rows.summaries.add_entry(link_id, e.seq, created_ms, body, e.reply)
            rows.entries.append((link_id, e.seq, body["kind"], body["request_id"], body["request_hash"], created,
                                 e.entry, e.reply, last_hash, digest))
            if body.get("config") is not None:
                rows.configs.append((link_id, e.seq, canonical_json(body["config"])))
            rnd = body.get("round")
            finished = None
            if rnd is not None:
                rows.rounds[(link_id, rnd["table_id"], rnd["round_id"])] = (
                    link_id, rnd["table_id"], rnd["round_id"], rnd["state"], e.seq, rnd["data"])
                if rnd["state"] in FINISHED:
                    finished = (rnd["table_id"], rnd["round_id"])
            if body.get("table") is not None:
                rows.tables.append((body["table"], link_id))
            for hit in body.get("hits", ()):
                rows.hits.append((hit["hit_id"], link_id, e.seq, hit["table_id"], hit["round_id"], hit["seat"],
                                  hit["hand"], ",".join(hit["cards"]), hit["pool"], hit["amount_cents"],
                                  hit["funded_by_operator_cents"], hit["pool_before_uc"], hit["rule"],
                                  hit["status"], hit.get("approvals_needed", 1)))
            if (decision := body.get("decision")) is not None:  # §7: a PENDING hit approved or rejected
                rows.decisions.append(decision_row(link_id, e.seq, decision))
            if (approval := body.get("approval")) is not None:  # §7: the first of two approvals
                rows.approvals.append(approval_row(link_id, e.seq, approval, body["audit"]))
            identity = request_identity(body["request_id"], body["request_hash"])
            rows.written.append(Written(e.seq, body["request_id"], identity, finished,
                                        tuple((hit["hand"], hit["pool"]) for hit in body.get("hits", ())), digest))
        except (KeyError, TypeError, ValueError, AttributeError) as error:  # a journal entry we cannot read
            return Refused(e.seq, f"journal entry {e.seq} is malformed: {type(error).__name__}: {error}",
                           malformed=True)
        last_seq, last_hash, last_request, last_ms = e.seq, digest, identity, created_ms
    return rows, Head(last_seq, last_hash, balances, last_request, last_ms)


async def write_batch(conn: Any, batch: Sequence[JournalEntry], cache: HeadCache | None = None,
                      clock: Clock = now_ms, epochs: Mapping[int, int] | None = None) -> Appended:
    """Append journal entries to the ledger in one statement; idempotent on (link, seq).

    Entries at or below a link's head are skipped. A link whose journal does not continue the ledger
    (Redis forked from it) or whose balances disagree with the postings is left out and named in
    `refused`; the others are appended. `cache` keeps each link's head between batches; the statement
    refuses to run if the ledger's head has moved since (another writer), and the cache is then dropped
    so the next batch reads it afresh. With `epochs` (shard -> the lease epoch its writer took), PostgreSQL also
    checks, in the append's transaction, that each written link's shard is still at that epoch: LeaseFenced if not.
    """
    by_link: dict[str, list[JournalEntry]] = {}
    for e in batch:
        by_link.setdefault(e.link_id, []).append(e)
    cache = {} if cache is None else cache
    missing = [link for link in by_link if link not in cache]
    known = {link: cache[link] for link in by_link if link in cache}
    if missing:
        known.update(await heads_of(conn, missing))
    out = Appended()
    rows = _Rows()
    fresh: HeadCache = {}
    balance_rows: list[tuple[str, str, int]] = []
    head_rows: list[tuple[str, int, bytes, int]] = []  # (link, new seq, new hash, the seq it replaces)
    replaced: list[bytes] = []  # the hash of the head each replaces: the statement checks it is still there
    for link_id, items in sorted(by_link.items()):
        items.sort(key=lambda e: e.seq)
        start = known[link_id]
        checked = _link_rows(link_id, items, start, clock())
        if isinstance(checked, Refused):
            out.refused[link_id] = checked
            continue
        link_rows, head = checked
        rows.extend(link_rows)
        out.heads[link_id] = head.seq
        fresh[link_id] = head
        if head.seq > start.seq:
            out.written[link_id] = link_rows.written
            balance_rows += [(link_id, a, b) for a, b in head.balances.items()]
            head_rows.append((link_id, head.seq, head.hash, start.seq))
            replaced.append(start.hash)
    if rows.entries:
        hits = columns(rows.hits, 15)  # the 15th, approvals_needed, is $70: added after the others
        shards = sorted({shard_of(link) for link, _, _, _ in head_rows}) if epochs is not None else []
        try:
            await bulk.run(conn, _APPEND, columns(head_rows, 4), rows.entries, rows.postings,
                           [*hits[:14], *columns(rows.configs, 3), *columns(rows.tables, 2),
                            *columns(list(rows.rounds.values()), 6), *columns(balance_rows, 3),
                            *columns(rows.decisions, 8), *columns(rows.summaries.total_rows(), 7),
                            *columns(rows.summaries.bucket_rows(), 5), replaced, hits[14],
                            *columns(rows.approvals, 7), shards,
                            [(epochs or {}).get(s, -1) for s in shards]], CHAIN_VERSION)
        except BaseException as e:
            for link in by_link:  # whatever happened, read the heads afresh next time
                cache.pop(link, None)
            if (fenced := lease_fenced(e)) is not None:
                raise fenced from e
            raise
    cache.update(fresh)
    for link_id, written in out.written.items():  # a hit is counted once: when the ledger holds it
        for w in written:
            for hand, pool in w.hits:
                HITS.labels(link_id, hand, pool).inc()
    return out


def journal_entries(link_id: str, rows: Iterable[tuple[int, dict[str, str]]]) -> list[JournalEntry]:
    """Journal stream rows as entries."""
    out = []
    for seq, fields in rows:
        try:
            balances = pairs(orjson.loads(fields["balances"]))
            out.append(JournalEntry(link_id, seq, fields["entry"], balances, fields["reply"], fields.get("after")))
        except (KeyError, TypeError, ValueError, IndexError) as e:  # the writer fences the link on it
            out.append(JournalEntry(link_id, seq, str(fields.get("entry", "")), {}, "", fields.get("after"),
                                    f"{type(e).__name__}: {e}"))
    return out


def identity_of(row: Any) -> str:
    """The request identity of an entry row ('' for none: a link without entries)."""
    return "" if row["request_id"] is None else request_identity(row["request_id"], row["request_hash"])
