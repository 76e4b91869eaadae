"""Signs and meters are fed only what the ledger has committed (issue 11), from one read per process and link,
fanned out to every watcher: a hit the ledger does not hold is never shown, every watcher sees every hit and
the final amounts, and one that stops reading delays no one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncpg
import grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, table_pb2
from jackpotd.store import keys

from ..conftest import Isolated, unique
from .conftest import Private
from .harness import AUDIT, Client, Pulse, eventually, next_matching, online_tables, rid, set_online

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]


async def _seq_beyond(c: Client, link: str, seq: int) -> bool:
    return int(await c.redis.get(keys.seq(link))) > seq


def amounts(update: Any) -> dict[str, int]:
    return {p.pool: p.amount_cents for p in update.pools}


async def test_a_royal_flush_the_ledger_does_not_hold_is_never_shown(private: Private, isolated: Isolated) -> None:
    c = private.client
    link, table, other = unique("frz"), unique("t"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000})
    await c.register(table, link)
    await c.register(other, link)  # its presence keeps the streams talking while the ledger is frozen
    await c.fund(link, "MAJOR", 2_000_000)
    stream = c.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    seen: list[Any] = []

    async def read() -> None:  # reads on its own: a cancelled read would end the call
        async for update in stream:
            seen.append(update)

    reader = asyncio.ensure_future(read())
    pulse = await Pulse(c, link, other).start()
    frozen = await asyncpg.connect(isolated.dsn)  # the ledger frozen for this database: nothing commits
    try:
        await eventually(lambda: seen or None, 5, "the snapshot")
        await c.commit(table, "r1", [1])  # an entry the feed reads: from then on it offers presence too
        await pulse.beating(10)
        before = amounts(await c.display.GetPools(display_pb2.GetPoolsRequest(link_id=link)))
        lock = frozen.transaction()
        await lock.start()
        await frozen.execute("LOCK TABLE entries IN EXCLUSIVE MODE")  # reads go on; no entry is appended
        applied = int(await c.redis.get(keys.seq(link)))
        frozen_from = len(seen)
        settle = asyncio.ensure_future(c.settle(table, "r1", {1: ROYAL}))
        await eventually(lambda: _seq_beyond(c, link, applied), 10, "Redis applying the royal flush")
        # The marker: a table that was never online comes online now. The stream shows it only after the feed
        # has looked at the link since Redis applied the royal flush, and after anything of it the feed sent.
        await set_online(c, table, True)
        await eventually(lambda: any(table in online_tables(u) for u in seen[frozen_from:]), 10,
                         "the stream showing the table online (the feed has run since the royal flush)")
        during = seen[frozen_from:]
        assert not [u for u in during if u.HasField("hit")], during
        assert all(amounts(u) == before for u in during), (before, during)
        await pulse.stop()
        await lock.rollback()
        hits = await eventually(lambda: [u.hit for u in seen if u.HasField("hit")] or None, 15,
                                "the hit once committed")
        paid = await settle
        assert [(h.hand, h.amount_cents, h.hit_id) for h in hits] == [
            ("royal_flush", paid.payouts[0].amount_cents, paid.payouts[0].hit_id)]
    finally:
        await pulse.stop()
        await frozen.close()
        stream.cancel()
        with contextlib.suppress(BaseException):
            await reader


async def test_every_watcher_sees_every_hit_and_the_final_amounts(client: Client) -> None:
    link, table = unique("fan"), unique("t")
    await client.create_link(link)
    await client.register(table, link)
    watchers = [client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link)) for _ in range(200)]
    stalled = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))  # opened, never read
    try:
        for w in watchers:
            await next_matching(w, lambda _: True, 10, "a snapshot")
        hit_ids = []
        for r in range(12):
            await client.commit(table, f"r{r}", [1, 2])
            paid = await client.settle(table, f"r{r}", {1: FLUSH} if r % 3 == 0 else {})
            hit_ids += [p.hit_id for p in paid.payouts]
        final = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))

        async def follow(stream: Any) -> list[str]:
            seen = []
            async with asyncio.timeout(20):
                async for u in stream:
                    if u.HasField("hit"):
                        seen.append(u.hit.hit_id)
                    if u.sequence >= final.sequence and not u.HasField("hit") and len(seen) == len(hit_ids):
                        assert amounts(u) == amounts(final)
                        return seen
            raise AssertionError("the stream ended")

        results = await asyncio.gather(*(follow(w) for w in watchers))
        assert all(seen == hit_ids for seen in results) and len(hit_ids) == 4
        # all that while one stream was never read: it delayed no one, and it was not let go (it has it all too)
        assert await follow(stalled) == hit_ids
    finally:
        for w in [*watchers, stalled]:
            w.cancel()


async def test_a_decision_is_announced_pending_then_paid(client: Client) -> None:
    link, table = unique("dec"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000}, threshold=500_000)
    await client.register(table, link)
    stream = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    try:
        await next_matching(stream, lambda _: True, 5, "the snapshot")
        await client.commit(table, "r1", [2])
        paid = await client.settle(table, "r1", {2: ROYAL})
        held = (await next_matching(stream, lambda u: u.HasField("hit"), 10, "the held hit")).hit
        assert (held.hit_id, held.status) == (paid.payouts[0].hit_id, "PENDING")
        await client.admin.ApproveHit(admin_pb2.ApproveHitRequest(request_id=rid(), hit_id=held.hit_id, audit=AUDIT))
        approved = (await next_matching(stream, lambda u: u.HasField("hit"), 10, "the approval")).hit
        assert (approved.hit_id, approved.status, approved.hand) == (held.hit_id, "PAID", "royal_flush")
    finally:
        stream.cancel()


async def test_a_stream_of_an_unknown_link_is_not_found(client: Client) -> None:
    stream = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=unique("none")))
    try:
        await next_matching(stream, lambda _: True, 5, "an error")
    except grpc.aio.AioRpcError as e:
        assert e.code() == grpc.StatusCode.NOT_FOUND
    else:
        raise AssertionError("a stream of a link that does not exist was answered")


async def test_signs_show_tables_coming_online_suspended_and_going_offline(client: Client) -> None:
    link, table = unique("tbl"), unique("t")
    await client.create_link(link)
    await client.register(table, link)
    sign = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    meter = None
    try:
        def status(u: Any) -> tuple[bool, bool] | None:
            found = [(t.online, t.suspended) for t in u.tables if t.table_id == table]
            return found[0] if found else None

        first = await next_matching(sign, lambda _: True, 5, "the snapshot")
        assert status(first) == (False, False)  # no controller holds a meter stream yet
        meter = client.table.WatchMeter(table_pb2.WatchMeterRequest(table_id=table))
        await next_matching(meter, lambda _: True, 5, "the meter's first update")
        await next_matching(sign, lambda u: status(u) == (True, False), 10, "the table online")
        await client.admin.SuspendTable(admin_pb2.SuspendTableRequest(request_id=rid(), table_id=table, audit=AUDIT))
        await next_matching(sign, lambda u: status(u) == (True, True), 10, "the table suspended")
        meter.cancel()
        meter = None
        await next_matching(sign, lambda u: status(u) == (False, True), 15, "the table offline")
    finally:
        sign.cancel()
        if meter is not None:
            meter.cancel()


async def test_watchers_and_feed_reads_are_counted(client: Client) -> None:
    from prometheus_client import REGISTRY  # the in-process server's own metrics

    link, table = unique("met"), unique("t")
    await client.create_link(link)
    await client.register(table, link)
    streams = [client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link)) for _ in range(3)]
    try:
        for s in streams:
            await next_matching(s, lambda _: True, 5, "a snapshot")
        assert REGISTRY.get_sample_value("jackpotd_watchers", {"link": link}) == 3
        await client.commit(table, "r1", [1])
        await next_matching(streams[0], lambda u: u.sequence > 0, 5, "the commit")
        await eventually(lambda: (REGISTRY.get_sample_value("jackpotd_feed_reads_total", {"link": link}) or 0) >= 1,
                         5, "a feed read counted")
    finally:
        for s in streams:
            s.cancel()
    await eventually(lambda: REGISTRY.get_sample_value("jackpotd_watchers", {"link": link}) == 0, 5,
                     "the streams counted out")
