"""service/deadlines.py: how much of a caller's time a store wait is given, and what it says when it runs out."""

from __future__ import annotations

import asyncio

import pytest

from jackpotd.service.deadlines import answered_in_time, bounded, budget, caller_deadline, margin
from jackpotd.service.errors import Unavailable


def test_the_margin_is_250_ms_or_a_tenth_but_never_more_than_half() -> None:
    assert margin(3.0) == pytest.approx(0.3)
    assert margin(1.0) == pytest.approx(0.25)
    assert margin(30.0) == pytest.approx(3.0)
    assert margin(0.2) == pytest.approx(0.1)  # little time left: the store still gets half of it


async def test_no_deadline_keeps_the_waits_own_bound() -> None:
    assert budget(5.0) == (5.0, False)
    assert budget(None) == (None, False)
    with caller_deadline(None):
        assert budget(5.0) == (5.0, False)


async def test_a_deadline_shorter_than_the_bound_bounds_the_wait() -> None:
    with caller_deadline(3.0):
        seconds, by_caller = budget(5.0)
        assert by_caller and seconds is not None and 2.6 < seconds <= 2.7
        assert budget(1.0) == (1.0, False)  # the store's own bound is the shorter
    assert budget(5.0) == (5.0, False)  # the call is over


async def test_a_wait_past_the_deadline_is_unavailable_naming_what_did_not_answer() -> None:
    loop = asyncio.get_running_loop()
    with caller_deadline(0.4):
        started = loop.time()
        with pytest.raises(Unavailable, match=r"^Redis did not answer within 0\.2 s \(the caller's deadline\); "
                                              r"retry with the same request_id$"):
            await bounded(asyncio.sleep(10), "Redis")
        assert loop.time() - started < 0.35
        with pytest.raises(Unavailable, match="the service"):  # the call's own bound: after every store's
            await answered_in_time(asyncio.sleep(10))
    with caller_deadline(-1.0), pytest.raises(Unavailable, match=r"within 0\.0 s"):  # past already: at once
        await bounded(asyncio.sleep(10), "the ledger")


async def test_a_wait_that_answers_in_time_and_its_own_timeouts_pass_through() -> None:
    with caller_deadline(5.0):
        assert await bounded(asyncio.sleep(0, "ok"), "Redis") == "ok"

        async def own_timeout() -> None:
            raise TimeoutError("its own")

        with pytest.raises(TimeoutError, match="its own"):
            await bounded(own_timeout(), "Redis")


async def test_a_task_the_call_starts_is_not_bound_by_its_deadline() -> None:
    """A batch's flusher or a fill inherits the call's context but may outlive it."""
    async def asked() -> tuple[float | None, bool]:
        return budget(5.0)

    with caller_deadline(0.1):
        inner = asyncio.create_task(asked())
        assert await inner == (5.0, False)
