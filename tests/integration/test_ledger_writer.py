"""The ledger writer's one-statement append: idempotent, and safe when another writer got there first."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from jackpotd.canonical import canonical_json
from jackpotd.store import ledger
from jackpotd.store.ledger import Head, JournalEntry

from ..conftest import Isolated, unique


def funding(link: str, seq: int, cents: int) -> JournalEntry:
    """A journal entry that moves `cents` from operator funding into MAJOR (pool balance after: seq × cents)."""
    uc = cents * 1_000_000
    entry = canonical_json({"kind": "fund", "ts_ms": 1_700_000_000_000 + seq, "request_id": f"r{seq}",
                            "request_hash": f"h{seq}", "postings": [["operator_funding", -uc], ["pool:MAJOR", uc]]})
    return JournalEntry(link, seq, entry, {"MAJOR": seq * uc}, '{"seq":' + str(seq) + "}")


async def ledger_rows(conn: asyncpg.Connection, link: str) -> tuple[list[int], int, int]:
    seqs = [r["seq"] for r in await conn.fetch("SELECT seq FROM entries WHERE link_id = $1 ORDER BY seq", link)]
    head = await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link)
    major = await conn.fetchval("SELECT balance_uc FROM account_balances WHERE link_id = $1 AND account = 'pool:MAJOR'",
                                link)
    return seqs, head, major


async def connect(isolated: Isolated) -> asyncpg.Connection:
    await ledger.migrate(isolated.dsn)
    return await asyncpg.connect(isolated.dsn)


async def test_a_batch_written_again_changes_nothing(isolated: Isolated) -> None:
    link = unique("w")
    conn = await connect(isolated)
    try:
        cache: ledger.HeadCache = {}
        batch = [funding(link, s, 5) for s in (1, 2, 3)]
        assert (await ledger.write_batch(conn, batch, cache)).heads == {link: 3}
        assert (await ledger.write_batch(conn, batch, cache)).heads == {link: 3}
        assert (await ledger.write_batch(conn, batch)).heads == {link: 3}  # no cache: heads read from the ledger
        assert await ledger_rows(conn, link) == ([1, 2, 3], 3, 15_000_000)
        assert cache[link].seq == 3
    finally:
        await conn.close()


async def test_a_stale_head_aborts_the_whole_batch_and_the_retry_appends_only_what_is_new(
        isolated: Isolated) -> None:
    link = unique("w")
    conn = await connect(isolated)
    try:
        await ledger.write_batch(conn, [funding(link, s, 5) for s in (1, 2)])
        behind: ledger.HeadCache = {link: Head(1, b"stale", {"operator_funding": -5_000_000,
                                                              "pool:MAJOR": 5_000_000})}
        # none of the batch is written
        with pytest.raises(asyncpg.SerializationError, match="head is not the one this writer left"):
            await ledger.write_batch(conn, [funding(link, s, 5) for s in (2, 3)], behind)
        assert link not in behind  # dropped, so the retry reads the head afresh
        assert await ledger_rows(conn, link) == ([1, 2], 2, 10_000_000)
        assert (await ledger.write_batch(conn, [funding(link, s, 5) for s in (2, 3)], behind)).heads == {link: 3}
        assert await ledger_rows(conn, link) == ([1, 2, 3], 3, 15_000_000)
    finally:
        await conn.close()


async def test_a_head_ahead_of_the_ledger_writes_no_gap(isolated: Isolated) -> None:
    # e.g. the database was restored from a backup while the writer ran
    link = unique("w")
    conn = await connect(isolated)
    try:
        await ledger.write_batch(conn, [funding(link, s, 5) for s in (1, 2)])
        ahead: ledger.HeadCache = {link: Head(3, b"x", {"operator_funding": -15_000_000, "pool:MAJOR": 15_000_000})}
        with pytest.raises(asyncpg.SerializationError, match="head is not the one this writer left"):
            await ledger.write_batch(conn, [funding(link, 4, 5)], ahead)
        assert await ledger_rows(conn, link) == ([1, 2], 2, 10_000_000)
    finally:
        await conn.close()


async def test_two_writers_racing_record_each_entry_once(isolated: Isolated) -> None:
    link = unique("w")
    first, second = await connect(isolated), await asyncpg.connect(isolated.dsn)
    try:
        batch = [funding(link, s, 5) for s in range(1, 41)]

        async def writer(conn: asyncpg.Connection) -> dict[str, int]:
            cache: ledger.HeadCache = {}
            deadline = time.monotonic() + 30
            while True:
                try:
                    return (await ledger.write_batch(conn, batch, cache)).heads
                except asyncpg.PostgresError as e:  # the other writer got there first: read the head, go on
                    if time.monotonic() > deadline:
                        raise AssertionError(f"a writer's batch: not through within 30 s (last: {e!r})") from e
                    await asyncio.sleep(0.01)

        assert await asyncio.gather(writer(first), writer(second)) == [{link: 40}, {link: 40}]
        assert await ledger_rows(first, link) == (list(range(1, 41)), 40, 200_000_000)
    finally:
        await first.close()
        await second.close()


async def test_a_head_rewritten_at_the_same_sequence_is_never_written_onto(isolated: Isolated) -> None:
    """Issue 19: the head's sequence is where the writer left it, but its hash is not (a rewrite that recomputed the
    chain and links.last_hash): the statement refuses, so no entry takes its prev_hash from a head it did not write."""
    link = unique("w")
    conn = await connect(isolated)
    try:
        cache: ledger.HeadCache = {}
        await ledger.write_batch(conn, [funding(link, s, 5) for s in (1, 2)], cache)
        await conn.execute("ALTER TABLE entries DISABLE TRIGGER ALL")
        await conn.execute("UPDATE entries SET hash = '\\x00'::bytea WHERE link_id = $1 AND seq = 2", link)
        await conn.execute("ALTER TABLE entries ENABLE TRIGGER ALL")
        await conn.execute("UPDATE links SET last_hash = '\\x00'::bytea WHERE link_id = $1", link)
        with pytest.raises(asyncpg.SerializationError, match="head is not the one this writer left"):
            await ledger.write_batch(conn, [funding(link, 3, 5)], cache)
        assert await conn.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1", link) == 2
    finally:
        await conn.close()
