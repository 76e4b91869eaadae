"""`jackpot-report` (clients/finance) without a server: its reports rendered from hand-built ReportService
messages carry the same exact numbers in JSON, CSV, text and HTML; hostile ids stay inert (HTML escaped, CSV
formulas defused, terminal controls shown); exact dollars from µ¢; the ledger's export rows and file; exit
statuses, with the commands run in-process on a stub that answers with the hand-built messages."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jackpot_finance import chart, cli
from jackpot_finance.model import MOVEMENTS, hand_name, report_dict
from jackpot_finance.money import PLACES, display, dollars, exact, subcent
from jackpot_finance.render import render_liability, render_reconciliation, render_verification
from jackpot_finance.spreadsheet import EXPORT_COLUMNS, export_rows
from jackpot_finance.times import NaiveTime, instant, local_iso, parse_instant, utc_iso, zone

from jackpotd.api.gen.jackpot.v1 import report_pb2

SCRIPT = "<script>alert(1)</script>"
FORMULA_RULE = "=cmd|' /C calc'!A0"
TZ = "Australia/Sydney"


def ms(text: str) -> int:
    """Unix ms of an ISO time, computed here independently of the client."""
    return int(datetime.fromisoformat(text).timestamp()) * 1000


def pool(name: str, *, hidden: bool = False, holds: bool = True, skew: int = 0, **movements: int
         ) -> report_pb2.PoolReconciliation:
    """A pool whose closing is what RULES.md §10 makes it (plus `skew`, to make the numbers not add up)."""
    signs = {"contributions": 1, "overflow_out": -1, "overflow_in": 1, "refunds": -1, "funding": 1,
             "transfers_in": 1, "payouts": -1, "transfers_out": -1}
    opening = movements.pop("opening")
    closing = opening + sum(signs[k] * v for k, v in movements.items()) + skew
    return report_pb2.PoolReconciliation(
        pool=name, hidden=hidden, opening_ucents=opening, closing_ucents=closing, identity_holds=holds,
        **{f"{k}_ucents": v for k, v in movements.items()})


def reconciliation(**overrides: Any) -> report_pb2.Reconciliation:
    """A gaming day of a split link: MAJOR, MINOR (won, reset from RESERVE), hidden RESERVE; one hit whose ids
    and rule are hostile."""
    major = pool("MAJOR", opening=1_000_000_000_017, contributions=7_400_000_123, refunds=20_000_000)
    minor = pool("MINOR", opening=100_000_000_000, contributions=2_775_000_000, refunds=7_500_000,
                 payouts=102_500_000_000, transfers_in=99_800_000_000)
    minor.payouts_by_hand.add(hand="FOUR_OF_A_KIND", hits=1, paid_ucents=102_500_000_000)
    reserve = pool("RESERVE", hidden=True, opening=500_000_000_000, contributions=925_000_000,
                   refunds=2_500_000, funding=1_234_567, overflow_in=3, transfers_out=99_800_000_000)
    start, end = ms("2024-04-30T20:00:00+00:00"), ms("2024-05-01T20:00:00+00:00")
    hit_at = ms("2024-05-01T03:04:05+00:00") + 678
    rec = report_pb2.Reconciliation(
        link_id="demo", gaming_day="2024-05-01", from_ms=start, to_ms=end, time_zone=TZ, gaming_day_start="06:00",
        first_sequence=101, last_sequence=140, entries=40, pools=[major, minor, reserve],
        link=report_pb2.LinkTotals(wagers=37, wagers_accepted_ucents=3_700_000_000, refunds=1,
                                   wagers_refunded_ucents=100_000_000, contributions_ucents=1_080_000_000,
                                   retained_ucents=2_520_000_000, paid_ucents=102_500_000_000,
                                   operator_funding_ucents=1_234_567, identity_holds=True),
        identities=[report_pb2.Identity(name=f"pool {p.pool}", rule="RULES.md §10", holds=True,
                                        expression=f"{p.opening_ucents} + ... = {p.closing_ucents}")
                    for p in (major, minor, reserve)]
        + [report_pb2.Identity(name="link", rule="RULES.md §10", holds=True, expression="3700000000 - 100000000 "
                               "= 1080000000 + 2520000000")],
        all_hold=True,
        hits=[report_pb2.ReportHit(hit_id="h-1", table_id="+SUM(1)", round_id=SCRIPT, seat=3, hand="FOUR_OF_A_KIND",
                                   cards=["9s", "9h", "9d", "9c", "2s"], pool="MINOR", amount_cents=102_500,
                                   funded_by_operator_cents=0, pool_before_ucents=102_500_000_001,
                                   rule=FORMULA_RULE, status="PAID", sequence=120, at_ms=hit_at)],
        balances=[report_pb2.BalancePoint(pool=p, at_ms=at, sequence=seq, balance_ucents=uc) for p, at, seq, uc in (
            ("MAJOR", start + 3_600_000, 110, 1_003_000_000_017), ("MINOR", start + 3_600_000, 110, 101_000_000_000),
            ("RESERVE", start + 3_600_000, 110, 500_400_000_000), ("MINOR", hit_at, 120, 102_500_000_001),
            ("MINOR", hit_at, 121, 1), ("MINOR", hit_at, 122, 99_800_000_001),
            ("RESERVE", hit_at, 122, 400_600_000_000))],
        generated_at_ms=end + 60_000)
    for key, value in overrides.items():
        if isinstance(value, list):
            rec.ClearField(key)  # type: ignore[arg-type]
            getattr(rec, key).extend(value)
        elif isinstance(value, report_pb2.LinkTotals):
            rec.link.CopyFrom(value)
        else:
            setattr(rec, key, value)
    return rec


def liability() -> report_pb2.Liability:
    return report_pb2.Liability(
        link_id="demo", sequence=140, at_ms=ms("2024-05-01T20:00:00+00:00"),
        pools=[report_pb2.PoolLiability(pool="MAJOR", balance_ucents=1_007_200_000_140, reset_cents=1_000_000),
               report_pb2.PoolLiability(pool="RESERVE", hidden=True, balance_ucents=3, reset_cents=0)],
        pools_ucents=1_007_200_000_140, reserve_ucents=3, pending_ucents=500_000_000_000,
        pending_hits=[report_pb2.ReportHit(hit_id="h-9", table_id="t\x1b[2J", round_id="r", seat=1, hand="ROYAL_FLUSH",
                                           pool="MAJOR", amount_cents=500_000, status="PENDING")],
        reset_values_cents=1_000_000, reset_owed_by_operator_cents=999_999, owed_to_players_ucents=1_507_200_000_140)


def sections(text: str) -> list[list[list[str]]]:
    """A sectioned CSV's sections (blank rows between them), each a list of rows, header first."""
    out: list[list[list[str]]] = [[]]
    for row in csv.reader(io.StringIO(text)):
        if row:
            out[-1].append(row)
        else:
            out.append([])
    return out


