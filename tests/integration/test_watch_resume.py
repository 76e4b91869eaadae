"""WatchPools resumed after a sequence (issue 23): a stream dropped at a chosen moment, a hit held for verification
and its decision committed meanwhile, and a new stream `after_sequence` the last one it was sent gets both, in
order, before its snapshot; the sign's feed resumes so, and its browsers are told the decision."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from jackpot_signage.cli import sign_channel
from jackpot_signage.feed import LinkFeed

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2
from jackpotd.auth.credentials import RoleCredential
from jackpotd.auth.identity import Role

from ..conftest import unique
from .harness import AUDIT, Client, eventually, rid, token

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]


async def _held_then_paid(client: Client) -> tuple[str, str]:
    """A link whose royal flush waits for a supervisor: (link, table)."""
    link, table = unique("resume"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000}, threshold=500_000)
    await client.register(table, link)
    return link, table


async def _royal_approved(client: Client, table: str) -> str:
    """A royal flush held PENDING, then approved: its hit id."""
    await client.commit(table, "r1", [1])
    settled = await client.settle(table, "r1", {1: ROYAL})
    assert [p.status for p in settled.payouts] == ["PENDING"], settled
    hit_id = str(settled.payouts[0].hit_id)
    await client.admin.ApproveHit(admin_pb2.ApproveHitRequest(request_id=rid(), hit_id=hit_id, audit=AUDIT))
    return hit_id


async def _first(call: Any) -> display_pb2.PoolsUpdate:
    update = await asyncio.wait_for(call.read(), 10)
    assert isinstance(update, display_pb2.PoolsUpdate), update
    return update


async def test_a_resumed_stream_gets_the_hit_and_decision_it_missed_then_its_snapshot(client: Client) -> None:
    link, table = await _held_then_paid(client)
    first = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    last = (await _first(first)).sequence
    first.cancel()  # the stream drops here
    hit_id = await _royal_approved(client, table)
    head = (await client.pools(link))["_seq"]
    resumed = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link, after_sequence=last))
    fresh = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    try:
        said = [await _first(resumed) for _ in range(3)]
        assert [(u.hit.hit_id, u.hit.status) for u in said[:2]] == [(hit_id, "PENDING"), (hit_id, "PAID")], said
        assert last < said[0].sequence < said[1].sequence <= head and said[0].pools and said[0].tables, said
        assert not said[2].HasField("hit") and said[2].sequence == head, said[2]  # then the snapshot
        opening = await _first(fresh)  # not resumed: the snapshot alone, as before
        assert not opening.HasField("hit") and opening.sequence == head, opening
    finally:
        resumed.cancel()
        fresh.cancel()
    refused = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link, after_sequence=-1))
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await refused.read()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "after_sequence" in (e.value.details() or ""), e


async def test_the_sign_resumes_its_stream_and_tells_its_browsers_the_decision(client: Client, target: str) -> None:
    link, table = await _held_then_paid(client)
    credential = RoleCredential(token=token(Role.DISPLAY, "sign"))
    feed = LinkFeed(link, target, lambda t: sign_channel(credential, t))
    feed.start()
    try:
        await eventually(lambda: feed.online and feed.sequence > 0, 10, "the sign watching the link")
        await feed.stop()  # the stream drops here, the sign keeps what it was sent
        browser = feed.subscribe()
        hit_id = await _royal_approved(client, table)
        feed.start()
        told: list[tuple[str, str]] = []

        async def both_told() -> list[tuple[str, str]] | None:
            event = await browser.next(0.5)
            if event is not None and event[0] == "hit":
                told.append((event[1]["hit_id"], event[1]["status"]))
            return told if len(told) >= 2 else None

        assert await eventually(both_told, 15, "the browser told the hit and its decision") == [
            (hit_id, "PENDING"), (hit_id, "PAID")]
    finally:
        await feed.stop()
