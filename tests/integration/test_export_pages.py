"""ExportLedgerPages (issue 22; API.md ReportService): the same entries as ExportLedger for the same request, in
pages that follow each other, as messages or as columns; the same refusals (role, bad input naming its field,
unknown link) and no audit row; `jackpot-report export` writing the same CSV bytes through column pages, through
pages of entries (a server without columns) and through ExportLedger (a server without pages)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import grpc
import pytest
from jackpot_finance import cli
from jackpot_finance.calls import finance_channel, report_stub
from jackpot_finance.ledger_columns import entries_of
from jackpot_finance.spreadsheet import ENCODING, EXPORT_COLUMNS, export_rows

from jackpotd.api.gen.jackpot.v1 import report_pb2
from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role

from ..conftest import unique
from .harness import Client, token

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
Request = report_pb2.ExportLedgerRequest


async def _ledger(c: Client) -> tuple[str, int]:
    """A link with rounds, a settled hit and a fund: (link, entries)."""
    link, table = unique("pg"), unique("t")
    await c.create_link(link)
    await c.register(table, link)
    await c.fund(link, "MAJOR", 5_000)
    for n in range(4):
        await c.commit(table, f"r{n}", [1, 2, 3])
        await c.settle(table, f"r{n}", {2: ROYAL} if n == 1 else {3: FLUSH} if n == 3 else {})
    return link, int(await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link))


async def _pages(c: Client, request: Request) -> list[report_pb2.LedgerPage]:
    return [p async for p in c.report.ExportLedgerPages(request)]


async def test_pages_carry_exportledgers_entries(client: Client) -> None:
    c = client
    link, n = await _ledger(c)
    for request in (Request(link_id=link), Request(link_id=link, from_sequence=3, to_sequence=n - 2),
                    Request(link_id=link, from_sequence=n, to_sequence=n)):
        entries = [e async for e in c.report.ExportLedger(request)]
        pages = await _pages(c, request)
        assert pages and all(p.entries for p in pages)
        assert [e for p in pages for e in p.entries] == entries  # every field, the export's range included
        for p in pages:
            assert (p.first_sequence, p.last_sequence) == (p.entries[0].sequence, p.entries[-1].sequence)
            assert len(p.entries) == p.last_sequence - p.first_sequence + 1
        assert [p.first_sequence for p in pages[1:]] == [p.last_sequence + 1 for p in pages[:-1]]
        assert entries[0].sequence == (request.from_sequence or 1) and entries[-1].sequence == (request.to_sequence
                                                                                                 or n)
        request.columns = True  # the same pages as columns: the same entries, field by field
        pages = await _pages(c, request)
        assert pages and not any(p.entries for p in pages)
        assert [e for p in pages for e in entries_of(p.columns)] == entries
        for p in pages:
            assert (p.first_sequence, p.last_sequence) == (p.columns.sequence[0], p.columns.sequence[-1])
        assert [p.first_sequence for p in pages[1:]] == [p.last_sequence + 1 for p in pages[:-1]]
    # by time as well: the whole link's day
    first = [e async for e in c.report.ExportLedger(Request(link_id=link))]
    by_time = Request(link_id=link, from_ms=first[0].at_ms, to_ms=first[-1].at_ms + 1)
    assert [e for p in await _pages(c, by_time) for e in p.entries] == [
        e async for e in c.report.ExportLedger(by_time)]
    by_time.columns = True
    assert [e for p in await _pages(c, by_time) for e in entries_of(p.columns)] == [
        e async for e in c.report.ExportLedger(Request(link_id=link, from_ms=by_time.from_ms, to_ms=by_time.to_ms))]
    # past the head: nothing, and no empty page
    for columns in (False, True):
        assert await _pages(c, Request(link_id=link, from_sequence=n + 5, to_sequence=n + 9, columns=columns)) == []


@pytest.mark.parametrize(("request_", "code", "field"), [
    (Request(link_id="bad link"), grpc.StatusCode.INVALID_ARGUMENT, "link_id"),
    (Request(link_id="x", from_sequence=-1), grpc.StatusCode.INVALID_ARGUMENT, "from_sequence"),
    (Request(link_id="x", from_sequence=5, to_sequence=2), grpc.StatusCode.INVALID_ARGUMENT, "to_sequence"),
    (Request(link_id="x", from_sequence=1, from_ms=10, to_ms=20), grpc.StatusCode.INVALID_ARGUMENT, "from_ms"),
    (Request(link_id="x", from_ms=20, to_ms=10), grpc.StatusCode.INVALID_ARGUMENT, "to_ms"),
    (Request(link_id="nolink-pages"), grpc.StatusCode.NOT_FOUND, "link_id"),
])
async def test_bad_requests_are_refused_naming_the_field(client: Client, request_: Request, code: grpc.StatusCode,
                                                         field: str) -> None:
    columns = Request()
    columns.CopyFrom(request_)
    columns.columns = True
    for method, request in ((client.report.ExportLedgerPages, request_), (client.report.ExportLedger, request_),
                            (client.report.ExportLedgerPages, columns)):  # the same answer from each
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await _drain(method(request))
        assert e.value.code() == code and field in (e.value.details() or ""), e.value.details()


async def test_exportledger_refuses_columns_naming_the_field(client: Client) -> None:
    link, _ = await _ledger(client)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await _drain(client.report.ExportLedger(Request(link_id=link, columns=True)))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "columns=True" in (e.value.details() or ""), e.value.details()


async def _drain(call: Any) -> None:
    async for _ in call:
        pass


async def test_only_finance_and_admin_read_pages(client: Client, target: str) -> None:
    link, _ = await _ledger(client)
    async with grpc.aio.insecure_channel(target) as channel:
        pages = channel.unary_stream("/jackpot.v1.ReportService/ExportLedgerPages",
                                     request_serializer=Request.SerializeToString,
                                     response_deserializer=report_pb2.LedgerPage.FromString)
        for role, code in ((Role.FINANCE, None), (Role.ADMIN, None), (Role.SUPERVISOR, "PERMISSION_DENIED"),
                           (Role.DISPLAY, "PERMISSION_DENIED"), (None, "UNAUTHENTICATED")):
            metadata = (("authorization", f"Bearer {token(role, 'pages-1')}"),) if role else None
            for request in (Request(link_id=link), Request(link_id=link, columns=True)):
                try:
                    got = [p async for p in pages(request, metadata=metadata, timeout=10)]
                except grpc.aio.AioRpcError as e:
                    assert e.code().name == code, (role, e.code(), e.details())
                    assert not code or "ExportLedgerPages" in (e.details() or "")
                else:
                    assert code is None and got[0].first_sequence == 1, role
    # a read, as ExportLedger: no row in the trail of administrative acts, refused or not
    assert await client.pg.fetchval("SELECT count(*) FROM admin_audit WHERE method LIKE 'ExportLedger%'") == 0


class PagesWithoutColumns:
    """The real ReportService stub, but the pages asked for without `columns` (as a server that has
    ExportLedgerPages but not yet its columns answers: it ignores the flag and sends entries)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = report_stub(channel)

    def ExportLedgerPages(self, request: Request) -> Any:
        assert request.columns
        return self.stub.ExportLedgerPages(Request(link_id=request.link_id, from_sequence=request.from_sequence,
                                                   to_sequence=request.to_sequence, from_ms=request.from_ms,
                                                   to_ms=request.to_ms))


