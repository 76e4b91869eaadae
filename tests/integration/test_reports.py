"""Finance (issue 12; RULES.md §10; API.md ReportService): a simulated day of rounds, hits, voids, fundings, a
rate change and decided hits, reconciled by GetReconciliation; every figure checked against sums this test makes
on its own from the raw postings, entries and hits; the same day by gaming day and by time; exports; liability;
and VerifyLedger naming a posting a superuser altered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, report_pb2, table_pb2
from jackpotd.store.ledger import reports
from jackpotd.store.ledger.summaries import ms_of

from ..conftest import Isolated, unique
from .conftest import open_private
from .harness import AUDIT, Client, rid

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
STRAIGHT_FLUSH = ["9h", "8h", "7h", "6h", "5h"]
FOUR = ["Ac", "Ad", "Ah", "As", "2c"]
FULL_HOUSE = ["Kc", "Kd", "Kh", "2s", "2d"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
RATES_1 = {"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}  # retained 700,000
RATES_2 = {"MAJOR": 250_000, "MINOR": 50_000, "RESERVE": 20_000}  # retained 680,000
UC = 1_000_000


async def _simulate_day(c: Client, link: str) -> dict[str, Any]:
    """A day on two tables: what the test itself counts as it plays (wagers under each rate set, refunds)."""
    t1, t2 = unique("fa"), unique("fb")
    await c.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 10_000}, caps={"MINOR": 50_000},
                        threshold=500_000, rates=RATES_1, retained=700_000)
    await c.register(t1, link)
    await c.register(t2, link)
    await c.fund(link, "MAJOR", 1_000_000)
    await c.fund(link, "MINOR", 49_990)  # a few wagers from its cap: overflow to RESERVE follows
    counted = {"wagers_1": 0, "wagers_2": 0, "refunded": 0}
    hits = {3: ROYAL, 5: STRAIGHT_FLUSH, 8: FOUR, 11: FULL_HOUSE, 14: FLUSH, 17: FLUSH, 21: ROYAL}
    for n in range(24):
        table = t1 if n % 2 else t2
        rnd = f"r{n}"
        if n == 12:  # a rate change in the middle of the day, in force from now (RULES.md §3)
            await c.admin.SetRates(admin_pb2.SetRatesRequest(
                request_id=rid(), link_id=link, audit=AUDIT,
                rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=k, ppm=v) for k, v in RATES_2.items()],
                                      retained_ppm=680_000)))
        await c.commit(table, rnd, [1, 2, 3, 4, 5, 6, 7])
        counted["wagers_1" if n < 12 else "wagers_2"] += 7
        if n in (6, 19):  # a misdeal: the whole round voided
            await c.table.VoidRound(table_pb2.VoidRoundRequest(request_id=rid(), table_id=table, round_id=rnd,
                                                               reason="misdeal"))
            counted["refunded"] += 7
            continue
        if n in (9, 15):  # an absent player's hand voided, then the round settles
            await c.table.VoidRound(table_pb2.VoidRoundRequest(request_id=rid(), table_id=table, round_id=rnd,
                                                               reason="absent player", seats=[2]))
            counted["refunded"] += 1
        if n == 10:
            await c.fund(link, "MAJOR", 250_000)  # a top-up during the day
        settled = await c.settle(table, rnd, {4: hits[n]} if n in hits else {})
        for p in settled.payouts:
            if p.status == "PENDING":  # NZ royal above the threshold: one approved, one rejected (§7)
                if n == 3:
                    await c.admin.ApproveHit(admin_pb2.ApproveHitRequest(request_id=rid(), hit_id=p.hit_id,
                                                                         audit=AUDIT))
                else:
                    await c.admin.RejectHit(admin_pb2.RejectHitRequest(request_id=rid(), hit_id=p.hit_id,
                                                                       reason="fouled deck", audit=AUDIT))
    await c.commit(t1, "open", [1, 2])  # a round still open at the end of the day
    counted["wagers_2"] += 2
    return counted


def _raw_checks(rows: list[Any], entries: list[Any], hit_rows: list[Any]) -> dict[str, Any]:
    """The day's figures from the raw ledger, without the service's classification: per pool the net of its
    postings and its last balance_after; contributions before the cap from the wagers and the rates this test
    set; refunds from the void entries' round data; payouts from the hits; funding from the fund entries."""
    net: dict[str, int] = {}
    closing: dict[str, int] = {}
    for r in rows:
        net[r["account"]] = net.get(r["account"], 0) + int(r["amount_uc"])
        closing[r["account"]] = int(r["balance_after_uc"])
    fund: dict[str, int] = {}
    reset_reserve: dict[str, int] = {}
    reset_operator: dict[str, int] = {}
    overflow = 0
    for e in entries:
        body = json.loads(e["entry"])
        if body["kind"] == "fund":
            for account, uc in body["postings"]:
                if account.startswith("pool:"):
                    fund[account[5:]] = fund.get(account[5:], 0) + uc
        if body["kind"] == "settle" and body.get("hits"):
            for x in json.loads(e["reply"])["result"]["resets"]:
                reset_reserve[x["pool"]] = reset_reserve.get(x["pool"], 0) + x["from_reserve_cents"] * UC
                reset_operator[x["pool"]] = reset_operator.get(x["pool"], 0) + x["from_operator_cents"] * UC
        if body["kind"] == "commit":
            overflow += sum(a["overflow_uc"] for a in json.loads(e["reply"])["result"]["accepted"])
    paid: dict[str, int] = {}
    for h in hit_rows:
        paid[h["pool"]] = paid.get(h["pool"], 0) + int(h["amount_cents"]) * UC * (h["status"] != "REJECTED")
    return {"net": net, "closing": closing, "fund": fund, "overflow": overflow, "paid": paid,
            "reset_reserve": reset_reserve, "reset_operator": reset_operator}


