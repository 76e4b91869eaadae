"""A TCP relay a test can cut or slow: between one process and a store, it forwards every byte until `cut`, then
holds them (both ways, new connections too) until `heal`, as a partition does: nothing is lost or reset, only late.
`delay` holds every chunk that many seconds in each direction (in order), as a slow network does."""

from __future__ import annotations

import asyncio
import contextlib


class Relay:
    """Listens on 127.0.0.1:<port> and relays to `host:port`; `cut` and `heal` the path while connections stay open."""

    def __init__(self, host: str, port: int, unix_path: str = "") -> None:
        self.host, self.target_port, self.unix_path = host, port, unix_path  # unix_path: a unix socket instead
        self.port = 0
        self._open = asyncio.Event()
        self._open.set()
        self.latency = 0.0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> Relay:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def cut(self) -> None:
        """Stop every byte, both ways, from now until `heal`."""
        self._open.clear()

    def heal(self) -> None:
        """Forward again, at once: what was held goes first; no more latency."""
        self.latency = 0.0
        self._open.set()

    def delay(self, seconds: float) -> None:
        """Hold every chunk read from now `seconds` before forwarding it, each way (order kept)."""
        self.latency = seconds

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = (await asyncio.open_unix_connection(self.unix_path) if self.unix_path else
                                    await asyncio.open_connection(self.host, self.target_port))
        except OSError:
            writer.close()
            return
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
            for task in (asyncio.create_task(self._pump(source, queue)),
                         asyncio.create_task(self._deliver(queue, sink))):
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _pump(self, source: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes]]) -> None:
        """Read bytes while the path is open, each chunk due `latency` seconds after it was read (b"": the end)."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._open.wait()
                data = await source.read(65536)
                queue.put_nowait((loop.time() + self.latency, data))
                if not data:
                    break
        except (ConnectionError, OSError):
            queue.put_nowait((0.0, b""))

    async def _deliver(self, queue: asyncio.Queue[tuple[float, bytes]], sink: asyncio.StreamWriter) -> None:
        """Forward each chunk once it is due and the path is open; a chunk read while it is cut waits for the heal."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                due, data = await queue.get()
                if self.latency and due > loop.time():
                    await asyncio.sleep(due - loop.time())  # the latency itself, not a wait for an event
                await self._open.wait()
                if not data:
                    break
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            sink.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
