"""The one backoff of every loop that tries again for as long as it runs (reconnects, restarts, a paused node):
capped exponential waits from tenacity's wait strategies, counted over failures in a row and reset by progress.

Not tenacity's retry loop (`AsyncRetrying`): these loops never give up, and start their count again after every
success (data flowed, a pass committed), which a retry policy, whose attempts count from the first call and stop
at the first success, does not express. Nothing here runs per request: only after a failure."""

from __future__ import annotations

import asyncio
import random

import tenacity
from tenacity.wait import wait_base

_RETRYING = tenacity.Retrying()  # a RetryCallState needs one; only its attempt number is read


class _Jittered(wait_base):
    """A wait strategy's waits, each scaled by a random factor within 1 ± `jitter`."""

    def __init__(self, wait: wait_base, jitter: float) -> None:
        self.wait = wait
        self.jitter = jitter

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        return self.wait(retry_state) * random.uniform(1 - self.jitter, 1 + self.jitter)


def exponential(first: float, cap: float, jitter: float = 0.0) -> wait_base:
    """Waits of first, 2·first, 4·first ... at most `cap`, after the 1st, 2nd, 3rd ... failure in a row; with
    `jitter`, each scaled by a random factor within 1 ± jitter (so many clients do not retry in step)."""
    wait: wait_base = tenacity.wait_exponential(multiplier=first, max=cap)
    return _Jittered(wait, jitter) if jitter else wait


def wait_after(wait: wait_base, failures: int) -> float:
    """The wait `wait` calls for after `failures` failures in a row (none after none)."""
    if failures <= 0:
        return 0.0
    state = tenacity.RetryCallState(_RETRYING, None, (), {})
    state.attempt_number = failures
    return float(wait(state))


class Backoff:
    """The failures in a row of a loop that runs for good, and the wait each calls for; progress resets them."""

    __slots__ = ("failures", "wait")

    def __init__(self, wait: wait_base) -> None:
        self.wait = wait
        self.failures = 0

    def failed(self) -> float:
        """Count a failure; the seconds to wait before the next try."""
        self.failures += 1
        return wait_after(self.wait, self.failures)

    def reset(self) -> None:
        """Progress: the next failure waits the shortest wait again."""
        self.failures = 0

    async def sleep(self) -> None:
        """Count a failure and wait as long as it calls for."""
        await asyncio.sleep(self.failed())
