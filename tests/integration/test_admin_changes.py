"""Administrative changes take effect (RULES.md §3, §4, §7, §8, §9): new rates price the next wager, a new
paytable prices the next hand, a link's new wager amount and verification threshold are enforced, a resumed
table takes wagers again. Each change is a ledger entry carrying who, why and the approval reference."""

from __future__ import annotations

import json
import time
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2

from ..conftest import unique
from .harness import ADMIN, Client, rid

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
STRAIGHT = ["4d", "5d", "6s", "7c", "8d"]
FULL_HOUSE = ["Qh", "Qd", "Qs", "3c", "3h"]
STRAIGHT_FLUSH = ["9h", "8h", "7h", "6h", "5h"]


def audit(actor: str, reason: str, approval_ref: str = "") -> admin_pb2.Audit:
    return admin_pb2.Audit(actor=actor, reason=reason, approval_ref=approval_ref)


async def audited_config(client: Client, link: str, answer: admin_pb2.LinkResponse, kind: str,
                         who: admin_pb2.Audit) -> dict[str, Any]:
    """The change is the ledger entry the answer names, of `kind`, with its audit stored as given but for the
    actor, who is the authenticated caller whatever the field said; returns the link's configuration from
    that entry (and checks it is the configuration version it made)."""
    entry = await client.entry(link, answer.sequence)
    assert entry["kind"] == kind
    assert entry["audit"] == {"actor": f"admin:{ADMIN}", "reason": who.reason, "approval_ref": who.approval_ref}
    assert answer.config_version == answer.sequence
    stored = await client.pg.fetchval("SELECT config::text FROM link_configs WHERE link_id = $1 AND version = $2",
                                      link, answer.sequence)
    config: dict[str, Any] = entry["config"]
    assert stored is not None and json.loads(stored) == config
    return config


def rates(major: int, minor: int, reserve: int, retained: int, at_ms: int = 0) -> admin_pb2.Rates:
    return admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=major),
                                  admin_pb2.PoolRate(pool="MINOR", ppm=minor),
                                  admin_pb2.PoolRate(pool="RESERVE", ppm=reserve)],
                           retained_ppm=retained, effective_at_ms=at_ms)


async def pool_postings(client: Client, link: str, seq: int) -> dict[str, int]:
    rows = await client.pg.fetch("SELECT account, amount_uc FROM postings WHERE link_id = $1 AND seq = $2",
                                 link, seq)
    return {r["account"]: int(r["amount_uc"]) for r in rows}


async def test_set_rates_prices_the_next_wager_and_a_future_rate_set_waits_for_its_time(client: Client) -> None:
    link, table = unique("rates"), unique("tbl")
    await client.create_link(link)  # MAJOR 20%, MINOR 7.5%, RESERVE 2.5%, retained 70%
    await client.register(table, link)
    before = await client.commit(table, "r1", [1])
    assert [a.contributed_ucents for a in before.accepted] == [30_000_000]
    who = audit("regulator liaison", "rates approved for the new season", "NSW-RATES-2024-7")
    answer = await client.admin.SetRates(admin_pb2.SetRatesRequest(
        request_id=rid(), link_id=link, rates=rates(100_000, 50_000, 50_000, 800_000), audit=who))
    config = await audited_config(client, link, answer, "set_rates", who)
    newest = config["rate_sets"][-1]
    assert (newest["version"], newest["pools_ppm"], newest["retained_ppm"], newest["approval_ref"]) == (
        2, {"MAJOR": 100_000, "MINOR": 50_000, "RESERVE": 50_000}, 800_000, "NSW-RATES-2024-7")
    after = await client.commit(table, "r2", [1, 2])  # effective now: $1.00 x 20% = 20¢ a wager
    assert [(a.seat, a.contributed_ucents) for a in after.accepted] == [(1, 20_000_000), (2, 20_000_000)]
    assert await pool_postings(client, link, after.sequence) == {
        "wagers": -200_000_000, "pool:MAJOR": 20_000_000, "pool:MINOR": 10_000_000, "pool:RESERVE": 10_000_000,
        "retained": 160_000_000}
    # a rate set effective in an hour does not price today's wagers (§3: no change before its time)
    later = audit("regulator liaison", "rates for next month", "NSW-RATES-2024-8")
    await client.admin.SetRates(admin_pb2.SetRatesRequest(
        request_id=rid(), link_id=link, audit=later,
        rates=rates(250_000, 25_000, 25_000, 700_000, at_ms=int(time.time() * 1000) + 3_600_000)))
    still = await client.commit(table, "r3", [3])
    assert [a.contributed_ucents for a in still.accepted] == [20_000_000]


