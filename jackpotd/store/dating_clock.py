"""The clock a ledger writer bounds entries' dates by (chain.FUTURE_SLACK_MS): its own, checked against Redis's
(DECISIONS.md, Faults: clock jumps). A writer whose clock jumped away from Redis's by more than the tolerance
bounds by Redis's instead, followed between samples by the monotonic clock, which no wall-clock jump moves."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from ..clock import Clock
from .throttle import Throttled

log = logging.getLogger("jackpotd.writer")


class DatingClock:
    """Callable like a Clock: the writer's clock while it agrees with Redis's (sampled with TIME at most every
    REFRESH seconds, by `refresh`), else Redis's as last sampled plus the monotonic time since."""

    REFRESH = 1.0  # seconds between samples of Redis's clock

    def __init__(self, own: Clock, redis_ms: Callable[[], Awaitable[int]], tolerance_ms: Callable[[], int]) -> None:
        self.own = own
        self._redis_ms = redis_ms
        self._tolerance_ms = tolerance_ms  # 0: unchecked (a test's clock, its own fiction)
        self._sample: tuple[int, float] | None = None  # (Redis's ms, time.monotonic() when read)
        self._complain = Throttled(log).warn

    async def refresh(self) -> None:
        """Sample Redis's clock if the last sample is older than REFRESH; a Redis that does not answer keeps the
        last sample (its writes fail anyway)."""
        if not self._tolerance_ms():
            return
        if self._sample is not None and time.monotonic() - self._sample[1] < self.REFRESH:
            return
        try:
            before = time.monotonic()
            redis_ms = await self._redis_ms()
            self._sample = (redis_ms, (before + time.monotonic()) / 2)  # the middle of the round trip
        except Exception as e:
            self._complain(f"reading Redis's clock failed: {e}")

    def reference(self) -> int | None:
        """Redis's clock now, as last sampled and advanced by the monotonic clock; None before any sample."""
        if self._sample is None:
            return None
        return self._sample[0] + int((time.monotonic() - self._sample[1]) * 1000)

    def __call__(self) -> int:
        own = self.own()
        tolerance = self._tolerance_ms()
        reference = self.reference()
        if not tolerance or reference is None or abs(own - reference) <= tolerance:
            return own
        self._complain(f"this writer's clock is {(own - reference) / 1000:+.1f} s off Redis's (more than "
                       f"{tolerance / 1000:g} s): entries are bounded by Redis's clock until it is corrected")
        return reference
