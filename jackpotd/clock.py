"""Wall-clock time in milliseconds since the epoch: journal entries, heartbeats and rate effective times."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
