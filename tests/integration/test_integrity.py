"""Hostile ids and free text, malformed bytes, and ids that used to collide: refused or stored safely."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, report_pb2, table_pb2
from jackpotd.auth.identity import Role
from jackpotd.domain.ids import hit_id
from jackpotd.store import keys, ledger

from ..conftest import unique
from .harness import ADMIN, AUDIT, Client, rid, token

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
STRAIGHT_FLUSH = ["9h", "8h", "7h", "6h", "5h"]
BIG = "r" * 10_000


def wager(seat: int) -> table_pb2.Wager:
    return table_pb2.Wager(seat=seat, amount_cents=100, ante_placed=True)


@pytest.fixture
async def world(client: Client) -> dict[str, str]:
    link, table = unique("int"), unique("tbl")
    await client.create_link(link, resets={"MAJOR": 1_000_000})
    await client.register(table, link)
    await client.fund(link, "MAJOR", 1_000_000)
    await client.commit(table, "open", [1, 2])
    return {"link": link, "table": table}


def commit(w: dict[str, str], *, request_id: str | None = None, table: str | None = None,
           round_id: str = "r1") -> tuple[str, Any]:
    return "CommitWagers", table_pb2.CommitWagersRequest(
        request_id=rid() if request_id is None else request_id, table_id=table or w["table"], round_id=round_id,
        wagers=[wager(3)])


def create_link(link_id: str, **fields: Any) -> tuple[str, Any]:
    """A CreateLink request that is valid but for what `fields` and `link_id` make it."""
    return "CreateLink", admin_pb2.CreateLinkRequest(
        request_id=rid(), link_id=link_id, mode="COMBINED", wager_amount_cents=100, audit=AUDIT,
        pools=[admin_pb2.PoolConfig(pool="JACKPOT"), admin_pb2.PoolConfig(pool="RESERVE")],
        rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="JACKPOT", ppm=300_000)], retained_ppm=700_000),
        **fields)


CASES: list[tuple[str, Callable[[dict[str, str]], tuple[str, Any]], str]] = [
    ("NUL in request_id", lambda w: commit(w, request_id="abc\x00def"), "request_id"),
    ("NUL in round_id", lambda w: commit(w, round_id="r\x001"), "round_id"),
    ("NUL in table_id", lambda w: commit(w, table=w["table"] + "\x00"), "table_id"),
    ("colon in round_id", lambda w: commit(w, round_id="y:1"), "round_id"),
    ("brace in round_id", lambda w: commit(w, round_id="{link:x}"), "round_id"),
    ("10 KB round_id", lambda w: commit(w, round_id=BIG), "round_id"),
    ("10 KB request_id", lambda w: commit(w, request_id=BIG), "request_id"),
    ("colon in table_id", lambda w: ("RegisterTable", admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id="c:x", link_id=w["link"], game="caribbean-stud", seats=7, audit=AUDIT)),
     "table_id"),
    ("colon in link_id", lambda w: create_link("a:b"), "link_id"),
    ("NUL in link_id of GetPools", lambda w: ("GetPools", display_pb2.GetPoolsRequest(link_id="demo\x00")), "link_id"),
    ("10 KB link_id of GetPools", lambda w: ("GetPools", display_pb2.GetPoolsRequest(link_id=BIG)), "link_id"),
    ("NUL in pool", lambda w: ("FundPool", admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w["link"], pool="MAJOR\x00", amount_cents=5, audit=AUDIT)), "pool"),
    ("over-long reason", lambda w: ("VoidRound", table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=w["table"], round_id="open", reason="x" * 1001)), "reason"),
    ("blank reason", lambda w: ("VoidRound", table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=w["table"], round_id="open", reason=" \x00 "[0:1])), "reason"),
    ("over-long approval reference", lambda w: ("FundPool", admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w["link"], pool="MAJOR", amount_cents=5,
        audit=admin_pb2.Audit(actor="a", reason="b", approval_ref="z" * 5000))), "audit.approval_ref"),
    ("time zone with NUL", lambda w: create_link(unique("tz"), time_zone="UTC\x00"), "time_zone"),
    ("gaming day start not a time", lambda w: create_link(unique("gd"), gaming_day_start="6 am"), "gaming_day_start"),
]



async def ledger_state(client: Client) -> tuple[int, int]:
    """Entries and hits in the whole ledger: a refused call adds neither."""
    return (await client.pg.fetchval("SELECT count(*) FROM entries"),
            await client.pg.fetchval("SELECT count(*) FROM hits"))


async def assert_audit_ok(client: Client, link: str) -> None:
    balances = {k: int(v) for k, v in (await client.redis.hgetall(keys.balances(link))).items()}
    seq = int(await client.redis.get(keys.seq(link)))
    report = await ledger.audit_link(client.pg, link, balances, seq)
    assert report.ok, report.problems


@pytest.mark.parametrize(("name", "make", "field"), CASES, ids=[c[0] for c in CASES])
async def test_hostile_ids_and_text_are_refused_by_field_and_change_nothing(
        client: Client, world: dict[str, str], name: str, make: Callable[[dict[str, str]], tuple[str, Any]],
        field: str) -> None:
    before = await ledger_state(client)
    method, request = make(world)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.method(method)(request)
    assert err.value.code() == S.INVALID_ARGUMENT, err.value.details()
    details = err.value.details() or ""
    assert details.startswith(field + "="), details
    assert len(details) < 400  # the value is quoted short, never echoed whole
    assert await ledger_state(client) == before
    # everything else goes on: a normal round on the same link, and the ledger audits clean
    await client.commit(world["table"], "after", [1])
    await client.settle(world["table"], "after", {1: FLUSH})
    await assert_audit_ok(client, world["link"])


async def test_free_text_with_nul_is_stored_and_audits(client: Client, world: dict[str, str]) -> None:
    reason = "misdeal\x00 — dealer exposed a card ☠"
    resp = await client.table.VoidRound(table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=world["table"], round_id="open", reason=reason))
    rates = await client.admin.SetRates(admin_pb2.SetRatesRequest(
        request_id=rid(), link_id=world["link"], audit=admin_pb2.Audit(actor="insp\x00ector", reason="r",
                                                                       approval_ref="NSW\x00-42"),
        rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=200_000),
                                     admin_pb2.PoolRate(pool="MINOR", ppm=75_000),
                                     admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000)))
    stored = await client.pg.fetchval("SELECT entry::text FROM entries WHERE link_id = $1 AND seq = $2",
                                      world["link"], resp.sequence)
    assert "misdeal\\u0000" in stored
    config = await client.pg.fetchval("SELECT config::text FROM link_configs WHERE link_id = $1 AND version = $2",
                                      world["link"], rates.sequence)
    assert "NSW\\u0000-42" in config
    await client.commit(world["table"], "next", [1])  # the link goes on with its new rate set
    await assert_audit_ok(client, world["link"])
    # and every read of the entry works: the tables' last round, the export, the signs' feed
    pools = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=world["link"]))
    assert [t.last_round_at_ms > 0 for t in pools.tables if t.table_id == world["table"]] == [True]
    exported = [e async for e in client.report.ExportLedger(report_pb2.ExportLedgerRequest(link_id=world["link"]))]
    assert [(e.table_id, e.round_id) for e in exported if e.sequence == resp.sequence] == [(world["table"], "open")]


async def test_a_hit_rejected_with_a_nul_in_its_reason_is_listed_with_who_rejected_it(client: Client) -> None:
    from .test_hit_approval import pending_royal, reject

    link, _, royal = await pending_royal(client)
    answer = await client.admin.RejectHit(reject(royal.hit_id, reason="marked\x00 card"))
    hits = (await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, status="REJECTED"))).hits
    assert [(h.hit_id, h.rejected_by) for h in hits] == [(royal.hit_id, f"admin:{ADMIN}")]
    last = (await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))).last_hit  # the round's flush
    assert last.hit_id.startswith(royal.hit_id[:-1]) and last.status == "PAID"
    stored = await client.pg.fetchval("SELECT entry::text FROM entries WHERE link_id = $1 AND seq = $2", link,
                                      answer.sequence)
    assert "marked\\u0000 card" in stored
    await assert_audit_ok(client, link)


async def test_malformed_request_bytes_are_invalid_argument(client: Client, world: dict[str, str]) -> None:
    valid = table_pb2.CommitWagersRequest(request_id=rid(), table_id=world["table"], round_id="m1",
                                          wagers=[wager(1)]).SerializeToString()
    bad_utf8 = valid + b"\x1a\x03\xff\xfe\x00"  # field 3 (round_id) again, as bytes that are not UTF-8
    truncated = valid[:-3]
    call = client.channel.unary_unary("/jackpot.v1.TableService/CommitWagers",
                                      request_serializer=lambda b: b, response_deserializer=lambda b: b)
    before = await ledger_state(client)
    table = (("authorization", f"Bearer {token(Role.TABLE, world['table'])}"),)  # raw bytes name no table
    for raw in (bad_utf8, truncated):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(raw, metadata=table)
        assert err.value.code() == S.INVALID_ARGUMENT, err.value.details()
        assert (err.value.details() or "").startswith("request=")
    assert await ledger_state(client) == before


async def test_the_ids_that_once_collided_are_refused_and_hits_are_keyed_by_their_tuple(client: Client) -> None:
    """Hit ids were table:round:seat and round keys table:round, so table c:x round 1 and table c round x:1
    made one hit id on two links, and one round key on one link. Those ids are refused now (tests/unit/
    test_ids.py shows keys and hit ids stay distinct even for ids the grammar refuses), and a hit is
    keyed by (link, table, round, seat): the same table, round and seat names on two links are two hits."""
    table, round_id = unique("c"), "r.1"
    links = [unique("hx"), unique("hx")]
    await client.create_link(links[0], resets={"MAJOR": 1_000_000})
    await client.register(table, links[0])
    for bad_table, bad_round in ((f"{table}:x", "1"), (table, "x:1")):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.commit(bad_table, bad_round, [4])
        assert err.value.code() == S.INVALID_ARGUMENT
    await client.create_link(links[1], resets={"MAJOR": 1_000_000})
    twin = table + ".x"  # one more table on the other link with a look-alike name
    await client.register(twin, links[1])
    for link, t in zip(links, (table, twin), strict=True):
        await client.fund(link, "MAJOR", 2_000_000)
        await client.commit(t, round_id, [4])
        paid = await client.settle(t, round_id, {4: STRAIGHT_FLUSH})
        assert [p.hit_id for p in paid.payouts] == [hit_id(link, t, round_id, 4)]
    rows = await client.pg.fetch("SELECT link_id, table_id, round_id, seat FROM hits WHERE link_id = ANY($1)", links)
    assert sorted((r["link_id"], r["table_id"], r["round_id"], r["seat"]) for r in rows) == sorted(
        [(links[0], table, round_id, 4), (links[1], twin, round_id, 4)])
    for link in links:
        await assert_audit_ok(client, link)
