"""gRPC servicers: proto in, plain values to the service layer, proto out. No Lua, no SQL, no rules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from ..domain.ids import require_id
from ..domain.link import LinkConfig, TableConfig
from ..domain.paytable import PaytableEntry, default_paytable
from ..domain.pools import RESERVE, PoolSpec
from ..domain.rates import RateSet
from ..domain.rounds import SeatHand, Wager
from ..service.operations import Audit, Done, JackpotService, Request
from .gen.jackpot.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    common_pb2,
    display_pb2,
    display_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

Ctx = grpc.aio.ServicerContext[Any, Any]


def request_of(msg: Message) -> Request:
    """The request id and the canonical content it stands for (everything but the id)."""
    content = MessageToDict(msg, preserving_proto_field_name=True)
    return Request(require_id("request_id", content.pop("request_id", "")), content)


def audit_of(a: admin_pb2.Audit) -> Audit:
    return Audit(a.actor, a.reason, a.approval_ref)


def pool_amounts(pools: Sequence[Mapping[str, Any]]) -> list[common_pb2.PoolAmount]:
    return [common_pb2.PoolAmount(pool=str(p["pool"]), amount_cents=int(p["amount_cents"]),
                                  reset_cents=int(p["reset_cents"]), balance_ucents=int(p["balance_ucents"]))
            for p in pools]


class Base:
    def __init__(self, service: JackpotService) -> None:
        self.service = service

    async def _pools(self, done: Done) -> list[common_pb2.PoolAmount]:
        return pool_amounts(await self.service.pools(done.config.link_id, done.reply.balances))


class TableServicer(Base, table_pb2_grpc.TableServiceServicer):
    """Table controllers (API.md TableService)."""

    async def CommitWagers(self, request: table_pb2.CommitWagersRequest,
                           context: Ctx) -> table_pb2.CommitWagersResponse:
        wagers = [Wager(w.seat, w.amount_cents, w.ante_placed) for w in request.wagers]
        # The hot path names its content by hand; MessageToDict would cost more than the rest of the call.
        content = {"table_id": request.table_id, "round_id": request.round_id,
                   "wagers": [[w.seat, w.amount_cents, w.ante_placed] for w in wagers]}
        req = Request(require_id("request_id", request.request_id), content)
        done = await self.service.commit_wagers(req, request.table_id, request.round_id, wagers)
        response = table_pb2.CommitWagersResponse(sequence=done.reply.seq, link_id=done.config.link_id)
        add = response.accepted.add  # add() in place costs half of building each message and copying it in
        for a in done.reply.result["accepted"]:
            add(seat=a["seat"], amount_cents=a["amount_cents"], contributed_ucents=a["contributed_uc"],
                overflow_ucents=a["overflow_uc"])
        response.pools.extend(await self._pools(done))
        return response

    async def SettleRound(self, request: table_pb2.SettleRoundRequest, context: Ctx) -> table_pb2.SettleRoundResponse:
        hands = [SeatHand(x.seat, tuple(x.cards)) for x in request.hands]
        done = await self.service.settle_round(request_of(request), request.table_id, request.round_id, hands,
                                               list(request.dealer_cards), list(request.board_cards))
        r = done.reply.result
        return table_pb2.SettleRoundResponse(
            payouts=[table_pb2.Payout(seat=p["seat"], hand=p["hand"], amount_cents=p["amount_cents"], pool=p["pool"],
                                      funded_by_operator_cents=p["funded_by_operator_cents"], hit_id=p["hit_id"],
                                      status=p["status"], pool_before_ucents=p["pool_before_uc"], rule=p["rule"])
                     for p in r["payouts"]],
            resets=[table_pb2.PoolReset(**x) for x in r["resets"]],
            seats=[table_pb2.SeatResult(**x) for x in r["seats"]],
            pools=await self._pools(done), sequence=done.reply.seq)

    async def VoidRound(self, request: table_pb2.VoidRoundRequest, context: Ctx) -> table_pb2.VoidRoundResponse:
        done = await self.service.void_round(request_of(request), request.table_id, request.round_id, request.reason,
                                             list(request.seats))
        return table_pb2.VoidRoundResponse(refunds=[table_pb2.Refund(**x) for x in done.reply.result["refunds"]],
                                           pools=await self._pools(done), sequence=done.reply.seq)

    async def WatchMeter(self, request: table_pb2.WatchMeterRequest,
                         context: Ctx) -> AsyncIterator[table_pb2.MeterUpdate]:
        link_id = await self.service.link_of_table(request.table_id)
        async for seq, pools, hit in watch(self.service, link_id):
            _, config = await self.service.config(link_id, fresh=True)  # a suspension shows at once
            enabled = not config.table(request.table_id).suspended
            yield table_pb2.MeterUpdate(link_id=link_id, pools=pools, jackpot_enabled=enabled, sequence=seq, hit=hit)


ProtoUpdate = tuple[int, list[common_pb2.PoolAmount], common_pb2.HitAnnouncement | None]


async def watch(service: JackpotService, link_id: str) -> AsyncIterator[ProtoUpdate]:
    """The service's link updates as protos: (sequence, pools, hit or None)."""
    async for update in service.watch(link_id):
        hit = None
        if update.hit is not None:
            hit = common_pb2.HitAnnouncement(**update.hit)
        yield update.seq, pool_amounts(update.pools), hit


