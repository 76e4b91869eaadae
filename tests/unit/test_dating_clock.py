"""store/dating_clock.py: a writer bounds dates by its own clock while it agrees with Redis's, else by Redis's."""

from __future__ import annotations

import time

from jackpotd.store.dating_clock import DatingClock

HOUR = 3_600_000


def _true_ms() -> int:
    return time.time_ns() // 1_000_000


async def _redis_ms() -> int:
    return _true_ms()


async def test_a_clock_that_agrees_is_the_writers_own() -> None:
    own = [0]
    clock = DatingClock(lambda: _true_ms() + own[0], _redis_ms, lambda: 5_000)
    assert abs(clock() - _true_ms()) < 100  # before any sample: its own
    await clock.refresh()
    own[0] = 2_000  # within the tolerance: its own
    assert abs(clock() - (_true_ms() + 2_000)) < 100


async def test_a_clock_that_jumped_either_way_is_replaced_by_redis_s() -> None:
    for jump in (HOUR, -HOUR):
        clock = DatingClock(lambda j=jump: _true_ms() + j, _redis_ms, lambda: 5_000)  # type: ignore[misc]
        await clock.refresh()
        assert abs(clock() - _true_ms()) < 100


async def test_unchecked_it_is_the_writers_own_and_redis_is_not_asked() -> None:
    async def never() -> int:
        raise AssertionError("Redis asked")

    clock = DatingClock(lambda: 42, never, lambda: 0)
    await clock.refresh()
    assert clock() == 42


async def test_a_redis_that_does_not_answer_keeps_the_last_sample() -> None:
    answers = [True]

    async def flaky() -> int:
        if not answers[0]:
            raise ConnectionError("down")
        return _true_ms()

    clock = DatingClock(lambda: _true_ms() - HOUR, flaky, lambda: 5_000)
    await clock.refresh()
    answers[0] = False
    clock._sample = (clock._sample[0] - 2_000, clock._sample[1] - 2.0) if clock._sample else None  # due again
    await clock.refresh()
    assert abs(clock() - _true_ms()) < 100
