"""Signs see a snapshot, then updates and hit announcements; a lost store answers UNAVAILABLE, safe to retry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import display_pb2, table_pb2
from jackpotd.app import serve
from jackpotd.embedded import EmbeddedValkey, free_port
from jackpotd.settings import Settings

from ..conftest import Servers, unique
from .harness import Client


async def test_watch_pools_snapshot_then_hit_announcement(client: Client) -> None:
    link, table = unique("sign"), unique("tbl")
    await client.create_link(link, resets={"MAJOR": 1_000_000})
    await client.register(table, link)
    await client.fund(link, "MAJOR", 2_000_000)
    stream = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
    first = await stream.read()
    assert {p.pool: p.amount_cents for p in first.pools}["MAJOR"] == 2_000_000
    await client.commit(table, "r1", [3])
    await client.settle(table, "r1", {3: ["9h", "8h", "7h", "6h", "5h"]})
    hit = None
    for _ in range(10):
        update = await asyncio.wait_for(stream.read(), 5)
        if update.HasField("hit"):
            hit = update.hit
            break
    assert hit is not None
    assert (hit.table_id, hit.seat, hit.hand, hit.pool) == (table, 3, "straight_flush", "MAJOR")
    assert hit.amount_cents == 200_002  # 10% of $20,000.20, floored to the cent
    assert hit.pool_amount_after_cents == 2_000_020 - 200_002
    stream.cancel()


async def test_watch_meter_reports_jackpot_enabled(client: Client) -> None:
    link, table = unique("meter"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    stream = client.table.WatchMeter(table_pb2.WatchMeterRequest(table_id=table))
    first = await stream.read()
    assert first.jackpot_enabled and first.link_id == link
    stream.cancel()


async def test_store_unavailable_is_unavailable_and_safe_to_retry(servers: Servers, tmp_path: Path) -> None:
    valkey = EmbeddedValkey(tmp_path / "valkey").start()
    listen = f"127.0.0.1:{free_port()}"
    settings = Settings(redis_url=valkey.url, postgres_dsn=servers.dsn(), listen=listen, metrics_port=0, workers=0)
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(settings, ready=ready, stop=stop))
    await asyncio.wait_for(ready.wait(), 60)
    c = await Client.connect(listen, servers.dsn(), valkey.url)
    try:
        link, table = unique("down"), unique("tbl")
        await c.create_link(link)
        await c.register(table, link)
        valkey.stop()
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await c.commit(table, "r1", [1])
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "retry with the same request_id" in (err.value.details() or "")
    finally:
        await c.channel.close()
        await c.pg.close()
        stop.set()
        await task
