"""The pre-aggregated summaries finance reads (migration 011): each entry's flows (domain/flows.py) summed per
link, quarter hour, account, flow and detail, and each quarter hour's range of sequences. The ledger writer adds
them in the statement that appends the entries; the audit and the migration re-derive them from the entries."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import orjson

from ...domain.flows import EntryFacts, Flow, HitPaid, ResetPaid, flows_of
from ...domain.verification import PAID
from ...service.errors import Unavailable
from ...service.seat_runs import run_at
from .unnest import columns

BUCKET_MS = 15 * 60 * 1000  # a quarter hour: every real time zone's offset is a multiple of it


def bucket_of(created_ms: int) -> int:
    """The start (Unix ms) of the quarter hour an entry's time falls in."""
    return created_ms - created_ms % BUCKET_MS


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_of(ms: int) -> datetime:
    """Unix ms as a UTC datetime (exact: no float)."""
    return EPOCH + timedelta(milliseconds=ms)


def ms_of(at: datetime) -> int:
    """A datetime as Unix ms (exact: no float)."""
    return (at - EPOCH) // timedelta(milliseconds=1)


def _round_data(body: Mapping[str, Any]) -> dict[str, Any]:
    rnd = body.get("round")
    data: dict[str, Any] = orjson.loads(rnd["data"]) if rnd else {}
    return data


def entry_facts(body: Mapping[str, Any], reply: str) -> EntryFacts:
    """What reconciliation needs of one entry, read from its JSON (and, for a settle with hits, its stored reply:
    the resets it priced)."""
    kind = body["kind"]
    postings = [(a, int(v)) for a, v in body["postings"]]
    if kind == "commit":
        data = _round_data(body)
        overflow = [(a, b, int(v)) for a, b, v in body.get("overflow", ())]
        wagers = sum(r[1] - r[0] + 1 for r in data["seat_runs"]) if "seat_runs" in data else len(data["seats"])
        return EntryFacts(kind, postings, wagers=wagers, overflow=overflow,
                          rates_version=int(data.get("rates_version", 0)))
    if kind == "void":
        data = _round_data(body)
        chosen = data["void_reasons"][-1]["seats"]  # this void's seats: the last reason recorded
        reversed_: dict[str, int] = {}
        runs = data.get("seat_runs")
        starts = [r[0] for r in runs] if runs is not None else []
        for seat in chosen:
            row = data["seats"][str(seat)] if runs is None else run_at(runs, starts, seat)
            if row is None:
                raise KeyError(f"seat {seat} is in no run of the round")
            at = row[0]
            for account, uc in data["legs"][at]:
                reversed_[account] = reversed_.get(account, 0) + int(uc)
        return EntryFacts(kind, postings, wagers=len(chosen), reversed=reversed_)
    if kind == "settle":
        hits = [HitPaid(h["pool"], h["hand"], int(h["amount_cents"]), int(h["funded_by_operator_cents"]),
                        h["status"] != PAID) for h in body.get("hits", ())]
        resets: list[ResetPaid] | None = []
        if hits and "resets" in body:  # a round of more than RUNS_FROM seats writes them in its entry
            resets = [ResetPaid(pool, int(reserve), int(operator)) for pool, reserve, operator in body["resets"]]
        elif hits:
            try:
                result = orjson.loads(reply)["result"]
                resets = [ResetPaid(r["pool"], int(r["from_reserve_cents"]), int(r["from_operator_cents"]))
                          for r in result["resets"]]
            except (KeyError, TypeError, ValueError):
                resets = None  # what the reply does not say stays unexplained, failing the identity
        return EntryFacts(kind, postings, hits=hits, resets=resets)
    if kind in ("approve_hit", "reject_hit"):
        seat = str(body["decision"]["seat"])
        hand = (_round_data(body).get("hands") or {}).get(seat, "")
        return EntryFacts(kind, postings, hand=hand)
    return EntryFacts(kind, postings)


def entry_flows(body: Mapping[str, Any], reply: str) -> list[Flow]:
    """An entry's flows. One whose facts cannot be read (an entry of an unknown shape) has its legs classified
    as unexplained: reconciliation then fails to balance and says so, and the entry is still written."""
    try:
        facts = entry_facts(body, reply)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        facts = EntryFacts("unreadable " + str(body.get("kind")), [(a, int(v)) for a, v in body["postings"]])
    return flows_of(facts)


# Kinds whose flows need more than their postings (and, for a commit, its round's data and overflow).
_BY_FACTS = frozenset({"void", "approve_hit", "reject_hit"})
_SHAPES_KEPT = 4_096  # flows remembered per shape: a process-wide cache, emptied when it grows past this
_SHAPE_DATA_MAX = 4_096  # a commit's round data longer than this has no shape: the cache holds at most ~16 MB of it
_FLOWS_OF_SHAPE: dict[Hashable, list[Flow]] = {}


