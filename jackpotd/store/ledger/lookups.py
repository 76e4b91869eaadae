"""The batched "was this request id / round ever used?" lookup every table call makes, on a held connection."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncpg

from ...service.ports import Seen
from .chain import _columns


class HeldConnection:
    """A pooled connection kept between uses by one busy task: acquiring and releasing a pooled one costs a
    reset round trip each time. Released on close, or after an error so the next use starts afresh."""

    def __init__(self, pg: asyncpg.Pool) -> None:
        self.pg = pg
        self._conn: Any = None

    async def get(self) -> Any:
        """The held connection, acquired afresh if there is none or it closed."""
        if self._conn is None or self._conn.is_closed():
            await self.release()
            self._conn = await self.pg.acquire()
        return self._conn

    async def release(self) -> None:
        """Give the connection back to the pool (quietly: it may be broken)."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(Exception):
                await self.pg.release(conn)


class Lookups:
    """Every table call asks the ledger whether its request id and round id were ever used; the questions
    of one moment share a query, on a connection held for the purpose."""

    LINGER = 0.002
    TIMEOUT = 5.0  # a half-open connection must not hold every commit of the process
    # Subqueries per row are index lookups in any plan; a join may turn into a scan of every round once
    # the prepared statement's generic plan guesses the arrays' size.
    QUERY = ("SELECT q.i, (SELECT e.request_hash FROM entries e WHERE e.link_id = q.link_id "
             "AND e.request_id = q.request_id) AS request_hash, (SELECT r.state FROM rounds r "
             "WHERE r.link_id = q.link_id AND r.table_id = q.table_id AND r.round_id = q.round_id) AS state "
             "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY "
             "AS q(link_id, table_id, round_id, request_id, i)")

    def __init__(self, pg: asyncpg.Pool) -> None:
        self.pg = pg
        self._queue: list[tuple[tuple[str, str, str, str], asyncio.Future[Seen]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._held = HeldConnection(pg)
        self._last_flush = -1.0
        self._closed = False

    async def get(self, link_id: str, table_id: str, round_id: str, request_id: str) -> Seen:
        """What the ledger holds of this request id and round, asked together with the moment's others."""
        if self._closed:
            raise ConnectionError("shutting down")
        fut: asyncio.Future[Seen] = asyncio.get_running_loop().create_future()
        self._queue.append(((link_id, table_id, round_id, request_id), fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await fut

    async def close(self) -> None:
        """Stop asking: pending and later questions fail with ConnectionError("shutting down")."""
        self._closed = True
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
            with contextlib.suppress(BaseException):
                await self._flusher
        for _, fut in self._queue:
            if not fut.done():
                fut.set_exception(ConnectionError("shutting down"))
        await self._held.release()

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_flush < self.LINGER:
            # Busy: calls come one at a time, and a query each would cost PostgreSQL more than the rest of
            # the call, so gather for a moment. A call on a quiet link is asked about at once.
            await asyncio.sleep(self.LINGER)
        self._last_flush = loop.time()
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                rows = await (await self._held.get()).fetch(self.QUERY, *_columns([k for k, _ in batch], 4),
                                                            timeout=self.TIMEOUT)
            except Exception as e:
                await self._held.release()
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                continue
            found = {int(r["i"]) - 1: Seen(r["request_hash"], r["state"]) for r in rows}
            for i, (_, fut) in enumerate(batch):
                if not fut.done():
                    fut.set_result(found.get(i, Seen(None, None)))
