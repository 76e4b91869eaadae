"""The pure parts of fencing a paused or partitioned leader (issue 23): whether a lease still stands by the monotonic
clock (sticky once expired, until the process rejoins), what PostgreSQL's refusal (JPL01) becomes in Python, what
health says of a shard nobody writes, and the lease loop stopping its writer at once when the lease is gone."""

from __future__ import annotations

import asyncpg
import pytest

from jackpotd.health import unled
from jackpotd.store import ledger, liveness
from jackpotd.store.ledger.leases import LeaseStates, ShardLease
from jackpotd.store.liveness import LeaseExpired, Liveness, still_fresh
from jackpotd.store.shards import ALL

from .test_leader import FakeLease, FakeWriter, _until, leader


def test_a_lease_stands_for_its_lease_time_after_the_renewal_was_sent() -> None:
    assert still_fresh(100.0, 104.9, 5.0)
    assert still_fresh(100.0, 105.0, 5.0)
    assert not still_fresh(100.0, 105.1, 5.0)
    assert not still_fresh(None, 100.0, 5.0)  # never renewed since joining: may not write


def test_an_expired_lease_stays_expired_until_the_process_rejoins(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(liveness.time, "monotonic", lambda: now[0])
    live = Liveness("postgresql://unused", lease_s=5.0, holder="h")
    assert live.application_name == "jackpotd-writer h"
    assert not live.fresh() and not live.expired  # not renewed yet: not expired either
    assert live.why_not() == "this process has not renewed its lease since it joined"
    live.renewed_at = 1000.0
    now[0] = 1004.0
    assert live.fresh()
    live.check()
    now[0] = 1031.0  # woken from a 30 s SIGSTOP: it knows at once
    assert not live.fresh() and live.expired
    with pytest.raises(LeaseExpired, match=r"has not renewed its lease for 31\.0 s"):
        live.check()
    assert live.why_not() == "this process has not renewed its lease for 31.0 s"
    live.renewed_at = 1031.0  # a renewal that raced the wake-up does not revive it
    assert not live.fresh()
    live.rejoin()
    assert not live.expired and live.renewed_at is None


def test_postgresql_refusing_a_stale_epoch_is_a_lease_fenced_never_a_link_refused() -> None:
    error = asyncpg.PostgresError.new({"C": "JPL01", "M": "shard 3's lease epoch is 8", "D": "shard=3 epoch=8 held=7"})
    fenced = ledger.lease_fenced(error)
    assert fenced is not None and (fenced.shard, fenced.epoch, fenced.held) == (3, 8, 7)
    assert str(fenced) == ("PostgreSQL refused the append: shard 3's lease epoch is 8, this writer holds 7: another "
                           "writer took it over")
    assert not ledger.refuses(error)  # no link is fenced for it
    assert ledger.lease_fenced(asyncpg.PostgresError.new({"C": "23505", "M": "duplicate"})) is None
    garbled = ledger.lease_fenced(asyncpg.PostgresError.new({"C": "JPL01", "M": "?", "D": "nonsense"}))
    assert garbled is not None and garbled.shard == -1  # still fenced: the refusal is the code, not the text


def test_health_says_why_nobody_writes_a_shard_and_never_that_one_takes_it_over_when_none_can() -> None:
    silent = ShardLease(3, 7, "a:1:x", 4.2)
    taking = unled(3, LeaseStates({3: silent}, frozenset({"a:1:x", "b:2:y"}) - {"a:1:x"}))
    assert taking == ("the writer lease of its shard 3 is held by a:1:x, which has not renewed for 4 s (paused, or "
                      "cut off from PostgreSQL?); writer b:2:y takes it over once the lease time has passed")
    alone = unled(3, LeaseStates({3: silent}, frozenset()))
    assert alone.endswith("no other ledger writer is running to take it over")
    recovering = unled(3, LeaseStates({3: ShardLease(3, 8, "b:2:y", 0.3)}, frozenset({"b:2:y"})))
    assert recovering == ("no ledger writer writes its shard 3 now: b:2:y holds its lease (epoch 8) and is taking "
                          "it over")
    assert unled(3, LeaseStates({3: ShardLease(3, 0, None, None)}, frozenset())).endswith(
        "and none is running to take it over")
    assert unled(3, None) == "no ledger writer holds its shard 3 now"  # PostgreSQL cannot say: nothing claimed
    assert all("(one is taking it over)" not in said for said in (taking, alone, recovering))


class FakeLiveness:
    """A lease the test expires: what LeadingWriter asks of store/liveness.py."""

    def __init__(self) -> None:
        self.expired = False
        self.rejoined = 0

    def fresh(self) -> bool:
        return not self.expired

    def silent_s(self) -> float:
        return 31.0

    def rejoin(self) -> None:
        self.expired = False
        self.rejoined += 1

    async def renew(self) -> bool:
        return True

    async def run(self, stop: object) -> None:
        return None

    async def close(self) -> None:
        return None


async def test_an_expired_lease_stops_the_writer_at_once_and_the_process_rejoins() -> None:
    lease = FakeLease()
    lease.liveness = FakeLiveness()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()
    assert lw.leading and lw.shards == ALL
    lease.offer = None  # while it is stepping down, nothing to take
    lease.liveness.expired = True  # woken from a pause longer than the lease time
    await _until(lambda: not writers[0].alive, "the writer stopped")
    assert "stop writer at once" in lease.log and "stop writer" not in lease.log  # no last pass: others may write
    assert lease.released >= 1
    await _until(lambda: lease.liveness.rejoined == 1, "the process rejoins")
    lease.offer = ALL
    await _until(lambda: lw.leading, "leading again once it has renewed")
    await lw.stop()


async def test_a_writer_fenced_by_postgresql_is_stopped_at_once() -> None:
    lease = FakeLease()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()
    lease.offer = None
    writers[0].lost = "PostgreSQL refused the append: shard 3's lease epoch is 8, this writer holds 7"
    writers[0].alive = False  # its loop ended on LeaseFenced
    await _until(lambda: lease.released >= 1, "its leases given up")
    assert "stop writer at once" in lease.log
    await lw.stop()
