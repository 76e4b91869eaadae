"""Time: wall-clock milliseconds since the epoch (journal entries, heartbeats, rate effective times), and
waiting on an event for at most a while."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def wait_set(event: asyncio.Event, timeout: float) -> None:
    """Wait until `event` is set, or `timeout` s. Not asyncio.wait_for: on Python 3.11 it swallows a
    cancellation that arrives as the event is set, and a loop that must stop would run on for ever."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()
