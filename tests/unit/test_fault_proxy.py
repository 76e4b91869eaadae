"""The chaos harness's fault proxy (issue 23), in process on loopback: each fault set through its control socket
does what it says to an echo server's bytes, per client address, and clearing it puts things back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaos.proxy import Proxy, ProxyControl, Route, parse_route


@dataclass
class Rig:
    """An echo server behind a one-route proxy, and the proxy's control."""

    proxy: Proxy
    control: ProxyControl
    received: list[bytes]

    @property
    def port(self) -> int:
        """The proxy's listening port."""
        return self.proxy.routes["echo"].listen[1]

    async def connect(self, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the proxy from `source`."""
        return await asyncio.open_connection("127.0.0.1", self.port, local_addr=(source, 0))


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    """An echo server on loopback behind a one-route proxy with a control socket."""
    received: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Echo every byte back, recording what arrived."""
        try:
            while data := await reader.read(65536):
                received.append(data)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    target = server.sockets[0].getsockname()[1]
    control = str(tmp_path / "proxy.sock")
    proxy = await Proxy([Route("echo", ("127.0.0.1", 0), ("127.0.0.1", target))]).start(control)
    try:
        yield Rig(proxy, ProxyControl(control), received)
    finally:
        await proxy.close()
        server.close()


async def _round_trip(rig: Rig, payload: bytes = b"ping", source: str = "127.0.0.1") -> float:
    """Send `payload` from `source` and read it back; the seconds it took."""
    reader, writer = await rig.connect(source)
    try:
        start = time.monotonic()
        writer.write(payload)
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(len(payload)), 10) == payload
        return time.monotonic() - start
    finally:
        writer.close()


async def test_bytes_pass_unchanged_without_faults(rig: Rig) -> None:
    """Without faults the proxy is a plain relay, 200 kB included."""
    assert await _round_trip(rig, b"x" * 200_000) < 2


async def test_latency_delays_each_direction_and_clears(rig: Rig) -> None:
    """Latency up plus down delays a round trip by their sum; clearing it removes it."""
    await rig.control.set("echo", latency_up_ms=150, latency_down_ms=100, jitter_ms=20)
    assert await _round_trip(rig) >= 0.25
    await rig.control.clear("echo")
    assert await _round_trip(rig) < 0.2


async def test_a_stall_holds_bytes_until_cleared(rig: Rig) -> None:
    """A stall holds bytes before the server; cleared, they arrive."""
    reader, writer = await rig.connect()
    await rig.control.set("echo", stall=True)
    writer.write(b"held")
    await writer.drain()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.readexactly(4), 0.4)
    assert rig.received == []  # held before the server, not just on the way back
    await rig.control.clear("echo")
    assert await asyncio.wait_for(reader.readexactly(4), 5) == b"held"
    writer.close()


async def test_a_reset_rsts_open_and_new_connections(rig: Rig) -> None:
    """A reset RSTs the open connection and every new one until cleared."""
    reader, writer = await rig.connect()
    writer.write(b"a")
    assert await asyncio.wait_for(reader.readexactly(1), 5) == b"a"
    await rig.control.set("echo", reset=True)
    with pytest.raises(ConnectionResetError):  # an RST, not an orderly end of stream
        await asyncio.wait_for(reader.read(1), 5)
    writer.close()
    reader, writer = await rig.connect()
    with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
        await asyncio.wait_for(reader.readexactly(1), 5)
    writer.close()
    await rig.control.clear("echo")
    await _round_trip(rig)


async def test_a_bandwidth_limit_paces_the_bytes(rig: Rig) -> None:
    """100 kB/s paces 40 kB each way over 0.35 s or more."""
    await rig.control.set("echo", bandwidth=100_000)
    took = await _round_trip(rig, b"y" * 40_000)  # 40 kB up and back at 100 kB/s each way
    assert took >= 0.35
    await rig.control.clear("echo")
    assert await _round_trip(rig, b"y" * 40_000) < 0.3


async def test_a_one_way_blackhole_drops_bytes_and_keeps_the_connection(rig: Rig) -> None:
    """A blackhole drops one way's bytes and keeps the connection open for later."""
    reader, writer = await rig.connect()
    await rig.control.set("echo", blackhole="down")  # the server gets them, the client hears nothing back
    writer.write(b"lost")
    await writer.drain()
    deadline = time.monotonic() + 5
    while b"".join(rig.received) != b"lost" and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert b"".join(rig.received) == b"lost"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.readexactly(4), 0.4)
    await rig.control.set("echo", blackhole="up")  # now the other way: the server gets nothing
    writer.write(b"gone")
    await writer.drain()
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.readexactly(4), 0.4)
    assert b"".join(rig.received) == b"lost"
    await rig.control.clear("echo")
    writer.write(b"back")  # the same connection, still open, works again
    assert await asyncio.wait_for(reader.readexactly(4), 5) == b"back"
    writer.close()


async def test_faults_apply_per_client_address(rig: Rig) -> None:
    """A fault for 127.0.0.2 leaves 127.0.0.1's connections alone."""
    await rig.control.set("echo", "127.0.0.2", stall=True)
    assert await _round_trip(rig, source="127.0.0.1") < 1  # another client is not touched
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(_round_trip(rig, source="127.0.0.2"), 0.4)
    await rig.control.clear("echo", "127.0.0.2")
    assert await _round_trip(rig, source="127.0.0.2") < 1


async def test_bad_control_messages_name_what_is_wrong(rig: Rig) -> None:
    """A bad control message is refused naming the field and value, and changes nothing."""
    with pytest.raises(RuntimeError, match="latency_up_ms must be a non-negative integer, not -1"):
        await rig.control.set("echo", latency_up_ms=-1)
    with pytest.raises(RuntimeError, match=r"unknown fault field\(s\) \['lag'\]"):
        await rig.control.set("echo", lag=1)
    with pytest.raises(RuntimeError, match="no route 'nope'"):
        await rig.control.set("nope", stall=True)
    assert (await rig.control.call({"op": "routes"}))["routes"]["echo"]["faults"] == {}


def test_routes_parse_from_the_command_line() -> None:
    """--route NAME=HOST:PORT>HOST:PORT."""
    route = parse_route("pg=10.213.0.10:5432>127.0.0.1:40000")
    assert (route.name, route.listen, route.target) == ("pg", ("10.213.0.10", 5432), ("127.0.0.1", 40000))
