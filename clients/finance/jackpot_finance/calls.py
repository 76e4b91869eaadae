"""The calls to ReportService, one function each, taking a stub so that a test can call them in-process on
any channel; and the channel a finance credential opens (as every role client: jackpotd.auth.client)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

import grpc

from jackpotd.api.gen.jackpot.v1 import report_pb2, report_pb2_grpc
from jackpotd.auth.client import role_channel
from jackpotd.auth.identity import Role

from .ledger_columns import columns_of

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.report_pb2_grpc import ReportServiceAsyncStub

ROLES = (Role.FINANCE, Role.ADMIN)  # what may read the ledger's reports, finance first


finance_channel = role_channel  # a channel presenting the credential: its certificate over TLS, else its token


def report_stub(channel: grpc.aio.Channel) -> ReportServiceAsyncStub:
    return report_pb2_grpc.ReportServiceStub(channel)


async def fetch_reconciliation(stub: ReportServiceAsyncStub, link_id: str, *, gaming_day: str = "",
                               from_ms: int = 0, to_ms: int = 0,
                               timeout: float | None = None) -> report_pb2.Reconciliation:
    """A gaming day's reconciliation (`gaming_day` YYYY-MM-DD), or that of [from_ms, to_ms)."""
    request = report_pb2.GetReconciliationRequest(link_id=link_id, gaming_day=gaming_day, from_ms=from_ms,
                                                  to_ms=to_ms)
    return await stub.GetReconciliation(request, timeout=timeout)


async def fetch_liability(stub: ReportServiceAsyncStub, link_id: str,
                          timeout: float | None = None) -> report_pb2.Liability:
    return await stub.GetLiability(report_pb2.GetLiabilityRequest(link_id=link_id), timeout=timeout)


async def verify_ledger(stub: ReportServiceAsyncStub, link_id: str,
                        timeout: float | None = None) -> report_pb2.VerifyLedgerResponse:
    return await stub.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link_id), timeout=timeout)


async def export_ledger(stub: ReportServiceAsyncStub, link_id: str, *, from_sequence: int = 0,
                        to_sequence: int = 0, from_ms: int = 0,
                        to_ms: int = 0) -> AsyncIterator[report_pb2.LedgerEntry]:
    """The entries of a range, in sequence order, as the stream brings them."""
    request = report_pb2.ExportLedgerRequest(link_id=link_id, from_sequence=from_sequence, to_sequence=to_sequence,
                                             from_ms=from_ms, to_ms=to_ms)
    call = stub.ExportLedger(request)
    try:
        async for entry in call:
            yield entry
    finally:
        call.cancel()


FALLBACK_PAGE = 1_000  # entries grouped a page at a time from an older server's ExportLedger


async def export_pages(stub: ReportServiceAsyncStub, link_id: str, *, from_sequence: int = 0, to_sequence: int = 0,
                       from_ms: int = 0, to_ms: int = 0) -> AsyncIterator[Sequence[report_pb2.LedgerEntry]]:
    """The entries of a range, in sequence order, a page at a time (ExportLedgerPages); from an older server that
    does not have it (UNIMPLEMENTED before any page), ExportLedger's entries grouped FALLBACK_PAGE at a time."""
    request = report_pb2.ExportLedgerRequest(link_id=link_id, from_sequence=from_sequence, to_sequence=to_sequence,
                                             from_ms=from_ms, to_ms=to_ms)
    async for page in _paged(stub, request):
        yield page if isinstance(page, list) else page.entries


async def export_columns(stub: ReportServiceAsyncStub, link_id: str, *, from_sequence: int = 0, to_sequence: int = 0,
                         from_ms: int = 0, to_ms: int = 0) -> AsyncIterator[report_pb2.LedgerColumns]:
    """The entries of a range, in sequence order, a page at a time as columns (ExportLedgerPages with `columns`);
    an older server's pages of entries (it ignores the flag), or its ExportLedger, turned into columns here."""
    request = report_pb2.ExportLedgerRequest(link_id=link_id, from_sequence=from_sequence, to_sequence=to_sequence,
                                             from_ms=from_ms, to_ms=to_ms, columns=True)
    async for page in _paged(stub, request):
        if isinstance(page, list):
            yield columns_of(page)
        else:
            yield page.columns if page.HasField("columns") else columns_of(page.entries)


async def _paged(stub: ReportServiceAsyncStub, request: report_pb2.ExportLedgerRequest,
                 ) -> AsyncIterator[report_pb2.LedgerPage | list[report_pb2.LedgerEntry]]:
    """ExportLedgerPages' pages; from a server without it (UNIMPLEMENTED before any page), ExportLedger's entries
    (the same request but `columns`) in lists of FALLBACK_PAGE."""
    call = stub.ExportLedgerPages(request)
    paged = False
    try:
        async for page in call:
            paged = True
            yield page
        return
    except grpc.aio.AioRpcError as e:
        if paged or e.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise
    finally:
        call.cancel()
    chunk: list[report_pb2.LedgerEntry] = []
    async for entry in export_ledger(stub, request.link_id, from_sequence=request.from_sequence,
                                     to_sequence=request.to_sequence, from_ms=request.from_ms, to_ms=request.to_ms):
        chunk.append(entry)
        if len(chunk) == FALLBACK_PAGE:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