# ---- money and time -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("uc, text", [(0, "0.00"), (1, "0.00000001"), (-1, "-0.00000001"),
                                      (-1_234_567_890, "-12.3456789"), (2**53 + 1, "90071992.54740993"),
                                      (104_335_500_000, "1043.355"), (104_335_000_000, "1043.35"),
                                      (100_000_000, "1.00"), (-(2**63), "-92233720368.54775808")])
def test_dollars_is_exact_with_the_places_it_needs(uc: int, text: str) -> None:
    assert dollars(uc) == text
    assert exact(uc).replace(",", "") == ("-$" if uc < 0 else "$") + text.lstrip("-")
    assert PLACES == 8  # 1 $ = 100 cents = 100,000,000 µ¢: never more places than 8


@pytest.mark.parametrize("uc, cents, sub", [
    (104_335_500_000, "$1,043.35", "+0.5¢"),  # MINOR's half cent: the sign shows $1,043.35
    (104_335_000_000, "$1,043.35", ""), (1, "$0.00", "+0.000001¢"), (999_999, "$0.00", "+0.999999¢"),
    (123_456_789_012_345, "$1,234,567.89", "+0.012345¢"), (-1_500_000, "-$0.01", "−0.5¢"), (0, "$0.00", "")])
def test_dollars_and_cents_with_the_sub_cent_beside_them(uc: int, cents: str, sub: str) -> None:
    assert display(uc) == cents and subcent(uc) == sub


@given(st.integers(min_value=-(2**45), max_value=2**45))
def test_utc_iso_of_every_millisecond_is_its_instant(ms: int) -> None:
    at = instant(ms)  # utc_iso keeps the seconds it formatted: the same text as formatting each instant
    assert utc_iso(ms) == f"{at:%Y-%m-%dT%H:%M:%S}.{at.microsecond // 1000:03d}Z"