class DisplayServicer(Base, display_pb2_grpc.DisplayServiceServicer):
    """Floor signs (API.md DisplayService)."""

    async def GetPools(self, request: display_pb2.GetPoolsRequest, context: Ctx) -> display_pb2.GetPoolsResponse:
        seq, amounts = await self.service.snapshot(request.link_id)
        pools = pool_amounts(amounts)
        last = await self.service.last_hit(request.link_id)
        hit = None
        if last:
            hit = common_pb2.HitAnnouncement(table_id=last["table_id"], seat=last["seat"], hand=last["hand"],
                                             amount_cents=last["amount_cents"], pool=last["pool"],
                                             hit_id=last["hit_id"], sequence=last["seq"])
        return display_pb2.GetPoolsResponse(link_id=request.link_id, pools=pools, last_hit=hit, sequence=seq)

    async def WatchPools(self, request: display_pb2.WatchPoolsRequest,
                         context: Ctx) -> AsyncIterator[display_pb2.PoolsUpdate]:
        async for seq, pools, hit in watch(self.service, request.link_id):
            yield display_pb2.PoolsUpdate(link_id=request.link_id, pools=pools, sequence=seq, hit=hit)


def pools_of(mode: str, items: Sequence[admin_pb2.PoolConfig]) -> tuple[PoolSpec, ...]:
    return tuple(PoolSpec(p.pool, p.reset_cents, p.cap_cents if p.HasField("cap_cents") else None,
                          p.overflow_to or RESERVE) for p in items)


def rates_of(r: admin_pb2.Rates, version: int = 1, approval_ref: str = "") -> RateSet:
    return RateSet({x.pool: x.ppm for x in r.pools}, r.retained_ppm, version, r.effective_at_ms, approval_ref)


class AdminServicer(Base, admin_pb2_grpc.AdminServiceServicer):
    """Supervisors and administrators (API.md AdminService)."""

    @staticmethod
    def _link(done: Done) -> admin_pb2.LinkResponse:
        # A config change's sequence number is the config's version.
        return admin_pb2.LinkResponse(link_id=done.config.link_id, sequence=done.reply.seq,
                                      config_version=done.reply.seq)

    async def CreateLink(self, request: admin_pb2.CreateLinkRequest, context: Ctx) -> admin_pb2.LinkResponse:
        req = request_of(request)
        games = list(request.games) or ["caribbean-stud"]
        config = LinkConfig(
            link_id=request.link_id, mode=request.mode, wager_cents=request.wager_amount_cents,
            pools=pools_of(request.mode, request.pools),
            rate_sets=(rates_of(request.rates, approval_ref=request.audit.approval_ref),),
            paytables={g: default_paytable(g, request.mode) for g in games},
            verification_threshold_cents=request.verification_threshold_cents,
            gaming_day_start=request.gaming_day_start or "06:00", time_zone=request.time_zone or "UTC")
        return self._link(await self.service.create_link(req, config, audit_of(request.audit)))

    async def UpdateLink(self, request: admin_pb2.UpdateLinkRequest, context: Ctx) -> admin_pb2.LinkResponse:
        threshold = request.verification_threshold_cents if request.HasField("verification_threshold_cents") else None
        done = await self.service.update_link(request_of(request), request.link_id, request.wager_amount_cents,
                                              pools_of("", request.pools), threshold, audit_of(request.audit))
        return self._link(done)

    async def SetRates(self, request: admin_pb2.SetRatesRequest, context: Ctx) -> admin_pb2.LinkResponse:
        done = await self.service.set_rates(request_of(request), request.link_id,
                                            {x.pool: x.ppm for x in request.rates.pools}, request.rates.retained_ppm,
                                            request.rates.effective_at_ms, audit_of(request.audit))
        return self._link(done)

    async def SetPaytable(self, request: admin_pb2.SetPaytableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        entries = [PaytableEntry(e.hand, e.pool, e.min_cents, e.percent_ppm, e.resets_pool) for e in request.entries]
        done = await self.service.set_paytable(request_of(request), request.link_id, request.game, entries,
                                               audit_of(request.audit))
        return self._link(done)

    async def RegisterTable(self, request: admin_pb2.RegisterTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        table = TableConfig(request.table_id, request.game or "caribbean-stud", request.seats)
        done = await self.service.register_table(request_of(request), table, request.link_id, audit_of(request.audit))
        return self._link(done)

    async def SuspendTable(self, request: admin_pb2.SuspendTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        done = await self.service.set_table_suspended(request_of(request), request.table_id, True,
                                                      audit_of(request.audit))
        return self._link(done)

    async def ResumeTable(self, request: admin_pb2.ResumeTableRequest, context: Ctx) -> admin_pb2.LinkResponse:
        done = await self.service.set_table_suspended(request_of(request), request.table_id, False,
                                                      audit_of(request.audit))
        return self._link(done)

    async def FundPool(self, request: admin_pb2.FundPoolRequest, context: Ctx) -> admin_pb2.FundPoolResponse:
        done = await self.service.fund_pool(request_of(request), request.link_id, request.pool, request.amount_cents,
                                            audit_of(request.audit))
        return admin_pb2.FundPoolResponse(pools=await self._pools(done), sequence=done.reply.seq)
