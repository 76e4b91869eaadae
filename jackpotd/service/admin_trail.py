"""The administrative audit trail as the service keeps it: every act recorded through the AuditTrail port, and the
bounds a query must keep (ListAudit)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ..domain.errors import InvalidInput
from .errors import Unavailable
from .ports import AdminAct, AdminActFilter, AuditTrail

log = logging.getLogger("jackpotd.service")
LIST_AUDIT_MAX = 1000  # acts one query returns at most
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MILLISECOND = timedelta(milliseconds=1)


def instant(ms: int) -> datetime | None:
    """Milliseconds since the epoch as an instant, exactly (integer arithmetic); 0 is no bound."""
    return EPOCH + ms * MILLISECOND if ms else None


def ms_of(at: datetime) -> int:
    """An instant as milliseconds since the epoch, exactly."""
    return (at - EPOCH) // MILLISECOND


TableLink = Callable[[str], Awaitable[str | None]]  # the link a table is registered on, if any


async def no_link(table_id: str) -> str | None:
    return None


class AdminTrail:
    """Records and lists administrative acts; without a trail (None) nothing is recorded and listing is refused."""

    def __init__(self, trail: AuditTrail | None = None, link_of_table: TableLink = no_link) -> None:
        self.trail = trail
        self.link_of_table = link_of_table

    async def record(self, act: AdminAct) -> None:
        """Append `act`; a store failure raises (the caller logs and counts it, the call's answer stands). An act
        on a table that names no link (SuspendTable, ResumeTable) is filed under the table's link, so the link's
        trail (ListAudit link_id) shows it."""
        if self.trail is None:
            return
        if act.table_id and not act.link_id:
            try:
                act = replace(act, link_id=await self.link_of_table(act.table_id) or "")
            except Exception:  # the stores cannot say: the act is still recorded, under its table only
                log.warning("the audit trail files %s on table %r under no link: its link could not be read",
                            act.method, act.table_id, exc_info=True)
        await self.trail.record(act)

    async def acts(self, link_id: str, actor: str, method: str, since_ms: int, until_ms: int,
                   limit: int) -> Sequence[AdminAct]:
        """The acts matching every given field (empty or 0: any), newest first; `limit` 0 is the trail's default."""
        if self.trail is None:
            raise Unavailable("this server keeps no audit trail")
        if not 0 <= limit <= LIST_AUDIT_MAX:
            raise InvalidInput("limit", limit, f"must be 0 (100) to {LIST_AUDIT_MAX}")
        for name, ms in (("since_ms", since_ms), ("until_ms", until_ms)):
            if ms < 0:
                raise InvalidInput(name, ms, "must be 0 (unbounded) or milliseconds since the epoch")
        return await self.trail.acts(AdminActFilter(link_id, actor, method, instant(since_ms), instant(until_ms),
                                                    limit))