@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_every_money_string_gives_back_its_microcents(uc: int) -> None:
    assert Decimal(dollars(uc)).scaleb(PLACES) == uc
    assert Decimal(exact(uc).replace("$", "").replace(",", "")).scaleb(PLACES) == uc
    cents = Decimal(display(uc).replace("$", "").replace(",", "")).scaleb(PLACES)
    sub = subcent(uc).replace("¢", "").replace("−", "-").replace("+", "")
    assert cents + (Decimal(sub).scaleb(6) if sub else 0) == uc  # cents + sub-cent is the exact amount
    assert abs(uc - cents) < 1_000_000 and abs(cents) <= abs(uc)  # whole cents, rounded toward zero
    assert display(uc).startswith("-$" if uc < 0 else "$")


@pytest.mark.parametrize("hand, name", [("royal_flush", "Royal flush"), ("STRAIGHT_FLUSH", "Straight flush"),
                                        ("four_of_a_kind", "Four of a kind"), ("full_house", "Full house"),
                                        ("flush", "Flush"), ("", "")])
def test_hands_by_their_names(hand: str, name: str) -> None:
    assert hand_name(hand) == name


def test_instants() -> None:
    assert parse_instant("2024-05-01T06:00:00+10:00") == parse_instant("2024-04-30T20:00:00Z") \
        == ms("2024-04-30T20:00:00+00:00")
    assert parse_instant("2024-04-30T20:00:00.123Z") == ms("2024-04-30T20:00:00+00:00") + 123
    with pytest.raises(NaiveTime):
        parse_instant("2024-04-30T20:00:00")
    with pytest.raises(ValueError):
        parse_instant("yesterday")
    at = ms("2024-04-06T16:30:00+00:00") + 5  # Sydney: daylight saving ends at 03:00 local on 7 April 2024
    assert utc_iso(at) == "2024-04-06T16:30:00.005Z"
    assert local_iso(at, zone(TZ)) == "2024-04-07T02:30:00.005+10:00"
    assert local_iso(at - 3_600_000, zone(TZ)) == "2024-04-07T02:30:00.005+11:00"
    assert zone("No/Such_Zone") is UTC and zone("") is UTC


# ---- the reconciliation in every format -------------------------------------------------------------------------


def test_every_format_carries_the_same_numbers() -> None:
    rec = reconciliation()
    as_json = json.loads(render_reconciliation(rec, "json"))
    text = render_reconciliation(rec, "text")
    html = render_reconciliation(rec, "html")
    csv_sections = sections(render_reconciliation(rec, "csv"))
    header, *pool_rows = csv_sections[1]
    by_pool = {row[0]: dict(zip(header, row, strict=True)) for row in pool_rows}
    assert [p["pool"] for p in as_json["pools"]] == list(by_pool) == ["MAJOR", "MINOR", "RESERVE"]
    for p, j in zip(rec.pools, as_json["pools"], strict=True):
        for m in MOVEMENTS:
            uc = getattr(p, f"{m.key}_ucents")
            assert j[f"{m.key}_ucents"] == uc and type(j[f"{m.key}_ucents"]) is int
            assert Decimal(j[f"{m.key}_dollars"]).scaleb(PLACES) == uc
            assert int(by_pool[p.pool][f"{m.label} (µ¢)"]) == uc
            assert by_pool[p.pool][f"{m.label} ($)"] == j[f"{m.key}_dollars"]
            assert f'data-ucents="{uc}" title="{exact(uc)} = {uc:,} µ¢">{display(uc)}<' in html
            assert f"{display(uc)} {subcent(uc)}".rstrip() + "\n" in text
        assert by_pool[p.pool]["identity"] == "✓" and j["identity_holds"] and j["checked"]
    assert as_json["pools"][2]["hidden"] is True and by_pool["RESERVE"]["hidden"] == "yes"
    link_header, link_row = csv_sections[2]
    link = dict(zip(link_header, link_row, strict=True))
    assert int(link["retained by the operator, net of voids (µ¢)"]) == as_json["link"]["retained_ucents"] \
        == rec.link.retained_ucents
    assert f'data-ucents="{rec.link.retained_ucents}"' in html
    hit = as_json["hits"][0]
    assert hit["amount_cents"] == 102_500 and hit["amount_dollars"] == "1025.00"
    assert hit["at_utc"] == "2024-05-01T03:04:05.678Z" and hit["at_local"] == "2024-05-01T13:04:05.678+10:00"
    assert "$1,025.00" in html and "$1,025.00" in text
    assert "Four of a kind" in html and "Four of a kind" in text and "FOUR_OF_A_KIND" not in text + html
    assert dict(zip(csv_sections[4][0], csv_sections[4][1], strict=True))["hand"] == "Four of a kind"
    assert "0.00000000" not in text + html  # never dollars to 8 places for people
    assert as_json["from_local"] == "2024-05-01T06:00:00.000+10:00" and as_json["from_utc"] in html
    assert as_json["verdict_holds"] is True and "ALL IDENTITIES HOLD" in text and "every identity holds" in html
    assert len(as_json["balances"]) == len(rec.balances)


