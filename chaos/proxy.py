"""A small asyncio TCP fault proxy: many routes (listen address -> target address) in one process, each route's
faults set at run time, per client address, through a control socket (a Unix socket speaking JSON lines).

Faults, per direction where it makes sense ("up" is client -> server, "down" server -> client): latency (fixed +
jitter, order kept), stall (bytes held until cleared), reset (existing and new connections get a TCP RST:
SO_LINGER 0), a bandwidth limit (bytes/s) and a one-way blackhole (bytes dropped, the connection kept open).
Faults apply to connections already open as well as new ones. Run: `python -m chaos.proxy --control PATH
--route NAME=HOST:PORT>HOST:PORT ...`; `ProxyControl` is the client the harness uses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

ANY = "*"  # the faults of every client address no specific entry names
DIRECTIONS = ("up", "down")
CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Faults:
    """What a route does to the bytes of one client address; the default does nothing."""

    latency_up_ms: int = 0
    latency_down_ms: int = 0
    jitter_ms: int = 0  # added to each chunk's latency, uniformly in [0, jitter_ms], order kept
    stall: bool = False  # hold every byte (both ways) until cleared
    reset: bool = False  # RST the open connections and every new one
    bandwidth: int = 0  # bytes per second per direction; 0: unlimited
    blackhole: str = ""  # "", "up", "down" or "both": bytes that way are dropped, the connection stays open

    @staticmethod
    def of(fields: Mapping[str, Any]) -> Faults:
        """Faults from a control message's object, refusing unknown names and bad values."""
        known = set(Faults.__dataclass_fields__)
        unknown = set(fields) - known
        if unknown:
            raise ValueError(f"unknown fault field(s) {sorted(unknown)}; known: {sorted(known)}")
        faults = Faults(**fields)
        if faults.blackhole not in ("", "up", "down", "both"):
            raise ValueError(f"blackhole must be '', 'up', 'down' or 'both', not {faults.blackhole!r}")
        for name in ("latency_up_ms", "latency_down_ms", "jitter_ms", "bandwidth"):
            value = getattr(faults, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        return faults

    def latency_ms(self, direction: str) -> int:
        """The fixed latency of one direction."""
        return self.latency_up_ms if direction == "up" else self.latency_down_ms

    def drops(self, direction: str) -> bool:
        """Whether bytes going `direction` are blackholed."""
        return self.blackhole in (direction, "both")


def _rst(writer: asyncio.StreamWriter) -> None:
    """Abort a connection with a TCP RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@dataclass(eq=False)
class _Connection:
    """One proxied connection: a client's and the target's streams, and the pumps between them."""

    peer: str
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    server: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def reset(self) -> None:
        """RST both sides and stop pumping."""
        for _, writer in (self.client, self.server):
            _rst(writer)
        for task in self.tasks:
            task.cancel()


@dataclass(eq=False)
class Route:
    """A listen address forwarded to a target address, with faults per client address."""

    name: str
    listen: tuple[str, int]
    target: tuple[str, int]
    faults: dict[str, Faults] = field(default_factory=dict)
    connections: set[_Connection] = field(default_factory=set)
    server: asyncio.Server | None = None
    rng: random.Random = field(default_factory=random.Random)

    def faults_of(self, peer: str) -> Faults:
        """The faults applying to a client address: its own entry, else the route's `*` entry."""
        return self.faults.get(peer) or self.faults.get(ANY) or Faults()

    def set(self, peer: str, faults: Faults) -> None:
        """Set (replace) one client address's faults; a reset takes effect at once on the open connections."""
        if faults == Faults():
            self.faults.pop(peer, None)
        else:
            self.faults[peer] = faults
        if faults.reset:
            for conn in list(self.connections):
                if peer == ANY or conn.peer == peer:
                    conn.reset()

    async def start(self) -> None:
        """Listen (SO_REUSEADDR, so a restarted proxy rebinds at once)."""
        self.server = await asyncio.start_server(self._accept, self.listen[0], self.listen[1], reuse_address=True)
        if self.listen[1] == 0:
            self.listen = (self.listen[0], int(self.server.sockets[0].getsockname()[1]))

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: RST at once under a reset fault, else pumped both ways to the target."""
        peer = str(writer.get_extra_info("peername")[0])
        if self.faults_of(peer).reset:
            _rst(writer)
            return
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(*self.target), 10)
        except (OSError, TimeoutError):
            _rst(writer)
            return
        conn = _Connection(peer, (reader, writer), upstream)
        self.connections.add(conn)
        conn.tasks = [asyncio.create_task(self._pump(conn, "up")), asyncio.create_task(self._pump(conn, "down"))]
        try:
            await asyncio.gather(*conn.tasks, return_exceptions=True)
        finally:
            self.connections.discard(conn)
            for _, w in (conn.client, conn.server):
                w.transport.abort()

    async def _pump(self, conn: _Connection, direction: str) -> None:
        """Move one direction's bytes: a reader stamping chunks, a sender delivering them when their faults allow."""
        source, sink = (conn.client[0], conn.server[1]) if direction == "up" else (conn.server[0], conn.client[1])
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            """Read the source, stamping each chunk with when it is due; blackholed bytes are dropped."""
            while True:
                try:
                    data = await source.read(CHUNK)
                except (ConnectionError, OSError):
                    data = b""
                faults = self.faults_of(conn.peer)
                if data and faults.drops(direction):
                    continue
                delay = (faults.latency_ms(direction) + self.rng.uniform(0, faults.jitter_ms)) / 1000
                await queue.put((time.monotonic() + delay, data))
                if not data:
                    return

        reading = asyncio.create_task(read())
        due_before = 0.0
        try:
            while True:
                due, data = await queue.get()
                due = max(due, due_before)  # jitter never reorders bytes
                due_before = due
                while self.faults_of(conn.peer).stall or time.monotonic() < due:
                    await asyncio.sleep(min(0.01, max(0.0, due - time.monotonic())) or 0.01)
                if not data:
                    with contextlib.suppress(OSError):
                        if sink.can_write_eof():
                            sink.write_eof()
                    return
                if self.faults_of(conn.peer).drops(direction):  # blackholed while it waited
                    continue
                bandwidth = self.faults_of(conn.peer).bandwidth
                step = max(1, bandwidth // 20) if bandwidth else len(data)
                for at in range(0, len(data), step):
                    sink.write(data[at:at + step])
                    await sink.drain()
                    if bandwidth:
                        await asyncio.sleep(step / bandwidth)
        except (ConnectionError, OSError):
            conn.reset()
        finally:
            reading.cancel()

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        if self.server is not None:
            self.server.close()
        for conn in list(self.connections):
            conn.reset()


class Proxy:
    """The routes of one proxy process and the control socket that sets their faults."""

    def __init__(self, routes: list[Route]) -> None:
        """Routes by name; the control socket is opened by `start`."""
        self.routes = {r.name: r for r in routes}
        self.control: asyncio.Server | None = None

    async def start(self, control_path: str | None = None) -> Proxy:
        """Listen on every route, and on the control socket when given."""
        for route in self.routes.values():
            await route.start()
        if control_path is not None:
            self.control = await asyncio.start_unix_server(self._serve_control, control_path)
        return self

    def apply(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """One control message: set a route's faults for a peer, clear them, or list the routes."""
        op = message.get("op")
        if op == "routes":
            return {"ok": True, "routes": {n: {"listen": list(r.listen), "target": list(r.target),
                                                "faults": {p: asdict(f) for p, f in r.faults.items()},
                                                "connections": len(r.connections)}
                                            for n, r in self.routes.items()}}
        names = list(self.routes) if message.get("route", ANY) == ANY else [str(message.get("route"))]
        unknown = [n for n in names if n not in self.routes]
        if unknown:
            raise ValueError(f"no route {unknown[0]!r}; routes: {sorted(self.routes)}")
        peer = str(message.get("peer", ANY))
        if op == "set":
            faults = Faults.of(message.get("faults", {}))
            for n in names:
                self.routes[n].set(peer, faults)
        elif op == "clear":
            for n in names:
                route = self.routes[n]
                for p in [p for p in route.faults if peer in (ANY, p)]:
                    route.faults.pop(p)
        else:
            raise ValueError(f"op must be 'set', 'clear' or 'routes', not {op!r}")
        return {"ok": True}

    async def _serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one control connection's JSON lines, one answer a line."""
        try:
            while line := await reader.readline():
                try:
                    answer = self.apply(json.loads(line))
                except (ValueError, TypeError) as e:
                    answer = {"ok": False, "error": str(e)}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        """Stop the control socket and every route."""
        if self.control is not None:
            self.control.close()
        for route in self.routes.values():
            await route.close()


class ProxyControl:
    """The harness's side of a proxy's control socket: one JSON line out, one back."""

    def __init__(self, path: str) -> None:
        """The control socket's path."""
        self.path = path

    async def call(self, message: Mapping[str, Any], timeout: float = 5) -> dict[str, Any]:
        """Send one message and return the answer; RuntimeError with the proxy's reason when refused."""
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self.path), timeout)
        try:
            writer.write(json.dumps(message).encode() + b"\n")
            await writer.drain()
            answer: dict[str, Any] = json.loads(await asyncio.wait_for(reader.readline(), timeout))
        finally:
            writer.close()
        if not answer.get("ok"):
            raise RuntimeError(f"proxy {self.path}: {answer.get('error')}")
        return answer

    async def set(self, route: str, peer: str = ANY, **faults: Any) -> None:
        """Set the faults of `route` (or `*`, every route) for client address `peer` (or `*`, every one)."""
        await self.call({"op": "set", "route": route, "peer": peer, "faults": faults})

    async def clear(self, route: str = ANY, peer: str = ANY) -> None:
        """Clear the faults of `route` (or every route) for `peer` (or every client address)."""
        await self.call({"op": "clear", "route": route, "peer": peer})


def parse_route(text: str) -> Route:
    """NAME=HOST:PORT>HOST:PORT."""
    name, _, rest = text.partition("=")
    listen, _, target = rest.partition(">")
    lh, _, lp = listen.rpartition(":")
    th, _, tp = target.rpartition(":")
    if not (name and lh and lp.isdigit() and th and tp.isdigit()):
        raise argparse.ArgumentTypeError(f"--route must be NAME=HOST:PORT>HOST:PORT, not {text!r}")
    return Route(name, (lh, int(lp)), (th, int(tp)))


async def _main(args: argparse.Namespace) -> None:
    """Serve the routes until SIGTERM or Ctrl-C."""
    proxy = await Proxy(args.route).start(args.control)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("proxy ready: " + " ".join(f"{r.name}={r.listen[0]}:{r.listen[1]}>{r.target[0]}:{r.target[1]}"
                                      for r in proxy.routes.values()), flush=True)
    await stop.wait()
    await proxy.close()


def main() -> None:
    """The command line: `python -m chaos.proxy`."""
    p = argparse.ArgumentParser(prog="python -m chaos.proxy", description=__doc__)
    p.add_argument("--control", required=True, help="the control socket's path (JSON lines)")
    p.add_argument("--route", action="append", type=parse_route, required=True,
                   help="NAME=LISTEN_HOST:PORT>TARGET_HOST:PORT (repeat)")
    asyncio.run(_main(p.parse_args()))


if __name__ == "__main__":
    main()


