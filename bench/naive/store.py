"""The naive twin's storage: one PostgreSQL transaction per call, the link's pool rows locked FOR UPDATE, the entry
and its postings inserted, `synchronous_commit` on (PostgreSQL's default), the stored reply kept for retries.

The way a team would first build the write path, for bench_naive.py to measure beside jackpotd (issue 22, P2): the
rules are jackpotd's own pure domain (contribute, evaluate_round, price_round); only the storage design differs.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from jackpotd.canonical import canonical_json
from jackpotd.domain.contributions import contribute
from jackpotd.domain.errors import Conflict, FailedPrecondition, NotFound
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.postings import Posting
from jackpotd.domain.pricing import RoundPrice, price_round
from jackpotd.domain.rates import rates_in_force
from jackpotd.domain.rounds import SeatHand, Wager, evaluate_round, require_every_wagered_seat, validate_wagers

SCHEMA = """
CREATE TABLE IF NOT EXISTS naive_links (link_id text PRIMARY KEY, config jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS naive_tables (table_id text PRIMARY KEY, link_id text NOT NULL REFERENCES naive_links);
CREATE TABLE IF NOT EXISTS naive_pools (link_id text NOT NULL REFERENCES naive_links, pool text NOT NULL,
    balance_uc bigint NOT NULL, PRIMARY KEY (link_id, pool));
CREATE TABLE IF NOT EXISTS naive_rounds (table_id text NOT NULL, round_id text NOT NULL, state text NOT NULL,
    wagers jsonb NOT NULL, PRIMARY KEY (table_id, round_id));
CREATE TABLE IF NOT EXISTS naive_entries (link_id text NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
    caller text NOT NULL, request_id text NOT NULL, body jsonb NOT NULL, created_ms bigint NOT NULL,
    hash bytea NOT NULL, PRIMARY KEY (link_id, seq));
CREATE TABLE IF NOT EXISTS naive_postings (link_id text NOT NULL, seq bigint NOT NULL, leg int NOT NULL,
    account text NOT NULL, amount_uc bigint NOT NULL, PRIMARY KEY (link_id, seq, leg));
CREATE TABLE IF NOT EXISTS naive_requests (caller text NOT NULL, request_id text NOT NULL, content bytea NOT NULL,
    reply bytea NOT NULL, PRIMARY KEY (caller, request_id));
"""


@dataclass(frozen=True, slots=True)
class Call:
    """Who asked what: the caller, its request id, and a digest of everything else the request said."""

    caller: str
    request_id: str
    content: bytes


@dataclass(frozen=True, slots=True)
class Moved:
    """What a transaction did to the link: the entry's sequence and the pool balances after (µ¢)."""

    link_id: str
    seq: int
    balances: Mapping[str, int]


async def create_link(conn: Any, config: LinkConfig) -> None:
    """The link, its tables and its pools (empty, as jackpotd's start: a reset applies after a hit), as an
    administrator would set them up."""
    async with conn.transaction():
        await conn.execute("INSERT INTO naive_links VALUES ($1, $2::jsonb)", config.link_id,
                           orjson.dumps(config.to_dict()).decode())
        await conn.executemany("INSERT INTO naive_tables VALUES ($1, $2)",
                               [(t, config.link_id) for t in config.tables])
        await conn.executemany("INSERT INTO naive_pools VALUES ($1, $2, $3)",
                               [(config.link_id, p.name, 0) for p in config.pools])


async def load_links(conn: Any) -> dict[str, LinkConfig]:
    """Every link's config, by table id (read once at start: configs do not change during a bench)."""
    rows = await conn.fetch("SELECT t.table_id, l.config FROM naive_tables t JOIN naive_links l USING (link_id)")
    configs: dict[str, LinkConfig] = {}
    by_link: dict[str, LinkConfig] = {}
    for r in rows:
        data = orjson.loads(r["config"])
        link = by_link.get(data["link_id"]) or by_link.setdefault(data["link_id"], LinkConfig.from_dict(data))
        configs[r["table_id"]] = link
    return configs


async def stored_reply(conn: Any, call: Call) -> bytes | None:
    """The reply already given to this request id, None for a new one; a reuse with other content is refused."""
    row = await conn.fetchrow("SELECT content, reply FROM naive_requests WHERE caller = $1 AND request_id = $2",
                              call.caller, call.request_id)
    if row is None:
        return None
    if row["content"] != call.content:
        raise Conflict("request_id", call.request_id, "already used for a different request")
    reply: bytes = row["reply"]
    return reply


async def _locked_pools(conn: Any, link_id: str) -> dict[str, int]:
    rows = await conn.fetch("SELECT pool, balance_uc FROM naive_pools WHERE link_id = $1 ORDER BY pool FOR UPDATE",
                            link_id)
    return {r["pool"]: r["balance_uc"] for r in rows}


async def _append(conn: Any, link_id: str, kind: str, call: Call, body: dict[str, Any],
                  postings: Sequence[Posting], before: Mapping[str, int], after: Mapping[str, int]) -> Moved:
    """The entry (hash-chained to the link's last), its postings, and the pool rows moved; under the pools' lock."""
    head = await conn.fetchrow("SELECT seq, hash FROM naive_entries WHERE link_id = $1 ORDER BY seq DESC LIMIT 1",
                               link_id)
    seq, prev = (head["seq"] + 1, head["hash"]) if head else (1, b"")
    created_ms = int(time.time() * 1000)
    text = canonical_json({"kind": kind, "request_id": call.request_id, **body})
    legs = [(i, p.account, p.amount_uc) for i, p in enumerate(postings)]
    digest = hashlib.sha256(prev + f"{link_id}\n{seq}\n{created_ms}\n{text}".encode()
                            + canonical_json([list(x) for x in legs]).encode()).digest()
    await conn.execute("INSERT INTO naive_entries VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)", link_id, seq, kind,
                       call.caller, call.request_id, text, created_ms, digest)
    await conn.executemany("INSERT INTO naive_postings VALUES ($1, $2, $3, $4, $5)",
                           [(link_id, seq, i, a, v) for i, a, v in legs])
    changed = [(link_id, pool, v) for pool, v in after.items() if before.get(pool) != v]
    await conn.executemany("UPDATE naive_pools SET balance_uc = $3 WHERE link_id = $1 AND pool = $2", changed)
    return Moved(link_id, seq, after)


async def _remember(conn: Any, call: Call, reply: bytes) -> None:
    await conn.execute("INSERT INTO naive_requests VALUES ($1, $2, $3, $4)", call.caller, call.request_id,
                       call.content, reply)


async def commit(conn: Any, link: LinkConfig, call: Call, table_id: str, round_id: str,
                 wagers: Sequence[Wager], reply_of: Any) -> bytes:
    """CommitWagers in one transaction: the wagers' contributions into the locked pools, the round opened.
    `reply_of(contribution, moved)` builds the serialized reply stored for a retry and returned."""
    table = link.table(table_id)
    pairs = validate_wagers(wagers, table.seats, link.wager_cents)
    async with conn.transaction():
        done = await stored_reply(conn, call)
        if done is not None:
            return done
        if await conn.fetchval("SELECT 1 FROM naive_rounds WHERE table_id = $1 AND round_id = $2", table_id,
                               round_id):
            raise FailedPrecondition("round_id", round_id, "this round is already committed on this table")
        before = await _locked_pools(conn, link.link_id)
        rates = rates_in_force(link.rate_sets, int(time.time() * 1000))
        c = contribute(rates, link.pools, before, pairs)
        await conn.execute("INSERT INTO naive_rounds VALUES ($1, $2, 'COMMITTED', $3::jsonb)", table_id, round_id,
                           orjson.dumps([[s.seat, s.wager_cents] for s in c.seats]).decode())
        moved = await _append(conn, link.link_id, "commit", call, {"table_id": table_id, "round_id": round_id},
                              c.merged, before, c.balances_after)
        reply: bytes = reply_of(c, moved)
        await _remember(conn, call, reply)
        return reply


async def settle(conn: Any, link: LinkConfig, call: Call, table_id: str, round_id: str,
                 hands: Sequence[SeatHand], dealer: Sequence[str], board: Sequence[str], reply_of: Any) -> bytes:
    """SettleRound in one transaction: the round's hands evaluated, its hits priced against the locked pools, the
    payouts and resets posted, the round closed. `reply_of(price, hits, wagered, moved)` builds the reply."""
    table = link.table(table_id)
    async with conn.transaction():
        done = await stored_reply(conn, call)
        if done is not None:
            return done
        row = await conn.fetchrow("SELECT state, wagers FROM naive_rounds WHERE table_id = $1 AND round_id = $2 "
                                  "FOR UPDATE", table_id, round_id)
        if row is None:
            raise NotFound("round_id", round_id, "no such round on this table")
        if row["state"] != "COMMITTED":
            raise FailedPrecondition("round_id", round_id, f"the round is {row['state']}")
        wagered = [seat for seat, _ in orjson.loads(row["wagers"])]
        require_every_wagered_seat(wagered, hands)
        hits = evaluate_round(table.game, table.seats, wagered, hands, board, dealer)
        before = await _locked_pools(conn, link.link_id)
        price: RoundPrice = price_round(link.paytable(table.game), link.pools, before, hits, table.seats)
        await conn.execute("UPDATE naive_rounds SET state = 'SETTLED' WHERE table_id = $1 AND round_id = $2",
                           table_id, round_id)
        body = {"table_id": table_id, "round_id": round_id, "hits": [[x.seat, x.category] for x in hits]}
        moved = await _append(conn, link.link_id, "settle", call, body, price.postings, before,
                              dict(price.balances_after))
        reply: bytes = reply_of(price, hits, wagered, moved)
        await _remember(conn, call, reply)
        return reply

