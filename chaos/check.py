"""The history checker's shell: reads the clients' log, the ledger (read-only, one snapshot) and Redis, runs
jackpotd's own audit of the chain and anchors, and lets chaos/verdicts.py decide. Run it once the clients have
stopped: `python -m chaos.check --history PATH --dsn DSN --redis URL [--state-dir DIR]` prints one line per
invariant, `PASS|FAIL <name>: <detail>`, and exits 0 when all hold, 1 when one does not, 2 on bad usage."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from jackpotd.service.errors import Unavailable
from jackpotd.store import checkpoints
from jackpotd.store.ledger.audit import audit_link
from jackpotd.store.redis.errors import WrongTopology
from jackpotd.store.redis.pools import RedisPools

from . import history as codec
from .report import Report, Verdict
from .verdicts import ChainAudit, Entry, Link, RedisLink, decide

__all__ = ["Report", "Verdict", "check", "main"]

CATCH_UP_S = 30.0  # how long the writers are given to bring the ledger up to Redis before Redis counts as ahead
POOL = "pool:"


async def _redis_state(redis: RedisPools, links: Collection[str]) -> dict[str, RedisLink]:
    """Each link's sequence and balances as Redis holds them; a link Redis holds nothing of is left out."""
    out: dict[str, RedisLink] = {}
    for link_id in sorted({*links, *await redis.links()}):
        seq, pools = await redis.seq(link_id), await redis.balances(link_id)
        if seq or pools:
            out[link_id] = RedisLink(seq, pools)
    return out


async def _heads(conn: asyncpg.Connection) -> dict[str, int]:
    """Every link's head (links.last_seq)."""
    return {r["link_id"]: int(r["last_seq"]) for r in await conn.fetch("SELECT link_id, last_seq FROM links")}


async def _caught_up(conn: asyncpg.Connection, redis: RedisPools, wanted: Collection[str] | None,
                     wait_s: float) -> None:
    """Wait (polling, up to `wait_s`) until no link's Redis sequence is above its ledger head: the writer moves
    the journal into the ledger a little after Redis answered. Still ahead after that: the verdict names it."""
    deadline = time.monotonic() + wait_s
    while True:
        heads = await _heads(conn)
        live = await _redis_state(redis, heads if wanted is None else wanted)
        if all(s.seq <= heads.get(link, 0) for link, s in live.items() if wanted is None or link in wanted):
            return
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.2)


async def _ledger(conn: asyncpg.Connection, link_ids: Sequence[str]) -> list[Link]:
    """The links' entries (request as stored, kind, round) and the pools' balances each entry left."""
    heads = await _heads(conn)
    posted: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for r in await conn.fetch("SELECT link_id, seq, account, balance_after_uc FROM postings WHERE link_id = ANY($1) "
                              "AND account LIKE 'pool:%' ORDER BY link_id, seq, idx", list(link_ids)):
        posted[r["link_id"], int(r["seq"])][r["account"][len(POOL):]] = int(r["balance_after_uc"])
    entries: dict[str, list[Entry]] = defaultdict(list)
    for r in await conn.fetch("SELECT link_id, seq, request_id, request_hash, kind, entry->'round'->>'table_id' AS t, "
                              "entry->'round'->>'round_id' AS r FROM entries WHERE link_id = ANY($1) "
                              "ORDER BY link_id, seq", list(link_ids)):
        key = (r["link_id"], int(r["seq"]))
        entries[r["link_id"]].append(Entry(key[1], r["request_id"], r["request_hash"], r["kind"], r["t"] or "",
                                           r["r"] or "", posted.get(key, {})))
    return [Link(link_id, heads.get(link_id, 0), entries[link_id]) for link_id in link_ids]


def _anchors(state_dir: Path | None) -> tuple[dict[str, list[checkpoints.Checkpoint]], list[str], bool]:
    """The state directory's signed checkpoints (MAC-verified), what is wrong with the others, and whether a key
    was there to check them with."""
    if state_dir is None:
        return {}, [], False
    key = checkpoints.default_key_file(state_dir, create=False)
    if key is None:
        return {}, [], False
    anchored, bad = checkpoints.load(state_dir / "checkpoints", checkpoints.read_key(key))
    return anchored, bad, True