def flow_shape(body: Mapping[str, Any]) -> Hashable | None:
    """What an entry's flows depend on, as a key (None: more than that, or an entry of an odd shape): its kind and
    postings, and for a commit its round's data and overflow. Entries of one shape have the same flows (issue 22:
    a batch's commits of one table and wager classify once)."""
    kind = body.get("kind")
    if not isinstance(kind, str) or kind in _BY_FACTS or (kind == "settle" and body.get("hits", []) != []):
        return None
    try:
        if kind != "commit":
            return kind, orjson.dumps(body.get("postings"))
        rnd = body.get("round")
        data = rnd.get("data") if isinstance(rnd, dict) and rnd else None
        if rnd and (not isinstance(data, str) or len(data) > _SHAPE_DATA_MAX):
            return None  # odd, or a big round's: classified alone, not kept in the cache
        return kind, orjson.dumps(body.get("postings")), data, orjson.dumps(body.get("overflow"))
    except TypeError:  # orjson.JSONEncodeError: not JSON's values (the writer parsed it from JSON, so never seen)
        return None


def shape_flows(shape: Hashable, body: Mapping[str, Any], reply: str) -> list[Flow]:
    """entry_flows of an entry of this shape (flow_shape), computed once per shape while the cache holds it."""
    flows = _FLOWS_OF_SHAPE.get(shape)
    if flows is None:
        if len(_FLOWS_OF_SHAPE) >= _SHAPES_KEPT:
            _FLOWS_OF_SHAPE.clear()
        flows = _FLOWS_OF_SHAPE[shape] = entry_flows(body, reply)
    return flows


@dataclass
class Summaries:
    """Summaries of a run of entries, keyed as their rows: added to the ledger's by the writer's upsert. Entries
    added by shape are counted per quarter hour and shape, and their flows summed once per batch (total_rows)."""

    totals: dict[tuple[str, int, str, str, str], list[int]] = field(default_factory=dict)
    buckets: dict[tuple[str, int], list[int]] = field(default_factory=dict)  # -> [first, last, entries]
    shaped: dict[tuple[str, int, Hashable], int] = field(default_factory=dict)  # (link, bucket, shape) -> entries
    flows: dict[Hashable, list[Flow]] = field(default_factory=dict)  # shape -> the flows of one of its entries

    def _entry(self, link_id: str, seq: int, created_ms: int) -> int:
        """One more entry in its quarter hour's sequence range; returns the quarter hour."""
        bucket = bucket_of(created_ms)
        b = self.buckets.get((link_id, bucket))
        if b is None:
            self.buckets[(link_id, bucket)] = [seq, seq, 1]
        else:
            b[0], b[1], b[2] = min(b[0], seq), max(b[1], seq), b[2] + 1
        return bucket

    def add(self, link_id: str, seq: int, created_ms: int, flows: Iterable[Flow]) -> None:
        """One entry with its flows (the audit and the migration derive every entry this way)."""
        self._add_flows(link_id, self._entry(link_id, seq, created_ms), flows, 1)

    def add_entry(self, link_id: str, seq: int, created_ms: int, body: Mapping[str, Any], reply: str) -> None:
        """One entry's flows, by its shape when it has one (the same totals as add(entry_flows(body, reply)))."""
        shape = flow_shape(body)
        if shape is None:
            self.add(link_id, seq, created_ms, entry_flows(body, reply))
            return
        if shape not in self.flows:
            self.flows[shape] = shape_flows(shape, body, reply)
        key = (link_id, self._entry(link_id, seq, created_ms), shape)
        self.shaped[key] = self.shaped.get(key, 0) + 1

    def _add_flows(self, link_id: str, bucket: int, flows: Iterable[Flow], times: int) -> None:
        """`flows` added `times` times to a quarter hour's totals."""
        for f in flows:
            key = (link_id, bucket, f.account, f.flow, f.detail)
            t = self.totals.get(key)
            if t is None:
                self.totals[key] = [f.amount_uc * times, f.items * times]
            else:
                t[0] += f.amount_uc * times
                t[1] += f.items * times

    def fold(self) -> None:
        """The entries counted by shape added to the totals (each shape's flows times its entries)."""
        for (link_id, bucket, shape), n in self.shaped.items():
            self._add_flows(link_id, bucket, self.flows[shape], n)
        self.shaped.clear()

    def extend(self, other: Summaries) -> None:
        """Another run's summaries added to these (its shaped entries folded first)."""
        other.fold()
        for key, (uc, items) in other.totals.items():
            t = self.totals.setdefault(key, [0, 0])
            t[0] += uc
            t[1] += items
        for where, (first, last, n) in other.buckets.items():
            b = self.buckets.get(where)
            self.buckets[where] = [first, last, n] if b is None else [min(b[0], first), max(b[1], last), b[2] + n]

    def total_rows(self) -> list[tuple[Any, ...]]:
        """The totals as flow_totals rows (the shaped entries folded in first)."""
        self.fold()
        return [(link, time_of(b), a, fl, d, uc, items) for (link, b, a, fl, d), (uc, items) in self.totals.items()]

    def bucket_rows(self) -> list[tuple[Any, ...]]:
        return [(link, time_of(b), first, last, n) for (link, b), (first, last, n) in self.buckets.items()]