def test_json_is_sorted_and_exact_beyond_2_to_the_53() -> None:
    big = 2**53 + 3
    rec = reconciliation()
    rec.pools[0].opening_ucents += big
    rec.pools[0].closing_ucents += big
    text = render_reconciliation(rec, "json")
    assert json.loads(text)["pools"][0]["opening_ucents"] == 1_000_000_000_017 + big
    assert f'"opening_ucents": {1_000_000_000_017 + big}' in text
    keys = list(json.loads(text))
    assert keys == sorted(keys)


def test_html_is_inert_and_self_contained() -> None:
    html = render_reconciliation(reconciliation(), "html")
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not re.search(r"https?://", html), "the page refers to something outside itself"
    assert not re.search(r"\b(src|href)\s*=", html, re.IGNORECASE)
    assert "Content-Security-Policy" in html
    assert html.count('<polyline class="series"') == 3
    assert html.count('<tr class="identity holds">') == 4 and "✗" not in html


def test_csv_defuses_formulas_in_text_cells_only() -> None:
    rows = sections(render_reconciliation(reconciliation(), "csv"))[4]
    hit = dict(zip(rows[0], rows[1], strict=True))
    assert hit["rule"] == "'" + FORMULA_RULE
    assert hit["table"] == "'+SUM(1)"
    assert hit["round"] == SCRIPT  # harmless in a spreadsheet: kept as it is
    rec = reconciliation(pools=[pool("=MAJOR", opening=0, refunds=1_234_567_890)])  # a negative closing
    rows = sections(render_reconciliation(rec, "csv"))[1]
    major = dict(zip(rows[0], rows[1], strict=True))
    assert major["pool"] == "'=MAJOR"
    assert major["closing ($)"] == "-12.3456789" and major["closing (µ¢)"] == "-1234567890"  # numbers, kept


def test_failed_identity_and_numbers_that_do_not_add_up() -> None:
    failed = reconciliation(all_hold=False)
    failed.identities[1].holds = False
    failed.pools[1].identity_holds = False
    html = render_reconciliation(failed, "html")
    assert html.count('<tr class="identity fails">') == 1 and "NOT RECONCILED" in html
    assert "NOT RECONCILED" in render_reconciliation(failed, "text")
    assert sections(render_reconciliation(failed, "csv"))[0][1][-1] == "IDENTITY FAILS"
    skewed = reconciliation()
    skewed.pools[0].closing_ucents += 1  # the server still says it holds: the client does not agree
    report = report_dict(skewed)
    assert report["pools"][0]["checked"] is False and report["pools"][0]["client_difference_ucents"] == 1
    assert report["verdict_holds"] is False


def test_chart_handles_no_and_one_point() -> None:
    empty = report_dict(reconciliation(pools=[], balances=[]))
    assert "<svg" not in chart.svg(empty) and "No pool balances" in chart.svg(empty)
    rec = reconciliation(pools=[], balances=[])
    rec.balances.add(pool="MAJOR", at_ms=rec.from_ms + 1000, sequence=5, balance_ucents=7)
    drawn = chart.svg(report_dict(rec))
    assert drawn.count("<polyline") == 1 and "MAJOR" in drawn
    quiet = chart.svg(report_dict(reconciliation(balances=[])))  # pools but no points: opening to closing
    assert quiet.count("<polyline") == 3


