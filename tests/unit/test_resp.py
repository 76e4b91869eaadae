"""The hot path's RESP pipeline: how it reads URLs (TLS included) and how it gives up on a silent server."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest

from jackpotd.service.errors import Unavailable
from jackpotd.store.resp import RespPipeline


class Refused(Exception):
    """Stands in for the network once open_connection has shown what it was given."""


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    async def open_connection(host: str, port: int, **kwargs: Any) -> Any:
        calls.append({"host": host, "port": port, **kwargs})
        raise Refused

    monkeypatch.setattr(asyncio, "open_connection", open_connection)
    return calls


async def test_rediss_connects_with_tls_verified_by_default(opened: list[dict[str, Any]]) -> None:
    resp = RespPipeline("rediss://:secret@redis.internal:6380/2")
    with pytest.raises(Refused):
        await resp.execute([["PING"]])
    (call,) = opened
    assert (call["host"], call["port"], resp.db, resp.password) == ("redis.internal", 6380, 2, "secret")
    context = call["ssl"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


async def test_rediss_options_are_redis_py_s(opened: list[dict[str, Any]]) -> None:
    resp = RespPipeline("rediss://redis.internal:6380/0?ssl_cert_reqs=none")
    with pytest.raises(Refused):
        await resp.execute([["PING"]])
    assert opened[0]["ssl"].verify_mode == ssl.CERT_NONE
    assert not opened[0]["ssl"].check_hostname


def test_a_missing_ca_file_fails_at_once() -> None:
    with pytest.raises(OSError):
        RespPipeline("rediss://redis.internal:6380/0?ssl_ca_certs=/nonexistent/ca.pem")


async def test_plain_redis_has_no_tls(opened: list[dict[str, Any]]) -> None:
    with pytest.raises(Refused):
        await RespPipeline("redis://127.0.0.1:6390/5").execute([["PING"]])
    assert opened[0]["ssl"] is None


def test_timeouts_from_the_url_as_redis_py_names_them() -> None:
    resp = RespPipeline("redis://127.0.0.1:6390/0?socket_timeout=0.5&socket_connect_timeout=1.5")
    assert (resp.timeout, resp.connect_timeout) == (0.5, 1.5)
    assert RespPipeline("redis://127.0.0.1:6390/0").timeout == 5.0


@contextlib.asynccontextmanager
async def silent_server(heard: asyncio.Event | None = None) -> AsyncIterator[int]:
    """Accepts connections, reads whatever comes (setting `heard` once something came), never answers."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while await reader.read(65536):
                if heard is not None:
                    heard.set()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_a_call_without_an_answer_times_out_as_unavailable() -> None:
    async with silent_server() as port:
        resp = RespPipeline(f"redis://127.0.0.1:{port}/0", timeout=0.2)
        started = asyncio.get_running_loop().time()
        with pytest.raises(Unavailable, match=r"did not answer within 0\.2 s"):
            await resp.execute([["PING"]])
        assert asyncio.get_running_loop().time() - started < 2
        assert resp._conn is None  # a late reply must never answer the next batch
        with pytest.raises(Unavailable):
            await resp.execute([["PING"]], timeout=0.1)
        await resp.close()


async def test_a_connection_set_up_without_an_answer_times_out_as_unavailable() -> None:
    async with silent_server() as port:
        resp = RespPipeline(f"redis://:pw@127.0.0.1:{port}/0", connect_timeout=0.2)  # AUTH is never answered
        with pytest.raises(Unavailable, match=r"did not accept a connection within 0\.2 s"):
            await resp.execute([["PING"]])
        assert resp._conn is None


async def test_a_cancelled_batch_drops_the_connection() -> None:
    heard = asyncio.Event()
    async with silent_server(heard) as port:
        resp = RespPipeline(f"redis://127.0.0.1:{port}/0")
        task = asyncio.create_task(resp.execute([["PING"]]))
        await asyncio.wait_for(heard.wait(), 5)  # the batch is on the wire, waiting for its answer
        assert resp._conn is not None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert resp._conn is None
