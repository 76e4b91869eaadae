"""The writer leases' loop (jackpotd/store/leader.py) under failures and changes of shares: it never dies silently,
always gives its leases up when it stops leading, a writer that fails to stop does not keep them, and a change of
shards restarts the writer on the new set, stopping the old one before its shards are given back."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from jackpotd.store.leader import LeadingWriter, WriterLease
from jackpotd.store.shards import ALL, SHARDS, shard_of


class FakeLease:
    """Leases granted by the test: `offer` is the share claim() answers with (None: the database cannot be asked),
    and it may fail to say the leases are still held."""

    def __init__(self, offer: frozenset[int] | None = ALL) -> None:
        self.offer = offer
        self.member: int | None = 0
        self.shards: frozenset[int] = frozenset()
        self.lost = False
        self.released = 0
        self.given_back: list[frozenset[int]] = []
        self.recovered: list[frozenset[int]] = []
        self.log: list[str] = []
        self.liveness: Any = None
        self.conn: Any = None

    async def claim(self) -> frozenset[int] | None:
        if self.offer is None:
            return None
        self.shards = self.shards | self.offer if len(self.offer) >= len(self.shards) else self.shards
        return self.offer

    async def give_back(self, shards: frozenset[int]) -> None:
        if shards:
            self.log.append("give back")
            self.given_back.append(shards)
        self.shards -= shards

    async def held(self) -> bool:
        return not self.lost

    async def why_lost(self) -> str | None:
        return "the test took it" if self.lost else None

    async def release(self) -> None:
        self.shards = frozenset()
        self.lost = False
        self.released += 1


class FakeWriter:
    def __init__(self, shards: frozenset[int], log: list[str], fail_stop: bool = False) -> None:
        self.shards = shards
        self.alive = False
        self.fail_stop = fail_stop
        self.log = log
        self.lost: str | None = None

    async def start(self) -> None:
        self.alive = True

    async def stop(self, graceful: bool = True) -> None:
        self.alive = False
        self.log.append("stop writer" if graceful else "stop writer at once")
        if self.fail_stop:
            raise RuntimeError("the writer's last batch failed")


def leader(lease: FakeLease, writers: list[FakeWriter], fail_stop: bool = False) -> LeadingWriter:
    def make(shards: frozenset[int], member: int) -> Any:
        w = FakeWriter(shards, lease.log, fail_stop=fail_stop)
        writers.append(w)
        return w

    async def recover(shards: frozenset[int]) -> None:
        lease.recovered.append(shards)

    out = LeadingWriter(lease, make, recover)  # type: ignore[arg-type]
    out.CHECK_EVERY = 0.01
    return out


async def _until(check: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.01)


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WriterLease, "POLL", 0.01)


async def test_a_database_that_cannot_be_asked_is_retried_not_fatal() -> None:
    lease = FakeLease(offer=None)
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()  # stands by
    assert not lw.leading
    lease.offer = ALL
    await _until(lambda: lw.leading, "leading once the database answers")
    assert lw._task is not None and not lw._task.done()
    await lw.stop()
    assert not lw.leading and lease.released >= 1


async def test_a_lost_lease_stops_the_writer_and_leading_resumes() -> None:
    lease = FakeLease()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()
    assert lw.leading and lw.shards == ALL
    lease.offer = None
    lease.lost = True  # the lease's session ended
    await _until(lambda: not writers[0].alive, "the writer stopped")
    assert "stop writer at once" in lease.log  # another may be writing its shards already: no last pass
    assert not lw.leading and lease.released >= 1
    lease.offer = ALL
    await _until(lambda: lw.leading, "leading again")
    assert len(writers) == 2
    await lw.stop()


async def test_a_smaller_share_stops_the_writer_before_giving_shards_back() -> None:
    lease = FakeLease()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()
    half = frozenset(range(SHARDS // 2))
    lease.offer = half  # a second writer joined
    await _until(lambda: len(writers) == 2 and writers[1].alive, "the writer restarted on half the shards")
    assert writers[1].shards == half and not writers[0].alive
    assert lease.given_back == [ALL - half]
    assert lease.log.index("stop writer") < lease.log.index("give back")  # never two writers on one shard
    assert lease.recovered == [ALL]  # the shards it kept were written a moment ago: in step, not recovered
    lease.offer = ALL  # the other writer died
    await _until(lambda: len(writers) == 3 and writers[2].alive, "the writer restarted on every shard")
    assert writers[2].shards == ALL and lease.recovered[-1] == ALL - half  # only what it takes over
    await lw.stop()


async def test_a_writer_that_fails_to_stop_still_gives_the_leases_up() -> None:
    lease = FakeLease()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers, fail_stop=True)
    await lw.start()
    assert lw.leading
    await lw.stop()
    assert lease.shards == frozenset() and lease.released >= 1


def test_links_spread_over_every_shard() -> None:
    shards = {shard_of(f"link-{n}") for n in range(400)}
    assert shards == set(ALL)
    assert shard_of("casino-7") == shard_of("casino-7")
