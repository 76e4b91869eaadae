"""Hypothesis sends arbitrary Unicode and byte-like strings, NUL included, as every id and free-text field of
every mutating call. Each call is INVALID_ARGUMENT with nothing changed, or OK and durable; afterwards the
other links work and `jackpotd audit` passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jackpotd.api.gen.jackpot.v1 import admin_pb2, table_pb2

from ..conftest import Isolated, Servers, isolated_stores, unique
from .conftest import Private, open_private
from .harness import AUDIT, Client, rid

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
RATES = admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=p, ppm=ppm) for p, ppm in
                               (("MAJOR", 200_000), ("MINOR", 75_000), ("RESERVE", 25_000))], retained_ppm=700_000)
COMBINED_RATES = admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="JACKPOT", ppm=275_000),
                                        admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000)

# Values: any Unicode but surrogates (protobuf strings are UTF-8), strings made of arbitrary bytes, strings
# dense in the characters that once broke keys and SQL, and valid ids so that the OK path is taken too.
VALUES = st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("latin-1")),
    st.text(alphabet=st.sampled_from("ab:{}%\x00 -._\n☠"), max_size=12),
    st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True),
    st.just("x" * 10_000),
)


@pytest_asyncio.fixture(scope="module")
async def private(servers: Servers, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Private]:
    """One server for the whole module: the fuzz, then the checks of what it left."""
    stores: Isolated = await isolated_stores(servers)
    async with open_private(stores, tmp_path_factory.mktemp("fuzz")) as p:
        yield p


@dataclass
class World:
    client: Client
    link: str
    table: str
    seen: set[tuple[str, str]] = field(default_factory=set)
    outcomes: Counter[str] = field(default_factory=Counter)


def audit(**override: str) -> admin_pb2.Audit:
    values = {"actor": "fuzz", "reason": "fuzz", "approval_ref": "FUZZ-1", **override}
    return admin_pb2.Audit(**values)


async def committed(w: World, round_id: str | None = None) -> str:
    round_id = round_id or unique("r")
    await w.client.commit(w.table, round_id, [1, 2])
    return round_id


# Each scenario sends one mutating call whose only doubtful field is `value`; everything else is valid, so a
# valid value must succeed. Setup calls use valid ids only.
Call = Callable[[World, str], Awaitable[tuple[Callable[..., Any], Any]]]


async def commit_request_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.table.CommitWagers, table_pb2.CommitWagersRequest(
        request_id=v, table_id=w.table, round_id=unique("r"), wagers=[table_pb2.Wager(seat=1, amount_cents=100,
                                                                                        ante_placed=True)])


async def commit_round_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.table.CommitWagers, table_pb2.CommitWagersRequest(
        request_id=rid(), table_id=w.table, round_id=v, wagers=[table_pb2.Wager(seat=1, amount_cents=100,
                                                                                  ante_placed=True)])


async def settle_request_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.table.SettleRound, table_pb2.SettleRoundRequest(
        request_id=v, table_id=w.table, round_id=await committed(w), hands=[table_pb2.SeatHand(seat=1, cards=FLUSH)])


async def void_reason(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.table.VoidRound, table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=w.table, round_id=await committed(w), reason=v, seats=[2])


async def void_request_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.table.VoidRound, table_pb2.VoidRoundRequest(
        request_id=v, table_id=w.table, round_id=await committed(w), reason="misdeal")


def create(link_id: str, **fields: Any) -> admin_pb2.CreateLinkRequest:
    return admin_pb2.CreateLinkRequest(**{
        "request_id": rid(), "link_id": link_id, "mode": "SPLIT", "wager_amount_cents": 100, "rates": RATES,
        "pools": [admin_pb2.PoolConfig(pool=p) for p in ("MAJOR", "MINOR", "RESERVE")], "audit": AUDIT, **fields})


async def create_link_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.CreateLink, create(v)


async def create_text(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.CreateLink, create(unique("l"), audit=audit(actor=v, reason=v, approval_ref=v or "x"))


async def create_zone(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.CreateLink, create(unique("l"), time_zone=v)


async def create_pool(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.CreateLink, create(unique("l"), pools=[
        admin_pb2.PoolConfig(pool=p) for p in ("MAJOR", v, "RESERVE")])


async def register_table_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.RegisterTable, admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id=v, link_id=w.link, game="caribbean-stud", seats=7, audit=AUDIT)


async def register_game(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.RegisterTable, admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id=unique("t"), link_id=w.link, game=v, seats=7, audit=AUDIT)


async def fund_pool(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.FundPool, admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w.link, pool=v, amount_cents=1, audit=AUDIT)


async def fund_text(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.FundPool, admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w.link, pool="MINOR", amount_cents=1, audit=audit(actor=v, reason=v))


async def fund_link_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.FundPool, admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=v, pool="MINOR", amount_cents=1, audit=AUDIT)


async def rates_approval(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.SetRates, admin_pb2.SetRatesRequest(request_id=rid(), link_id=w.link, rates=RATES,
                                                              audit=audit(approval_ref=v))


async def paytable_hand(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.SetPaytable, admin_pb2.SetPaytableRequest(
        request_id=rid(), link_id=w.link, game="caribbean-stud", audit=audit(reason=v),
        entries=[admin_pb2.PaytableEntry(hand=v, pool="MINOR", min_cents=100)])


async def suspend_text(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    table = unique("t")
    await w.client.register(table, w.link)
    return w.client.admin.SuspendTable, admin_pb2.SuspendTableRequest(request_id=rid(), table_id=table,
                                                                      audit=audit(reason=v, actor=v))


async def update_text(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.UpdateLink, admin_pb2.UpdateLinkRequest(request_id=rid(), link_id=w.link,
                                                                  audit=audit(reason=v))


async def approve_hit_id(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    return w.client.admin.ApproveHit, admin_pb2.ApproveHitRequest(request_id=rid(), hit_id=v, audit=AUDIT)


async def reject_reason(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    paid = await w.client.settle(w.table, await committed(w), {1: FLUSH})  # above the world's threshold: held
    return w.client.admin.RejectHit, admin_pb2.RejectHitRequest(request_id=rid(), hit_id=paid.payouts[0].hit_id,
                                                                reason=v, audit=audit(reason=v, actor=v))


async def combine_text(w: World, v: str) -> tuple[Callable[..., Any], Any]:
    link = unique("l")
    await w.client.create_link(link)
    return w.client.admin.CombinePools, admin_pb2.CombinePoolsRequest(
        request_id=rid(), link_id=link, jackpot=admin_pb2.PoolConfig(pool="JACKPOT"), rates=COMBINED_RATES,
        audit=audit(actor=v, reason=v, approval_ref=v or "x"))


SCENARIOS: list[Call] = [commit_request_id, commit_round_id, settle_request_id, void_reason, void_request_id,
                         create_link_id, create_text, create_zone, create_pool, register_table_id, register_game,
                         fund_pool, fund_text, fund_link_id, rates_approval, paytable_hand, suspend_text, update_text,
                         approve_hit_id, reject_reason, combine_text]


ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The fuzzed id names something that must already exist: a well-formed one that does not is NOT_FOUND.
LOOKUPS = {fund_link_id: ID, approve_hit_id: re.compile(r"(?:[A-Za-z0-9._-]{1,64}:){3}[1-9][0-9]{0,4}")}
# Scenarios whose value lands in one namespace: a request id drawn by one of them is a repeat for the others.
NAMESPACE = {commit_request_id: "request_id", settle_request_id: "request_id", void_request_id: "request_id"}


async def ledger_size(c: Client) -> tuple[int, int]:
    return await c.pg.fetchval("SELECT count(*) FROM entries"), await c.pg.fetchval("SELECT count(*) FROM links")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(scenario=st.sampled_from(SCENARIOS), value=VALUES)
@example(scenario=reject_reason, value="fouled\x00cards")  # a NUL in a text column once refused the batch
@example(scenario=combine_text, value="NZ 11.6B\x00")
async def test_arbitrary_ids_and_text_are_refused_or_durable(private: Private, scenario: Call, value: str) -> None:
    c = private.client
    w = await _world(private)
    used = (NAMESPACE.get(scenario, scenario.__name__), value)
    repeat = used in w.seen
    w.seen.add(used)
    method, request = await scenario(w, value)
    before = await ledger_size(c)
    try:
        response = await method(request)
    except grpc.aio.AioRpcError as e:
        if repeat and e.code() in (S.ALREADY_EXISTS, S.FAILED_PRECONDITION):
            return  # the same id drawn twice
        if scenario in LOOKUPS and e.code() == S.NOT_FOUND and LOOKUPS[scenario].fullmatch(value):
            assert await ledger_size(c) == before  # a well-formed id of a link that does not exist
            return
        assert e.code() == S.INVALID_ARGUMENT, (scenario.__name__, repr(value)[:80], e.code(), e.details())
        w.outcomes[e.code().name] += 1
        assert len(e.details() or "") < 1000
        assert await ledger_size(c) == before  # nothing changed
        return
    held = await c.pg.fetchval("SELECT count(*) FROM entries WHERE right(request_id, char_length($1) + 1) = ':' || $1 "
                               "AND seq = $2",  # the key is <caller>:<request_id>
                               request.request_id, response.sequence)
    assert held == 1, (scenario.__name__, repr(value)[:80])  # answered, so in the ledger, once
    w.outcomes["OK"] += 1


_worlds: dict[int, World] = {}


async def _world(private: Private) -> World:
    """One link and table per server, made once for all examples."""
    key = id(private)
    if key not in _worlds:
        link, table = unique("fz"), unique("t")
        await private.client.create_link(link, threshold=1)  # every hit is held: RejectHit has one to decide
        await private.client.register(table, link)
        _worlds[key] = World(private.client, link, table)
    return _worlds[key]


async def test_after_the_fuzz_other_links_work_and_the_audit_passes(private: Private) -> None:
    """Runs after the fuzz, on the same server (module-scoped), whose ledger holds what the fuzz left."""
    (world,) = _worlds.values()  # the fuzz test ran first, and took both ways many times
    assert world.outcomes["OK"] >= 20 and world.outcomes["INVALID_ARGUMENT"] >= 50, world.outcomes
    c = private.client
    link, table = unique("after"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000})
    await c.register(table, link)
    await c.fund(link, "MAJOR", 1_000_000)
    await c.commit(table, "r1", [1, 2, 3])
    paid = await c.settle(table, "r1", {2: ["As", "Ks", "Qs", "Js", "Ts"]})
    assert [p.hand for p in paid.payouts] == ["royal_flush"]
    stores = {"JACKPOTD_REDIS_URL": private.valkey.url, "JACKPOTD_POSTGRES_DSN": private.settings.postgres_dsn}
    out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "audit"], env={**os.environ, **stores},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{link}: OK" in out.stdout
