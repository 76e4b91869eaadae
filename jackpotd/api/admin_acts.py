"""The administrative audit trail as the API writes it: which calls leave a row, what the row says, and a row
that cannot be written logged and counted without changing the call's answer."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from google.protobuf.message import Message

from ..auth.identity import Identity
from ..domain.errors import InvalidInput
from ..domain.ids import parse_hit_id
from ..metrics import ADMIN_AUDIT_FAILURES
from ..service.ports import AdminAct

log = logging.getLogger("jackpotd.api")

# Writes one row of the administrative audit trail (the service's AdminTrail.record, on the AuditTrail port).
Recorder = Callable[[AdminAct], Awaitable[None]]
AUDITED = "/jackpot.v1.AdminService/"  # every call under it leaves a row, refused or not
UNAUDITED = frozenset({"/jackpot.v1.AdminService/ListAudit"})  # reading the trail is no act


def is_audited(path: str) -> bool:
    """Whether a call to `path` leaves a row in the trail."""
    return path.startswith(AUDITED) and path not in UNAUDITED


async def record_nothing(act: AdminAct) -> None:
    """The recorder of a server that keeps no trail."""
    return None


class ActWriter:
    """Writes one method's rows: a row that cannot be written is logged at ERROR and counted
    (jackpotd_admin_audit_failures_total); the call's answer stands."""

    def __init__(self, method: str, record: Recorder) -> None:
        self.method = method
        self.record = record
        self._failed = ADMIN_AUDIT_FAILURES.labels(method)

    async def write(self, request: Any, identity: Identity | None, outcome: str, detail: str) -> None:
        act = act_of(self.method, request, identity, outcome, detail)
        try:
            await self.record(act)
        except Exception:
            self._failed.inc()
            log.error("the audit trail did not record %s by %r (%s): %s", self.method, act.actor, outcome,
                      _fields(act), exc_info=True)


def act_of(method: str, request: Any, identity: Identity | None, outcome: str, detail: str) -> AdminAct:
    """The audit row of a call: the authenticated actor ('' when none) and the console it acted through, and what
    the request names (nothing if its bytes did not parse)."""
    fields = request.DESCRIPTOR.fields_by_name if isinstance(request, Message) else {}
    audit = request.audit if "audit" in fields else None

    def text(name: str) -> str:
        return str(getattr(request, name)) if name in fields else ""

    link_id, table_id = text("link_id"), text("table_id")
    if "hit_id" in fields:  # a hit decision names its link and table in its hit id, when it is one
        with contextlib.suppress(InvalidInput):
            link_id, table_id, _, _ = parse_hit_id(text("hit_id"))
    reason = text("reason") or (audit.reason if audit is not None else "")
    if outcome == "OK" and "rtp_override" in fields and request.HasField("rtp_override"):
        detail = override_detail(request.rtp_override.approval_ref, request.rtp_override.reason)
    return AdminAct(actor=identity.actor if identity else "", role=identity.role.value if identity else "",
                    method=method, request_id=text("request_id"), link_id=link_id, table_id=table_id, reason=reason,
                    approval_ref=audit.approval_ref if audit is not None else "", outcome=outcome, detail=detail,
                    agent=identity.agent if identity else "")


def override_detail(approval_ref: str, reason: str) -> str:
    """An accepted act's detail when it carried an RtpOverride (issue 33): the trail says that a game returning 100%
    or more at reset was accepted on purpose, and under which approval."""
    why = f"; reason: {reason}" if reason else ""
    return f"rtp_override (a return of 100% or more at the reset values allowed): approval_ref {approval_ref}{why}"


def _fields(act: AdminAct) -> dict[str, str]:
    """An act's text fields by name, as a row that could not be written is logged."""
    return {k: v for k, v in asdict(act).items() if k not in ("id", "at")}
