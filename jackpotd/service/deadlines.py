"""The caller's deadline, carried with the call (DECISIONS.md, Faults: deadline-aware answers): every wait on a
store is bounded by the caller's remaining time less a margin, so a caller hears UNAVAILABLE naming what did not
answer shortly before its deadline, never DEADLINE_EXCEEDED. Without a deadline, each wait keeps its own bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from .errors import Unavailable

T = TypeVar("T")

# When the caller stops waiting, as a time.monotonic() instant, and the task that serves it; None: it gave no
# deadline. Set per call by the server's interceptor (api/interceptor.py), like auth.guard.CALLER. A task the call
# starts inherits the variable but is not bound by it (a batch's flusher or a fill may outlive the call).
DEADLINE: ContextVar[tuple[float, asyncio.Task[object] | None] | None] = ContextVar("jackpotd_deadline",
                                                                                    default=None)

MARGIN = 0.25  # seconds kept for the answer to travel back, at least ...
MARGIN_SHARE = 0.10  # ... or this share of the time the caller gave, whichever is larger


def margin(remaining: float) -> float:
    """The time kept back from a caller's `remaining` seconds for the answer: 250 ms or 10 %, whichever is larger,
    but never more than half of it (a caller with little time left still gives the store half, not none)."""
    return min(max(MARGIN, MARGIN_SHARE * remaining), remaining / 2)


@contextmanager
def caller_deadline(remaining: float | None) -> Iterator[None]:
    """Within it, store waits are bounded by a caller who gives up `remaining` seconds from now (None: no bound)."""
    token = DEADLINE.set(None if remaining is None else (time.monotonic() + remaining, _task()))
    try:
        yield
    finally:
        DEADLINE.reset(token)


def _task() -> asyncio.Task[object] | None:
    """The task running now, if any."""
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running
        return None


def budget(default: float | None, keep: float = 1.0) -> tuple[float | None, bool]:
    """How long a store wait may take now: the caller's remaining time less the margin (times `keep`) when that
    is shorter than `default` (the wait's own bound; None: none), and whether the caller's deadline bounds it."""
    deadline = DEADLINE.get()
    if deadline is None or deadline[1] is not _task():
        return default, False
    remaining = deadline[0] - time.monotonic()
    limit = max(remaining - keep * margin(remaining), 0.0)
    if default is not None and default <= limit:
        return default, False
    return limit, True


def expired(what: str, seconds: float | None, by_caller: bool) -> Unavailable:
    """The UNAVAILABLE of a store wait that ran out: what did not answer, within how long, and why that long."""
    why = " (the caller's deadline)" if by_caller else ""
    within = "in time" if seconds is None else f"within {seconds:.1f} s{why}"
    return Unavailable(f"{what} did not answer {within}; retry with the same request_id")


async def bounded(waiting: Awaitable[T], what: str, default: float | None = None, keep: float = 1.0) -> T:
    """`waiting`, given at most the budget (`default` or the caller's deadline less the margin); past it,
    Unavailable naming `what`. `waiting` is cancelled then: it must leave no half-done state (the stores' clients
    drop a connection cancelled mid-reply)."""
    seconds, by_caller = budget(default, keep)
    if seconds is None:
        return await waiting
    timeout = asyncio.timeout(seconds)
    try:
        async with timeout:
            return await waiting
    except TimeoutError:
        if not timeout.expired():  # a timeout of the wait's own, not this budget's
            raise
        raise expired(what, seconds, by_caller) from None


async def answered_in_time(handling: Awaitable[T]) -> T:
    """A whole call, cut short at half the margin before its caller's deadline (after every store wait would have
    been): a wait no store's bound covers still ends UNAVAILABLE, not DEADLINE_EXCEEDED."""
    return await bounded(handling, "the service (a store it waited for)", keep=0.5)
