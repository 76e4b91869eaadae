"""A TCP relay a test can cut: between one process and PostgreSQL, it forwards every byte until `cut`, then holds
them (both ways, new connections too) until `heal`, as a partition does: nothing is lost or reset, only late."""

from __future__ import annotations

import asyncio
import contextlib


class Relay:
    """Listens on 127.0.0.1:<port> and relays to `host:port`; `cut` and `heal` the path while connections stay open."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.target_port = host, port
        self.port = 0
        self._open = asyncio.Event()
        self._open.set()
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
        self._open.set()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.close()
            return
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pump(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Forward bytes while the path is open; a chunk read while it is cut waits for the heal."""
        try:
            while True:
                await self._open.wait()
                data = await source.read(65536)
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