def test_chart_of_a_period_under_way_ends_at_generated_at() -> None:
    """A day not over: jackpotd dates the closing balances (and the quarter hour under way) at the period's end,
    but every line and the time axis stop at "generated at", the closing balance drawn there."""
    rec = reconciliation(hits=[])
    generated = rec.from_ms + 2 * 3_600_000  # two hours into the gaming day, after the first balance points
    rec.generated_at_ms = generated
    rec.ClearField("balances")
    rec.balances.extend(
        [report_pb2.BalancePoint(pool=p.pool, at_ms=rec.from_ms + 3_600_000, sequence=110,
                                 balance_ucents=p.opening_ucents + 5) for p in rec.pools]
        + [report_pb2.BalancePoint(pool=p.pool, at_ms=rec.to_ms, sequence=140, balance_ucents=p.closing_ucents)
           for p in rec.pools]
        + [report_pb2.BalancePoint(pool="EXTRA", at_ms=rec.to_ms, sequence=140, balance_ucents=9)])
    report = report_dict(rec)
    assert chart.chart_end(report) == generated
    lines = chart.series(report)
    assert len(lines) == 4 and all(at <= generated for s in lines for at, _ in s.points)
    assert all(s.points[-1][0] == generated for s in lines)
    drawn = chart.svg(report)
    right_edge = chart.WIDTH - chart.RIGHT
    xs = [int(xy.split(",")[0]) for pts in re.findall(r'points="([^"]*)"', drawn) for xy in pts.split()]
    assert max(xs) == right_edge  # the plot's right edge is "generated at", not the period's end
    label = local_iso(generated, zone(TZ))
    assert f'text-anchor="end">{label[5:10]} {label[11:16]}</text>' in drawn
    over = local_iso(rec.to_ms, zone(TZ))
    assert f"{over[5:10]} {over[11:16]}" not in drawn
    rec.generated_at_ms = rec.to_ms + 60_000  # a day over: to its end
    assert chart.chart_end(report_dict(rec)) == rec.to_ms


def test_liability_and_verification() -> None:
    liab = liability()
    data = json.loads(render_liability(liab, "json"))
    assert data["owed_to_players_ucents"] == liab.owed_to_players_ucents
    assert data["reset_owed_by_operator_cents"] == 999_999 and data["reset_owed_by_operator_dollars"] == "9999.99"
    text = render_liability(liab, "text")
    # exact, as its help says: never rounded to the cent (MAJOR holds 140 µ¢ beyond its cents)
    assert "$15,072.0000014" in text and f"{liab.owed_to_players_ucents:,} µ¢" in text
    assert "$10,072.0000014" in text and "$9,999.99" in text and "Royal flush" in text
    assert display(liab.owed_to_players_ucents) not in text.replace(exact(liab.owed_to_players_ucents), "")
    assert "\x1b" not in text and "\\x1b[2J" in text  # a hostile id cannot drive the terminal
    resp = report_pb2.VerifyLedgerResponse(link_id="demo", ok=False, entries=40, chain_ok=False, balanced=True,
                                           first_altered_sequence=17, problems=["entry 17: hash differs"],
                                           pools=[report_pb2.PoolCheck(pool="MAJOR", ledger_ucents=5, redis_ucents=6)])
    text = render_verification(resp, "text")
    assert "first altered entry: sequence 17" in text and "entry 17: hash differs" in text and "LEDGER NOT OK" in text
    assert json.loads(render_verification(resp, "json"))["pools"][0]["redis_ucents"] == 6


# ---- the ledger's export ----------------------------------------------------------------------------------------


def entry(sequence: int, *postings: tuple[str, int, int], request_id: str = "r-1", kind: str = "commit",
          body: dict[str, Any] | None = None) -> report_pb2.LedgerEntry:
    return report_pb2.LedgerEntry(
        link_id="demo", sequence=sequence, at_ms=ms("2024-05-01T01:02:03+00:00") + 456, kind=kind,
        request_id=request_id, table_id="t-1", round_id="7", hash_hex="ab" * 32, prev_hash_hex="cd" * 32,
        postings=[report_pb2.LedgerPosting(account=a, amount_ucents=u, balance_after_ucents=b) for a, u, b in postings],
        first_sequence=1, last_sequence=2, entry_json=json.dumps(body or {"kind": kind}))


