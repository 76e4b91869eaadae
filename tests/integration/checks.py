"""Invariants after a load: Redis = ledger = sum of postings, no gaps, one entry per acknowledged reply."""

from __future__ import annotations

from typing import Any

import asyncpg

from jackpotd.store.ledger import audit_link

from .load import Tally


async def assert_consistent(pg: asyncpg.Pool, redis: Any, link: str, tally: Tally) -> None:
    balances = {k: int(v) for k, v in (await redis.hgetall("{link:" + link + "}:balances")).items()}
    seq = int(await redis.get("{link:" + link + "}:seq"))
    report = await audit_link(pg, link, balances, seq)
    assert report.ok, report.problems
    seqs = [int(r["seq"]) for r in await pg.fetch("SELECT seq FROM entries WHERE link_id = $1 ORDER BY seq", link)]
    assert seqs == list(range(1, seq + 1))  # no gaps, nothing beyond Redis
    sums = {r["account"]: int(r["s"]) for r in await pg.fetch(
        "SELECT account, sum(amount_uc) AS s FROM postings WHERE link_id = $1 GROUP BY account", link)}
    for pool, bal in balances.items():
        assert sums.get(f"pool:{pool}", 0) == bal
    rows = await pg.fetch("SELECT request_id, seq FROM entries WHERE link_id = $1", link)
    by_id: dict[str, list[int]] = {}
    for r in rows:
        by_id.setdefault(r["request_id"], []).append(int(r["seq"]))
    for request_id, acked_seq in tally.acked.items():
        assert by_id.get(request_id) == [acked_seq], request_id
    # finance: wagers accepted - refunded = contributions + retained (DOMAIN.md §10)
    net_wagers = -sums.get("wagers", 0) - sums.get("refunds", 0)
    assert net_wagers == tally.wagered_cents * 1_000_000
    assert sums.get("payouts", 0) == tally.paid_cents * 1_000_000
