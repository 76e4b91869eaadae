"""Finance's reads of the ledger (issue 12): a period's summaries, balances, hits and chart; the entries for
export; the liability now. Only PostgreSQL: Redis is never asked a figure here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import orjson

from ...domain.flows import Flow
from ...domain.postings import PENDING_PAYOUTS, POOL_PREFIX
from ...domain.verification import PENDING
from ...service.ports import ExportedEntry, HitRecord, LiabilityData, PeriodData
from .reads import CURRENT_CONFIG, DATED_HITS, HIT_STATUS, hit_records
from .summaries import BUCKET_MS, bucket_of, entry_flows, ms_of, time_of

CHART_BUCKETS = 1_000  # at most about this many points per pool between a period's hits
HITS_LISTED = 5_000  # a report lists at most this many hits (all of them are counted; ListHits has the rest)


def _ceil_bucket(ms: int) -> int:
    return -((-ms) // BUCKET_MS) * BUCKET_MS


async def latest_config(conn: Any, link_id: str) -> str | None:
    """The link's current configuration as stored (JSON), or None for a link the ledger does not hold."""
    row = await conn.fetchrow(CURRENT_CONFIG, link_id)
    return None if row is None else str(row["config"])


async def _edge(conn: Any, link_id: str, start: int, end: int) -> tuple[list[tuple[int, int]], list[Flow]]:
    """The entries dated in [start, end), which lies inside one quarter hour, and their flows, from the entries
    themselves (the quarter hour's summary covers more than the period)."""
    b = await conn.fetchrow("SELECT first_seq, last_seq FROM flow_buckets WHERE link_id = $1 AND bucket = $2",
                            link_id, time_of(bucket_of(start)))
    if b is None or start >= end:
        return [], []
    rows = await conn.fetch("SELECT seq, created_at, entry::text AS entry, reply FROM entries WHERE link_id = $1 "
                            "AND seq BETWEEN $2 AND $3 AND created_at >= $4 AND created_at < $5 ORDER BY seq",
                            link_id, int(b["first_seq"]), int(b["last_seq"]), time_of(start), time_of(end))
    flows: list[Flow] = []
    for r in rows:
        flows += entry_flows(orjson.loads(r["entry"]), r["reply"])
    return [(int(r["seq"]), ms_of(r["created_at"])) for r in rows], flows


async def _seq_before(conn: Any, link_id: str, at: int) -> int:
    """The last entry dated before `at` (0: none)."""
    inside = await conn.fetchrow("SELECT first_seq, last_seq FROM flow_buckets WHERE link_id = $1 AND bucket = $2",
                                 link_id, time_of(bucket_of(at)))
    if inside is not None:
        v = await conn.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1 AND seq BETWEEN $2 AND $3 "
                                "AND created_at < $4", link_id, int(inside["first_seq"]), int(inside["last_seq"]),
                                time_of(at))
        if v is not None:
            return int(v)
    v = await conn.fetchval("SELECT max(last_seq) FROM flow_buckets WHERE link_id = $1 AND bucket < $2", link_id,
                            time_of(bucket_of(at)))
    return 0 if v is None else int(v)


async def _pool_balances(conn: Any, link_id: str, seq: int) -> dict[str, int]:
    """Every pool's balance after entry `seq`, from the postings' balance_after (0 before a pool's first)."""
    rows = await conn.fetch(
        "SELECT a.account, (SELECT p.balance_after_uc FROM postings p WHERE p.link_id = a.link_id "
        "AND p.account = a.account AND p.seq <= $2 ORDER BY p.seq DESC LIMIT 1) AS balance "
        "FROM account_balances a WHERE a.link_id = $1 AND a.account LIKE 'pool:%'", link_id, seq)
    return {r["account"][len(POOL_PREFIX):]: int(r["balance"] or 0) for r in rows}


