"""PostgresLedger, the service's Ledger port: its answers from a real ledger, and Unavailable (never an asyncpg
error) when PostgreSQL cannot be used."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import pytest
import pytest_asyncio

from jackpotd.canonical import canonical_json
from jackpotd.service.errors import Unavailable
from jackpotd.service.ports import LastHit, Ledger, Reply, Seen
from jackpotd.service.replies import NoResult
from jackpotd.store import ledger
from jackpotd.store.ledger import JournalEntry

from ..conftest import Isolated, unique

UC = 1_000_000  # µ¢ per cent


@pytest_asyncio.fixture
async def pool(isolated: Isolated) -> AsyncIterator[asyncpg.Pool]:
    await ledger.migrate(isolated.dsn)
    pg = await ledger.connect_pool(isolated.dsn, size=2)
    yield pg
    await pg.close()


def entry(link: str, seq: int, body: dict[str, object], major_after_uc: int) -> JournalEntry:
    full = {"ts_ms": 1_700_000_000_000 + seq, "request_id": f"r{seq}", "request_hash": f"h{seq}", **body}
    reply = canonical_json({"hash": f"h{seq}", "seq": seq, "result": {}, "balances": ["MAJOR", str(major_after_uc)],
                            "content": {"n": seq}})
    return JournalEntry(link, seq, canonical_json(full), {"MAJOR": major_after_uc}, reply)


def hit(hit_id: str, seat: int, cents: int, before_uc: int) -> dict[str, object]:
    return {"hit_id": hit_id, "table_id": "t1", "round_id": "g1", "seat": seat, "hand": "ROYAL_FLUSH",
            "cards": ["As", "Ks", "Qs", "Js", "Ts"], "pool": "MAJOR", "amount_cents": cents,
            "funded_by_operator_cents": 0, "pool_before_uc": before_uc, "rule": "pool", "status": "PAID"}


async def test_an_unknown_link_is_not_known_and_has_no_hit(pool: asyncpg.Pool) -> None:
    port: Ledger = ledger.PostgresLedger(pool)
    try:
        link = unique("p")
        assert await port.last_hit(link) is None
        assert await port.link_known(link) is False
        assert await port.table_link(unique("t")) is None
        assert await port.stored_reply(link, "r1") is None
        assert await port.seen(link, "t1", "g1", "r1") == Seen(None, None)
    finally:
        await port.close()


async def test_answers_come_from_the_written_ledger(pool: asyncpg.Pool) -> None:
    link = unique("p")
    async with pool.acquire() as conn:
        await ledger.write_batch(conn, [
            entry(link, 1, {"kind": "fund", "table": "t-" + link,
                            "postings": [["operator_funding", -500 * UC], ["pool:MAJOR", 500 * UC]]}, 500 * UC),
            entry(link, 2, {"kind": "settle", "postings": [["pool:MAJOR", -200 * UC], ["payouts", 200 * UC]],
                            "hits": [hit(link + "-a", 3, 200, 500 * UC)]}, 300 * UC),
        ])
    port = ledger.PostgresLedger(pool)
    try:
        assert await port.link_known(link) is True
        assert await port.table_link("t-" + link) == link
        assert await port.stored_reply(link, "r2") == Reply(2, NoResult(), {"MAJOR": 300 * UC}, {"n": 2}, "h2")
        assert await port.seen(link, "t1", "g1", "r1") == Seen("h1", None)
        assert await port.last_hit(link) == LastHit(link + "-a", "t1", 3, "ROYAL_FLUSH", 200, "MAJOR", 2, "PAID")
    finally:
        await port.close()


async def test_a_closed_pool_is_unavailable_not_a_driver_error(isolated: Isolated) -> None:
    await ledger.migrate(isolated.dsn)
    pg = await ledger.connect_pool(isolated.dsn, size=1)
    port = ledger.PostgresLedger(pg)
    await pg.close()
    link = unique("p")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: port.last_hit(link), lambda: port.link_known(link), lambda: port.table_link("t1"),
        lambda: port.stored_reply(link, "r1"), lambda: port.seen(link, "t1", "g1", "r1")]
    for call in calls:
        with pytest.raises(Unavailable, match=r"the ledger \(PostgreSQL\) is unavailable: .*same request_id") as e:
            await call()
        assert isinstance(e.value.__cause__, asyncpg.InterfaceError | OSError)
    await port.close()


async def test_lookups_after_close_are_unavailable(pool: asyncpg.Pool) -> None:
    port = ledger.PostgresLedger(pool)
    await port.close()
    with pytest.raises(Unavailable, match="shutting down"):
        await port.seen(unique("p"), "t1", "g1", "r1")
