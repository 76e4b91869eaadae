"""Issue 33, served: a configuration whose jackpot wager returns 100% or more at the reset values is refused with
INVALID_ARGUMENT naming the game, its paytable and the exact return, and changes nothing (no ledger entry, no
Redis key, no config version); with an RtpOverride naming its approval it is accepted, and the act's row in
ListAudit shows the override and its reference."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2
from jackpotd.api.link_requests import link_config_of
from jackpotd.odds.exact_text import percent_text
from jackpotd.odds.returns import return_at_reset
from jackpotd.store import keys

from ..conftest import unique
from .harness import AUDIT, Client, rid

S = grpc.StatusCode
OVERRIDE = admin_pb2.RtpOverride(approval_ref="PROMO-33", reason="seeded opening week")
RATES = admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=200_000),
                               admin_pb2.PoolRate(pool="MINOR", ppm=75_000),
                               admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000)
# Three card poker at a $1 wager: 48 straight flushes and 52 trips in 22,100 hands, $221 each: exactly 100%.
GENEROUS = [admin_pb2.PaytableEntry(hand="straight_flush", pool="MINOR", min_cents=221_00),
            admin_pb2.PaytableEntry(hand="three_of_a_kind", pool="MINOR", min_cents=221_00)]


def one_cent_link(link: str) -> admin_pb2.CreateLinkRequest:
    """A CreateLink of Caribbean Stud's default paytable for a 1¢ wager: its fixed awards pay far more than 1¢ a
    hand, whatever the defaults are."""
    return admin_pb2.CreateLinkRequest(
        request_id=rid(), link_id=link, mode="SPLIT", wager_amount_cents=1,
        pools=[admin_pb2.PoolConfig(pool="MAJOR", reset_cents=1_000_000),
               admin_pb2.PoolConfig(pool="MINOR", reset_cents=100_000), admin_pb2.PoolConfig(pool="RESERVE")],
        rates=RATES, games=["caribbean-stud"], audit=AUDIT)


async def stored(client: Client, link: str) -> dict[str, Any]:
    """Everything a config change could touch: the ledger's entries and config versions, the link's Redis keys
    (with their values) and whether the writer follows it."""
    for _ in range(100):  # the seen filter of a new link fills in the background: read once it has
        if not str(await client.redis.hget(keys.seen(link), "state") or "").startswith("fill"):
            break
        await asyncio.sleep(0.05)
    redis: dict[str, Any] = {}
    async for key in client.redis.scan_iter(match=keys.link_pattern(link)):
        kind = await client.redis.type(key)
        if kind == "string":
            try:
                redis[key] = await client.redis.get(key)
            except UnicodeDecodeError:  # a bitmap (the seen filter)
                redis[key] = ("bytes", await client.redis.strlen(key))
        else:
            redis[key] = (await client.redis.hgetall(key) if kind == "hash" else
                          await client.redis.xlen(key) if kind == "stream" else
                          await client.redis.smembers(key) if kind == "set" else kind)
    return {"entries": await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link),
            "versions": [r["version"] for r in await client.pg.fetch(
                "SELECT version FROM link_configs WHERE link_id = $1 ORDER BY version", link)],
            "redis": redis, "followed": await client.redis.sismember(keys.LINKS, link)}


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What differs between two `stored` readings, key by key ({} when nothing changed)."""
    out = {k: (before[k], after[k]) for k in ("entries", "versions", "followed") if before[k] != after[k]}
    for key in before["redis"].keys() | after["redis"].keys():
        if before["redis"].get(key) != after["redis"].get(key):
            out[key] = (before["redis"].get(key), after["redis"].get(key))
    return out


async def newest_row(client: Client, link: str, method: str) -> admin_pb2.AuditRow:
    rows = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link, method=method))).rows
    return rows[0]