async def period(pool: asyncpg.Pool, link_id: str, from_ms: int, to_ms: int) -> PeriodData:
    """Everything reconciliation needs of [from_ms, to_ms), in one repeatable-read snapshot: whole quarter hours
    from the summaries, the ragged ends from their entries, balances from the postings."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        config = await latest_config(conn, link_id)
        rate_sets = [r["rs"] for r in await conn.fetch(
            "SELECT DISTINCT (config::jsonb -> 'rate_sets')::text AS rs FROM link_configs WHERE link_id = $1", link_id)]
        inner_from, inner_to = _ceil_bucket(from_ms), bucket_of(to_ms)
        if inner_from < inner_to:  # whole quarter hours, and the ragged ends either side
            parts = [(from_ms, inner_from), (inner_to, to_ms)]
        else:  # within one quarter hour, or across one boundary
            inner_from = inner_to = 0
            parts = ([(from_ms, to_ms)] if bucket_of(from_ms) == bucket_of(to_ms - 1)
                     else [(from_ms, _ceil_bucket(from_ms)), (bucket_of(to_ms), to_ms)])
        totals: dict[tuple[str, str, str], tuple[int, int]] = {}
        flows: list[Flow] = []
        seqs: list[int] = []
        entries = 0
        for start, end in parts:
            if start < end:
                got, fl = await _edge(conn, link_id, start, end)
                flows += fl
                seqs += [s for s, _ in got]
                entries += len(got)
        if inner_from < inner_to:
            for r in await conn.fetch(
                    "SELECT account, flow, detail, sum(amount_uc)::bigint AS uc, sum(items)::bigint AS items "
                    "FROM flow_totals WHERE link_id = $1 AND bucket >= $2 AND bucket < $3 GROUP BY 1, 2, 3",
                    link_id, time_of(inner_from), time_of(inner_to)):
                totals[(r["account"], r["flow"], r["detail"])] = (int(r["uc"]), int(r["items"]))
            span = await conn.fetchrow(
                "SELECT min(first_seq) AS first, max(last_seq) AS last, sum(entries)::bigint AS n FROM flow_buckets "
                "WHERE link_id = $1 AND bucket >= $2 AND bucket < $3", link_id, time_of(inner_from),
                time_of(inner_to))
            if span is not None and span["first"] is not None:
                seqs += [int(span["first"]), int(span["last"])]
                entries += int(span["n"])
        for f in flows:
            uc, items = totals.get((f.account, f.flow, f.detail), (0, 0))
            totals[(f.account, f.flow, f.detail)] = (uc + f.amount_uc, items + f.items)
        before = await _seq_before(conn, link_id, from_ms)
        last = await _seq_before(conn, link_id, to_ms)
        opening = await _pool_balances(conn, link_id, before)
        closing = await _pool_balances(conn, link_id, last)
        first_seq, last_seq = (min(seqs), max(seqs)) if seqs else (0, 0)
        hits = await hit_records(conn, link_id, await conn.fetch(
            DATED_HITS + "AND h.seq BETWEEN $2 AND $3 ORDER BY h.seq, h.seat LIMIT $4", link_id, first_seq,
            last_seq, HITS_LISTED))
        hits_total = len(hits) if len(hits) < HITS_LISTED else int(await conn.fetchval(
            "SELECT count(*) FROM hits WHERE link_id = $1 AND seq BETWEEN $2 AND $3", link_id, first_seq, last_seq))
        chart = await _chart(conn, link_id, from_ms, to_ms, inner_from, inner_to, opening, before, closing, last,
                             hits)
    return PeriodData(link_id, config, from_ms, to_ms, first_seq, last_seq, entries, totals, opening, closing, hits,
                      chart, hits_total, rate_sets)


async def _chart(conn: Any, link_id: str, from_ms: int, to_ms: int, inner_from: int, inner_to: int,
                 opening: dict[str, int], before: int, closing: dict[str, int], last: int,
                 hits: list[HitRecord]) -> list[tuple[str, int, int, int]]:
    """Each pool's balance through the period: at its start, at the end of every whole quarter hour, on both sides
    of every hit, and at its end. (pool, at_ms, seq, µ¢)."""
    points = [(pool, from_ms, before, uc) for pool, uc in opening.items()]
    if inner_from < inner_to:  # from the summaries: a pool's movements per quarter hour, added up from its start
        running = await _pool_balances(conn, link_id, await _seq_before(conn, link_id, inner_from))
        moved: dict[int, dict[str, int]] = {}
        for r in await conn.fetch(
                "SELECT bucket, account, sum(amount_uc)::bigint AS uc FROM flow_totals WHERE link_id = $1 "
                "AND bucket >= $2 AND bucket < $3 AND account LIKE 'pool:%' GROUP BY 1, 2", link_id,
                time_of(inner_from), time_of(inner_to)):
            moved.setdefault(ms_of(r["bucket"]), {})[r["account"][len(POOL_PREFIX):]] = int(r["uc"])
        buckets = await conn.fetch("SELECT bucket, last_seq FROM flow_buckets WHERE link_id = $1 AND bucket >= $2 "
                                   "AND bucket < $3 ORDER BY bucket", link_id, time_of(inner_from),
                                   time_of(inner_to))
        every = max(1, -(-len(buckets) // CHART_BUCKETS))  # a long period is drawn from fewer points
        for n, r in enumerate(buckets):
            start = ms_of(r["bucket"])
            for pool, uc in moved.get(start, {}).items():
                running[pool] = running.get(pool, 0) + uc
            if n % every == 0 or n == len(buckets) - 1:
                points += [(pool, min(start + BUCKET_MS, to_ms), int(r["last_seq"]), uc)
                           for pool, uc in running.items()]
    if hits:
        after = {(int(r["seq"]), r["account"][len(POOL_PREFIX):]): int(r["balance_after_uc"]) for r in await conn.fetch(
            "SELECT seq, account, balance_after_uc FROM postings WHERE link_id = $1 AND seq = ANY($2::bigint[]) "
            "AND account LIKE 'pool:%'", link_id, sorted({h.seq for h in hits}))}
        # Before a settle's hits, its pool held what the first of them paid from: within a round a pool only
        # falls (a shortfall is funded up to the prize, which empties it), so that is the largest pool_before.
        first_paid: dict[tuple[str, int], tuple[int, int]] = {}
        for h in hits:
            at, uc = first_paid.get((h.pool, h.seq), (h.at_ms, h.pool_before_uc))
            first_paid[(h.pool, h.seq)] = (at, max(uc, h.pool_before_uc))
        for (pool, seq), (at, uc) in first_paid.items():
            points.append((pool, at, seq - 1, uc))
            if (seq, pool) in after:
                points.append((pool, at, seq, after[(seq, pool)]))
    points += [(pool, to_ms, last, uc) for pool, uc in closing.items()]
    return sorted(set(points), key=lambda p: (p[0], p[2], p[1]))


async def seq_range(pool: asyncpg.Pool, link_id: str, from_seq: int, to_seq: int, from_ms: int | None,
                    to_ms: int | None) -> tuple[int, int]:
    """The sequences an export covers: [from_seq, to_seq] (0: the first, the last), or the entries dated in
    [from_ms, to_ms)."""
    async with pool.acquire() as conn:
        head = int(await conn.fetchval("SELECT coalesce(max(last_seq), 0) FROM links WHERE link_id = $1", link_id))
        if from_ms is None or to_ms is None:
            return max(from_seq, 1), min(to_seq or head, head)
        return await _seq_before(conn, link_id, from_ms) + 1, await _seq_before(conn, link_id, to_ms)


# One statement a page: the entries, their postings gathered into arrays in index order (one row per entry, no
# Python object per posting row), the time as Unix ms and the hashes as hex computed by PostgreSQL. The entry is
# read as text only: its round is parsed from that text in Python (round_of), never by a JSON operator.
EXPORT_PAGE = (
    "WITH legs AS (SELECT seq, array_agg(account ORDER BY idx) AS accounts, "
    "array_agg(amount_uc ORDER BY idx) AS amounts, array_agg(balance_after_uc ORDER BY idx) AS afters "
    "FROM postings WHERE link_id = $1 AND seq BETWEEN $2 AND $3 GROUP BY seq) "
    "SELECT e.seq, floor(extract(epoch FROM e.created_at) * 1000)::bigint AS at_ms, e.kind, e.request_id, "
    "e.entry::text AS entry, encode(e.hash, 'hex') AS hash, encode(e.prev_hash, 'hex') AS prev_hash, "
    "l.accounts, l.amounts, l.afters "
    "FROM entries e LEFT JOIN legs l ON l.seq = e.seq "
    "WHERE e.link_id = $1 AND e.seq BETWEEN $2 AND $3 ORDER BY e.seq")


async def entries(pool: asyncpg.Pool, link_id: str, first: int, last: int,
                  page: int = 5_000) -> AsyncIterator[list[ExportedEntry]]:
    """The entries [first, last] with their postings, a page at a time, in sequence order. The next page's query
    is in flight while the caller uses this one (PostgreSQL reads while this process encodes and sends)."""
    ranges = iter([(at, min(last, at + page - 1)) for at in range(first, last + 1, page)])
    following = _read_ahead(pool, link_id, next(ranges, None))
    try:
        while following is not None:
            rows = await following
            following = _read_ahead(pool, link_id, next(ranges, None))
            out = [ExportedEntry(seq, at_ms, kind, request_id, *round_of(entry), hash_hex, prev_hex, entry,
                                 accounts or (), amounts or (), afters or ())
                   for seq, at_ms, kind, request_id, entry, hash_hex, prev_hex, accounts, amounts, afters in rows]
            if out:
                yield out
    finally:  # the caller stopped early (or failed): the page read ahead is not wanted
        if following is not None:
            following.cancel()
            following.add_done_callback(_retrieved)


def _retrieved(task: asyncio.Task[list[Any]]) -> None:
    """A page read ahead and not wanted: its end (cancelled, or a failure) is nobody's to report."""
    if not task.cancelled():
        task.exception()