def totals_upsert(first: int) -> str:
    """Adds a run's totals to their quarter hours' rows; parameters $first.. are the columns of total_rows()."""
    p = [f"${first + i}" for i in range(7)]
    return f"""INSERT INTO flow_totals AS sum_t (link_id, bucket, account, flow, detail, amount_uc, items)
    SELECT * FROM unnest({p[0]}::text[], {p[1]}::timestamptz[], {p[2]}::text[], {p[3]}::text[], {p[4]}::text[],
                         {p[5]}::bigint[], {p[6]}::bigint[])
    ON CONFLICT (link_id, bucket, account, flow, detail) DO UPDATE
        SET amount_uc = sum_t.amount_uc + EXCLUDED.amount_uc, items = sum_t.items + EXCLUDED.items"""


def buckets_upsert(first: int) -> str:
    """Widens quarter hours' sequence ranges by a run's; parameters $first.. are the columns of bucket_rows()."""
    p = [f"${first + i}" for i in range(5)]
    return f"""INSERT INTO flow_buckets AS sum_b (link_id, bucket, first_seq, last_seq, entries)
    SELECT * FROM unnest({p[0]}::text[], {p[1]}::timestamptz[], {p[2]}::bigint[], {p[3]}::bigint[], {p[4]}::bigint[])
    ON CONFLICT (link_id, bucket) DO UPDATE
        SET first_seq = least(sum_b.first_seq, EXCLUDED.first_seq),
            last_seq = greatest(sum_b.last_seq, EXCLUDED.last_seq), entries = sum_b.entries + EXCLUDED.entries"""


async def derive(conn: Any, link_id: str | None = None, chunk: int = 20_000) -> Summaries:
    """The summaries the entries make (of one link, or all): what the writer's upserts must have added up to."""
    out = Summaries()
    where, args = ("WHERE link_id = $1", [link_id]) if link_id is not None else ("", [])
    after: tuple[str, int] = ("", 0)
    while True:
        rows = await conn.fetch(
            f"SELECT link_id, seq, created_at, entry::text AS entry, reply FROM entries {where} "
            f"{'AND' if where else 'WHERE'} (link_id, seq) > (${len(args) + 1}, ${len(args) + 2}) "
            f"ORDER BY link_id, seq LIMIT {chunk}", *args, *after)
        for r in rows:
            body = orjson.loads(r["entry"])
            out.add(r["link_id"], int(r["seq"]), ms_of(r["created_at"]), entry_flows(body, r["reply"]))
        if len(rows) < chunk:
            return out
        after = (rows[-1]["link_id"], int(rows[-1]["seq"]))


async def backfill(conn: Any) -> None:
    """Migration 011: the summaries of the entries written before it (the writer adds them from then on). Writers
    of an older version still running wait (SHARE lock) until the migration commits: none of their entries can
    fall between the backfill and the writer. One link at a time, so memory follows the largest link."""
    await conn.execute("LOCK TABLE entries IN SHARE MODE")
    for r in await conn.fetch("SELECT link_id FROM links ORDER BY link_id"):
        await _write(conn, await derive(conn, r["link_id"]))


async def rebuild(conn: Any, link_id: str) -> tuple[int, int]:
    """A link's summaries derived again from its entries (after a classification change, or when the audit finds
    them wrong), as the ledger's owner, in one transaction that holds the link's head so its writer waits.
    Returns (entries, rows written)."""
    async with conn.transaction():
        if await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1 FOR UPDATE", link_id) is None:
            return 0, 0
        await conn.execute("DELETE FROM flow_totals WHERE link_id = $1", link_id)
        await conn.execute("DELETE FROM flow_buckets WHERE link_id = $1", link_id)
        derived = await derive(conn, link_id)
        await _write(conn, derived)
    return sum(n for _, _, n in derived.buckets.values()), len(derived.totals)


async def rebuild_links(dsn: str, links: Sequence[str], done: Callable[[str, int, int], None],
                        each: Callable[[list[str]], Iterable[str]] = iter) -> None:
    """`jackpotd rebuild-summaries`: `links` (none: every link) rebuilt one by one, logged in as `dsn` (the owner);
    `each` may wrap the list (a progress bar); `done` hears each link's (entries, rows), 0 entries: no such link.
    Unavailable when the database cannot be reached or refuses (the owner's role is needed)."""
    try:
        conn = await asyncpg.connect(dsn)
        try:
            ids = list(links) or [r["link_id"] for r in await conn.fetch("SELECT link_id FROM links ORDER BY 1")]
            for link in each(ids):
                done(link, *await rebuild(conn, link))
        finally:
            await conn.close()
    except (asyncpg.PostgresError, OSError) as e:
        raise Unavailable(str(e)) from e


async def _write(conn: Any, derived: Summaries) -> None:
    await conn.execute(buckets_upsert(1), *columns(derived.bucket_rows(), 5))
    await conn.execute(totals_upsert(1), *columns(derived.total_rows(), 7))
