"""The floor's calls to jackpotd, in one place: pending hits and their approval, tables and their suspension,
the audit trail and the pools, as small frozen records that `jackpot-floor` and `jackpot-console` render."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, display_pb2, display_pb2_grpc
from jackpotd.auth.client import role_channel
from jackpotd.auth.identity import ON_BEHALF_OF as ON_BEHALF_OF  # the header naming the person a console acts for
from jackpotd.auth.identity import Role

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.admin_pb2_grpc import AdminServiceAsyncStub
    from jackpotd.api.gen.jackpot.v1.display_pb2_grpc import DisplayServiceAsyncStub

T = TypeVar("T")

ROLES = (Role.SUPERVISOR, Role.ADMIN)  # who may act on the floor, supervisor first
DEFAULT_TIMEOUT = 15.0  # seconds: every floor call but the watch is a small unary one
WATCH_SILENCE = 6.0  # seconds without an update (jackpotd's heartbeat is every 2 s) and a watch is taken as lost

PENDING, PAID, REJECTED = "PENDING", "PAID", "REJECTED"
# every administrative act says why (RULES.md §9); an approval's why is mostly its reference, so an approval
# given no reason records this one
APPROVAL_REASON = "hit verified before payment"


AUDIT_MAX = 1000  # the most rows ListAudit returns at once
READS = frozenset({"ListHits", "ListAudit"})  # AdminService methods that change nothing (the trail has them too)


def is_answered_read(method: str, outcome: str) -> bool:
    """A read that was answered: noise on the trail a person reads (a refused read is kept: it may be a probe)."""
    return method in READS and outcome == "OK"


class FloorError(Exception):
    """jackpotd refused or could not answer a floor call: the gRPC status code's name and its message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code  # e.g. "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAVAILABLE"
        self.message = message


@dataclass(frozen=True, slots=True)
class Hit:
    """A hit as the ledger holds it (AdminService.ListHits), with who approved or rejected it."""

    hit_id: str
    table_id: str
    round_id: str
    seat: int
    hand: str  # as the wire names it: "royal_flush"
    cards: tuple[str, ...]
    pool: str
    amount_cents: int
    status: str  # PENDING, PAID or REJECTED
    at_ms: int  # when the round settled; 0 when the server does not say
    approved_by: tuple[str, ...]
    approvals_needed: int  # 1, or 2 under dual control
    rejected_by: str
    rule: str
    sequence: int
    link_id: str = ""
    pool_before_ucents: int = 0
    funded_by_operator_cents: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    """What an approval or a rejection did: PAID, still PENDING (1 of 2 under dual control), or REJECTED."""

    hit_id: str
    status: str
    amount_cents: int
    pool: str
    hand: str
    approved_by: tuple[str, ...]
    approvals_needed: int
    sequence: int = 0
    returned_to_pool_ucents: int = 0
    returned_to_operator_cents: int = 0


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the link as the floor sees it (DisplayService.GetPools)."""

    table_id: str
    online: bool
    suspended: bool
    last_round_at_ms: int  # 0: no round yet (or a server that does not say)


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool's balance: whole cents as signs show it, and exact in µ¢."""

    pool: str
    amount_cents: int
    balance_ucents: int
    reset_cents: int = 0


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One administrative act on the trail, refused ones included (AdminService.ListAudit)."""

    at_ms: int
    actor: str
    role: str
    agent: str  # the console that acted for actor ("console:floor-1"); empty when the person called directly
    method: str
    table_id: str
    reason: str
    approval_ref: str
    outcome: str  # OK or a status code's name
    detail: str
    link_id: str = ""
    request_id: str = ""
    id: int = 0  # the trail's row id

    @property
    def who(self) -> str:
        """"supervisor:alice", or "console:floor-1 for supervisor:alice" when a console acted for her."""
        person = f"{self.role}:{self.actor}" if self.role else (self.actor or "(none)")
        return f"{self.agent} for {person}" if self.agent else person


@dataclass(frozen=True, slots=True)
class Changed:
    """A suspension or resumption recorded: the ledger entry it made and the link's configuration version."""

    link_id: str
    sequence: int
    config_version: int


floor_channel = role_channel  # a channel presenting the credential: its certificate over TLS, else its token


def new_request_id() -> str:
    """A fresh request id; pass the same one again to retry an act without doing it twice."""
    return str(uuid.uuid4())


