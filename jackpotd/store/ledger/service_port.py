"""The service's Ledger port over PostgreSQL, with the one place where a driver or connection failure
becomes errors.Unavailable: the service layer never sees an asyncpg exception."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

import asyncpg

from ...service.deadlines import bounded
from ...service.errors import Unavailable
from ...service.ports import HitRecord, LastHit, LedgerEntry, Reply, Seen
from ...service.replies import decode_reply
from . import reads
from .lookups import Lookups

# What means "PostgreSQL cannot be used right now", not "this request is wrong". ConnectionError and
# TimeoutError are OSErrors; they are named for the reader (Lookups raises ConnectionError on shutdown).
DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.InterfaceError,  # a closed pool or connection
    asyncpg.PostgresConnectionError,  # ConnectionDoesNotExistError, ConnectionFailureError, ...
    asyncpg.exceptions.OperatorInterventionError,  # 57P: a restart, a failover, a terminated backend
    asyncpg.exceptions.InsufficientResourcesError,  # 53: too many connections, disk full, out of memory
    asyncpg.exceptions.QueryCanceledError,  # a statement timeout
    # the driver's own state broken by a connection lost mid-operation (seen when a primary is killed under load:
    # "cannot switch to state 12; another operation is in progress"); the pool discards the connection
    asyncpg.exceptions.InternalClientError,
    OSError,
    ConnectionError,
    TimeoutError,
)

_P = ParamSpec("_P")
_T = TypeVar("_T")


def unavailable(error: BaseException) -> Unavailable:
    """The Unavailable a driver or connection failure is reported as: safe to retry with the same id."""
    return Unavailable(f"the ledger (PostgreSQL) is unavailable: {str(error) or type(error).__name__}; "
                       "retry with the same request_id")


def translated(method: Callable[_P, Awaitable[_T]]) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """The method with driver and connection failures raised as Unavailable (the original as its cause); a wait
    cut short by the caller's deadline is answered as the ledger's (service/deadlines.py)."""

    @functools.wraps(method)
    async def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await bounded(method(*args, **kwargs), "the ledger (PostgreSQL)")
        except DRIVER_ERRORS as error:
            raise unavailable(error) from error

    return call


class PostgresLedger:
    """ports.Ledger: what the service reads of the ledger, the answers that outlive Redis's retention.
    Request-id and round questions go through the batched Lookups; the rest are single queries on the pool."""

    def __init__(self, pg: asyncpg.Pool) -> None:
        self.pg = pg
        self.lookups = Lookups(pg)

    @translated
    async def seen(self, link_id: str, table_id: str, round_id: str, key: str, legacy_id: str = "",
                   request_hash: str = "") -> Seen:
        """The request's content hash and the round's state, through the batched lookup; `legacy_id` with this
        content also counts (the id as a ledger written before ids were scoped holds it)."""
        return await self.lookups.get(link_id, table_id, round_id, key, legacy_id, request_hash)

    @translated
    async def stored_reply(self, link_id: str, request_id: str) -> Reply | None:
        """The reply recorded forever for a request id."""
        raw = await reads.stored_reply(self.pg, link_id, request_id)
        return None if raw is None else decode_reply(raw)

    @translated
    async def link_known(self, link_id: str) -> bool:
        """Whether the ledger holds the link (then Redis not knowing it means Redis forgot it)."""
        return await reads.link_known(self.pg, link_id)

    @translated
    async def table_link(self, table_id: str) -> str | None:
        """The link the ledger has the table on."""
        return await reads.table_link(self.pg, table_id)

    @translated
    async def last_hit(self, link_id: str) -> LastHit | None:
        """The link's latest hit, or None before its first."""
        return await reads.last_hit(self.pg, link_id)

    @translated
    async def hits(self, link_id: str, table_id: str, status: str, limit: int) -> list[HitRecord]:
        """A link's hits, newest first (ListHits)."""
        return await reads.hits(self.pg, link_id, table_id, status, limit)

    @translated
    async def hit(self, link_id: str, table_id: str, round_id: str, seat: int) -> HitRecord | None:
        """One hit with its current status (§7), or None."""
        return await reads.hit(self.pg, link_id, table_id, round_id, seat)

    @translated
    async def entries(self, link_id: str, after: int, upto: int) -> list[LedgerEntry]:
        """The link's entries after `after` up to `upto`: what signs are sent (issue 11)."""
        return [LedgerEntry(seq, kind, None if raw is None else decode_reply(raw), table, at_ms)
                for seq, kind, raw, table, at_ms in await reads.entries_between(self.pg, link_id, after, upto)]

    @translated
    async def last_rounds(self, link_id: str, table_ids: Sequence[str]) -> dict[str, int]:
        """When each table's last round settled or was voided (epoch ms); tables without one are absent."""
        return await reads.last_rounds(self.pg, link_id, table_ids)

    @translated
    async def close(self) -> None:
        """Stops the lookups (pending ones fail as Unavailable); the pool is its owner's to close."""
        await self.lookups.close()