class OlderServer:
    """The real ReportService stub, but asking for pages calls a method the server does not have (as a server
    older than ExportLedgerPages answers: UNIMPLEMENTED)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = report_stub(channel)
        self.missing = channel.unary_stream("/jackpot.v1.ReportService/NoSuchExport",
                                            request_serializer=Request.SerializeToString,
                                            response_deserializer=report_pb2.LedgerPage.FromString)

    def ExportLedgerPages(self, request: Request) -> Any:
        return self.missing(request)

    def ExportLedger(self, request: Request) -> Any:
        return self.stub.ExportLedger(request)


async def test_the_csv_is_the_same_through_pages_and_through_entries(client: Client, target: str,
                                                                      tmp_path: Path) -> None:
    link, n = await _ledger(client)
    credential = RoleCredential(token=token(Role.FINANCE, "office"))
    argv = ["export", "--target", target, "--link", link, "--from-seq", "1", "--to-seq", str(n)]
    paged, older, expected = tmp_path / "paged.csv", tmp_path / "older.csv", tmp_path / "expected.csv"
    entries = tmp_path / "entries.csv"
    assert await cli.run(cli.parse([*argv, "--out", str(paged)]), lambda t: finance_channel(credential, t)) == 0
    async with finance_channel(credential, target) as channel:
        assert await cli.export(cli.parse([*argv, "--out", str(older)]), OlderServer(channel)) == 0  # type: ignore[arg-type]
        assert await cli.export(cli.parse([*argv, "--out", str(entries)]),
                                PagesWithoutColumns(channel)) == 0  # type: ignore[arg-type]
    # the file as the export wrote it before pages: ExportLedger's entries one by one, rows of one shared `seen`
    seen: dict[str, dict[str, object]] = {}
    with expected.open("w", encoding=ENCODING, newline="") as f:
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(EXPORT_COLUMNS)
        async for e in client.report.ExportLedger(Request(link_id=link, from_sequence=1, to_sequence=n)):
            writer.writerows(export_rows(e, seen))
    want = expected.read_bytes()
    assert b",hit," in want and want.count(b"\r\n") > n  # hits and postings are in it
    assert paged.read_bytes() == want
    assert older.read_bytes() == want
    assert entries.read_bytes() == want
