"""The service answers through gRPC and records what it did in the ledger."""

from __future__ import annotations

from ..conftest import unique
from .harness import Client


async def test_commit_settle_and_read_back(client: Client) -> None:
    link, table = unique("link"), unique("table")
    await client.create_link(link)
    await client.register(table, link)
    resp = await client.commit(table, "r1", [1, 2])
    assert [a.seat for a in resp.accepted] == [1, 2]
    pools = await client.pools(link)
    assert pools["MAJOR"].balance_ucents == 2 * 20_000_000
    settled = await client.settle(table, "r1", {1: ["As", "Ks", "Qs", "Js", "Ts"], 2: ["2c", "3d", "4h", "5s", "7c"]})
    assert [(p.seat, p.hand, p.amount_cents, p.funded_by_operator_cents) for p in settled.payouts] == [
        (1, "royal_flush", 1_000_000, 1_000_000 - 40)]
    ledger = await client.ledger_pools(link)
    pools = await client.pools(link)
    assert ledger["pool:MAJOR"] == pools["MAJOR"].balance_ucents
