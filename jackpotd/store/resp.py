"""A lean pipelined Redis connection for the hot path: the atomic step of every mutating call.

redis-py's general machinery cost more than the script itself under load (docs/DECISIONS.md, The Redis
client: A/B: 2.2 to 6.6 times the client CPU per EVALSHA, `bench/bench_resp.py`). Here one connection carries
one batch at a time: the batch is encoded into a single write and its replies are parsed by hiredis. While
a batch is in flight the next one gathers, so batches grow with load.

The URL is read by redis-py's own parser, so it means here what it means to the redis-py client opened on
the same URL: `redis://`, `unix://path?db=N`, and `rediss://` (TLS, the server's certificate verified
against the system's CAs by default; `ssl_cert_reqs`, `ssl_ca_certs`, `ssl_ca_path`, `ssl_certfile`,
`ssl_keyfile`, `ssl_check_hostname` as redis-py names them). Timeouts: `socket_connect_timeout` covers
connecting, TLS and AUTH/SELECT, `socket_timeout` each batch; either raises the service's Unavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import hiredis
from redis.asyncio.connection import SSLConnection, parse_url

from ..service.errors import Unavailable

Command = Sequence[str | int]
CONNECT_TIMEOUT = 5.0  # seconds, unless the URL gives socket_connect_timeout
CALL_TIMEOUT = 5.0  # seconds for one batch's replies, unless the URL gives socket_timeout


def encode(commands: Sequence[Command]) -> bytes:
    """RESP arrays of bulk strings, all commands in one buffer (hiredis packs each in C)."""
    return b"".join(hiredis.pack_command(tuple(command)) for command in commands)  # type: ignore[arg-type]


def tls_context(options: dict[str, Any]) -> ssl.SSLContext:
    """The TLS context redis-py would use for these URL options (its defaults: certificate required, host
    name checked, the system's CAs)."""
    ssl_options = {k: v for k, v in options.items() if k.startswith("ssl_")}
    try:
        connection = SSLConnection(**ssl_options)
    except TypeError as e:
        raise ValueError(f"unknown TLS option in the Redis URL ({', '.join(sorted(ssl_options))}): {e}") from None
    context: ssl.SSLContext = connection.ssl_context.get()
    return context


class RespPipeline:
    """Sends batches of commands over one connection and returns their replies in order."""

    def __init__(self, url: str, *, connect_timeout: float | None = CONNECT_TIMEOUT,
                 timeout: float | None = CALL_TIMEOUT) -> None:
        options: dict[str, Any] = dict(parse_url(url))
        self.socket: str | None = options.get("path")  # unix:///path/to/valkey.sock?db=N
        self.host: str = options.get("host", "127.0.0.1")
        self.port: int = options.get("port", 6379)
        self.db: int = options.get("db", 0)
        self.password: str | None = options.get("password")
        self.username: str | None = options.get("username")
        self.connect_timeout: float | None = options.get("socket_connect_timeout", connect_timeout)
        self.timeout: float | None = options.get("socket_timeout", timeout)
        self.tls = tls_context(options) if urlparse(url).scheme == "rediss" else None
        self.address = self.socket or f"{self.host}:{self.port}"
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> None:
        setup: list[Command] = []
        if self.password:
            setup.append(["AUTH", self.username, self.password] if self.username else ["AUTH", self.password])
        if self.db:
            setup.append(["SELECT", self.db])
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.socket:
                    self._conn = await asyncio.open_unix_connection(self.socket)
                else:
                    self._conn = await asyncio.open_connection(self.host, self.port, ssl=self.tls)
                replies = await self._roundtrip(setup) if setup else []
        except TimeoutError:
            self._drop()
            raise Unavailable(f"Redis at {self.address} did not accept a connection within "
                              f"{self.connect_timeout} s") from None
        except BaseException:
            self._drop()
            raise
        for reply in replies:
            if isinstance(reply, hiredis.ReplyError):
                self._drop()
                raise ConnectionError(f"Redis refused the connection set-up: {reply}")

    async def execute(self, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        """Replies in order; a command's error comes back as a hiredis.ReplyError, not raised. No reply
        within `timeout` (default: the pipeline's) raises Unavailable; a lost connection, ConnectionError."""
        limit = self.timeout if timeout is None else timeout
        async with self._lock:
            if self._conn is None:
                await self._connect()
            try:
                async with asyncio.timeout(limit):
                    return await self._roundtrip(commands)
            except TimeoutError:
                self._drop()  # the replies may still come: they must not answer the next batch
                raise Unavailable(f"Redis at {self.address} did not answer within {limit} s") from None
            except (OSError, asyncio.IncompleteReadError, hiredis.ProtocolError) as e:
                self._drop()
                raise ConnectionError(f"lost the Redis connection: {e}") from e
            except BaseException:  # cancelled mid-batch: same as a timeout
                self._drop()
                raise

    async def execute_on(self, key: str, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        """The batch on this server (the cluster's version sends it to the owner of `key`'s slot)."""
        return await self.execute(commands, timeout=timeout)

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

    def _drop(self) -> None:
        if self._conn is not None:
            _, writer = self._conn
            self._conn = None
            writer.close()

    async def close(self) -> None:
        if self._conn is not None:
            writer = self._conn[1]
            self._drop()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
