"""Gaming days across both daylight-saving changes of Australia/Sydney (RULES.md §10), with the service's clock
set to the moments around each day's 06:00 start; and `jackpot-report` against a real server: its CSV, JSON and
HTML carry the same numbers, and the HTML opens in headless Chromium."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from jackpot_finance import cli
from jackpot_finance.calls import finance_channel

from jackpotd.api.gen.jackpot.v1 import admin_pb2, report_pb2
from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role

from ..conftest import Isolated, unique
from .browser import ARGS, CHROMIUM, require_chromium
from .conftest import open_private, start_private
from .harness import AUDIT, Client, rid, token

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "finance"


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).astimezone(UTC).timestamp() * 1000)


# Sydney 2026: clocks go back at 03:00 AEDT on 5 April (06:00 is +10 from then), forward at 02:00 AEST on 4 October.
APRIL_4 = ms("2026-04-04T06:00:00+11:00")  # gaming day 2026-04-04 starts: 2026-04-03T19:00Z
APRIL_5 = ms("2026-04-05T06:00:00+10:00")  # ... and ends 25 hours later: 2026-04-04T20:00Z
OCTOBER_3 = ms("2026-10-03T06:00:00+10:00")  # gaming day 2026-10-03 starts: 2026-10-02T20:00Z
OCTOBER_4 = ms("2026-10-04T06:00:00+11:00")  # ... and ends 23 hours later: 2026-10-03T19:00Z


async def _create_sydney_link(c: Client, link: str, table: str) -> None:
    await c.admin.CreateLink(admin_pb2.CreateLinkRequest(
        request_id=rid(), link_id=link, mode="COMBINED", wager_amount_cents=100, time_zone="Australia/Sydney",
        gaming_day_start="06:00", pools=[admin_pb2.PoolConfig(pool="JACKPOT"), admin_pb2.PoolConfig(pool="RESERVE")],
        rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="JACKPOT", ppm=275_000),
                                     admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000),
        audit=AUDIT))
    await c.register(table, link)


async def test_gaming_days_across_both_clock_changes(isolated: Isolated, tmp_path: Path) -> None:
    now = [APRIL_4 - 3_600_000]
    link, table = unique("syd"), unique("t")
    async with open_private(isolated, tmp_path, clock=lambda: now[0]) as p:
        c = p.client
        await _create_sydney_link(c, link, table)
        # one wager each just before and just at each boundary; seats say which moment it was
        moments = [(APRIL_4 - 1, 1), (APRIL_4, 2), (APRIL_5 - 1, 3), (APRIL_5, 4),
                   (OCTOBER_3 - 1, 5), (OCTOBER_3, 6), (OCTOBER_4 - 1, 7), (OCTOBER_4, 1)]
        for n, (at, seat) in enumerate(moments):
            now[0] = at
            await c.commit(table, f"r{n}", [seat])

        async def day(d: str) -> report_pb2.Reconciliation:
            r: report_pb2.Reconciliation = await c.report.GetReconciliation(
                report_pb2.GetReconciliationRequest(link_id=link, gaming_day=d))
            assert r.all_hold, [i.expression for i in r.identities if not i.holds]
            return r

        expected = {"2026-04-03": (APRIL_4 - 24 * 3_600_000, APRIL_4, 1), "2026-04-04": (APRIL_4, APRIL_5, 2),
                    "2026-04-05": (APRIL_5, APRIL_5 + 24 * 3_600_000, 1),
                    "2026-10-02": (OCTOBER_3 - 24 * 3_600_000, OCTOBER_3, 1),
                    "2026-10-03": (OCTOBER_3, OCTOBER_4, 2), "2026-10-04": (OCTOBER_4, OCTOBER_4 + 24 * 3_600_000, 1)}
        for d, (begin, end, wagers) in expected.items():
            r = await day(d)
            assert (r.from_ms, r.to_ms) == (begin, end), d
            assert r.link.wagers == wagers, (d, r.link.wagers)
        assert APRIL_5 - APRIL_4 == 25 * 3_600_000 and OCTOBER_4 - OCTOBER_3 == 23 * 3_600_000
        # each day's closing is the next day's opening
        a, b = await day("2026-04-04"), await day("2026-04-05")
        assert [p.closing_ucents for p in a.pools] == [p.opening_ucents for p in b.pools]
        entries = await c.pg.fetch("SELECT seq, created_at FROM entries WHERE link_id = $1 AND kind = 'commit' "
                                   "ORDER BY seq", link)
        assert [int(e["created_at"].timestamp() * 1000) for e in entries] == [at for at, _ in moments]


async def test_jackpot_report_formats_carry_the_same_numbers(client: Client, target: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    c = client
    link, table = unique("rep"), unique("t")
    await c.create_link(link, resets={"MAJOR": 100_000}, caps={"MINOR": 1_000})
    await c.register(table, link)
    await c.fund(link, "MAJOR", 100_000)
    await c.fund(link, "MINOR", 990)
    for n in range(6):
        await c.commit(table, f"r{n}", [1, 2, 3, 4])
        await c.settle(table, f"r{n}", {2: ["As", "Ks", "Qs", "Js", "Ts"]} if n == 4 else
                       {3: ["2c", "5c", "9c", "Jc", "Kc"]} if n == 2 else {})
    credential = RoleCredential(token=token(Role.FINANCE, "office"))

    def channel(t: str) -> object:
        return finance_channel(credential, t)

    # the gaming day (it starts at 06:00 UTC here) once today's has begun, else the last day up to now (the link is
    # minutes old): both the CLI and the server are asked for the same period
    now = datetime.now(UTC)
    day = now.date().isoformat() if now.hour >= 6 else None
    since = now - timedelta(days=1)
    period = ["--day", day] if day else ["--from", since.isoformat(), "--to", now.isoformat()]
    outputs = {}
    for fmt in ("json", "csv", "html", "text"):
        out = tmp_path / f"report.{fmt}"
        code = await cli.run(cli.parse(["reconcile", "--target", target, "--link", link, *period, "--format", fmt,
                                        "--out", str(out)]), channel)
        assert code == 0, capsys.readouterr().err
        outputs[fmt] = out.read_text(encoding="utf-8-sig")
    report = json.loads(outputs["json"])
    served = await c.report.GetReconciliation(report_pb2.GetReconciliationRequest(
        link_id=link, **({"gaming_day": day} if day else {"from_ms": int(since.timestamp() * 1000),
                                                          "to_ms": int(now.timestamp() * 1000)})))
    # the server's numbers, in µ¢, are in every format: JSON as integers, CSV and HTML as the same exact dollars
    rows = list(csv.reader(io.StringIO(outputs["csv"])))
    cells = {cell for row in rows for cell in row}
    for p in served.pools:
        for uc in (p.opening_ucents, p.contributions_ucents, p.overflow_out_ucents, p.payouts_ucents,
                   p.closing_ucents):
            places = f"{abs(uc) % 100_000_000:08d}".rstrip("0").ljust(2, "0")  # exact, as many places as needed
            dollars = f"{'-' if uc < 0 else ''}{abs(uc) // 100_000_000}.{places}"
            assert str(uc) in json.dumps(report), (p.pool, uc)
            assert dollars in cells, (p.pool, dollars)
            assert f'data-ucents="{uc}" title="{"-" if uc < 0 else ""}${dollars.lstrip("-")}' in \
                outputs["html"].replace(",", ""), (p.pool, dollars)
    assert served.pools[1].overflow_out_ucents > 0  # MINOR's cap passed some on
    assert served.all_hold and len(served.hits) == 2
    for h in served.hits:
        assert h.hit_id in outputs["html"] or h.round_id in outputs["html"]

    # the HTML, as finance opens it, in headless Chromium: no errors, a screenshot kept as an artifact
    require_chromium()
    from playwright.async_api import async_playwright

    html = tmp_path / "report.html"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            await page.goto(html.as_uri())
            assert await page.locator("svg polyline").count() == len(served.pools)
            await page.screenshot(path=str(ARTIFACTS / "reconciliation-served.png"), full_page=True)
            assert not errors, errors
        finally:
            await browser.close()


async def test_a_clock_running_ahead_does_not_carry_later_entries_into_the_future(isolated: Isolated,
                                                                                 tmp_path: Path) -> None:
    real = time.time
    ahead = [3_600_000]  # the API replica's clock, an hour ahead at first; the writer's is right
    link, table = unique("ahead"), unique("t")
    async with open_private(isolated, tmp_path, clock=lambda: int(real() * 1000) + ahead[0], role="grpc") as p:
        writer, stop_writer = await start_private(p.settings, role="writer")
        c = p.client
        await _create_sydney_link(c, link, table)
        await c.commit(table, "r1", [1])
        ahead[0] = 0
        await c.commit(table, "r2", [2])
        written = int(real() * 1000)
        dates = [int(r["created_at"].timestamp() * 1000) for r in await c.pg.fetch(
            "SELECT created_at FROM entries WHERE link_id = $1 ORDER BY seq", link)]
        assert dates == sorted(dates) and dates[-1] <= written + 1_000  # dated by the writer's clock, in order
        v = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert v.ok, v.problems
        # a superuser moving an entry to another day is caught: the date is in the chain (version 3)
        async with c.pg.acquire() as conn, conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")
            await conn.execute("UPDATE entries SET created_at = created_at - interval '1 day' WHERE link_id = $1 "
                               "AND seq = 1", link)
        bad = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert not bad.ok and not bad.chain_ok and bad.first_altered_sequence == 1, bad.problems
        stop_writer.set()
        await writer


@pytest.mark.parametrize(("request_", "field"), [
    (report_pb2.GetReconciliationRequest(link_id="x", gaming_day="9999-12-31"), "gaming_day"),
    (report_pb2.GetReconciliationRequest(link_id="x", gaming_day="0001-01-01"), "gaming_day"),
    (report_pb2.GetReconciliationRequest(link_id="x", from_ms=253_402_300_800_000, to_ms=253_402_300_900_000),
     "to_ms"),
])
async def test_dates_beyond_the_calendar_are_invalid_not_internal(client: Client, request_: object,
                                                                  field: str) -> None:
    import grpc

    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.report.GetReconciliation(request_)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and field in (e.value.details() or "")


async def test_a_service_clock_in_a_later_year_dates_its_entries(isolated: Isolated, tmp_path: Path) -> None:
    """The service's clock dates entries, whatever the year (here Sydney's April 2027 change): the ledger writer
    caps dates at the same clock, not at another's."""
    start, end = ms("2027-04-03T06:00:00+11:00"), ms("2027-04-04T06:00:00+10:00")  # a 25-hour gaming day
    now = [start - 3_600_000]
    link, table = unique("syd27"), unique("t")
    async with open_private(isolated, tmp_path, clock=lambda: now[0]) as p:
        c = p.client
        await _create_sydney_link(c, link, table)
        moments = [start - 1, start, end - 1, end]
        for n, at in enumerate(moments):
            now[0] = at
            await c.commit(table, f"r{n}", [n + 1])
        r = await c.report.GetReconciliation(report_pb2.GetReconciliationRequest(link_id=link,
                                                                                  gaming_day="2027-04-03"))
        assert (r.from_ms, r.to_ms) == (start, end) and end - start == 25 * 3_600_000
        assert r.all_hold and r.link.wagers == 2
        dates = [int(e["created_at"].timestamp() * 1000) for e in await c.pg.fetch(
            "SELECT created_at FROM entries WHERE link_id = $1 AND kind = 'commit' ORDER BY seq", link)]
        assert dates == moments
