"""`jackpotd audit`: every balance recomputed from the postings, the hash chain verified, Redis compared."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from ...domain.postings import PAYOUTS
from .chain import chain_hash


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
