"""clock.wait_set: waiting on an event for a while, without losing a cancellation (Python 3.11's wait_for
swallows one that lands as the event is set; a loop built on it never stops)."""

from __future__ import annotations

import asyncio

import pytest

from jackpotd.clock import wait_set


async def test_it_returns_when_set_or_after_the_timeout() -> None:
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await wait_set(event, 0.05)
    assert loop.time() - started >= 0.04
    event.set()
    await asyncio.wait_for(wait_set(event, 10), 1)


async def test_a_cancel_that_lands_as_the_event_is_set_is_kept() -> None:
    for _ in range(50):
        event = asyncio.Event()

        async def loop_until_cancelled(e: asyncio.Event = event) -> None:
            while True:
                await wait_set(e, 10)
                e.clear()

        task = asyncio.ensure_future(loop_until_cancelled())
        await asyncio.sleep(0)
        event.set()  # the wait is done ...
        task.cancel()  # ... and cancelled in the same turn of the loop
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
