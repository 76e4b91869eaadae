"""The writer lease's loop (jackpotd/store/leader.py) under failures: it never dies silently, always gives the
lease up when it stops leading, and a writer that fails to stop does not keep the lease."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jackpotd.store.leader import LeadingWriter, WriterLease


class FakeLease:
    """A lease that grants itself when `free`, and may fail when asked."""

    def __init__(self, fail_acquires: int = 0) -> None:
        self.free = True
        self.holding = False
        self.fail_acquires = fail_acquires
        self.released = 0

    async def try_acquire(self) -> bool:
        if self.fail_acquires:
            self.fail_acquires -= 1
            raise RuntimeError("no primary yet")
        self.holding = self.free
        return self.holding

    async def acquire(self, stop: asyncio.Event) -> bool:
        while not stop.is_set():
            try:
                if await self.try_acquire():
                    return True
            except RuntimeError:
                raise
            await asyncio.sleep(0.01)
        return False

    async def held(self) -> bool:
        return self.holding and self.free

    async def release(self) -> None:
        self.holding = False
        self.released += 1


class FakeWriter:
    def __init__(self, fail_stop: bool = False) -> None:
        self.alive = False
        self.fail_stop = fail_stop

    async def start(self) -> None:
        self.alive = True

    async def stop(self) -> None:
        self.alive = False
        if self.fail_stop:
            raise RuntimeError("the writer's last batch failed")


async def _recover() -> None:
    return None


def leader(lease: FakeLease, writers: list[FakeWriter]) -> LeadingWriter:
    def make() -> Any:
        w = FakeWriter(fail_stop=bool(writers) and writers[0].fail_stop)
        writers.append(w)
        return w

    out = LeadingWriter(lease, make, _recover)  # type: ignore[arg-type]
    out.CHECK_EVERY = 0.01
    return out


async def test_a_failing_acquire_is_retried_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WriterLease, "POLL", 0.01)
    lease = FakeLease()
    lease.free = False
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()  # stands by
    lease.fail_acquires = 2  # the loop's next asks fail (a failover under way)
    lease.free = True
    for _ in range(500):
        if lw.leading:
            break
        await asyncio.sleep(0.01)
    assert lw.leading and lw._task is not None and not lw._task.done()
    await lw.stop()
    assert not lease.holding and not lw.leading


async def test_a_lost_lease_stops_the_writer_and_leading_resumes_when_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WriterLease, "POLL", 0.01)
    lease = FakeLease()
    writers: list[FakeWriter] = []
    lw = leader(lease, writers)
    await lw.start()
    assert lw.leading
    lease.free = False  # the lease's session ended
    for _ in range(500):
        if not writers[0].alive:
            break
        await asyncio.sleep(0.01)
    assert not writers[0].alive and not lw.leading
    lease.free = True
    for _ in range(500):
        if lw.leading:
            break
        await asyncio.sleep(0.01)
    assert lw.leading and len(writers) == 2
    await lw.stop()


async def test_a_writer_that_fails_to_stop_still_gives_the_lease_up() -> None:
    lease = FakeLease()
    writers: list[FakeWriter] = [FakeWriter(fail_stop=True)]
    lw = leader(lease, writers)
    await lw.start()
    assert lw.leading
    await lw.stop()
    assert not lease.holding and lease.released >= 1