def test_export_rows_one_per_posting_and_one_without() -> None:
    rows = export_rows(entry(1, ("pool:MAJOR", 20_000_000, 2**53 + 7), ("wagers", -1_234_567_800, -1_234_567_800),
                             request_id="=1+1"))
    assert len(rows) == 2
    first, second = (dict(zip(EXPORT_COLUMNS, r, strict=True)) for r in rows)
    assert first["time_utc"] == "2024-05-01T01:02:03.456Z" and first["request_id"] == "'=1+1"
    assert first["row"] == second["row"] == "posting"
    assert first["posting_index"] == 0 and second["posting_index"] == 1
    assert first["balance_after_dollars"] == "90071992.54740999"
    assert second["amount_ucents"] == -1_234_567_800 and second["amount_dollars"] == "-12.345678"
    assert second["link_id"] == "demo" and second["hash_hex"] == "ab" * 32
    assert all(first[c] == "" for c in ("hit_id", "hand", "seat", "cards", "status", "approved_by"))
    (alone,) = export_rows(entry(2))
    row = dict(zip(EXPORT_COLUMNS, alone, strict=True))
    assert row["sequence"] == 2 and row["kind"] == "commit" and row["prev_hash_hex"] == "cd" * 32
    assert row["row"] == "entry"
    assert all(row[c] == "" for c in ("posting_index", "account", "amount_ucents", "amount_dollars",
                                      "balance_after_ucents", "balance_after_dollars", "hit_id", "hand"))


class _Call:
    def __init__(self, messages: list[Any], unimplemented: bool = False) -> None:
        self.messages = messages
        self.unimplemented = unimplemented  # as a server older than the method answers
        self.cancelled = False

    async def _gen(self) -> AsyncIterator[Any]:
        if self.unimplemented:
            raise grpc.aio.AioRpcError(grpc.StatusCode.UNIMPLEMENTED, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                       "Method not found!")
        for m in self.messages:
            yield m

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._gen()

    def cancel(self) -> None:
        self.cancelled = True


class FakeStub:
    """Answers as ReportService would, with hand-built messages; records the requests."""

    def __init__(self, rec: report_pb2.Reconciliation | None = None,
                 entries: list[report_pb2.LedgerEntry] | None = None, *, paged: bool = True) -> None:
        self.rec, self.entries, self.requests = rec, entries or [], []  # type: list[Any]
        self.paged = paged  # False: a server older than ExportLedgerPages

    async def GetReconciliation(self, request: Any, timeout: float | None = None) -> report_pb2.Reconciliation:
        self.requests.append(request)
        assert self.rec is not None
        return self.rec

    def ExportLedger(self, request: Any) -> _Call:
        self.requests.append(request)
        return _Call(self.entries)

    def ExportLedgerPages(self, request: Any) -> _Call:
        """A page of one entry, then the rest in a second page (pages of any size make the same file)."""
        self.requests.append(request)
        pages = [report_pb2.LedgerPage(entries=part, first_sequence=part[0].sequence,
                                       last_sequence=part[-1].sequence)
                 for part in (self.entries[:1], self.entries[1:]) if part]
        return _Call(pages, unimplemented=not self.paged)

    async def VerifyLedger(self, request: Any, timeout: float | None = None) -> report_pb2.VerifyLedgerResponse:
        self.requests.append(request)
        await asyncio.sleep(0.3)  # long enough for the spinner to turn
        return report_pb2.VerifyLedgerResponse(link_id=request.link_id, ok=False, chain_ok=False, problems=["x"])

    async def GetLiability(self, request: Any, timeout: float | None = None) -> report_pb2.Liability:
        self.requests.append(request)
        return liability()


