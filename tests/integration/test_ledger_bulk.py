"""Issue 22, the writer's cost per entry: a large batch appended by binary COPY is the same ledger as small ones,
under the same head guard; the references migration 017 checks once per statement refuse what the foreign keys did."""

from __future__ import annotations

import asyncpg
import pytest

from jackpotd.store import ledger
from jackpotd.store.ledger import Head
from jackpotd.store.ledger.bulk import BULK

from ..conftest import Isolated, unique
from .test_ledger_writer import connect, funding, ledger_rows

N = BULK + 44  # one batch over the threshold, so its entries and postings go by COPY


async def test_a_bulk_batch_is_the_ledger_small_batches_make(isolated: Isolated) -> None:
    bulk, small = unique("bulk"), unique("small")
    conn = await connect(isolated)
    try:
        cache: ledger.HeadCache = {}
        assert (await ledger.write_batch(conn, [funding(bulk, s, 5) for s in range(1, N + 1)], cache)).heads == {
            bulk: N}
        for first in range(1, N + 1, 50):
            await ledger.write_batch(conn, [funding(small, s, 5) for s in range(first, min(N, first + 49) + 1)])
        for link in (bulk, small):
            assert await ledger_rows(conn, link) == (list(range(1, N + 1)), N, N * 5_000_000)
            report = await ledger.audit_link(conn, link, {}, 0, redis_compared=False)
            assert report.chain_ok and report.balanced and report.summaries_ok and not report.problems, report
        assert await conn.fetchval("SELECT array_agg(DISTINCT chain_version) FROM entries WHERE link_id = $1",
                                   bulk) == [3]
        # written again, by COPY and without a cache: nothing changes
        assert (await ledger.write_batch(conn, [funding(bulk, s, 5) for s in range(1, N + 1)], cache)).heads == {
            bulk: N}
        assert (await ledger.write_batch(conn, [funding(bulk, s, 5) for s in range(1, N + 2)])).heads == {
            bulk: N + 1}
        assert await ledger_rows(conn, bulk) == (list(range(1, N + 2)), N + 1, (N + 1) * 5_000_000)
    finally:
        await conn.close()


async def test_a_stale_head_aborts_a_whole_bulk_batch(isolated: Isolated) -> None:
    link = unique("bulk")
    conn = await connect(isolated)
    try:
        await ledger.write_batch(conn, [funding(link, s, 5) for s in (1, 2)])
        behind: ledger.HeadCache = {link: Head(1, b"stale", {"operator_funding": -5_000_000,
                                                              "pool:MAJOR": 5_000_000})}
        with pytest.raises(asyncpg.SerializationError, match="head is not the one this writer left"):
            await ledger.write_batch(conn, [funding(link, s, 5) for s in range(2, N + 2)], behind)
        assert await ledger_rows(conn, link) == ([1, 2], 2, 10_000_000)  # none of it: not one row copied
        assert await conn.fetchval("SELECT count(*) FROM postings WHERE link_id = $1", link) == 4
        assert (await ledger.write_batch(conn, [funding(link, s, 5) for s in range(2, N + 2)], behind)).heads == {
            link: N + 1}
    finally:
        await conn.close()


async def test_the_references_checked_per_statement_refuse_what_the_foreign_keys_did(isolated: Isolated) -> None:
    """Migration 017, as the owner (a DBA): a posting without its entry, an entry or round of no link, and a link's
    row deleted or renamed under its entries are refused with foreign_key_violation, as before."""
    link = unique("ref")
    conn = await connect(isolated)
    try:
        await ledger.write_batch(conn, [funding(link, s, 5) for s in (1, 2)])
        with pytest.raises(asyncpg.ForeignKeyViolationError, match=rf"link {link} names entry \d+, which the ledger"):
            await conn.execute("INSERT INTO postings (link_id, seq, idx, account, amount_uc, balance_after_uc) "
                               "SELECT $1, s, 0, 'pool:MAJOR', 1, 1 FROM generate_series(1, 9) s "
                               "ON CONFLICT DO NOTHING", link)
        with pytest.raises(asyncpg.ForeignKeyViolationError, match="row of entries names link nowhere"):
            await conn.execute("INSERT INTO entries (link_id, seq, kind, request_id, request_hash, created_at, entry, "
                               "reply, prev_hash, hash) VALUES ('nowhere', 1, 'fund', 'r', 'h', now(), '{}', '', "
                               "'', '')")
        with pytest.raises(asyncpg.ForeignKeyViolationError, match="row of rounds names link nowhere"):
            await conn.execute("INSERT INTO rounds (link_id, table_id, round_id, state, rev, data) "
                               "VALUES ('nowhere', 't', 'r', 'COMMITTED', 1, '{}')")
        await conn.execute("INSERT INTO rounds (link_id, table_id, round_id, state, rev, data) "
                           "VALUES ($1, 't', 'r', 'COMMITTED', 1, '{}')", link)
        with pytest.raises(asyncpg.ForeignKeyViolationError, match="row of rounds names link nowhere"):
            await conn.execute("UPDATE rounds SET link_id = 'nowhere' WHERE link_id = $1", link)
        for statement in ("DELETE FROM links WHERE link_id = $1",
                          "UPDATE links SET link_id = link_id || '-renamed' WHERE link_id = $1"):
            with pytest.raises(asyncpg.ForeignKeyViolationError, match=f"link {link} is named by its entries"):
                await conn.execute(statement, link)
        assert await ledger_rows(conn, link) == ([1, 2], 2, 10_000_000)
    finally:
        await conn.close()