async def check(history: Path, dsn: str, redis_url: str, *, state_dir: Path | None = None,
                links: Collection[str] | None = None, catch_up_s: float = CATCH_UP_S, sentinels: str = "",
                master: str = "", cluster: bool = False) -> Report:
    """Every invariant of the run whose clients logged `history`, against the ledger at `dsn` and the Redis
    at `redis_url` (or the primary `sentinels` name for `master`, or a cluster). `links`: only these (default:
    every link the ledger, the log or Redis names); `state_dir`: check the chain against its signed checkpoints."""
    events, problems = codec.load(history)
    named = {e.call.link for e in events}
    redis = await RedisPools.open(redis_url, sentinels, master, cluster=cluster)
    try:
        conn = await asyncpg.connect(dsn)
    except BaseException:
        await redis.close()
        raise
    try:
        await _caught_up(conn, redis, links, catch_up_s)
        async with conn.transaction(isolation="repeatable_read", readonly=True):  # one snapshot of the ledger
            wanted = sorted(set(links) if links is not None else {*await _heads(conn), *named, *await redis.links()})
            ledger = await _ledger(conn, wanted)
            live = {k: s for k, s in (await _redis_state(redis, wanted)).items() if k in wanted}
            anchored, anchor_problems, keyed = _anchors(state_dir)
            audits: dict[str, ChainAudit] = {}
            for link in ledger:
                if link.head or link.entries:
                    found = await audit_link(conn, link.link_id, {}, 0, anchored.get(link.link_id, ()),
                                             redis_compared=False)
                    audits[link.link_id] = ChainAudit(found.entries, found.checkpoints, list(found.problems))
    finally:
        await conn.close()
        await redis.close()
    mine = [e for e in events if links is None or e.call.link in links]
    return decide(mine, problems, ledger, live, audits, anchor_problems, keyed)


def _parser() -> argparse.ArgumentParser:
    """The CLI's arguments (argparse exits 2 on bad usage)."""
    p = argparse.ArgumentParser(prog="python -m chaos.check", description=__doc__.split("\n\n")[0])
    p.add_argument("--history", required=True, type=Path, help="the clients' log (history.jsonl)")
    p.add_argument("--dsn", required=True, help="PostgreSQL DSN of the ledger (read only)")
    p.add_argument("--redis", required=True, help="Redis/Valkey URL")
    p.add_argument("--state-dir", type=Path, help="a jackpotd state directory: its signed checkpoints anchor the chain")
    p.add_argument("--link", action="append", dest="links", help="check only this link (repeatable)")
    p.add_argument("--catch-up", type=float, default=CATCH_UP_S, help="seconds the writers get to catch up")
    p.add_argument("--redis-sentinels", default="", help="host:port,... of Sentinels (then --redis-master)")
    p.add_argument("--redis-master", default="", help="the Sentinels' master name")
    p.add_argument("--redis-cluster", action="store_true", help="--redis is a node of a cluster")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI: prints each verdict; 0 when every invariant holds, 1 otherwise, 2 on bad usage."""
    args: Any = _parser().parse_args(argv)
    if not args.history.is_file():
        print(f"chaos.check: --history {args.history}: no such file", file=sys.stderr)
        return 2
    if args.state_dir is not None and not args.state_dir.is_dir():
        print(f"chaos.check: --state-dir {args.state_dir}: no such directory", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(check(args.history, args.dsn, args.redis, state_dir=args.state_dir, links=args.links,
                                   catch_up_s=args.catch_up, sentinels=args.redis_sentinels,
                                   master=args.redis_master, cluster=args.redis_cluster))
    except (OSError, asyncpg.PostgresError, Unavailable, WrongTopology) as e:  # a store did not answer
        print(f"chaos.check: could not check (nothing is proven): {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(report.render())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
