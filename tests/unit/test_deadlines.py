"""service/deadlines.py: how much of a caller's time a call may spend on its stores, and what it says when it runs
out."""

from __future__ import annotations

import asyncio

import pytest

from jackpotd.service.deadlines import answered_in_time, bounded, budget, caller_deadline, margin
from jackpotd.service.errors import Unavailable


def test_the_margin_is_250_ms_or_a_tenth_but_never_more_than_half() -> None:
    assert margin(3.0) == pytest.approx(0.3)
    assert margin(1.0) == pytest.approx(0.25)
    assert margin(30.0) == pytest.approx(3.0)
    assert margin(0.2) == pytest.approx(0.1)  # little time left: the stores still get half of it


async def test_no_deadline_no_bound() -> None:
    assert budget() is None
    with caller_deadline(None):
        assert budget() is None
        assert await answered_in_time(bounded(asyncio.sleep(0.01, "ok"), "Redis")) == "ok"


async def test_a_deadline_leaves_the_margin() -> None:
    with caller_deadline(3.0):
        seconds = budget()
        assert seconds is not None and 2.6 < seconds <= 2.7
    assert budget() is None  # the call is over


async def test_a_call_past_its_deadline_is_unavailable_naming_the_store_it_waited_for() -> None:
    loop = asyncio.get_running_loop()

    async def handler() -> None:
        await bounded(asyncio.sleep(0), "the ledger (PostgreSQL)")  # answered: not named
        await bounded(bounded(asyncio.sleep(10), "Redis"), "the ledger (entry 7)")  # the innermost is named

    with caller_deadline(0.4):
        started = loop.time()
        with pytest.raises(Unavailable, match=r"^Redis did not answer within 0\.2 s \(the caller's deadline\); "
                                              r"retry with the same request_id$"):
            await answered_in_time(handler())
        assert loop.time() - started < 0.35
    with caller_deadline(1.0), pytest.raises(Unavailable, match=r"^jackpotd"):  # no store named: the service's own
        await answered_in_time(asyncio.sleep(10))
    with caller_deadline(-1.0), pytest.raises(Unavailable, match=r"within 0\.0 s"):  # past already: at once
        await answered_in_time(bounded(asyncio.sleep(10), "the ledger"))


async def test_a_timeout_of_the_calls_own_passes_through() -> None:
    async def own_timeout() -> None:
        raise TimeoutError("its own")

    with caller_deadline(5.0), pytest.raises(TimeoutError, match="its own"):
        await answered_in_time(bounded(own_timeout(), "Redis"))


async def test_a_task_the_call_starts_is_not_bound_by_its_deadline() -> None:
    """A batch's flusher or a fill inherits the call's context but may outlive it."""
    async def asked() -> float | None:
        return budget()

    with caller_deadline(0.1):
        inner = asyncio.create_task(asked())
        assert await inner is None
