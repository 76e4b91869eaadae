"""A lean pipelined Redis connection for the hot path: the atomic step of every mutating call.

redis-py's general machinery cost more than the script itself under load. Here one connection
carries one batch at a time: the batch is encoded into a single write and its replies are parsed by
hiredis. While a batch is in flight the next one gathers, so batches grow with load.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import hiredis

Command = Sequence[str | int]


def encode(commands: Sequence[Command]) -> bytes:
    """RESP arrays of bulk strings, all commands in one buffer (hiredis packs each in C)."""
    return b"".join(hiredis.pack_command(tuple(command)) for command in commands)  # type: ignore[arg-type]


class RespPipeline:
    """Sends batches of commands over one connection and returns their replies in order."""

    def __init__(self, url: str) -> None:
        u = urlparse(url)
        self.socket = u.path if u.scheme == "unix" else None  # unix:///path/to/valkey.sock?db=N
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or 6379
        db = parse_qs(u.query).get("db", ["0"])[0] if self.socket else u.path.lstrip("/")
        self.db = int(db or 0)
        self.password = unquote(u.password) if u.password else None
        self.username = unquote(u.username) if u.username else None
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.socket:
            reader, writer = await asyncio.open_unix_connection(self.socket)
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        setup: list[Command] = []
        if self.password:
            setup.append(["AUTH", self.username, self.password] if self.username else ["AUTH", self.password])
        if self.db:
            setup.append(["SELECT", self.db])
        self._conn = (reader, writer)
        if setup:
            for reply in await self._roundtrip(setup):
                if isinstance(reply, hiredis.ReplyError):
                    raise ConnectionError(f"Redis refused the connection set-up: {reply}")
        return reader, writer

    async def execute(self, commands: Sequence[Command]) -> list[Any]:
        """Replies in order; a command's error comes back as a hiredis.ReplyError, not raised."""
        async with self._lock:
            if self._conn is None:
                await self._connect()
            try:
                return await self._roundtrip(commands)
            except (OSError, asyncio.IncompleteReadError, hiredis.ProtocolError) as e:
                await self.close()
                raise ConnectionError(f"lost the Redis connection: {e}") from e

    async def _roundtrip(self, commands: Sequence[Command]) -> list[Any]:
        assert self._conn is not None
        reader, writer = self._conn
        writer.write(encode(commands))
        await writer.drain()
        parser = hiredis.Reader(encoding="utf-8")
        replies: list[Any] = []
        while len(replies) < len(commands):
            data = await reader.read(65536)
            if not data:
                raise asyncio.IncompleteReadError(b"", None)
            parser.feed(data)
            while (reply := parser.gets()) is not False:
                replies.append(reply)
        return replies

    async def close(self) -> None:
        if self._conn is not None:
            _, writer = self._conn
            self._conn = None
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
