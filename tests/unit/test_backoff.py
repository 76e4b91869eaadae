"""The one backoff: each loop's waits as they were before it (the writer's passes, the announcements'
resubscriptions, a paused cluster node, the lease loop, the signs' and tables' streams), jitter within its
bounds, and progress resetting the count."""

from __future__ import annotations

import pytest
from jackpot_signage.feed import REOPEN_WAITS
from jackpot_table.controller import METER_WAITS
from tenacity.wait import wait_base

from jackpotd.backoff import Backoff, exponential, wait_after
from jackpotd.store.redis.announcements import RESUBSCRIBE_WAITS
from jackpotd.store.resp_cluster import NODE_PAUSE
from jackpotd.store.writer import LedgerWriter


def _waits(backoff: Backoff, n: int) -> list[float]:
    return [backoff.failed() for _ in range(n)]


@pytest.mark.parametrize(("wait", "expected"), [
    (LedgerWriter.RETRY_WAITS, [min(0.05 * 2 ** min(f, 6), 2.0) for f in range(1, 10)]),
    (RESUBSCRIBE_WAITS, [min(0.1 * 2 ** f, 2.0) for f in range(9)]),
    (NODE_PAUSE, [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0, 10.0]),
    (METER_WAITS, [0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0, 2.0, 2.0]),
    (exponential(2 * 0.5, 8.0), [min(0.5 * 2 ** f, 8.0) for f in range(1, 10)]),  # the lease loop (POLL 0.5)
])
def test_the_waits_are_the_ones_each_loop_had(wait: wait_base, expected: list[float]) -> None:
    assert _waits(Backoff(wait), 9) == pytest.approx(expected)


def test_progress_starts_the_count_again() -> None:
    backoff = Backoff(exponential(1.0, 100.0))
    assert _waits(backoff, 3) == [1.0, 2.0, 4.0]
    backoff.reset()
    assert backoff.failures == 0 and backoff.failed() == 1.0


def test_jitter_stays_within_its_bounds() -> None:
    waits = [_waits(Backoff(REOPEN_WAITS), 7) for _ in range(200)]
    for at, base in enumerate([0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]):
        seen = [w[at] for w in waits]
        assert all(base * 0.8 <= s <= base * 1.2 for s in seen)
        assert len(set(seen)) > 1  # jittered, not fixed


def test_no_failure_waits_nothing_and_a_huge_count_waits_the_cap() -> None:
    wait = exponential(0.1, 2.0)
    assert wait_after(wait, 0) == 0.0
    assert wait_after(wait, 10_000) == 2.0
