"""Micro-batching: calls that arrive while a batch is in flight travel together in the next one, so a busy
process makes one round trip for many calls and a quiet one makes it at once. Each call still gets its own
answer (or its own error)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K")
R = TypeVar("R")

Send = Callable[[list[K]], Awaitable[Sequence[R | BaseException]]]
Sleep = Callable[[float], Awaitable[None]]


class Batcher(Generic[K, R]):
    """Queues calls and sends them with `send`, one batch per round trip, until the queue is empty.

    `send` answers every item of a batch, in order: a result, or an exception for that item alone; an
    exception it raises fails the whole batch. `linger` (s): when batches follow each other closer than
    this, wait that long for company first (a query per call would cost more than the call's other work).
    `sleep` is how it lingers (a test passes one it can watch and release).
    """

    def __init__(self, send: Send[K, R], linger: float = 0.0, sleep: Sleep = asyncio.sleep) -> None:
        self._send = send
        self._linger = linger
        self._sleep = sleep
        self._queue: list[tuple[K, asyncio.Future[R]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._last_flush = -math.inf  # never: the first call goes at once
        self._closed: BaseException | None = None

    async def call(self, item: K) -> R:
        if self._closed is not None:
            raise self._closed
        fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await fut

    async def close(self, error: BaseException) -> None:
        """Stop: pending and later calls fail with `error`."""
        self._closed = error
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
            with contextlib.suppress(BaseException):
                await self._flusher
        _fail(self._queue, error)
        self._queue = []

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        if self._linger and loop.time() - self._last_flush < self._linger:
            await self._sleep(self._linger)
        self._last_flush = loop.time()
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                results = await self._send([item for item, _ in batch])
            except asyncio.CancelledError:  # closed mid-flight: its callers must not wait forever
                _fail(batch, self._closed or ConnectionError("the batch was cancelled"))
                raise
            except Exception as e:  # the whole round trip failed: every caller in it sees it
                _fail(batch, e)
                continue
            for (_, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, BaseException):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)


def _fail(batch: list[tuple[K, asyncio.Future[R]]], error: BaseException) -> None:
    for _, fut in batch:
        if not fut.done():
            fut.set_exception(error)
