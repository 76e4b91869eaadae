"""API.md, Errors: each bad input gets its status and a message naming the field and value, and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, table_pb2
from jackpotd.store import keys

from ..conftest import unique
from .harness import AUDIT, Client, rid

S = grpc.StatusCode
ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]


def wager(seat: int, amount: int = 100, ante: bool = True) -> table_pb2.Wager:
    return table_pb2.Wager(seat=seat, amount_cents=amount, ante_placed=ante)


def commit(table: str, round_id: str, *wagers: table_pb2.Wager, request_id: str | None = None) -> Any:
    return table_pb2.CommitWagersRequest(request_id=rid() if request_id is None else request_id, table_id=table,
                                         round_id=round_id, wagers=list(wagers))


def settle(table: str, round_id: str, hands: dict[int, list[str] | int]) -> Any:
    """A settle of these seats: a seat's cards, or (an int) its `no_hand` reason with no cards."""
    return table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id=round_id, hands=[
        table_pb2.SeatHand(seat=s, no_hand=x) if isinstance(x, int) else table_pb2.SeatHand(seat=s, cards=x)
        for s, x in hands.items()])


@pytest.fixture
async def world(client: Client) -> dict[str, str]:
    link, table, suspended = unique("err"), unique("tbl"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    await client.register(suspended, link)
    await client.fund(link, "MAJOR", 1_000_000)
    await client.admin.SuspendTable(admin_pb2.SuspendTableRequest(request_id=rid(), table_id=suspended, audit=AUDIT))
    await client.commit(table, "open", [1, 2])
    await client.commit(table, "done", [1])
    await client.settle(table, "done", {1: ["2c", "3d", "4h", "5s", "7c"]})
    return {"link": link, "table": table, "suspended": suspended}


CASES: list[tuple[str, Callable[[dict[str, str]], tuple[str, Any]], S, list[str]]] = [
    ("bad card", lambda w: ("SettleRound", settle(w["table"], "open", {1: ["As", "Ks", "Qs", "Js", "1s"]})),
     S.INVALID_ARGUMENT, ["hands[0].cards[4]", "'1s'"]),
    ("duplicate card", lambda w: ("SettleRound", settle(w["table"], "open", {1: ROYAL, 2: ["AS", *ROYAL[1:4], "9d"]})),
     S.INVALID_ARGUMENT, ["cards", "As appears more than once"]),
    ("wrong card count", lambda w: ("SettleRound", settle(w["table"], "open", {1: ROYAL[:4]})),
     S.INVALID_ARGUMENT, ["hands[0].cards", "exactly 5"]),
    ("hand seat outside table", lambda w: ("SettleRound", settle(w["table"], "open", {9: ROYAL})),
     S.INVALID_ARGUMENT, ["hands[0].seat", "9"]),
    # issue 19: a royal flush sent for seat 3 when seats 1 and 2 wagered must not settle them as losses
    ("royal on a seat that did not wager, wagered seats left out",
     lambda w: ("SettleRound", settle(w["table"], "open", {3: ROYAL})),
     S.INVALID_ARGUMENT, ["hands=[1, 2]", "seats 1, 2 wagered", "no_hand"]),
    ("one wagered seat left out", lambda w: ("SettleRound", settle(w["table"], "open", {1: ROYAL})),
     S.INVALID_ARGUMENT, ["hands=[2]", "seat 2 wagered"]),
    ("a seat with neither cards nor a reason", lambda w: ("SettleRound", settle(w["table"], "open", {1: ROYAL, 2: []})),
     S.INVALID_ARGUMENT, ["hands[1].cards", "seat 2 has no cards", "no_hand"]),
    ("a seat with cards and a reason", lambda w: ("SettleRound", table_pb2.SettleRoundRequest(
        request_id=rid(), table_id=w["table"], round_id="open", hands=[
            table_pb2.SeatHand(seat=1, cards=ROYAL, no_hand=table_pb2.FOLDED),
            table_pb2.SeatHand(seat=2, no_hand=table_pb2.FOLDED)])),
     S.INVALID_ARGUMENT, ["hands[0].cards", "stated as FOLDED"]),
    ("an unknown no_hand", lambda w: ("SettleRound", settle(w["table"], "open", {1: ROYAL, 2: 7})),
     S.INVALID_ARGUMENT, ["hands[1].no_hand=7", "FOLDED, MUCKED or DEAD"]),
    ("seat outside table", lambda w: ("CommitWagers", commit(w["table"], "r", wager(8))),
     S.INVALID_ARGUMENT, ["wagers[0].seat", "8"]),
    ("seat zero", lambda w: ("CommitWagers", commit(w["table"], "r", wager(0))),
     S.INVALID_ARGUMENT, ["wagers[0].seat", "0"]),
    ("duplicate seat", lambda w: ("CommitWagers", commit(w["table"], "r", wager(3), wager(3))),
     S.INVALID_ARGUMENT, ["wagers[1].seat", "duplicate"]),
    ("wrong amount", lambda w: ("CommitWagers", commit(w["table"], "r", wager(3, 500))),
     S.INVALID_ARGUMENT, ["wagers[0].amount_cents", "500"]),
    ("negative amount", lambda w: ("CommitWagers", commit(w["table"], "r", wager(3, -100))),
     S.INVALID_ARGUMENT, ["wagers[0].amount_cents", "-100"]),
    ("no ante", lambda w: ("CommitWagers", commit(w["table"], "r", wager(3, ante=False))),
     S.INVALID_ARGUMENT, ["wagers[0].ante_placed", "ante"]),
    ("no request id", lambda w: ("CommitWagers", commit(w["table"], "r", wager(3), request_id="")),
     S.INVALID_ARGUMENT, ["request_id"]),
    ("bad round id", lambda w: ("CommitWagers", commit(w["table"], "has space", wager(3))),
     S.INVALID_ARGUMENT, ["round_id", "'has space'"]),
    ("unknown table", lambda w: ("CommitWagers", commit("no-such-table", "r", wager(1))),
     S.NOT_FOUND, ["table_id", "no-such-table"]),
    ("unknown round", lambda w: ("SettleRound", settle(w["table"], "never", {1: ROYAL})),
     S.NOT_FOUND, ["round_id", "never"]),
    ("unknown link", lambda w: ("GetPools", display_pb2.GetPoolsRequest(link_id="no-such-link")),
     S.NOT_FOUND, ["link_id", "no-such-link"]),
    ("suspended table", lambda w: ("CommitWagers", commit(w["suspended"], "r", wager(1))),
     S.FAILED_PRECONDITION, ["table_id", "suspended"]),
    ("round already committed", lambda w: ("CommitWagers", commit(w["table"], "open", wager(5))),
     S.FAILED_PRECONDITION, ["round_id", "COMMITTED"]),
    ("round already settled", lambda w: ("SettleRound", settle(w["table"], "done", {1: ROYAL})),
     S.FAILED_PRECONDITION, ["round_id", "SETTLED"]),
    ("void a settled round", lambda w: ("VoidRound", table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=w["table"], round_id="done", reason="misdeal")),
     S.FAILED_PRECONDITION, ["round_id", "supervisor"]),
    ("void a seat without a wager", lambda w: ("VoidRound", table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=w["table"], round_id="open", reason="absent", seats=[6])),
     S.INVALID_ARGUMENT, ["seats[0]", "6"]),
    ("rates not summing", lambda w: ("SetRates", admin_pb2.SetRatesRequest(
        request_id=rid(), link_id=w["link"], audit=AUDIT, rates=admin_pb2.Rates(
            pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=1)], retained_ppm=1))),
     S.INVALID_ARGUMENT, ["rates", "1,000,000"]),
    ("fund a negative amount", lambda w: ("FundPool", admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w["link"], pool="MAJOR", amount_cents=-5, audit=AUDIT)),
     S.INVALID_ARGUMENT, ["amount_cents", "-5"]),
    ("fund an unknown pool", lambda w: ("FundPool", admin_pb2.FundPoolRequest(
        request_id=rid(), link_id=w["link"], pool="JACKPOT", amount_cents=5, audit=AUDIT)),
     S.INVALID_ARGUMENT, ["pool", "JACKPOT"]),
    ("register on an unknown link", lambda w: ("RegisterTable", admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id=unique("t"), link_id="nope", game="caribbean-stud", seats=7, audit=AUDIT)),
     S.NOT_FOUND, ["link_id", "nope"]),
    ("register an unknown game", lambda w: ("RegisterTable", admin_pb2.RegisterTableRequest(
        request_id=rid(), table_id=unique("t"), link_id=w["link"], game="baccarat", seats=7, audit=AUDIT)),
     S.INVALID_ARGUMENT, ["game", "baccarat"]),
]



async def snapshot(client: Client, link: str) -> tuple[Any, ...]:
    pools = await client.pools(link)
    n = await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link)
    seq = await client.redis.get(keys.seq(link))
    return tuple(sorted((k, str(v)) for k, v in pools.items())), n, seq


@pytest.mark.parametrize(("name", "make", "code", "words"), CASES, ids=[c[0] for c in CASES])
async def test_bad_input_is_refused_precisely_and_changes_nothing(
        client: Client, world: dict[str, str], name: str, make: Callable[[dict[str, str]], tuple[str, Any]],
        code: S, words: list[str]) -> None:
    before = await snapshot(client, world["link"])
    method, request = make(world)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.method(method)(request)
    assert err.value.code() == code, err.value.details()
    for word in words:
        assert word in (err.value.details() or ""), (word, err.value.details())
    assert await snapshot(client, world["link"]) == before