async def test_set_paytable_prices_the_next_hand_by_the_new_entries(client: Client) -> None:
    link, table = unique("paytable"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    await client.fund(link, "MAJOR", 2_000_000)
    await client.fund(link, "MINOR", 100_000)
    who = audit("games manager", "promotion paytable", "NSW-PT-31")
    entries = [admin_pb2.PaytableEntry(hand="royal_flush", pool="MAJOR", min_cents=1_000_000, percent_ppm=1_000_000,
                                       resets_pool=True),
               admin_pb2.PaytableEntry(hand="straight_flush", pool="MAJOR", min_cents=100_000, percent_ppm=200_000,
                                       resets_pool=True),
               admin_pb2.PaytableEntry(hand="flush", pool="MINOR", min_cents=25_000, resets_pool=True),
               admin_pb2.PaytableEntry(hand="straight", pool="MINOR", min_cents=5_000, resets_pool=True)]
    answer = await client.admin.SetPaytable(admin_pb2.SetPaytableRequest(
        request_id=rid(), link_id=link, game="caribbean-stud", entries=entries, audit=who))
    config = await audited_config(client, link, answer, "set_paytable", who)
    assert {e["category"]: (e["pool"], e["min_cents"], e["percent_ppm"])
            for e in config["paytables"]["caribbean-stud"]} == {
        "royal_flush": ("MAJOR", 1_000_000, 1_000_000), "straight_flush": ("MAJOR", 100_000, 200_000),
        "flush": ("MINOR", 25_000, 0), "straight": ("MINOR", 5_000, 0)}
    await client.commit(table, "r1", [1, 2, 3, 4])
    settled = await client.settle(table, "r1", {1: STRAIGHT, 2: FLUSH, 3: FULL_HOUSE, 4: STRAIGHT_FLUSH})
    # MAJOR $20,000.00 + 4 x 20¢: 20% is $4,000.16; the flush pays $250 (was $100), a straight now pays $50,
    # and the full house, which the new table leaves out, pays nothing. Right to left (NSW 12.2).
    assert [(p.seat, p.hand, p.amount_cents, p.pool, p.funded_by_operator_cents) for p in settled.payouts] == [
        (4, "straight_flush", 400_016, "MAJOR", 0), (2, "flush", 25_000, "MINOR", 0),
        (1, "straight", 5_000, "MINOR", 0)]
    assert {s.seat: s.hand for s in settled.seats}[3] == "full_house"


async def test_update_link_enforces_the_new_wager_amount_and_verification_threshold(client: Client) -> None:
    link, table = unique("update"), unique("tbl")
    await client.create_link(link)  # $1.00 wagers, every hit paid at once
    await client.register(table, link)
    await client.fund(link, "MAJOR", 2_000_000)
    await client.fund(link, "MINOR", 100_000)
    who = audit("floor manager", "table minimums raised", "NSW-LINK-9")
    answer = await client.admin.UpdateLink(admin_pb2.UpdateLinkRequest(
        request_id=rid(), link_id=link, wager_amount_cents=200, verification_threshold_cents=50_000, audit=who))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.commit(table, "old", [1], amount=100)
    assert err.value.code() == S.INVALID_ARGUMENT and "amount_cents" in (err.value.details() or "")
    accepted = await client.commit(table, "r1", [1, 2], amount=200)
    assert [(a.seat, a.amount_cents, a.contributed_ucents) for a in accepted.accepted] == [
        (1, 200, 60_000_000), (2, 200, 60_000_000)]
    settled = await client.settle(table, "r1", {1: FLUSH, 2: STRAIGHT_FLUSH})
    # the straight flush ($2,000.08) is above the $500 threshold and waits for a supervisor (§7);
    # the $100 flush is paid at once
    assert [(p.seat, p.hand, p.amount_cents, p.status) for p in settled.payouts] == [
        (2, "straight_flush", 200_008, "PENDING"), (1, "flush", 10_000, "PAID")]
    statuses = await client.pg.fetch("SELECT seat, status FROM hits WHERE link_id = $1", link)
    assert {r["seat"]: r["status"] for r in statuses} == {2: "PENDING", 1: "PAID"}
    config = await audited_config(client, link, answer, "update_link", who)
    assert (config["wager_cents"], config["verification_threshold_cents"]) == (200, 50_000)


async def test_resume_table_takes_wagers_again_after_a_suspension(client: Client) -> None:
    link, table = unique("resume"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    stop = audit("pit boss", "jackpot meter not lit (NSW 14.13)")
    suspended = await client.admin.SuspendTable(admin_pb2.SuspendTableRequest(
        request_id=rid(), table_id=table, audit=stop))
    assert (await audited_config(client, link, suspended, "suspend_table", stop))["tables"][table]["suspended"]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.commit(table, "r1", [1])
    assert err.value.code() == S.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as err:  # resuming cites the inspector's approval
        await client.admin.ResumeTable(admin_pb2.ResumeTableRequest(
            request_id=rid(), table_id=table, audit=audit("pit boss", "fixed")))
    assert err.value.code() == S.INVALID_ARGUMENT and "approval_ref" in (err.value.details() or "")
    go = audit("shift supervisor", "meter repaired and inspected", "INSP-2024-118")
    resumed = await client.admin.ResumeTable(admin_pb2.ResumeTableRequest(request_id=rid(), table_id=table, audit=go))
    accepted = await client.commit(table, "r1", [1, 2])
    assert [a.seat for a in accepted.accepted] == [1, 2]
    config = await audited_config(client, link, resumed, "resume_table", go)
    assert config["tables"][table]["suspended"] is False