async def test_a_simulated_day_reconciles_to_the_microcent(client: Client) -> None:
    c = client
    link = unique("fin")
    start = datetime.now(UTC)
    counted = await _simulate_day(c, link)
    end = datetime.now(UTC) + timedelta(seconds=1)
    from_ms, to_ms = int(start.timestamp() * 1000) - 1000, int(end.timestamp() * 1000)
    r = await c.report.GetReconciliation(report_pb2.GetReconciliationRequest(link_id=link, from_ms=from_ms,
                                                                              to_ms=to_ms))
    assert r.all_hold, [i.expression for i in r.identities if not i.holds]
    assert {i.name for i in r.identities} == {"pool MAJOR", "pool MINOR", "pool RESERVE", "link",
                                              "MAJOR at the approved rates", "MINOR at the approved rates",
                                              "RESERVE at the approved rates", "retained at the approved rates"}

    rows = await c.pg.fetch("SELECT account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                            "ORDER BY seq, idx", link)
    entries = await c.pg.fetch("SELECT entry::text AS entry, reply FROM entries WHERE link_id = $1 ORDER BY seq",
                               link)
    hit_rows = await c.pg.fetch("SELECT h.pool, h.amount_cents, coalesce(d.status, h.status) AS status FROM hits h "
                                "LEFT JOIN hit_decisions d USING (link_id, table_id, round_id, seat) "
                                "WHERE h.link_id = $1", link)
    raw = _raw_checks(list(rows), list(entries), list(hit_rows))
    pools = {p.pool: p for p in r.pools}
    assert pools["RESERVE"].hidden and not pools["MAJOR"].hidden
    for name, p in pools.items():
        account = f"pool:{name}"
        assert p.opening_ucents == 0
        assert p.closing_ucents == raw["closing"][account] == raw["net"][account]
        # contributions before any cap: each wager × the rate in force when it was committed (RULES.md §3)
        assert p.contributions_ucents == (counted["wagers_1"] * 100 * RATES_1[name]
                                          + counted["wagers_2"] * 100 * RATES_2[name]), name
    assert pools["MINOR"].overflow_out_ucents == raw["overflow"] > 0
    assert pools["RESERVE"].overflow_in_ucents == raw["overflow"]
    assert pools["MAJOR"].overflow_out_ucents == pools["MAJOR"].overflow_in_ucents == 0
    # payouts: what the hits took, net of the rejected one given back
    royal = next(h for h in pools["MAJOR"].payouts_by_hand if h.hand == "royal_flush")
    assert royal.hits == 2 and royal.rejected_hits == 1
    major_hits = [h for h in r.hits if h.pool == "MAJOR"]
    assert sum(h.amount_cents for h in major_hits) * UC - royal.returned_ucents == pools["MAJOR"].payouts_ucents
    assert sum(h.amount_cents for h in r.hits if h.pool == "MINOR") * UC == pools["MINOR"].payouts_ucents
    assert pools["MINOR"].payouts_ucents == raw["paid"]["MINOR"]
    # funding: the fund entries, the operator's shortfalls the hits record, its part of the resets the settles'
    # replies record; transfers: the resets' part from RESERVE
    for name in ("MAJOR", "MINOR"):
        assert pools[name].funding_ucents == raw["fund"][name] + sum(
            h.funded_by_operator_cents for h in r.hits if h.pool == name) * UC + raw["reset_operator"].get(name, 0)
        assert pools[name].transfers_in_ucents == raw["reset_reserve"].get(name, 0)
    assert pools["RESERVE"].transfers_out_ucents == sum(raw["reset_reserve"].values()) > 0
    assert raw["reset_operator"].get("MAJOR", 0) > 0  # the second royal's reset needed the operator
    # the link: wagers in and out, and contributions plus retained (RULES.md §10)
    wagers = counted["wagers_1"] + counted["wagers_2"]
    assert r.link.wagers == wagers and r.link.wagers_accepted_ucents == wagers * 100 * UC
    assert r.link.refunds == counted["refunded"] and r.link.wagers_refunded_ucents == counted["refunded"] * 100 * UC
    assert r.link.retained_ucents == raw["net"]["retained"]
    assert r.link.contributions_ucents == sum(raw["net"][f"pool:{p}"] for p in pools) - sum(
        p.funding_ucents + p.transfers_in_ucents - p.transfers_out_ucents - p.payouts_ucents for p in r.pools)
    assert r.link.wagers_accepted_ucents - r.link.wagers_refunded_ucents == (r.link.contributions_ucents
                                                                             + r.link.retained_ucents)
    assert r.link.paid_ucents == raw["net"]["payouts"]
    assert r.link.operator_funding_ucents == -raw["net"]["operator_funding"]
    # the hits carry what traces each payout (§10)
    assert all(h.cards and h.rule and h.round_id and h.at_ms for h in r.hits)
    assert r.entries == len(entries) and r.first_sequence == 1 and r.last_sequence == len(entries)
    assert {b.pool for b in r.balances} == {"MAJOR", "MINOR", "RESERVE"}
    after: dict[tuple[str, int], int] = {}  # each pool's balance after each entry, from the raw postings
    running: dict[str, int] = {}
    moves: dict[int, list[tuple[str, int]]] = {}
    for row in await c.pg.fetch("SELECT seq, account, amount_uc FROM postings WHERE link_id = $1 ORDER BY seq, idx",
                                link):
        moves.setdefault(int(row["seq"]), []).append((row["account"], int(row["amount_uc"])))
    for seq in range(1, len(entries) + 1):  # every entry, those without postings too (a chart point may name one)
        for account, amount in moves.get(seq, []):
            running[account] = running.get(account, 0) + amount
        for pool in pools:
            after[(pool, seq)] = running.get(f"pool:{pool}", 0)
    for point in r.balances:  # the chart: each point is the pool's balance after the entry it names
        if point.sequence > 0:
            assert point.balance_ucents == after[(point.pool, point.sequence)], point

    # the same day by its gaming day (UTC, 06:00): the summaries' path gives the same numbers
    day = (start - timedelta(hours=6)).date()
    if (end - timedelta(hours=6)).date() == day:
        g = await c.report.GetReconciliation(report_pb2.GetReconciliationRequest(link_id=link,
                                                                                  gaming_day=day.isoformat()))
        assert g.all_hold and g.gaming_day == day.isoformat()
        assert [p for p in g.pools] == [p for p in r.pools]
        assert g.link == r.link and g.entries == r.entries
        for point in g.balances:  # drawn from the summaries quarter hour by quarter hour
            if point.sequence > 0:
                assert point.balance_ucents == after[(point.pool, point.sequence)], point
        # the BI views carry the same day's numbers (docs/CLIENTS.md, Views for BI tools)
        view = {row["pool"]: row for row in await c.pg.fetch(
            "SELECT * FROM report_pool_movements_daily WHERE link_id = $1 AND gaming_day = $2", link, day)}
        for p in g.pools:
            row = view[p.pool]
            assert (row["contributions_uc"] or 0, row["overflow_out_uc"] or 0, row["refunds_uc"] or 0,
                    row["funding_uc"] or 0, row["transfers_in_uc"] or 0, row["transfers_out_uc"] or 0,
                    row["payouts_uc"] or 0, row["net_uc"]) == (
                p.contributions_ucents, p.overflow_out_ucents, p.refunds_ucents, p.funding_ucents,
                p.transfers_in_ucents, p.transfers_out_ucents, p.payouts_ucents, p.closing_ucents - p.opening_ucents)
        hits = await c.pg.fetch("SELECT hit_id, status, gaming_day FROM report_hits WHERE link_id = $1", link)
        assert sorted((h["hit_id"], h["status"]) for h in hits) == sorted((h.hit_id, h.status) for h in g.hits)
        assert {h["gaming_day"] for h in hits} == {day}
        funded = await c.pg.fetchval("SELECT sum(funded_uc) FROM report_operator_funding_daily WHERE link_id = $1 "
                                     "AND gaming_day = $2", link, day)
        assert funded == g.link.operator_funding_ucents
        async with c.pg.acquire() as conn, conn.transaction():  # a BI login granted jackpotd_report: views only
            await conn.execute("SET LOCAL ROLE jackpotd_report")
            assert await conn.fetchval("SELECT count(*) FROM report_hits WHERE link_id = $1", link) == len(hits)
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.fetchval("SELECT count(*) FROM entries")


async def test_export_streams_every_entry_with_its_postings(client: Client) -> None:
    c = client
    link, table = unique("exp"), unique("t")
    await c.create_link(link)
    await c.register(table, link)
    await c.fund(link, "MAJOR", 5_000)
    for n in range(3):
        await c.commit(table, f"r{n}", [1, 2])
    got = [e async for e in c.report.ExportLedger(report_pb2.ExportLedgerRequest(link_id=link))]
    n = await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link)
    assert [e.sequence for e in got] == list(range(1, n + 1))
    legs = await c.pg.fetch("SELECT seq, account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                            "ORDER BY seq, idx", link)
    assert [(e.sequence, p.account, p.amount_ucents, p.balance_after_ucents) for e in got for p in e.postings] == [
        (int(r["seq"]), r["account"], int(r["amount_uc"]), int(r["balance_after_uc"])) for r in legs]
    assert got[-1].table_id == table and got[-1].round_id == "r2" and got[-1].hash_hex
    # the chain exactly as stored (verifiable from the export), dated to the ms as the ledger dates it
    stored = await c.pg.fetch("SELECT seq, created_at, entry::text AS entry, hash, prev_hash FROM entries "
                              "WHERE link_id = $1 ORDER BY seq", link)
    assert [(e.entry_json, e.hash_hex, e.prev_hash_hex, e.at_ms) for e in got] == [
        (r["entry"], bytes(r["hash"]).hex(), bytes(r["prev_hash"]).hex(), ms_of(r["created_at"])) for r in stored]
    assert all(a.prev_hash_hex == b.hash_hex for a, b in zip(got[1:], got, strict=False))
    # pages of one statement each, across their boundaries: the same entries as the stream
    paged = [e async for page in reports.entries(c.pg, link, 1, n, page=2) for e in page]
    assert [(e.seq, e.table_id, e.round_id, tuple(zip(e.accounts, e.amounts, e.afters, strict=True)), e.hash_hex,
             e.entry) for e in paged] == [
        (g.sequence, g.table_id, g.round_id,
         tuple((p.account, p.amount_ucents, p.balance_after_ucents) for p in g.postings), g.hash_hex, g.entry_json)
        for g in got]
    some = [e async for e in c.report.ExportLedger(report_pb2.ExportLedgerRequest(link_id=link, from_sequence=2,
                                                                                  to_sequence=3))]
    assert [e.sequence for e in some] == [2, 3] and some[0].first_sequence == 2 and some[0].last_sequence == 3


@pytest.mark.parametrize(("request_", "field"), [
    (report_pb2.GetReconciliationRequest(link_id="bad link", gaming_day="2026-01-01"), "link_id"),
    (report_pb2.GetReconciliationRequest(link_id="x", gaming_day="2026-13-01"), "gaming_day"),
    (report_pb2.GetReconciliationRequest(link_id="x", gaming_day="yesterday"), "gaming_day"),
    (report_pb2.GetReconciliationRequest(link_id="x"), "from_ms"),
    (report_pb2.GetReconciliationRequest(link_id="x", from_ms=10, to_ms=5), "to_ms"),
    (report_pb2.GetReconciliationRequest(link_id="x", gaming_day="2026-01-01", from_ms=1, to_ms=5), "gaming_day"),
])
async def test_bad_report_requests_name_the_field(client: Client, request_: Any, field: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.report.GetReconciliation(request_)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and field in (e.value.details() or "")


async def test_unknown_link_is_not_found(client: Client) -> None:
    for call in (client.report.GetReconciliation(report_pb2.GetReconciliationRequest(link_id="nolink-x",
                                                                                     gaming_day="2026-01-01")),
                 client.report.GetLiability(report_pb2.GetLiabilityRequest(link_id="nolink-x")),
                 client.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id="nolink-x"))):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and "link_id" in (e.value.details() or "")


