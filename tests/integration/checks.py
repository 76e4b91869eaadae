"""Invariants after a load: Redis = ledger = sum of postings, no gaps, one entry per answer the tables got."""

from __future__ import annotations

from typing import Any

import asyncpg

from jackpotd.store import keys
from jackpotd.store.ledger import audit_link

from .load import Tally


async def assert_consistent(pg: asyncpg.Pool, redis: Any, link: str, tally: Tally) -> None:
    balances = {k: int(v) for k, v in (await redis.hgetall(keys.balances(link))).items()}
    seq = int(await redis.get(keys.seq(link)))
    report = await audit_link(pg, link, balances, seq)
    assert report.ok, report.problems
    seqs = [int(r["seq"]) for r in await pg.fetch("SELECT seq FROM entries WHERE link_id = $1 ORDER BY seq", link)]
    assert seqs == list(range(1, seq + 1))  # no gaps, nothing beyond Redis
    sums = {r["account"]: int(r["s"]) for r in await pg.fetch(
        "SELECT account, sum(amount_uc) AS s FROM postings WHERE link_id = $1 GROUP BY account", link)}
    for pool, bal in balances.items():
        assert sums.get(f"pool:{pool}", 0) == bal
    # every answer a table got is exactly one ledger entry, at the sequence it was told; and no table
    # operation is in the ledger that no table was told about (nothing lost, nothing doubled)
    rows = await pg.fetch("SELECT seq, kind, entry->'round'->>'table_id' AS t, entry->'round'->>'round_id' AS r "
                          "FROM entries WHERE link_id = $1 AND kind IN ('commit', 'settle', 'void')", link)
    in_ledger: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        in_ledger.setdefault((r["kind"], r["t"], r["r"]), []).append(int(r["seq"]))
    assert tally.answers, "the load got no answers"
    assert in_ledger == {k: [s] for k, s in tally.answers.items()}
    # finance: wagers accepted - refunded = contributions + retained (RULES.md §10)
    net_wagers = -sums.get("wagers", 0) - sums.get("refunds", 0)
    assert net_wagers == (tally.wagered_cents - tally.refunded_cents) * 1_000_000
    assert sums.get("payouts", 0) == tally.paid_cents * 1_000_000
    assert sums.get("pending_payouts", 0) == tally.pending_cents * 1_000_000  # §7: held until a supervisor decides
