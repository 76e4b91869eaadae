"""The durability watcher (ARCHITECTURE.md write path 4): lets a gRPC worker wait until the ledger holds an
entry, from the ledger writer's announcements, checked against the ledger itself when one may be missed.
It implements service.ports.Durability and raises only the service's errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from ..metrics import DURABILITY_CHECKS
from ..service.deadlines import bounded
from ..service.errors import LinkFenced, LinkLost, Unavailable
from . import ledger
from .announcements import Announcement, Durable, Fenced, Rebuilt, parse
from .durable_window import DurableWindow
from .redis.pools import RedisPools

log = logging.getLogger("jackpotd.durability")


@dataclass(slots=True)
class _Waiter:
    seq: int
    identity: str | None  # of the request; None: a read that waits only for the sequence to be durable
    deadline: float
    fut: asyncio.Future[None] = field(repr=False)


class DurabilityWatcher:
    """Lets a gRPC worker wait until the ledger holds an entry (ARCHITECTURE.md, write path 4).

    A caller is answered only when the ledger holds its very request at its sequence: a sequence number
    alone could belong to another operation if Redis went back and reused it.
    """

    POLL_SECONDS = 0.5

    def __init__(self, redis: RedisPools, pg: ledger.Pool, timeout: float = 10.0) -> None:
        self.redis = redis
        self.pg = pg
        self.timeout = timeout
        self.marks: dict[str, int] = {}
        self._waiters: dict[str, list[_Waiter]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._checks: set[asyncio.Future[None]] = set()
        self._feed: contextlib.AbstractAsyncContextManager[AsyncIterator[str]] | None = None
        self._listeners: list[Callable[[str, int], None]] = []
        self._fenced: dict[str, tuple[int, str]] = {}  # link -> (the refused entry, why), as last announced
        self._recent = DurableWindow()  # what the last announcements said: a waiter late for its own is answered

    def on_durable(self, listener: Callable[[str, int], None]) -> None:
        """Call `listener(link, mark)` whenever a link's durable mark moves (signs follow it, issue 11)."""
        self._listeners.append(listener)

    def _mark_changed(self, link: str) -> None:
        for listener in self._listeners:
            try:
                listener(link, self.marks[link])
            except Exception:  # a listener's fault must not stop the announcements
                log.exception("durability listener failed for link %s", link)

    async def start(self) -> None:
        """Subscribe first, then read the ledger's heads: no announcement falls between the two."""
        self._feed = self.redis.announcements()
        messages = await self._feed.__aenter__()
        try:
            self.marks = await ledger.heads(self.pg)  # the floor below which a Redis has gone back
        except ledger.DRIVER_ERRORS as e:
            await self._feed.__aexit__(None, None, None)
            raise ledger.unavailable(e) from e
        self._tasks = [asyncio.create_task(self._listen(messages), name="durability-listener"),
                       asyncio.create_task(self._poll(), name="durability-poller")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._feed is not None:
            await self._feed.__aexit__(None, None, None)
        for waiters in self._waiters.values():
            for w in waiters:
                if not w.fut.done():
                    w.fut.set_exception(Unavailable("the service is shutting down; retry with the same request_id"))

    def floor(self, link_id: str) -> int:
        """The ledger's durable sequence of the link as this process knows it."""
        return self.marks.get(link_id, 0)

    async def wait_durable(self, link_id: str, seq: int, identity: str | None = None) -> None:
        """Return once the ledger holds entry `seq` of the link (and, given a request's identity, holds that
        very request there); Unavailable if not in time, LinkLost or LinkFenced if it never will."""
        loop = asyncio.get_running_loop()
        if self.marks.get(link_id, 0) >= seq and identity is None:
            return
        fenced = self._fenced.get(link_id)
        if fenced is not None and seq >= fenced[0]:  # fenced before this call began to wait: it never will be
            raise self._fence_error(link_id, *fenced)
        if identity is not None and self.marks.get(link_id, 0) >= seq:  # announced before we asked
            announced = self._recent.prefix(link_id, seq)
            if announced is not None:  # as exact as the announcement itself, heard a moment earlier
                if identity.startswith(announced):
                    return
                raise self._replaced(link_id, seq)
        waiter = _Waiter(seq, identity, loop.time() + self.timeout, loop.create_future())
        self._waiters.setdefault(link_id, []).append(waiter)

        async def settled() -> None:
            if self.marks.get(link_id, 0) >= seq:  # announced before this process listened (a retry): ask the ledger
                await self._verify(link_id, [waiter])
            await waiter.fut

        try:  # cut short by a caller's deadline (service/deadlines.py), the answer names it; else `timeout` bounds it
            await bounded(settled(), f"the ledger (entry {seq} of link {link_id} not yet recorded by its writer)")
        finally:
            waiter.fut.cancel()  # given up on (a no-op once settled): nobody is left to hear its outcome

    async def _listen(self, messages: AsyncIterator[str]) -> None:
        async for data in messages:
            try:
                announcement = parse(data)
            except ValueError as e:  # a kind this version does not know (a newer writer mid-upgrade): skipped
                log.warning("durability watcher: skipped an announcement it cannot read: %s", e)
                continue
            try:
                self._on_message(announcement)
            except Exception:  # one announcement we cannot act on must not silence the rest
                log.exception("durability watcher: cannot read announcement %r", data[:200])

    def _on_message(self, announcement: Announcement) -> None:
        match announcement:
            case Durable(link, seq, hashes):  # entries seq.. appended, with their request hashes
                self._durable(link, seq, hashes)
            case Rebuilt(link, seq):
                self._rebuilt(link, seq)
            case Fenced(link, seq, reason):
                self._fenced[link] = (seq, reason)
                self._fail(link, lambda w: w.seq >= seq, lambda w: self._fence_error(link, seq, reason))
            case unknown:
                assert_never(unknown)

    def _rebuilt(self, link: str, seq: int) -> None:
        """Redis was rebuilt from the ledger at `seq`: later entries are lost, earlier ones are checked."""
        self._fenced.pop(link, None)
        self._recent.forget(link)
        self.marks[link] = max(self.marks.get(link, 0), seq)
        self._mark_changed(link)
        self._fail(link, lambda w: w.seq > seq, lambda w: LinkLost(
            f"link {link}: Redis lost entry {w.seq} before the ledger recorded it and was rebuilt from the "
            "ledger; retry with the same request_id"))
        waiting = [w for w in self._waiters.get(link, []) if not w.fut.done()]
        if waiting:
            self._check(link, waiting)

    @staticmethod
    def _fence_error(link: str, seq: int, reason: str) -> LinkFenced:
        return LinkFenced(f"link {link} is fenced: the ledger refused entry {seq}: {reason}; see `jackpotd fenced`; "
                          "retry with the same request_id once it is resolved")

    def _durable(self, link: str, first: int, hashes: Sequence[str]) -> None:
        last = first + len(hashes) - 1
        self._recent.add(link, first, hashes)
        if link in self._fenced and last >= self._fenced[link][0]:  # the fence was lifted and the link goes on
            del self._fenced[link]
        if last > self.marks.get(link, 0):
            self.marks[link] = last
            self._mark_changed(link)
        waiters = self._waiters.get(link)
        if not waiters:
            return
        keep, missed = [], []
        for w in waiters:
            if w.fut.done():
                continue
            if w.seq > last:
                keep.append(w)
            elif w.identity is None:
                w.fut.set_result(None)
            elif w.seq < first:
                announced = self._recent.prefix(link, w.seq)
                if announced is None:
                    missed.append(w)  # announced earlier, before this process listened: ask the ledger
                    keep.append(w)
                elif w.identity.startswith(announced):
                    w.fut.set_result(None)
                else:
                    w.fut.set_exception(self._replaced(link, w.seq))
            elif w.identity.startswith(hashes[w.seq - first]):
                w.fut.set_result(None)
            else:
                w.fut.set_exception(self._replaced(link, w.seq))
        self._waiters[link] = keep
        if missed:
            self._check(link, missed)

    @staticmethod
    def _replaced(link: str, seq: int) -> LinkLost:
        return LinkLost(f"link {link}: the ledger holds another operation at sequence {seq}; Redis lost this one "
                        "before the ledger recorded it; retry with the same request_id")

    def _fail(self, link: str, which: Any, error: Any) -> None:
        keep = []
        for w in self._waiters.get(link, []):
            if w.fut.done():
                continue
            if which(w):
                w.fut.set_exception(error(w))
            else:
                keep.append(w)
        self._waiters[link] = keep

    def _check(self, link: str, waiters: list[_Waiter]) -> None:
        """Verify these waiters against the ledger in the background."""
        task = asyncio.ensure_future(self._verify(link, waiters))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _verify(self, link: str, waiters: list[_Waiter]) -> None:
        """Settle waiters from the ledger itself: their entry is there with their request, or another's."""
        try:
            held = await ledger.entry_identities(self.pg, link, [w.seq for w in waiters])
        except Exception as e:  # the poller asks again
            log.warning("durability check of link %s failed: %s", link, e)
            return
        if held and max(held) > self.marks.get(link, 0):  # the ledger appends in order: all up to it are held
            self.marks[link] = max(held)  # (an announcement was lost: signs must not wait for the next one)
            self._mark_changed(link)
        for w in waiters:
            found = held.get(w.seq)
            if w.fut.done() or found is None:
                continue
            if w.identity is None or found == w.identity:
                DURABILITY_CHECKS.labels("held").inc()
                w.fut.set_result(None)
            else:
                DURABILITY_CHECKS.labels("replaced").inc()
                w.fut.set_exception(self._replaced(link, w.seq))

    async def _poll(self) -> None:
        """Now and then ask the ledger about waiters no announcement has settled (one may have been lost in
        a reconnect), and fail waiters past their deadline."""
        while True:
            await asyncio.sleep(self.POLL_SECONDS)
            now = asyncio.get_running_loop().time()
            for link, waiters in list(self._waiters.items()):
                pending = [w for w in waiters if not w.fut.done()]
                self._waiters[link] = pending
                stale = [w for w in pending if w.deadline - self.timeout + self.POLL_SECONDS <= now]
                if stale:
                    await self._verify(link, stale)
                for w in pending:
                    if w.deadline <= now and not w.fut.done():
                        w.fut.set_exception(Unavailable(f"the ledger has not committed entry {w.seq} of link {link} "
                                                        "yet; retry with the same request_id"))
