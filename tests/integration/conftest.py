"""A jackpotd served in-process on the session's embedded servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from jackpotd.app import serve
from jackpotd.embedded import free_port
from jackpotd.settings import Settings

from ..conftest import Isolated, Servers
from .harness import Client
from .process import ServerProcess


@pytest_asyncio.fixture(scope="session")
async def target(servers: Servers) -> AsyncIterator[str]:
    listen = f"127.0.0.1:{free_port()}"
    settings = Settings(redis_url=servers.redis_url(0), postgres_dsn=servers.dsn(), listen=listen, metrics_port=0,
                        workers=0)
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(settings, ready=ready, stop=stop))
    done, _ = await asyncio.wait([task, asyncio.create_task(ready.wait())], return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()
    yield listen
    stop.set()
    await task


@pytest_asyncio.fixture(scope="session")
async def client(target: str, servers: Servers) -> AsyncIterator[Client]:
    c = await Client.connect(target, servers.dsn(), servers.redis_url(0))
    yield c
    await c.close()


@pytest_asyncio.fixture
async def proc_service(isolated: Isolated, tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, Client]]:
    """`jackpotd serve` in its own process on stores of its own, and a client of it."""
    server = ServerProcess(free_port(), tmp_path / "jackpotd.log", redis_url=isolated.redis_url, dsn=isolated.dsn)
    await asyncio.to_thread(server.start)
    client = await Client.connect(server.target, isolated.dsn, isolated.redis_url)
    yield server, client
    await client.close()
    if server.proc and server.proc.poll() is None:
        server.interrupt()