@pytest.mark.parametrize("paged", [True, False], ids=["pages", "older-server"])
async def test_export_writes_a_spreadsheet_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                paged: bool) -> None:
    out = tmp_path / "ledger.csv"
    stub = FakeStub(entries=[entry(1, ("pool:MAJOR", 5, 5), ("wagers", -5, -5)), entry(2)], paged=paged)
    args = cli.parse(["export", "--link", "demo", "--from-seq", "1", "--to-seq", "2", "--out", str(out)])
    assert await cli.export(args, stub) == 0  # type: ignore[arg-type]
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the BOM Excel needs
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0] == list(EXPORT_COLUMNS) and len(rows) == 4 and [r[1] for r in rows[1:]] == ["1", "1", "2"]
    assert not (tmp_path / "ledger.csv.partial").exists()
    assert stub.requests[0].from_sequence == 1 and stub.requests[0].to_sequence == 2
    assert "exported 2 entries (2 postings)" in capsys.readouterr().out
    # pages asked for first, as columns (this server sends entries: it predates them); an older server's
    # UNIMPLEMENTED falls back to ExportLedger with the same request but `columns`, which ExportLedger refuses
    assert stub.requests[0].columns and not any(r.columns for r in stub.requests[1:])
    for r in stub.requests:
        r.columns = False
    assert len(stub.requests) == (1 if paged else 2) and all(r == stub.requests[0] for r in stub.requests)


async def test_reconcile_exit_status_follows_the_identities(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    args = cli.parse(["reconcile", "--link", "demo", "--from", "2024-05-01T06:00:00+10:00",
                      "--to", "2024-05-02T06:00:00+10:00", "--format", "html", "--out", str(out)])
    stub = FakeStub(reconciliation())
    assert await cli.reconcile(args, stub) == 0  # type: ignore[arg-type]
    assert stub.requests[0].from_ms == ms("2024-04-30T20:00:00+00:00") and stub.requests[0].gaming_day == ""
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    failed = reconciliation(all_hold=False)
    failed.identities[0].holds = False
    args = cli.parse(["reconcile", "--link", "demo", "--day", "2024-05-01", "--format", "csv"])
    assert await cli.reconcile(args, FakeStub(failed)) == 1  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert "NOT RECONCILED: pool MAJOR" in captured.err and captured.out.startswith("report,link")


async def test_verify_and_liability_commands(capsys: pytest.CaptureFixture[str]) -> None:
    stub = FakeStub(reconciliation())  # liability names the gaming day it falls in (the probe's zone and clock)
    assert await cli.verify(cli.parse(["verify", "--link", "demo"]), stub) == 1  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert "LEDGER NOT OK" in captured.out and "the ledger does not verify" in captured.err
    args = cli.parse(["liability", "--link", "demo", "--format", "json"])
    assert await cli.liability(args, stub) == 0  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert json.loads(captured.out)["owed_to_players_ucents"] == liability().owed_to_players_ucents
    assert [r.link_id for r in stub.requests] == ["demo", "demo", "demo"]
    assert captured.err.startswith("jackpot-report: liability as of now, in the link's current gaming day ")


# ---- usage errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["reconcile", "--link", "demo", "--day", "2024-02-30"], "--day '2024-02-30': must be a date YYYY-MM-DD"),
    (["reconcile", "--link", "demo", "--from", "2024-05-01T06:00:00", "--to", "2024-05-02T06:00:00Z"],
     "has no offset"),
    (["reconcile", "--link", "demo", "--from", "2024-05-01T06:00:00Z"], "--from and --to go together"),
    (["reconcile", "--link", "demo", "--from", "2024-05-02T00:00Z", "--to", "2024-05-01T00:00Z"], "must be after"),
    (["reconcile", "--link", "demo", "--day", "2024-05-01", "--to", "2024-05-01T00:00Z"], "not with --day"),
    (["reconcile", "--link", "demo", "--day", "2024-05-01", "--format", "pdf"], "invalid choice: 'pdf'"),
    (["reconcile", "--link", "bad link!", "--day", "2024-05-01"], "1-64 characters"),
    (["export", "--link", "demo", "--from-seq", "5", "--to-seq", "2", "--out", "x.csv"], "is after --to-seq"),
    (["export", "--link", "demo", "--from-seq", "5", "--from", "2024-05-01T00:00Z", "--to", "2024-05-02T00:00Z",
      "--out", "x.csv"], "not both"),
    (["export", "--link", "demo"], "--out"),
    (["verify"], "--link"),
    ([], "COMMAND"),
])
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "Exit status" in capsys.readouterr().out


async def test_an_unreachable_jackpotd_exits_1_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import grpc

    from jackpotd.embedded import free_port

    args = cli.parse(["liability", "--link", "demo", "--timeout", "5"])
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    assert await cli.run(args, lambda target: grpc.aio.insecure_channel(closed)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"jackpot-report: jackpotd at {args.target} is unreachable (UNAVAILABLE): "), err
    assert err.count("\n") == 1, err
