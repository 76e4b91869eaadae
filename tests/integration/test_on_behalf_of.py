"""Issue 21, through real gRPC: the floor's console suspends a table for a supervisor (its own token, the person in
ON_BEHALF_OF), and the trail and the ledger name both; signs see when each table's last round ended."""

from __future__ import annotations

import time
from typing import Any

import grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, display_pb2, table_pb2
from jackpotd.auth.identity import ON_BEHALF_OF, Role

from ..conftest import unique
from .harness import Client, next_matching, rid, token

HIGH_CARD = ["2c", "5d", "9h", "Jc", "Ks"]


async def test_a_console_suspends_a_table_for_a_supervisor_and_both_are_recorded(client: Client,
                                                                                   target: str) -> None:
    link, table, person = unique("obo"), unique("t"), unique("alice")
    await client.create_link(link)
    await client.register(table, link)
    console = token(Role.CONSOLE, "floor-1")
    request = admin_pb2.SuspendTableRequest(request_id=rid(), table_id=table,
                                            audit=admin_pb2.Audit(actor="whoever", reason="dealer change"))
    async with grpc.aio.insecure_channel(target) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        alone = (("authorization", f"Bearer {console}"),)
        try:  # the console on its own may not act
            await admin.SuspendTable(request, metadata=alone, timeout=10)
            raise AssertionError("a console without a person suspended a table")
        except grpc.aio.AioRpcError as e:
            assert e.code() is grpc.StatusCode.PERMISSION_DENIED and ON_BEHALF_OF in (e.details() or "")
        done = await admin.SuspendTable(request, metadata=(*alone, (ON_BEHALF_OF, f"supervisor:{person}")),
                                        timeout=10)
    pools = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))
    assert [t.suspended for t in pools.tables if t.table_id == table] == [True]

    rows = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor=person))).rows  # by the person
    assert [(r.method, r.outcome, r.actor, r.role, r.agent, r.table_id) for r in rows] == [
        ("SuspendTable", "OK", person, "supervisor", "console:floor-1", table)]
    refused = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor="floor-1", method="SuspendTable"))).rows
    assert any(r.table_id == table and (r.role, r.agent, r.outcome) == ("console", "", "PERMISSION_DENIED")
               for r in refused)
    entry = await client.entry(link, done.sequence)
    assert entry["kind"] == "suspend_table"
    assert entry["audit"]["actor"] == f"console:floor-1 for supervisor:{person}"


async def test_signs_see_when_each_table_last_ended_a_round(client: Client) -> None:
    link, played, voided, idle = unique("last"), unique("t"), unique("t"), unique("t")
    await client.create_link(link)
    for t in (played, voided, idle):
        await client.register(t, link)
    sign = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    try:
        def last(u: Any, table: str) -> int:
            return next(t.last_round_at_ms for t in u.tables if t.table_id == table)

        first = await next_matching(sign, lambda _: True, 5, "the snapshot")
        assert (last(first, played), last(first, voided), last(first, idle)) == (0, 0, 0)
        before = int(time.time() * 1000)
        await client.commit(played, "r1", [1])
        await client.settle(played, "r1", {1: HIGH_CARD})
        await client.commit(voided, "r1", [2])
        await client.table.VoidRound(table_pb2.VoidRoundRequest(request_id=rid(), table_id=voided, round_id="r1",
                                                                reason="misdeal"))
        after = int(time.time() * 1000)
        seen = await next_matching(sign, lambda u: last(u, played) > 0 and last(u, voided) > 0, 10,
                                   "the sign told of both tables' last rounds (the feed, no query)")
        assert before - 1000 <= last(seen, played) <= after + 1000 and last(seen, idle) == 0
        assert before - 1000 <= last(seen, voided) <= after + 1000
    finally:
        sign.cancel()
    now = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))  # from the ledger
    assert {t.table_id: t.last_round_at_ms for t in now.tables} == {
        played: last(seen, played), voided: last(seen, voided), idle: 0}
