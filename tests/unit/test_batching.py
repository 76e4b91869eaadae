"""The micro-batcher behind the Redis step and the ledger lookups: calls that arrive while a batch is in
flight go together in the next one, each gets its own answer or error."""

from __future__ import annotations

import asyncio

import pytest

from jackpotd.store.batching import Batcher


class Echo:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()
        self.sent = asyncio.Event()  # a batch is in flight

    async def send(self, batch: list[int]) -> list[int | BaseException]:
        self.batches.append(batch)
        self.sent.set()
        await self.gate.wait()
        return [ValueError(f"odd {n}") if n % 2 else n * 10 for n in batch]


async def test_calls_during_a_round_trip_travel_together_and_each_gets_its_own_answer() -> None:
    echo = Echo()
    batcher: Batcher[int, int] = Batcher(echo.send)
    first = asyncio.ensure_future(batcher.call(0))
    await asyncio.wait_for(echo.sent.wait(), 5)  # the first batch is in flight
    rest = [asyncio.ensure_future(batcher.call(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0)  # one turn of the loop: each new task runs to its wait, so all three are queued
    echo.gate.set()
    assert await first == 0
    assert await rest[0] == 20 and await rest[2] == 40
    with pytest.raises(ValueError, match="odd 3"):
        await rest[1]
    assert echo.batches == [[0], [2, 3, 4]]


async def test_a_failed_round_trip_fails_its_batch_only() -> None:
    calls = 0

    async def send(batch: list[int]) -> list[int | BaseException]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("dropped")
        return batch

    batcher: Batcher[int, int] = Batcher(send)
    with pytest.raises(ConnectionError):
        await batcher.call(1)
    assert await batcher.call(2) == 2


async def test_linger_gathers_calls_when_batches_follow_closely() -> None:
    sizes: list[int] = []
    lingered: list[float] = []
    lingering, released = asyncio.Event(), asyncio.Event()

    async def send(batch: list[int]) -> list[int | BaseException]:
        sizes.append(len(batch))
        return batch

    async def linger(seconds: float) -> None:  # the batcher's wait for company, held until the test lets it go
        lingered.append(seconds)
        lingering.set()
        await released.wait()

    batcher: Batcher[int, int] = Batcher(send, linger=60.0, sleep=linger)
    await batcher.call(0)  # a quiet moment: at once
    assert lingered == []
    second = asyncio.ensure_future(batcher.call(1))  # right after (well within 60 s): waits for company
    await asyncio.wait_for(lingering.wait(), 5)
    third = asyncio.ensure_future(batcher.call(2))
    await asyncio.sleep(0)  # one turn of the loop: the new task runs to its wait, so its call is queued
    released.set()
    assert await asyncio.wait_for(asyncio.gather(second, third), 5) == [1, 2]
    assert sizes == [1, 2] and lingered == [60.0]


async def test_close_fails_calls_in_flight_queued_and_later() -> None:
    echo = Echo()
    batcher: Batcher[int, int] = Batcher(echo.send)
    in_flight = asyncio.ensure_future(batcher.call(0))
    await asyncio.wait_for(echo.sent.wait(), 5)
    assert echo.batches == [[0]]  # sent, no answer yet
    queued = asyncio.ensure_future(batcher.call(2))
    await asyncio.sleep(0)  # one turn of the loop: the new task runs to its wait, so its call is queued
    await batcher.close(ConnectionError("shutting down"))
    for call in (in_flight, queued):
        with pytest.raises(ConnectionError, match="shutting down"):
            await asyncio.wait_for(call, 1)
    with pytest.raises(ConnectionError, match="shutting down"):
        await batcher.call(1)
