"""The supervisor's restart policy: at once after a long life, backing off after short ones, then giving up."""

from __future__ import annotations

from jackpotd.supervisor import Restarts


def test_restarts_back_off_after_short_lives_then_give_up() -> None:
    r = Restarts()
    r.started(0)
    r.died(500)  # a long life: at once
    assert (r.next_try, r.given_up) == (500, False)
    waits = []
    for _ in range(Restarts.GIVE_UP_AFTER - 1):
        r.started(r.next_try)
        r.died(r.next_try + 1)  # dies a second after each start
        waits.append(r.next_try - (r.started_at + 1))
    assert waits == [2, 4, 8, 16, 30, 30, 30, 30, 30]
    assert not r.given_up
    r.started(r.next_try)
    r.died(r.next_try + 1)
    assert r.given_up
    r2 = Restarts()
    r2.started(0)
    r2.died(1)
    r2.started(1)
    r2.died(1 + Restarts.STABLE_SECONDS)  # lived long enough: the series starts again
    assert r2.short_runs == 1 and r2.next_try == 1 + Restarts.STABLE_SECONDS
