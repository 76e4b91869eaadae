"""The caller's deadline, carried with the call (DECISIONS.md, Faults: deadline-aware answers): a call is cut short
a margin before its caller's deadline and answered UNAVAILABLE naming the store it was waiting for, never
DEADLINE_EXCEEDED. Without a deadline, each wait keeps its own bound (resp.CALL_TIMEOUT, Lookups.TIMEOUT, ...)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from .errors import Unavailable

T = TypeVar("T")

MARGIN = 0.25  # seconds kept for the answer to travel back, at least ...
MARGIN_SHARE = 0.10  # ... or this share of the time the caller gave, whichever is larger


@dataclass(slots=True)
class CallDeadline:
    """When the caller stops waiting (a time.monotonic() instant), the task that serves it, and the store whose
    wait was cut short (what the answer names)."""

    at: float
    task: asyncio.Task[object] | None
    cut: str = ""


# Set per call by the server's interceptor (api/interceptor.py), like auth.guard.CALLER. A task the call starts
# inherits the variable but is not bound by it (a batch's flusher or a fill may outlive the call).
DEADLINE: ContextVar[CallDeadline | None] = ContextVar("jackpotd_deadline", default=None)


def margin(remaining: float) -> float:
    """The time kept back from a caller's `remaining` seconds for the answer: 250 ms or 10 %, whichever is larger,
    but never more than half of it (a caller with little time left still gives the stores half, not none)."""
    return min(max(MARGIN, MARGIN_SHARE * remaining), remaining / 2)


def _task() -> asyncio.Task[object] | None:
    """The task running now, if any."""
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running
        return None


def _mine() -> CallDeadline | None:
    """The deadline of the call this task serves; None without one (or in a task the call started)."""
    call = DEADLINE.get()
    return call if call is not None and call.task is _task() else None


@contextmanager
def caller_deadline(remaining: float | None) -> Iterator[None]:
    """Within it, the call is served for a caller who gives up `remaining` seconds from now (None: no deadline)."""
    token = DEADLINE.set(None if remaining is None else CallDeadline(time.monotonic() + remaining, _task()))
    try:
        yield
    finally:
        DEADLINE.reset(token)


def budget() -> float | None:
    """How long the call may still wait for its stores: the caller's remaining time less the margin (never below
    0); None without a deadline."""
    call = _mine()
    if call is None:
        return None
    remaining = call.at - time.monotonic()
    return max(remaining - margin(remaining), 0.0)


def bounded(waiting: Awaitable[T], what: str) -> Awaitable[T]:
    """`waiting`, a wait on the store `what`: if the call's time runs out meanwhile, its answer names `what` (the
    innermost such wait). No timer of its own (the call has one: answered_in_time); without a deadline, `waiting`
    itself."""
    call = _mine()
    return waiting if call is None else _named(waiting, what, call)


async def _named(waiting: Awaitable[T], what: str, call: CallDeadline) -> T:
    try:
        return await waiting
    except asyncio.CancelledError:
        if not call.cut:
            call.cut = what
        raise


def expired(what: str, seconds: float) -> Unavailable:
    """The UNAVAILABLE of a call whose time ran out: what did not answer, and within how long."""
    return Unavailable(f"{what} did not answer within {seconds:.1f} s (the caller's deadline); retry with the same "
                       "request_id")


async def answered_in_time(handling: Awaitable[T]) -> T:
    """A whole call, cut short a margin before its caller's deadline: UNAVAILABLE naming the store it was waiting
    for then. What it was waiting for is cancelled: the stores' clients drop a connection cancelled mid-reply."""
    seconds = budget()
    if seconds is None:
        return await handling
    timeout = asyncio.timeout(seconds)
    try:
        async with timeout:
            return await handling
    except TimeoutError:
        if not timeout.expired():  # a timeout of the call's own, not its deadline's
            raise
        call = _mine()
        raise expired(call.cut if call is not None and call.cut else "jackpotd (a store it waited for)",
                      seconds) from None
