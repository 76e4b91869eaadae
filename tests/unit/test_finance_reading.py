"""`jackpot-report` read as a finance officer reads it (issue 21), without a server: dollars and cents with each
sub-cent remainder shown and explained, the two "retained" figures named, identities in dollars, hands by name, an
empty period that says so, a chart that stops at "generated at", and the export's hit rows beside the postings."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from jackpot_finance import chart
from jackpot_finance.model import report_dict
from jackpot_finance.money import SUBCENT_NOTE
from jackpot_finance.render import render_reconciliation
from jackpot_finance.spreadsheet import EXPORT_COLUMNS, export_rows
from jackpot_finance.times import local_iso, zone

from jackpotd.api.gen.jackpot.v1 import report_pb2

from .test_finance_render import TZ, entry, pool, reconciliation, sections


def demo_day(**overrides: Any) -> report_pb2.Reconciliation:
    """The demo link's day as `make run` and `jackpot-table simulate` made it: MINOR closes on half a cent, seven
    wagers were voided, a royal flush was approved by two supervisors."""
    major = pool("MAJOR", opening=0, contributions=35_520_000_000, refunds=140_000_000, funding=2_099_775_000_000,
                 transfers_in=27_000_000, payouts=1_130_982_000_000)
    major.payouts_by_hand.add(hand="royal_flush", hits=1, paid_ucents=1_030_960_000_000)
    minor = pool("MINOR", opening=0, contributions=13_320_000_000, refunds=52_500_000, funding=218_718_000_000,
                 transfers_in=4_050_000_000, payouts=135_000_000_000)
    reserve = pool("RESERVE", hidden=True, opening=0, contributions=4_440_000_000, refunds=17_500_000,
                   transfers_out=4_077_000_000)
    rec = reconciliation(
        pools=[major, minor, reserve], balances=[],
        link=report_pb2.LinkTotals(wagers=1776, wagers_accepted_ucents=177_600_000_000, refunds=7,
                                   wagers_refunded_ucents=700_000_000, contributions_ucents=53_070_000_000,
                                   retained_ucents=123_830_000_000, identity_holds=True),
        identities=[report_pb2.Identity(name="pool MINOR", rule="RULES.md §10", holds=True, expression="µ¢ terms"),
                    report_pb2.Identity(name="link", rule="RULES.md §10", holds=True, expression="µ¢ terms"),
                    report_pb2.Identity(name="retained at the approved rates", rule="RULES.md §3, §10", holds=True,
                                        expression="contributions 124320000000 = 177600¢ × 700000 ppm (rates 1) = "
                                                   "124320000000 µ¢")],
        hits=[report_pb2.ReportHit(hit_id="h-2", table_id="t-1", round_id="r-2", seat=3, hand="royal_flush",
                                   cards=["As", "Ks", "Qs", "Js", "Ts"], pool="MAJOR", amount_cents=1_030_960,
                                   pool_before_ucents=1_030_960_000_000, rule="NSW 12.1", status="PAID",
                                   approved_by=["supervisor:alice", "console:floor-1 for supervisor:bob"])])
    for key, value in overrides.items():
        setattr(rec, key, value)
    return rec


def test_a_finance_officer_reads_dollars_and_cents_and_the_half_cent_explained() -> None:
    rec = demo_day()
    text = render_reconciliation(rec, "text")
    html = render_reconciliation(rec, "html")
    # MINOR closes on 101,035,500,000 µ¢: the sign shows $1,010.35, the report says where the half cent is
    assert "= closing" in text and "$1,010.35 +0.5¢\n" in text
    assert '$1,010.35<span class="sub">+0.5¢</span>' in html
    assert SUBCENT_NOTE in text and escape(SUBCENT_NOTE) in html
    assert "rounded down" in SUBCENT_NOTE and "stays in the pool" in SUBCENT_NOTE
    # identities in exact dollars, the server's µ¢ kept as the HTML's tooltip
    assert "✓ pool MINOR (RULES.md §10): opening $0.00 + contributions $133.20 − refunds $0.525" in text
    assert "= closing $1,010.355" in text and 'title="µ¢ terms"' in html
    assert "retained $1,243.20 (before voids) = wagers accepted × the approved retained rate" in text
    assert "124320000000" not in text
    # Royal flush approved by two supervisors, in every format
    assert "Royal flush [As Ks Qs Js Ts] $10,309.60 from MAJOR (pool before $10,309.60); NSW 12.1; PAID, approved " \
           "by supervisor:alice and console:floor-1 for supervisor:bob" in text
    assert "supervisor:alice<br>console:floor-1 for supervisor:bob" in html and "Royal flush" in html
    hits = sections(render_reconciliation(rec, "csv"))[4]
    hit = dict(zip(hits[0], hits[1], strict=True))
    assert hit["approved by"] == "supervisor:alice; console:floor-1 for supervisor:bob" and hit["rejected by"] == ""
    assert hit["hand"] == "Royal flush" and hit["amount ($)"] == "10309.60"


def test_the_two_retained_figures_are_named_for_what_they_are() -> None:
    rec = demo_day()
    report = report_dict(rec)
    link = report["link"]
    # 70% of $1,776.00 accepted is $1,243.20; the 7 voided wagers gave back $4.90 of it: $1,238.30 net
    assert link["retained_gross_ucents"] == 124_320_000_000 and link["retained_voided_ucents"] == 490_000_000
    assert link["retained_gross_ucents"] - link["retained_voided_ucents"] == link["retained_ucents"]
    note = ("$1,243.20 on the wagers accepted (the figure the approved-rate check uses), less $4.90 given back with "
            "the voided wagers, leaves $1,238.30 retained net of voids.")
    text, html = render_reconciliation(rec, "text"), render_reconciliation(rec, "html")
    assert note in link["retained_note"] and note in text and escape(note) in html
    assert "retained by the operator, net of voids" in text and "retained by the operator, net of voids" in html
    link_header, link_row = sections(render_reconciliation(rec, "csv"))[2]
    row = dict(zip(link_header, link_row, strict=True))
    assert row["retained from wagers accepted, before voids ($)"] == "1243.20"
    assert row["retained given back with voided wagers ($)"] == "4.90"
    assert row["retained by the operator, net of voids ($)"] == "1238.30"


def test_a_period_without_activity_says_so() -> None:
    quiet = reconciliation(entries=0, first_sequence=0, last_sequence=0, hits=[], balances=[],
                           link=report_pb2.LinkTotals(identity_holds=True),
                           pools=[pool("MINOR", opening=101_035_500_000)])
    text = render_reconciliation(quiet, "text")
    assert "No activity in this period: no wagers" in text and "+ contributions" not in text
    assert "MINOR" in text and "$1,010.35 +0.5¢" in text
    assert text.rstrip().endswith("ALL IDENTITIES HOLD (no activity in this period)")
    html = render_reconciliation(quiet, "html")
    assert 'id="no-activity">No activity in this period' in html and "No wagers, voids" in html
    assert "overflow out" not in html
    assert sections(render_reconciliation(quiet, "csv"))[0][1][-1] == "no activity in this period; all identities hold"
    assert json.loads(render_reconciliation(quiet, "json"))["no_activity"] is True
    # a period with entries is not "no activity", and one without entries whose numbers do not hold is not hidden
    assert "No activity" not in render_reconciliation(reconciliation(), "text")
    broken = reconciliation(entries=0, all_hold=False, pools=[pool("MINOR", opening=5, skew=1, holds=False)])
    assert "NOT RECONCILED" in render_reconciliation(broken, "text")


def test_the_chart_stops_at_the_period_end_or_when_the_report_was_generated() -> None:
    rec = reconciliation()
    end_x = chart.LEFT + chart.WIDTH - chart.LEFT - chart.RIGHT  # the plot's right edge
    # generated after the period: the lines run to its end
    assert chart.series(report_dict(rec))[0].points[-1][0] == rec.to_ms
    # generated mid-period (today's report): every line stops at "generated at", the axis too
    rec.generated_at_ms = rec.from_ms + 8 * 3_600_000
    rec.ClearField("balances")
    rec.balances.add(pool="MAJOR", at_ms=rec.from_ms + 3_600_000, sequence=110, balance_ucents=1_003_000_000_017)
    report = report_dict(rec)
    assert all(s.points[-1][0] == rec.generated_at_ms for s in chart.series(report))
    drawn = chart.svg(report)
    xs = [int(xy.split(",")[0]) for line in re.findall(r'points="([^"]+)"', drawn) for xy in line.split()]
    assert max(xs) == end_x
    labels = re.findall(r'class="tick" x="\d+" y="\d+" text-anchor="end">([^<]+)<', drawn)
    assert labels[-1] == local_iso(rec.generated_at_ms, zone(TZ))[5:16].replace("T", " ")
    # a period that had not begun when the report was generated draws nothing
    rec.generated_at_ms = rec.from_ms - 1
    assert "had not begun" in chart.svg(report_dict(rec)) and "<svg" not in chart.svg(report_dict(rec))


ROYAL = {"hit_id": "demo:t-1:7:3", "table_id": "t-1", "round_id": "7", "seat": 3, "hand": "royal_flush",
         "cards": ["As", "Ks", "Qs", "Js", "Ts"], "pool": "MAJOR", "amount_cents": 1_030_960,
         "funded_by_operator_cents": 0, "pool_before_uc": 1_030_960_500_000, "rule": "=NSW 12.1", "status": "PENDING",
         "pool_after_cents": 0}


def test_export_has_a_row_per_hit_beside_the_netted_postings() -> None:
    """A royal flush settled PENDING, then approved (by two supervisors under dual control) or rejected: each
    entry's hit row has the hand, seat, cards, pool before, rule, status and who decided."""
    seen: dict[str, dict[str, Any]] = {}
    settle = entry(5, ("pool:MAJOR", -30_960_000_000, 1_000_000_500_000), ("pending_payouts", 1_030_960_000_000, 0),
                   ("operator_funding", -1_000_000_000_000, 0), kind="settle",
                   body={"kind": "settle", "hits": [ROYAL], "round": {}})
    *postings, hit = (dict(zip(EXPORT_COLUMNS, r, strict=True)) for r in export_rows(settle, seen))
    assert [p["row"] for p in postings] == ["posting"] * 3 and hit["row"] == "hit"
    assert hit["posting_index"] == hit["account"] == hit["amount_ucents"] == ""  # a column total counts postings
    assert (hit["hit_id"], hit["seat"], hit["hand"], hit["cards"], hit["hit_pool"]) == \
        ("demo:t-1:7:3", 3, "Royal flush", "As Ks Qs Js Ts", "MAJOR")
    assert hit["hit_amount_dollars"] == "10309.60" and hit["pool_before_dollars"] == "10309.605"
    assert hit["pool_before_ucents"] == 1_030_960_500_000 and hit["rule"] == "'=NSW 12.1"  # a formula defused
    assert hit["status"] == "PENDING" and hit["approved_by"] == hit["rejected_by"] == ""
    decision = {"hit_id": "demo:t-1:7:3", "table_id": "t-1", "round_id": "7", "seat": 3, "reason": ""}
    first = entry(6, kind="approve_hit", body={"kind": "approve_hit", "decision": {**decision, "status": "PENDING"},
                                               "audit": {"actor": "supervisor:alice"}})
    second = entry(7, ("pending_payouts", -1, 0), ("payouts", 1, 1), kind="approve_hit",
                   body={"kind": "approve_hit", "decision": {**decision, "status": "PAID"},
                         "audit": {"actor": "supervisor:bob", "agent": "console:floor-1"}})
    (one,) = (dict(zip(EXPORT_COLUMNS, r, strict=True)) for r in export_rows(first, seen))
    *_, two = (dict(zip(EXPORT_COLUMNS, r, strict=True)) for r in export_rows(second, seen))
    assert (one["row"], one["status"], one["approved_by"], one["hand"]) == \
        ("hit", "PENDING", "supervisor:alice", "Royal flush")  # the hand is the settle's, met earlier
    assert (two["status"], two["approved_by"], two["cards"]) == \
        ("PAID", "console:floor-1 for supervisor:bob", "As Ks Qs Js Ts")
    rejected = entry(8, kind="reject_hit", body={"kind": "reject_hit", "decision": {**decision, "status": "REJECTED"},
                                                 "audit": {"actor": "supervisor:carol"}})
    (no,) = (dict(zip(EXPORT_COLUMNS, r, strict=True)) for r in export_rows(rejected))  # its settle not exported
    assert (no["status"], no["rejected_by"], no["approved_by"], no["hit_id"], no["hand"]) == \
        ("REJECTED", "supervisor:carol", "", "demo:t-1:7:3", "")
