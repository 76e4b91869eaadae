"""ReportService (API.md; RULES.md §10): proto in, the service layer's report use cases, proto out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc

from ..domain.errors import InvalidInput
from ..service.ports import HitRecord
from ..service.reports import ReportQueries
from .gen.jackpot.v1 import report_pb2, report_pb2_grpc
from .ledger_pages import entry_message, ledger_column_pages, ledger_pages

Ctx = grpc.aio.ServicerContext[Any, Any]


def report_hits(hits: Sequence[HitRecord]) -> list[report_pb2.ReportHit]:
    return [report_pb2.ReportHit(hit_id=h.hit_id, table_id=h.table_id, round_id=h.round_id, seat=h.seat, hand=h.hand,
                                 cards=list(h.cards), pool=h.pool, amount_cents=h.amount_cents,
                                 funded_by_operator_cents=h.funded_by_operator_cents,
                                 pool_before_ucents=h.pool_before_uc, rule=h.rule, status=h.status, sequence=h.seq,
                                 at_ms=h.at_ms, approved_by=h.approved_by, rejected_by=h.rejected_by) for h in hits]


class ReportServicer(report_pb2_grpc.ReportServiceServicer):
    """Finance (API.md ReportService)."""

    def __init__(self, reports: ReportQueries) -> None:
        self.reports = reports

    async def GetReconciliation(self, request: report_pb2.GetReconciliationRequest,
                                context: Ctx) -> report_pb2.Reconciliation:
        v = await self.reports.reconciliation(request.link_id, request.gaming_day, request.from_ms, request.to_ms)
        r = v.reconciliation
        link = r.link
        return report_pb2.Reconciliation(
            link_id=v.link_id, gaming_day=v.gaming_day, from_ms=v.from_ms, to_ms=v.to_ms, time_zone=v.time_zone,
            gaming_day_start=v.gaming_day_start, first_sequence=v.first_seq, last_sequence=v.last_seq,
            entries=v.entries, generated_at_ms=v.generated_at_ms, all_hold=r.all_hold,
            pools=[report_pb2.PoolReconciliation(
                pool=p.pool, hidden=p.hidden, opening_ucents=p.opening_uc, contributions_ucents=p.contributions_uc,
                overflow_out_ucents=p.overflow_out_uc, overflow_in_ucents=p.overflow_in_uc,
                refunds_ucents=p.refunds_uc, funding_ucents=p.funding_uc, transfers_in_ucents=p.transfers_in_uc,
                transfers_out_ucents=p.transfers_out_uc, payouts_ucents=p.payouts_uc, closing_ucents=p.closing_uc,
                identity_holds=p.holds, difference_ucents=p.difference_uc,
                payouts_by_hand=[report_pb2.PayoutsByHand(hand=h.hand, hits=h.hits, paid_ucents=h.paid_uc,
                                                          rejected_hits=h.rejected_hits, returned_ucents=h.returned_uc)
                                 for h in p.by_hand]) for p in r.pools],
            link=report_pb2.LinkTotals(
                wagers=link.wagers, wagers_accepted_ucents=link.wagers_accepted_uc, refunds=link.refunds,
                wagers_refunded_ucents=link.wagers_refunded_uc, contributions_ucents=link.contributions_uc,
                retained_ucents=link.retained_uc, operator_funding_ucents=link.operator_funding_uc,
                paid_ucents=link.paid_uc, held_ucents=link.held_uc, identity_holds=link.holds),
            identities=[report_pb2.Identity(name=i.name, rule=i.rule, expression=i.expression, holds=i.holds)
                        for i in r.identities],
            hits=report_hits(v.hits), hits_total=v.hits_total,
            balances=[report_pb2.BalancePoint(pool=pool, at_ms=at, sequence=seq, balance_ucents=uc)
                      for pool, at, seq, uc in v.chart])

    async def ExportLedger(self, request: report_pb2.ExportLedgerRequest,
                           context: Ctx) -> AsyncIterator[report_pb2.LedgerEntry]:
        if request.columns:
            raise InvalidInput("columns", True, "ExportLedger sends an entry a message; ask ExportLedgerPages for "
                                                "columns")
        first, last = await self.reports.export_range(request.link_id, request.from_sequence, request.to_sequence,
                                                      request.from_ms, request.to_ms)
        link_id = request.link_id
        async for chunk in self.reports.export(link_id, first, last):
            for e in chunk:
                yield entry_message(link_id, first, last, e)

    async def ExportLedgerPages(self, request: report_pb2.ExportLedgerRequest,
                                context: Ctx) -> AsyncIterator[report_pb2.LedgerPage]:
        """ExportLedger's entries for the same request, a page at a time (ledger_pages: bounded in count and size),
        as messages or, when the request asks for `columns`, as columns (ledger_column_pages)."""
        first, last = await self.reports.export_range(request.link_id, request.from_sequence, request.to_sequence,
                                                      request.from_ms, request.to_ms)
        link_id = request.link_id
        pages = (ledger_column_pages(link_id, first, last, self.reports.export_columns(link_id, first, last))
                 if request.columns else ledger_pages(link_id, first, last, self.reports.export(link_id, first, last)))
        async for page in pages:
            yield page

    async def VerifyLedger(self, request: report_pb2.VerifyLedgerRequest,
                           context: Ctx) -> report_pb2.VerifyLedgerResponse:
        v = await self.reports.verify(request.link_id)
        pools = sorted(set(v.ledger_pools) | set(v.redis_pools))
        return report_pb2.VerifyLedgerResponse(
            link_id=v.link_id, ok=v.ok, entries=v.entries, chain_ok=v.chain_ok, balanced=v.balanced,
            first_altered_sequence=v.first_altered or 0, problems=list(v.problems), redis_sequence=v.redis_seq,
            checkpoints=v.checkpoints, summaries_ok=v.summaries_ok,
            altered_range_end_sequence=v.altered_range_end or 0, notes=list(v.notes),
            pools=[report_pb2.PoolCheck(pool=p, ledger_ucents=v.ledger_pools.get(p, 0),
                                        redis_ucents=v.redis_pools.get(p, 0),
                                        agrees=v.ledger_pools.get(p, 0) == v.redis_pools.get(p, 0)) for p in pools])

    async def GetLiability(self, request: report_pb2.GetLiabilityRequest, context: Ctx) -> report_pb2.Liability:
        v = await self.reports.liability(request.link_id)
        return report_pb2.Liability(
            link_id=v.link_id, sequence=v.seq, at_ms=v.at_ms, pools_ucents=v.pools_uc, reserve_ucents=v.reserve_uc,
            pending_ucents=v.pending_uc, reset_values_cents=v.reset_values_cents,
            reset_owed_by_operator_cents=v.reset_owed_by_operator_cents, owed_to_players_ucents=v.owed_to_players_uc,
            minimum_shortfall_cents=v.minimum_shortfall_cents,
            pending_hits=report_hits(v.pending),
            pools=[report_pb2.PoolLiability(pool=p.pool, hidden=p.hidden, balance_ucents=p.balance_uc,
                                            reset_cents=p.reset_cents) for p in v.pools])

    async def GetMath(self, request: report_pb2.GetMathRequest, context: Ctx) -> report_pb2.MathInputs:
        v = await self.reports.math(request.link_id)
        return report_pb2.MathInputs(
            link_id=v.link_id, config_json=v.config_json, config_sha256=v.config_sha256,
            config_version=v.config_version, at_ms=v.at_ms, sequence=v.seq,
            balances=[report_pb2.MathBalance(pool=pool, ucents=uc) for pool, uc in v.balances_uc.items()],
            games=[report_pb2.GameMath(
                game=g.game, hands=[report_pb2.HandCount(hand=h, count=n, total=t) for h, n, t in g.hands],
                hands_method=g.method, expected_ucents_numerator=str(g.expected_uc.numerator),
                expected_ucents_denominator=str(g.expected_uc.denominator), rtp_ppm=g.rtp_ppm,
                break_even_pool=g.break_even_pool, break_even_cents=g.break_even_cents) for g in v.games])
