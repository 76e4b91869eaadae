"""A jackpotd served in-process on the session's embedded servers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio

from jackpotd.app import serve
from jackpotd.clock import Clock, now_ms
from jackpotd.embedded import EmbeddedValkey, free_port
from jackpotd.settings import Settings

from ..conftest import AUTH_KEY_FILE, Isolated, Servers
from .harness import Client
from .process import ServerProcess


@pytest_asyncio.fixture(scope="session")
async def target(servers: Servers) -> AsyncIterator[str]:
    listen = f"127.0.0.1:{free_port()}"
    settings = Settings(redis_url=servers.redis_url(0), postgres_dsn=servers.dsn(), listen=listen, metrics_port=0,
                        auth_key_file=AUTH_KEY_FILE,
                        workers=0)
    task, stop = await start_private(settings)
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


@dataclass
class Private:
    """jackpotd in-process on a Valkey of its own (to flush, stop or restart) and a database of its own."""

    client: Client
    valkey: EmbeddedValkey
    settings: Settings
    task: asyncio.Task[None]
    stop: asyncio.Event

    @property
    def target(self) -> str:
        return self.settings.listen


async def start_private(settings: Settings, clock: Clock = now_ms,
                        role: str = "all") -> tuple[asyncio.Task[None], asyncio.Event]:
    """`serve` in this process (dating entries by `clock`, in `role`); returns once it serves (or raises why it
    could not), with its stop event."""
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(settings, ready=ready, stop=stop, clock=clock, role=role))
    waiting = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait([task, waiting], timeout=120, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiting.cancel()
        task.result()
    if not ready.is_set():
        waiting.cancel()
        stop.set()
        raise AssertionError(f"jackpotd did not start serving on {settings.listen} (waited up to 120 s)")
    return task, stop


@contextlib.asynccontextmanager
async def open_private(isolated: Isolated, tmp_path: Path, clock: Clock = now_ms, role: str = "all",
                       **settings: Any) -> AsyncIterator[Private]:
    """jackpotd in-process on a Valkey of its own and the isolated database; `settings` override defaults, `clock`
    dates its entries."""
    valkey = EmbeddedValkey(tmp_path / "valkey").start()
    config = Settings(**{"redis_url": valkey.url, "postgres_dsn": isolated.dsn, "listen": f"127.0.0.1:{free_port()}",
                         "metrics_port": 0, "workers": 0, "auth_key_file": AUTH_KEY_FILE, **settings})
    task, stop = await start_private(config, clock, role)
    client = await Client.connect(config.listen, isolated.dsn, valkey.url)
    p = Private(client, valkey, config, task, stop)
    try:
        yield p
    finally:
        await client.close()
        p.stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(p.task, 30)
        valkey.stop()


@pytest_asyncio.fixture
async def private(isolated: Isolated, tmp_path: Path) -> AsyncIterator[Private]:
    async with open_private(isolated, tmp_path) as p:
        yield p
