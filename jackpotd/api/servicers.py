"""gRPC servicers: proto in, commands to the service layer, typed results out as proto. No rules here."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from ..auth.guard import CALLER
from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from ..domain.rounds import NoHand, PackedHands, PackedWagers, SeatHand, Wager
from ..service import admin_requests, results
from ..service import commands as c
from ..service.admin_trail import ms_of
from ..service.services import Services
from . import columns
from .commit_reply import commit_response
from .gen.jackpot.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    common_pb2,
    display_pb2,
    display_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from .link_requests import (
    link_config_of,
    paytable_entries_of,
    pools_of,
    rates_of,
    rtp_override_of,
    set_rates_of,
    table_of,
    update_link_of,
)

Ctx = grpc.aio.ServicerContext[Any, Any]


def caller_key() -> str:
    """The authenticated caller as a request id's owner: `table:<id>` or `<role>:<name>` (the guard has set it for
    every closed method)."""
    caller = CALLER.get()
    if caller is None:
        raise RuntimeError("a mutating call reached its handler without an authenticated caller")
    return caller.key


def request_of(msg: Message) -> c.Request:
    """The request id, the canonical content it stands for (everything but the id), and its caller."""
    content = MessageToDict(msg, preserving_proto_field_name=True)
    return c.Request(require_id("request_id", content.pop("request_id", "")), content, caller_key())


_NO_HANDS: dict[int, NoHand] = {table_pb2.NoHand.Value(r.value): r for r in NoHand}  # looked up once per seat


def no_hand_of(index: int, value: int) -> NoHand | None:
    """A SeatHand's `no_hand` as the domain's reason (None: the seat's cards are given)."""
    if value == table_pb2.NO_HAND_UNSPECIFIED:
        return None
    reason = _NO_HANDS.get(value)
    if reason is None:
        raise InvalidInput(f"hands[{index}].no_hand", value, "must be FOLDED, MUCKED or DEAD (or unset, with cards)")
    return reason


def settle_of(request: table_pb2.SettleRoundRequest) -> tuple[list[SeatHand], dict[str, Any]]:
    """A settle's hands, and its content exactly as MessageToDict names it (what retries are compared by), built
    in one pass: MessageToDict and the enum's lookups cost most of a 100,000-seat settle."""
    hands: list[SeatHand] = []
    listed: list[dict[str, Any]] = []
    names = {v: r.value for v, r in _NO_HANDS.items()}
    new = tuple.__new__  # a named tuple built in C: a round may hold 100,000 hands
    for i, x in enumerate(request.hands):
        seat, value = x.seat, x.no_hand
        cards = tuple(x.cards) if value == 0 or len(x.cards) else ()
        hands.append(new(SeatHand, (seat, cards, None if value == 0 else _NO_HANDS.get(value) or no_hand_of(i, value))))
        d: dict[str, Any] = {"seat": seat} if seat else {}  # proto3 leaves defaults out, and so does its JSON
        if cards:
            d["cards"] = list(cards)
        if value:
            d["no_hand"] = names[value]
        listed.append(d)
    content: dict[str, Any] = {}
    for name in ("table_id", "round_id"):
        if text := getattr(request, name):
            content[name] = text
    if listed:
        content["hands"] = listed
    for name in ("dealer_cards", "board_cards"):
        if given := list(getattr(request, name)):
            content[name] = given
    return hands, content


def audit_of(a: admin_pb2.Audit) -> c.Audit:
    return c.Audit(a.actor, a.reason, a.approval_ref)


def audited(msg: Any) -> tuple[c.Request, c.Audit]:
    """An admin request and its audit, the actor being the authenticated caller whatever the field said
    (§9: who acted is who proved it): `console:floor-1 for supervisor:alice` through a console. The request id
    stays the person's (caller_key): a console's retry for alice is alice's retry."""
    caller = CALLER.get()
    if caller is None:  # every admin method is closed: the guard has set its caller
        raise RuntimeError("an admin call reached its handler without an authenticated caller")
    msg.audit.actor = caller.actor  # the request's content as it always was (a retry across an upgrade matches)
    audit = audit_of(msg.audit)
    # the audit records the actor with its role: supervisor:floor and admin:floor never read alike
    return request_of(msg), c.Audit(caller.audit_actor, audit.reason, audit.approval_ref)


def pool_amounts(pools: Sequence[results.PoolView]) -> list[common_pb2.PoolAmount]:
    return [common_pb2.PoolAmount(pool=p.pool, amount_cents=p.amount_cents, reset_cents=p.reset_cents,
                                  balance_ucents=p.balance_ucents) for p in pools]


def tables_of(tables: Sequence[results.TableView]) -> list[common_pb2.TableStatus]:
    return [common_pb2.TableStatus(table_id=t.table_id, online=t.online, suspended=t.suspended,
                                   last_round_at_ms=t.last_round_at_ms) for t in tables]


def hit_of(hit: results.HitAnnouncement | None) -> common_pb2.HitAnnouncement | None:
    if hit is None:
        return None
    return common_pb2.HitAnnouncement(table_id=hit.table_id, seat=hit.seat, hand=hit.hand,
                                      amount_cents=hit.amount_cents, pool=hit.pool, hit_id=hit.hit_id,
                                      sequence=hit.sequence, pool_amount_after_cents=hit.pool_amount_after_cents,
                                      status=hit.status, approvals=hit.approvals,
                                      approvals_needed=hit.approvals_needed)


class TableServicer(table_pb2_grpc.TableServiceServicer):
    """Table controllers (API.md TableService)."""

    def __init__(self, services: Services) -> None:
        self.table = services.table
        self.reads = services.reads

    async def CommitWagers(self, request: table_pb2.CommitWagersRequest,
                           context: Ctx) -> table_pb2.CommitWagersResponse:
        packed = request.HasField("wager_columns")  # a big round's packed form: read and answered as columns
        columns.one_form(len(request.wagers), packed, "wagers", "wager_columns")
        wagers: Sequence[Wager] | PackedWagers
        listed: list[list[Any]]
        if packed:
            wagers, listed = columns.wagers_of(request.wager_columns)
        else:
            new = tuple.__new__  # a named tuple built in C: a round may hold 100,000 wagers
            rows = [new(Wager, (w.seat, w.amount_cents, w.ante_placed)) for w in request.wagers]
            wagers, listed = rows, list(map(list, rows))  # [seat, amount_cents, ante_placed]: Wager's order
        # The hot path names its content by hand; MessageToDict would cost more than the rest of the call. Both
        # forms name it alike: a retry in the other form is the same request.
        content = {"table_id": request.table_id, "round_id": request.round_id, "wagers": listed}
        req = c.Request(require_id("request_id", request.request_id), content, caller_key())
        done = await self.table.commit(c.Commit(req, request.table_id, request.round_id, wagers, packed))
        if not packed:
            return commit_response(done)
        response = table_pb2.CommitWagersResponse(sequence=done.seq, link_id=done.link_id)
        columns.accepted_columns(response.accepted_columns, done.accepted)
        response.pools.extend(pool_amounts(done.pools))
        return response

    async def SettleRound(self, request: table_pb2.SettleRoundRequest, context: Ctx) -> table_pb2.SettleRoundResponse:
        packed = request.HasField("hand_columns")  # a big round's packed form: read and answered as columns
        columns.one_form(len(request.hands), packed, "hands", "hand_columns")
        rows, content = settle_of(request)  # the rest of the content; `rows` empty when packed
        hands: Sequence[SeatHand] | PackedHands = rows
        if packed:
            hands, listed = columns.hands_of(request.hand_columns)
            if listed is not None:  # as the per-seat form's content: no `hands` when none were sent
                content["hands"] = listed
        req = c.Request(require_id("request_id", request.request_id), content, caller_key())
        done = await self.table.settle(c.Settle(req, request.table_id, request.round_id, hands,
                                                list(request.dealer_cards), list(request.board_cards), packed))
        response = table_pb2.SettleRoundResponse(
            payouts=[table_pb2.Payout(seat=p.seat, hand=p.hand, amount_cents=p.amount_cents, pool=p.pool,
                                      funded_by_operator_cents=p.funded_by_operator_cents, hit_id=p.hit_id,
                                      status=p.status, pool_before_ucents=p.pool_before_uc, rule=p.rule)
                     for p in done.payouts],
            resets=[table_pb2.PoolReset(pool=r.pool, from_reserve_cents=r.from_reserve_cents,
                                        from_operator_cents=r.from_operator_cents) for r in done.resets],
            unwagered_seats=done.unwagered, pools=pool_amounts(done.pools), sequence=done.seq)
        if packed:
            columns.seat_columns(response.seat_columns, done.seats)
            return response
        add = response.seats.add  # in place: a round may hold 100,000 seats
        for seat, hand, no_hand in done.seats:
            if no_hand:
                add(seat=seat, no_hand=no_hand)
            else:
                add(seat=seat, hand=hand)
        return response

    async def VoidRound(self, request: table_pb2.VoidRoundRequest, context: Ctx) -> table_pb2.VoidRoundResponse:
        done = await self.table.void(c.Void(request_of(request), request.table_id, request.round_id, request.reason,
                                            list(request.seats)))
        return table_pb2.VoidRoundResponse(
            refunds=[table_pb2.Refund(seat=r.seat, amount_cents=r.amount_cents) for r in done.refunds],
            pools=pool_amounts(done.pools), sequence=done.seq)

    async def WatchMeter(self, request: table_pb2.WatchMeterRequest,
                         context: Ctx) -> AsyncIterator[table_pb2.MeterUpdate]:
        async for m in self.reads.meter(request.table_id):
            yield table_pb2.MeterUpdate(link_id=m.link_id, pools=pool_amounts(m.update.pools),
                                        jackpot_enabled=m.jackpot_enabled, sequence=m.update.seq,
                                        hit=hit_of(m.update.hit))


class DisplayServicer(display_pb2_grpc.DisplayServiceServicer):
    """Floor signs (API.md DisplayService)."""

    def __init__(self, services: Services) -> None:
        self.reads = services.reads

    async def GetPools(self, request: display_pb2.GetPoolsRequest, context: Ctx) -> display_pb2.GetPoolsResponse:
        now = await self.reads.pools(request.link_id)
        return display_pb2.GetPoolsResponse(link_id=now.link_id, pools=pool_amounts(now.pools),
                                            last_hit=hit_of(now.last_hit), sequence=now.seq,
                                            tables=tables_of(now.tables))

    async def WatchPools(self, request: display_pb2.WatchPoolsRequest,
                         context: Ctx) -> AsyncIterator[display_pb2.PoolsUpdate]:
        async for u in self.reads.watch(request.link_id, request.after_sequence):
            yield display_pb2.PoolsUpdate(link_id=request.link_id, pools=pool_amounts(u.pools), sequence=u.seq,
                                          hit=hit_of(u.hit), tables=tables_of(u.tables))


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    """Supervisors and administrators (API.md AdminService)."""

    def __init__(self, services: Services) -> None:
        self.admin = services.admin
        self.reads = services.reads
        self.trail = services.trail

    async def _change(self, cmd: c.ConfigCommand) -> admin_pb2.LinkResponse:
        done = await self.admin.change(cmd)
        # A config change's sequence number is the config's version.
        return admin_pb2.LinkResponse(link_id=done.link_id, sequence=done.seq, config_version=done.seq)

    async def CreateLink(self, request: admin_pb2.CreateLinkRequest, context: Ctx) -> admin_pb2.LinkResponse:
        config = link_config_of(request)
        override = rtp_override_of(request)
        req, audit = audited(request)
        return await self._change(c.CreateLink(req, config, audit, override))

    async def UpdateLink(self, request: admin_pb2.UpdateLinkRequest, context: Ctx) -> admin_pb2.LinkResponse:
        req, audit = audited(request)
        return await self._change(update_link_of(request, req, audit))

    async def SetRates(self, request: admin_pb2.SetRatesRequest, context: Ctx) -> admin_pb2.LinkResponse:
        req, audit = audited(request)
        return await self._change(set_rates_of(request, req, audit))

    async def SetPaytable(self, request: admin_pb2.SetPaytableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        entries = paytable_entries_of(request.entries)
        override = rtp_override_of(request)
        req, audit = audited(request)
        return await self._change(c.SetPaytable(req, request.link_id, request.game, entries, audit, override))

    async def RegisterTable(self, request: admin_pb2.RegisterTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        table = table_of(request)
        req, audit = audited(request)
        return await self._change(c.RegisterTable(req, request.link_id, table, audit))

    async def SuspendTable(self, request: admin_pb2.SuspendTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        req, audit = audited(request)
        return await self._change(c.SuspendTable(req, request.table_id, True, audit))

    async def ResumeTable(self, request: admin_pb2.ResumeTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        req, audit = audited(request)
        return await self._change(c.SuspendTable(req, request.table_id, False, audit))

    async def FundPool(self, request: admin_pb2.FundPoolRequest, context: Ctx) -> admin_pb2.FundPoolResponse:
        req, audit = audited(request)
        done = await self.admin.fund(c.Fund(req, request.link_id, request.pool, request.amount_cents, audit))
        return admin_pb2.FundPoolResponse(pools=pool_amounts(done.pools), sequence=done.seq)

    async def ApproveHit(self, request: admin_pb2.ApproveHitRequest, context: Ctx) -> admin_pb2.HitDecisionResponse:
        req, audit = audited(request)
        return hit_decision(await self.admin.decide_hit(c.DecideHit(req, request.hit_id, True, "", audit)))

    async def RejectHit(self, request: admin_pb2.RejectHitRequest, context: Ctx) -> admin_pb2.HitDecisionResponse:
        request.audit.reason = admin_requests.rejection_act_reason(request.audit.reason, request.reason)
        req, audit = audited(request)
        return hit_decision(await self.admin.decide_hit(c.DecideHit(req, request.hit_id, False, request.reason,
                                                                    audit)))

    async def CombinePools(self, request: admin_pb2.CombinePoolsRequest,
                           context: Ctx) -> admin_pb2.PoolsChangedResponse:
        req, audit = audited(request)
        jackpot = admin_requests.combined_jackpot(pools_of([request.jackpot])[0])
        return pools_changed(await self.admin.restructure(c.CombinePools(
            req, request.link_id, jackpot, rates_of(request.rates, audit.approval_ref), audit)))

    async def SplitPools(self, request: admin_pb2.SplitPoolsRequest, context: Ctx) -> admin_pb2.PoolsChangedResponse:
        req, audit = audited(request)
        allocation = admin_requests.allocation_of((a.pool, a.amount_ucents) for a in request.allocation)
        return pools_changed(await self.admin.restructure(c.SplitPools(
            req, request.link_id, pools_of(request.pools), allocation, rates_of(request.rates, audit.approval_ref),
            audit)))

    async def ListHits(self, request: admin_pb2.ListHitsRequest, context: Ctx) -> admin_pb2.ListHitsResponse:
        found = await self.reads.hits(request.link_id, request.table_id, request.status, request.limit)
        return admin_pb2.ListHitsResponse(hits=[admin_pb2.HitRow(
            hit_id=h.hit_id, link_id=h.link_id, table_id=h.table_id, round_id=h.round_id, seat=h.seat, hand=h.hand,
            cards=h.cards, pool=h.pool, amount_cents=h.amount_cents,
            funded_by_operator_cents=h.funded_by_operator_cents, pool_before_ucents=h.pool_before_uc, rule=h.rule,
            status=h.status, sequence=h.seq, at_ms=h.at_ms, approved_by=h.approved_by,
            approvals_needed=h.approvals_needed, rejected_by=h.rejected_by) for h in found])

    async def ListAudit(self, request: admin_pb2.ListAuditRequest, context: Ctx) -> admin_pb2.ListAuditResponse:
        acts = await self.trail.acts(request.link_id, request.actor, request.method, request.since_ms,
                                     request.until_ms, request.limit)
        return admin_pb2.ListAuditResponse(rows=[admin_pb2.AuditRow(
            id=a.id, at_ms=ms_of(a.at) if a.at else 0, actor=a.actor, role=a.role,
            method=a.method, request_id=a.request_id, link_id=a.link_id, table_id=a.table_id, reason=a.reason,
            approval_ref=a.approval_ref, outcome=a.outcome, detail=a.detail, agent=a.agent) for a in acts])


def hit_decision(done: results.HitDecided) -> admin_pb2.HitDecisionResponse:
    h = done.hit
    return admin_pb2.HitDecisionResponse(hit_id=h.hit_id, status=h.status, hand=h.hand, amount_cents=h.amount_cents,
                                         pool=h.pool,
                                         returned_to_pool_ucents=h.returned_to_pool_uc,
                                         returned_to_operator_cents=h.returned_to_operator_cents,
                                         pools=pool_amounts(done.pools), sequence=done.seq,
                                         approved_by=h.approved_by, approvals_needed=h.approvals_needed)


def pools_changed(done: results.PoolsChanged) -> admin_pb2.PoolsChangedResponse:
    return admin_pb2.PoolsChangedResponse(link_id=done.link_id, mode=done.mode, pools=pool_amounts(done.pools),
                                          sequence=done.seq, config_version=done.seq)