def _hit(h: admin_pb2.HitRow) -> Hit:
    return Hit(hit_id=h.hit_id, table_id=h.table_id, round_id=h.round_id, seat=h.seat, hand=h.hand,
               cards=tuple(h.cards), pool=h.pool, amount_cents=h.amount_cents, status=h.status, at_ms=h.at_ms,
               approved_by=tuple(h.approved_by), approvals_needed=h.approvals_needed or 1,
               rejected_by=h.rejected_by, rule=h.rule, sequence=h.sequence, link_id=h.link_id,
               pool_before_ucents=h.pool_before_ucents, funded_by_operator_cents=h.funded_by_operator_cents)


def _decision(d: admin_pb2.HitDecisionResponse) -> Decision:
    return Decision(hit_id=d.hit_id, status=d.status, amount_cents=d.amount_cents, pool=d.pool, hand=d.hand,
                    approved_by=tuple(d.approved_by), approvals_needed=d.approvals_needed or 1,
                    sequence=d.sequence, returned_to_pool_ucents=d.returned_to_pool_ucents,
                    returned_to_operator_cents=d.returned_to_operator_cents)


def _audit(a: admin_pb2.AuditRow) -> AuditEntry:
    return AuditEntry(at_ms=a.at_ms, actor=a.actor, role=a.role, agent=a.agent, method=a.method,
                      table_id=a.table_id, reason=a.reason, approval_ref=a.approval_ref, outcome=a.outcome,
                      detail=a.detail, link_id=a.link_id, request_id=a.request_id, id=a.id)


