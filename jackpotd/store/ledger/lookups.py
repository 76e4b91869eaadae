"""The batched "was this request id / round ever used?" lookup every table call makes, on a held connection."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg

from ...domain import seen_filter
from ...service.ports import Seen
from ..batching import Batcher
from .unnest import columns


def _open(conn: Any) -> bool:
    """Whether a held connection may still be used (one the pool took back after it broke may not even say)."""
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False


class HeldConnection:
    """A pooled connection kept between uses by one busy task: acquiring and releasing a pooled one costs a
    reset round trip each time. Released on close, or after an error so the next use starts afresh."""

    def __init__(self, pg: asyncpg.Pool) -> None:
        self.pg = pg
        self._conn: Any = None

    async def get(self) -> Any:
        """The held connection, acquired afresh if there is none or it closed."""
        if self._conn is None or not _open(self._conn):
            await self.release()
            self._conn = await self.pg.acquire()
        return self._conn

    async def release(self) -> None:
        """Give the connection back to the pool (quietly: it may be broken; within 5 s, or the pool closes it, as for a
        writer cut off from PostgreSQL that must stop at once)."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(Exception):
                await self.pg.release(conn, timeout=5)


class Lookups:
    """Every mutating call asks the ledger whether its request id (and round id) were ever used; the questions
    of one moment share a query, on a connection held for the purpose."""

    LINGER = 0.002
    TIMEOUT = 5.0  # a half-open connection must not hold every commit of the process
    # Subqueries per row are index lookups in any plan; a join may turn into a scan of every round once
    # the prepared statement's generic plan guesses the arrays' size.
    # A request written before ids were scoped to their caller is found by its bare id and the same content.
    QUERY = ("SELECT q.i, (SELECT e.request_hash FROM entries e WHERE e.link_id = q.link_id "
             "AND e.request_id = q.request_id) AS request_hash, (SELECT e.request_hash FROM entries e "
             "WHERE e.link_id = q.link_id AND e.request_id = q.legacy AND e.request_hash = q.hash) AS legacy_hash, "
             "(SELECT r.state FROM rounds r "
             "WHERE r.link_id = q.link_id AND r.table_id = q.table_id AND r.round_id = q.round_id) AS state "
             "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY "
             "AS q(link_id, table_id, round_id, request_id, legacy, hash, i)")

    def __init__(self, pg: asyncpg.Pool) -> None:
        self.pg = pg
        self._held = HeldConnection(pg)
        self._batcher: Batcher[tuple[str, str, str, str, str, str], Seen] = Batcher(self._send, linger=self.LINGER)

    async def get(self, link_id: str, table_id: str, round_id: str, key: str, legacy_id: str = "",
                  request_hash: str = "") -> Seen:
        """What the ledger holds of this request and round, asked together with the moment's others."""
        return await self._batcher.call((link_id, table_id, round_id, key, legacy_id, request_hash))

    async def close(self) -> None:
        """Stop asking: pending and later questions fail with ConnectionError("shutting down")."""
        await self._batcher.close(ConnectionError("shutting down"))
        await self._held.release()

    async def _send(self, batch: list[tuple[str, str, str, str, str, str]]) -> list[Seen]:
        try:
            rows = await (await self._held.get()).fetch(self.QUERY, *columns(batch, 6), timeout=self.TIMEOUT)
        except Exception:
            await self._held.release()  # the next batch starts on a fresh connection
            raise
        found = {int(r["i"]) - 1: Seen(r["request_hash"], r["state"]) if r["request_hash"] is not None or
                 r["legacy_hash"] is None else Seen(r["legacy_hash"], r["state"], legacy=True) for r in rows}
        return [found.get(i, Seen(None, None)) for i in range(len(batch))]


async def used_ids(pg: asyncpg.Pool, link_id: str, at_least: int, visit: Callable[[list[str]], None],
                   chunk: int = 20_000) -> bool:
    """Show `visit` every request and round id the ledger holds for the link (as the filter's ids, domain/seen_filter),
    a chunk at a time, from one snapshot; False (nothing shown) if its head is below `at_least`: the ledger has
    not yet written everything a filter's fill began after."""
    async with pg.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        head = await conn.fetchval("SELECT coalesce(max(seq), 0) FROM entries WHERE link_id = $1", link_id)
        if head < at_least:
            return False
        request, round_ = seen_filter.request_key, seen_filter.round_key
        cursor = await conn.cursor("SELECT request_id FROM entries WHERE link_id = $1", link_id)
        while rows := await cursor.fetch(chunk):
            visit([request(r[0]) for r in rows])
        cursor = await conn.cursor("SELECT table_id, round_id FROM rounds WHERE link_id = $1", link_id)
        while rows := await cursor.fetch(chunk):
            visit([round_(r[0], r[1]) for r in rows])
    return True
