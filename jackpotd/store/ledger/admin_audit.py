"""The trail of administrative acts (migration 007; its agent, 014): one row per AdminService call, refused ones
included, appended by the API's interceptor and read by ListAudit. Append-only, like the ledger."""

from __future__ import annotations

from collections.abc import Mapping

import asyncpg

from ...service.ports import AdminAct, AdminActFilter
from .service_port import DRIVER_ERRORS, unavailable

DETAIL_MAX = 500  # a status message is cut to this many characters in the trail
FIELD_MAX = 1000  # and any other field (a refused request may carry anything)
LIMIT_DEFAULT, LIMIT_MAX = 100, 1000


_COLUMNS = ("actor", "role", "method", "request_id", "link_id", "table_id", "reason", "approval_ref", "outcome",
            "detail", "agent")  # agent: migration 014
_INSERT = (f"INSERT INTO admin_audit ({', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join(f'${i}' for i in range(1, len(_COLUMNS) + 1))})")
_SELECT = (f"SELECT id, at, {', '.join(_COLUMNS)} FROM admin_audit "
           "WHERE ($1 = '' OR link_id = $1) AND ($2 = '' OR actor = $2) AND ($3 = '' OR method = $3) "
           "AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5) "
           "ORDER BY id DESC LIMIT $6")


async def record_admin_act(pool: asyncpg.Pool | asyncpg.Connection, row: AdminAct | Mapping[str, str]) -> None:
    """Append one act (or its text fields by name, a missing one empty) to the trail; a driver or connection
    failure is Unavailable."""
    fields = row if isinstance(row, Mapping) else {c: getattr(row, c) for c in _COLUMNS}
    values = [_text(fields.get(c, ""), DETAIL_MAX if c == "detail" else FIELD_MAX) for c in _COLUMNS]
    try:
        await pool.execute(_INSERT, *values)
    except DRIVER_ERRORS as error:
        raise unavailable(error) from error


def _text(value: str, most: int) -> str:
    """`value` as PostgreSQL text takes it: no NUL (protobuf strings may hold one), at most `most` characters."""
    return value.replace("\x00", "\\0")[:most]


async def admin_acts(pool: asyncpg.Pool | asyncpg.Connection, filter: AdminActFilter) -> list[AdminAct]:
    """The acts `filter` selects, newest first; a driver or connection failure is Unavailable."""
    limit = min(filter.limit, LIMIT_MAX) if filter.limit > 0 else LIMIT_DEFAULT
    try:
        rows = await pool.fetch(_SELECT, filter.link_id, filter.actor, filter.method, filter.since, filter.until,
                                limit)
    except DRIVER_ERRORS as error:
        raise unavailable(error) from error
    return [AdminAct(**{c: r[c] for c in _COLUMNS}, id=int(r["id"]), at=r["at"]) for r in rows]


class PostgresAuditTrail:
    """The AuditTrail port on the ledger's pool."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def record(self, act: AdminAct) -> None:
        await record_admin_act(self.pool, act)

    async def acts(self, query: AdminActFilter) -> list[AdminAct]:
        return await admin_acts(self.pool, query)