def _read_ahead(pool: asyncpg.Pool, link_id: str, span: tuple[int, int] | None) -> asyncio.Task[list[Any]] | None:
    """The page `span` read in a task of its own (None: no page left)."""
    if span is None:
        return None
    return asyncio.ensure_future(pool.fetch(EXPORT_PAGE, link_id, *span))


def round_of(entry: str) -> tuple[str, str]:
    """The table and round an entry moved ('' when none), from its exact text."""
    if '"round"' not in entry:
        return "", ""
    moved = orjson.loads(entry).get("round") or {}
    return str(moved.get("table_id", "")), str(moved.get("round_id", ""))


async def liability(pool: asyncpg.Pool, link_id: str) -> LiabilityData:
    """What the pools owe players now, as the ledger holds it: balances, the hits awaiting verification."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        current = await conn.fetchrow(CURRENT_CONFIG, link_id)
        config = None if current is None else str(current["config"])
        head = await conn.fetchrow("SELECT l.last_seq, e.created_at FROM links l LEFT JOIN entries e "
                                   "ON e.link_id = l.link_id AND e.seq = l.last_seq WHERE l.link_id = $1", link_id)
        balances = {r["account"]: int(r["balance_uc"]) for r in await conn.fetch(
            "SELECT account, balance_uc FROM account_balances WHERE link_id = $1", link_id)}
        pending = await hit_records(conn, link_id, await conn.fetch(
            DATED_HITS + f"AND {HIT_STATUS} = '{PENDING}' ORDER BY h.seq, h.seat", link_id))
    seq = 0 if head is None else int(head["last_seq"])
    at = 0 if head is None or head["created_at"] is None else ms_of(head["created_at"])
    pools = {a[len(POOL_PREFIX):]: v for a, v in balances.items() if a.startswith(POOL_PREFIX)}
    return LiabilityData(link_id, config, seq, at, pools, balances.get(PENDING_PAYOUTS, 0), pending,
                         0 if current is None else int(current["version"]))
