"""Defects the chaos harness found (issue 23), each reproduced alone with the harness's fault proxy (chaos/proxy.py)
in process. A defect not fixed yet is a strict xfail naming it: when the fix lands the test passes, strict
xfail turns that into a failure, and the marker comes off."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from chaos.proxy import Faults, Proxy, Route
from jackpotd.embedded import free_port
from jackpotd.store.shards import ALL, SHARDS, shard_of

from ..conftest import Isolated, Servers
from .harness import Client, eventually
from .process import ServerProcess
from .test_recovery import new_link


def _tcp_redis(servers: Servers, isolated: Isolated) -> tuple[str, int, int]:
    """The isolated Redis db as TCP (host, port, db): a proxy forwards TCP."""
    found = re.search(r"(?:[?&]db=|/)(\d+)$", isolated.redis_url)
    return "127.0.0.1", servers.valkey.port, int(found.group(1)) if found else 0


async def _acknowledged_within(client: Client, table: str, seconds: float) -> float | None:
    """Commit one round, retrying with the same request id; how long it took, or None if not within `seconds`."""
    start = time.monotonic()
    request_id = f"chaos-{int(start * 1000)}"
    while time.monotonic() - start < seconds:
        try:
            await asyncio.wait_for(client.commit(table, request_id, [1], request_id=request_id), 3)
            return time.monotonic() - start
        except (grpc.aio.AioRpcError, TimeoutError):
            await asyncio.sleep(0.2)
    return None


@pytest.fixture
async def relay(servers: Servers, isolated: Isolated) -> AsyncIterator[tuple[Proxy, list[str]]]:
    """One proxy route to the isolated Valkey per writer; their redis:// URLs."""
    host, port, db = _tcp_redis(servers, isolated)
    proxy = await Proxy([Route(f"w{n}", ("127.0.0.1", 0), (host, port)) for n in (1, 2)]).start()
    password = servers.valkey.password or ""
    urls = [f"redis://:{password}@127.0.0.1:{proxy.routes[f'w{n}'].listen[1]}/{db}" for n in (1, 2)]
    try:
        yield proxy, urls
    finally:
        await proxy.close()


async def test_a_writer_cut_off_from_valkey_gives_its_shards_up(isolated: Isolated, tmp_path: Path,
                                                                 relay: tuple[Proxy, list[str]]) -> None:
    """Finding C: the writer of a link's shard loses Valkey (not PostgreSQL); the other must take the shard over."""
    proxy, urls = relay
    writers = [ServerProcess(free_port(), tmp_path / f"writer-{n}.log", redis_url=url, dsn=isolated.dsn,
                             metrics_port=free_port(), command="writer") for n, url in enumerate(urls, 1)]
    api = ServerProcess(free_port(), tmp_path / "grpc.log", redis_url=isolated.redis_url, dsn=isolated.dsn,
                        workers=0, command="grpc")
    client = None
    try:
        await asyncio.to_thread(writers[0].start)
        await eventually(lambda: writers[0].shards() == ALL, 30, "the first writer writes every shard")
        await asyncio.to_thread(writers[1].start)
        await asyncio.to_thread(api.start)
        await eventually(lambda: len(writers[0].shards()) == len(writers[1].shards()) == SHARDS // 2, 30,
                         "the writers share the shards")
        client = await Client.connect(api.target, isolated.dsn, isolated.redis_url)
        link, [before, after] = await new_link(client, 2)
        assert await _acknowledged_within(client, before, 10) is not None
        holder = next(n for n, w in enumerate(writers) if shard_of(link) in w.shards())
        proxy.routes[f"w{holder + 1}"].set("*", Faults(blackhole="both"))  # its Valkey, not its PostgreSQL
        took = await _acknowledged_within(client, after, 20)
        # the bound for a lease holder that cannot do its work: gone within 5 s, taken over within 5 more
        assert took is not None and took < 12, f"not acknowledged within 20 s of cutting writer {holder + 1} off"
    finally:
        if client is not None:
            await client.close()
        for p in [*writers, api]:
            if p.proc is not None and p.proc.poll() is None:
                p.kill9()