async def test_a_create_link_that_pays_more_than_it_takes_is_refused_and_changes_nothing(client: Client) -> None:
    link = unique("rtp")
    request = one_cent_link(link)
    rtp = return_at_reset(link_config_of(request), "caribbean-stud").rtp
    assert rtp > 1
    before = await stored(client, link)
    assert before == {"entries": 0, "versions": [], "redis": {}, "followed": False}
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await client.admin.CreateLink(request)
    assert refused.value.code() == S.INVALID_ARGUMENT
    details = refused.value.details() or ""
    assert details.startswith(f"games[caribbean-stud]='{rtp}': the paytable returns more than it takes at the reset "
                              "values (MAJOR $10,000.00, MINOR $1,000.00): caribbean-stud (wager $0.01; royal_flush ")
    assert f"returns {rtp} ({percent_text(rtp)}) of the wager; a configuration must return less than 100% " \
           "(override: rtp_override with an approval reference)" in details
    assert changes(before, await stored(client, link)) == {}
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))
    assert unknown.value.code() == S.NOT_FOUND
    row = await newest_row(client, link, "CreateLink")
    assert (row.outcome, row.detail) == ("INVALID_ARGUMENT", details)

    # an override without an approval reference is no override
    blank = admin_pb2.CreateLinkRequest()
    blank.CopyFrom(request)
    blank.request_id = rid()
    blank.rtp_override.reason = "promotion"
    with pytest.raises(grpc.aio.AioRpcError) as unapproved:
        await client.admin.CreateLink(blank)
    assert unapproved.value.code() == S.INVALID_ARGUMENT
    assert (unapproved.value.details() or "").startswith("rtp_override.approval_ref='': must not be empty")
    assert changes(before, await stored(client, link)) == {}

    approved = admin_pb2.CreateLinkRequest()
    approved.CopyFrom(request)
    approved.request_id = rid()
    approved.rtp_override.CopyFrom(OVERRIDE)
    answer = await client.admin.CreateLink(approved)
    assert answer.link_id == link and answer.config_version == answer.sequence
    after = await stored(client, link)
    assert after["versions"] == [answer.sequence] and after["followed"]
    row = await newest_row(client, link, "CreateLink")
    assert (row.outcome, row.approval_ref) == ("OK", AUDIT.approval_ref)
    assert row.detail == ("rtp_override (a return of 100% or more at the reset values allowed): approval_ref "
                          "PROMO-33; reason: seeded opening week")


async def test_set_paytable_update_link_and_set_rates_refuse_and_change_nothing(client: Client) -> None:
    link = unique("rtp")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    before = await stored(client, link)
    assert keys.config(link) in before["redis"] and before["versions"] and before["followed"]
    paytable = admin_pb2.SetPaytableRequest(request_id=rid(), link_id=link, game="three-card", entries=GENEROUS,
                                            audit=AUDIT)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await client.admin.SetPaytable(paytable)
    assert refused.value.code() == S.INVALID_ARGUMENT
    assert (refused.value.details() or "").startswith(
        "games[three-card]='1': the paytable returns more than it takes at the reset values (MAJOR $10,000.00, "
        "MINOR $1,000.00): three-card (wager $1.00; straight_flush $221.00 from MINOR, three_of_a_kind $221.00 "
        "from MINOR) returns 1 (100.0000%) of the wager")
    update = admin_pb2.UpdateLinkRequest(request_id=rid(), link_id=link, wager_amount_cents=1, audit=AUDIT)
    with pytest.raises(grpc.aio.AioRpcError) as smaller:
        await client.admin.UpdateLink(update)
    assert smaller.value.code() == S.INVALID_ARGUMENT
    assert (smaller.value.details() or "").startswith("games[caribbean-stud]=")
    assert changes(before, await stored(client, link)) == {}  # no entry, no version, no Redis change

    paytable.rtp_override.CopyFrom(OVERRIDE)
    answer = await client.admin.SetPaytable(paytable)
    assert (await stored(client, link))["versions"] == [*before["versions"], answer.sequence]
    row = await newest_row(client, link, "SetPaytable")
    assert row.outcome == "OK" and "approval_ref PROMO-33" in row.detail

    # SetRates changes no return at reset, yet leaves no link at 100% or more without an override
    overridden = await stored(client, link)
    rates = admin_pb2.SetRatesRequest(request_id=rid(), link_id=link, rates=RATES, audit=AUDIT)
    with pytest.raises(grpc.aio.AioRpcError) as kept:
        await client.admin.SetRates(rates)
    assert kept.value.code() == S.INVALID_ARGUMENT
    assert (kept.value.details() or "").startswith("games[three-card]='1':")
    assert changes(overridden, await stored(client, link)) == {}
    rates.rtp_override.CopyFrom(OVERRIDE)
    assert (await client.admin.SetRates(rates)).sequence > answer.sequence