class FloorCalls:
    """The floor's calls over one channel. Each takes `on_behalf_of` ("supervisor:alice"): the console sends it
    as `x-jackpot-on-behalf-of` metadata, which jackpotd accepts from the console role only. Every refusal or
    failure raises FloorError (the status code's name and message), never grpc's own error."""

    def __init__(self, channel: grpc.aio.Channel, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.admin: AdminServiceAsyncStub = admin_pb2_grpc.AdminServiceStub(channel)
        self.display: DisplayServiceAsyncStub = display_pb2_grpc.DisplayServiceStub(channel)
        self.timeout = timeout

    async def _call(self, call: Callable[..., Awaitable[T]], request: object, on_behalf_of: str | None) -> T:
        metadata = ((ON_BEHALF_OF, on_behalf_of),) if on_behalf_of else None
        try:
            return await call(request, timeout=self.timeout, metadata=metadata)
        except grpc.aio.AioRpcError as e:
            raise FloorError(e.code().name, e.details() or "") from None

    async def hits(self, link_id: str, status: str | None = None, limit: int = 100, *, table_id: str = "",
                   on_behalf_of: str | None = None) -> list[Hit]:
        """The link's hits, newest first: those of one status (PENDING, PAID, REJECTED), or all (None); of one
        table when `table_id` is given."""
        request = admin_pb2.ListHitsRequest(link_id=link_id, table_id=table_id, status=status or "", limit=limit)
        resp = await self._call(self.admin.ListHits, request, on_behalf_of)
        return [_hit(h) for h in resp.hits]

    async def pending_hits(self, link_id: str, *, on_behalf_of: str | None = None) -> list[Hit]:
        """The hits awaiting a supervisor's verification (RULES.md §7), newest first."""
        return await self.hits(link_id, PENDING, 1000, on_behalf_of=on_behalf_of)

    async def approve(self, hit_id: str, approval_ref: str, reason: str = "", request_id: str | None = None, *,
                      on_behalf_of: str | None = None) -> Decision:
        """Approve a PENDING hit: PAID, or still PENDING with one approval of two under dual control. An empty
        reason records APPROVAL_REASON (the trail requires one)."""
        audit = admin_pb2.Audit(reason=reason.strip() or APPROVAL_REASON, approval_ref=approval_ref)
        request = admin_pb2.ApproveHitRequest(request_id=request_id or new_request_id(), hit_id=hit_id, audit=audit)
        return _decision(await self._call(self.admin.ApproveHit, request, on_behalf_of))

    async def reject(self, hit_id: str, reason: str, request_id: str | None = None, *, approval_ref: str,
                     on_behalf_of: str | None = None) -> Decision:
        """Reject a PENDING hit: its amount goes back to its pool (REJECTED). Like every act it cites an approval
        (RULES.md §9): `approval_ref`, e.g. the surveillance review that found the hit void."""
        request = admin_pb2.RejectHitRequest(request_id=request_id or new_request_id(), hit_id=hit_id,
                                             reason=reason, audit=admin_pb2.Audit(reason=reason,
                                                                                  approval_ref=approval_ref))
        return _decision(await self._call(self.admin.RejectHit, request, on_behalf_of))

    async def _pools(self, link_id: str, on_behalf_of: str | None) -> display_pb2.GetPoolsResponse:
        return await self._call(self.display.GetPools, display_pb2.GetPoolsRequest(link_id=link_id), on_behalf_of)

    async def tables(self, link_id: str, *, on_behalf_of: str | None = None) -> list[Table]:
        """The link's tables: online (its controller connected), suspended, and when its last round ended."""
        resp = await self._pools(link_id, on_behalf_of)
        return [Table(t.table_id, t.online, t.suspended, t.last_round_at_ms) for t in resp.tables]

    async def pools(self, link_id: str, *, on_behalf_of: str | None = None) -> list[Pool]:
        """The link's pools as signs show them, with their exact balances."""
        resp = await self._pools(link_id, on_behalf_of)
        return [Pool(p.pool, p.amount_cents, p.balance_ucents, p.reset_cents) for p in resp.pools]

    async def suspend(self, table_id: str, reason: str, request_id: str | None = None, *,
                      on_behalf_of: str | None = None) -> Changed:
        """Take a table's jackpot wagers off (NSW 14.13) until it is resumed."""
        request = admin_pb2.SuspendTableRequest(request_id=request_id or new_request_id(), table_id=table_id,
                                                audit=admin_pb2.Audit(reason=reason))
        resp = await self._call(self.admin.SuspendTable, request, on_behalf_of)
        return Changed(resp.link_id, resp.sequence, resp.config_version)

    async def resume(self, table_id: str, reason: str, approval_ref: str, request_id: str | None = None, *,
                     on_behalf_of: str | None = None) -> Changed:
        """Put a suspended table's jackpot wagers back on, citing the inspector's approval (NSW 14.13)."""
        request = admin_pb2.ResumeTableRequest(request_id=request_id or new_request_id(), table_id=table_id,
                                               audit=admin_pb2.Audit(reason=reason, approval_ref=approval_ref))
        resp = await self._call(self.admin.ResumeTable, request, on_behalf_of)
        return Changed(resp.link_id, resp.sequence, resp.config_version)

    async def audit(self, link_id: str, limit: int = 50, actor: str = "", *, reads: bool = True,
                    on_behalf_of: str | None = None) -> list[AuditEntry]:
        """The link's administrative acts, newest first, refused ones included (of one actor when given);
        `reads=False` leaves out the reads that were answered (ListHits, ListAudit). jackpotd files a table's
        acts (SuspendTable, ResumeTable) under its link, so one query by link finds them all."""
        request = admin_pb2.ListAuditRequest(link_id=link_id, actor=actor, limit=limit if reads else AUDIT_MAX)
        resp = await self._call(self.admin.ListAudit, request, on_behalf_of)
        rows = [a for a in resp.rows if reads or not is_answered_read(a.method, a.outcome)]
        return [_audit(a) for a in rows[:limit]]

    async def watch_hits(self, link_id: str) -> AsyncIterator[int]:
        """Follow the link's WatchPools stream (the console's own credential may watch: no on-behalf-of), yielding
        the update's sequence once for the opening snapshot and once per update announcing a hit (a settle's
        hit, a first of two approvals, a decision), so a caller knows when its list of hits may be stale. Ends
        with FloorError when the stream fails, ends, or says nothing for WATCH_SILENCE seconds (jackpotd sends a
        heartbeat every 2 s)."""
        call = self.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link_id))
        first = True
        try:
            while True:
                try:
                    update = await asyncio.wait_for(call.read(), WATCH_SILENCE)
                except TimeoutError:
                    raise FloorError("DEADLINE_EXCEEDED", f"no word from jackpotd on link_id={link_id!r} for "
                                                          f"{WATCH_SILENCE:g} s") from None
                except grpc.aio.AioRpcError as e:
                    raise FloorError(e.code().name, e.details() or "") from None
                if not isinstance(update, display_pb2.PoolsUpdate):  # grpc.aio.EOF
                    raise FloorError("UNAVAILABLE", f"jackpotd ended the stream of link_id={link_id!r}")
                if first or update.HasField("hit"):
                    first = False
                    yield int(update.sequence)
        finally:
            call.cancel()