async def test_liability_counts_pools_pending_hits_and_resets_owed(client: Client) -> None:
    c = client
    link, table = unique("liab"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 10_000}, threshold=500_000)
    await c.register(table, link)
    await c.fund(link, "MAJOR", 1_200_000)
    await c.commit(table, "r1", [1, 2, 3])
    settled = await c.settle(table, "r1", {2: ROYAL})
    assert settled.payouts[0].status == "PENDING"
    v = await c.report.GetLiability(report_pb2.GetLiabilityRequest(link_id=link))
    balances = await c.ledger_pools(link)
    assert v.pending_ucents == balances["pending_payouts"] == settled.payouts[0].amount_cents * UC
    assert [h.hit_id for h in v.pending_hits] == [settled.payouts[0].hit_id]
    by = {p.pool: p for p in v.pools}
    assert by["MAJOR"].balance_ucents == balances["pool:MAJOR"] and by["RESERVE"].hidden
    assert v.pools_ucents == balances["pool:MAJOR"] + balances.get("pool:MINOR", 0)
    assert v.owed_to_players_ucents == v.pools_ucents + v.reserve_ucents + v.pending_ucents
    # §5.7: the royal's $10,000 minimum against MAJOR, four of a kind's $500 against MINOR
    assert v.minimum_shortfall_cents == (max(0, 1_000_000 - balances["pool:MAJOR"] // UC)
                                         + max(0, 50_000 - balances.get("pool:MINOR", 0) // UC))
    # every default paytable entry brings its pool back to its reset value (§5.8): MAJOR's and MINOR's
    assert v.reset_values_cents == 1_000_000 + 10_000
    assert v.reset_owed_by_operator_cents == 1_010_000 - balances.get("pool:RESERVE", 0) // UC


async def test_verify_names_a_posting_altered_by_the_superuser(isolated: Isolated, tmp_path: Path) -> None:
    link, table = unique("vfy"), unique("t")
    async with open_private(isolated, tmp_path) as p:
        c = p.client
        await c.create_link(link)
        await c.register(table, link)
        await c.fund(link, "MAJOR", 10_000)
        for n in range(4):
            await c.commit(table, f"r{n}", [1, 2, 3])
        ok = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert ok.ok and ok.chain_ok and ok.summaries_ok and not ok.problems, ok.problems
        assert all(x.agrees for x in ok.pools) and ok.entries == ok.redis_sequence
        seq = await c.pg.fetchval("SELECT seq FROM entries WHERE link_id = $1 AND kind = 'commit' ORDER BY seq "
                                  "LIMIT 1 OFFSET 1", link)
        async with c.pg.acquire() as conn, conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")  # the superuser skips the triggers
            await conn.execute("UPDATE postings SET amount_uc = amount_uc + 1 WHERE link_id = $1 AND seq = $2 "
                               "AND account = 'pool:MAJOR'", link, seq)
        bad = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert not bad.ok and not bad.chain_ok
        assert bad.first_altered_sequence == seq
        assert any(f"entry {seq}" in x or f"seq {seq}" in x for x in bad.problems), bad.problems


async def test_wrong_summaries_are_found_and_rebuilt(isolated: Isolated, tmp_path: Path) -> None:
    """A summary row that is not what the entries make it (a superuser's edit, or code that classified differently)
    is named by VerifyLedger; `jackpotd rebuild-summaries` derives it again and the ledger verifies."""
    link, table = unique("sum"), unique("t")
    async with open_private(isolated, tmp_path) as p:
        c = p.client
        await c.create_link(link)
        await c.register(table, link)
        for n in range(3):
            await c.commit(table, f"r{n}", [1, 2])
        async with c.pg.acquire() as conn:
            await conn.execute("UPDATE flow_totals SET amount_uc = amount_uc + 5 WHERE link_id = $1 "
                               "AND account = 'pool:MINOR' AND flow = 'contribution'", link)
        bad = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert not bad.ok and not bad.summaries_ok and bad.chain_ok
        assert any("pool:MINOR contribution" in x for x in bad.problems), bad.problems
        env = {**os.environ, "JACKPOTD_REDIS_URL": p.valkey.url, "JACKPOTD_POSTGRES_DSN": isolated.dsn}
        out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "rebuild-summaries", "--link", link], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and f"{link}: 5 entries" in out.stdout, out.stdout + out.stderr
        good = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert good.ok and good.summaries_ok, good.problems
