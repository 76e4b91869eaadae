"""The ledger writer keeps each link's filter of used ids complete (issue 22, P1; domain/seen_filter.py): a link
without one (new, rebuilt, flushed, upgraded) or with a full one gets a new filter, filled from the ledger.

A fill first marks the filter "fill:<token>" and empties its bits, in one script that also reads the link's
sequence S: from then on every atomic step adds its ids. It then reads every id the ledger holds, once the ledger
holds entry S, and ORs them in; a last script marks the filter "ok" (trusted) if the token is still its own. Steps
apply while it fills and ask the ledger meanwhile. A rebuild deletes the filter (redis/rebuild.py), so a fill
under way when Redis is replaced never marks the new state complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..domain import seen_filter
from . import keys, ledger
from .redis.pools import RedisPools

log = logging.getLogger("jackpotd.seen")

# KEYS: 1 the filter  2 its bits  3 the link's sequence. ARGV: 1 the state it must be in ("" absent) 2 the new
# state 3 the new size. Returns the sequence, or false (the state moved on, or the link is not in Redis).
BEGIN = """
local state = redis.call('HGET', KEYS[1], 'state') or ''
if state ~= ARGV[1] then return false end
local seq = redis.call('GET', KEYS[3])
if not seq then return false end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'bits', ARGV[3])
return seq
"""

# KEYS: 1 the filter  2 its bits  3 the bits read from the ledger. ARGV: 1 the fill's state. Returns 1 if it
# is now complete, 0 if another fill or a rebuild took the filter meanwhile.
FINISH = """
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[1] then redis.call('DEL', KEYS[3]) return 0 end
redis.call('BITOP', 'OR', KEYS[2], KEYS[2], KEYS[3])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[1], 'state', 'ok')
return 1
"""


class SeenFiller:
    """Fills the filters of the links a ledger writer follows, each in a task of its own (the probe never waits)."""

    FULL_EVERY = 60.0  # seconds between looks at how full a complete filter is
    WAIT_HEAD = 30.0  # seconds a fill waits for the ledger to hold what it began after, before it starts again
    POLL = 0.2

    def __init__(self, redis: RedisPools, pg: ledger.Pool) -> None:
        self.redis = redis
        self.pg = pg
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._looked: dict[str, float] = {}  # link -> when its complete filter's fullness was last looked at

    async def tend(self, links: Sequence[str], heads: Mapping[str, int]) -> None:
        """Start a fill for each link whose filter is missing, unfinished (its fill died) or full."""
        self._tasks = {link: t for link, t in self._tasks.items() if not t.done()}
        links = [link for link in links if link not in self._tasks]
        if not links:
            return
        pipe = self.redis.client.pipeline(transaction=False)
        for link in links:
            pipe.hmget(keys.seen(link), ["state", "bits"])
        states: list[list[Any]] = await pipe.execute()
        now = time.monotonic()
        for link, (state, bits) in zip(links, states, strict=True):
            ids = 2 * heads.get(link, 0)  # an entry has one request id and at most one new round
            size = seen_filter.bits_for(ids)
            if state == "ok" and bits is not None:  # (one without a size is filled again)
                if now - self._looked.get(link, -1e9) < self.FULL_EVERY:
                    continue
                self._looked[link] = now
                used = await self.redis.client.bitcount(keys.seen_bits(link))
                if not seen_filter.needs_refill(used, int(bits)):
                    continue
                size = max(size, min(seen_filter.MAX_BITS, 2 * int(bits)))
                log.info("link %s: its filter of used ids is %d%% full; making one of %d bits", link,
                         100 * used // int(bits), size)
            self._tasks[link] = asyncio.create_task(self._fill(link, state or "", size), name=f"seen-fill-{link}")

    async def forget(self, link: str) -> None:
        """Drop the link's filter (a fill under way then completes nothing): its ledger was mended by a person
        (`jackpotd unfence`), so what the filter was filled from may not be what the ledger now holds."""
        await self.redis.client.delete(keys.seen(link), keys.seen_bits(link))

    async def stop(self) -> None:
        """Stop every fill under way (a filter left unfinished is filled again by the next writer)."""
        for task in self._tasks.values():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    async def _fill(self, link: str, expect: str, size: int) -> None:
        try:
            if await self.fill(link, expect, size):
                self._looked[link] = time.monotonic()  # a new filter is not full
        except Exception as e:  # the next probe starts it again
            log.warning("link %s: filling its filter of used ids failed: %s", link, e)

    async def fill(self, link: str, expect: str, size: int) -> bool:
        """One fill of the link's filter, from state `expect`, at `size` bits; whether it completed it."""
        started = time.monotonic()
        state = "fill:" + secrets.token_hex(8)
        client = self.redis.client
        seq = await client.eval(BEGIN, 3, keys.seen(link), keys.seen_bits(link), keys.seq(link), expect, state, size)
        if seq is None:
            return False
        bitmap = bytearray(size // 8)
        count = 0

        def visit(ids: list[str]) -> None:
            nonlocal count
            count += len(ids)
            for item in ids:
                seen_filter.set_bits(bitmap, item, size)

        deadline = time.monotonic() + self.WAIT_HEAD
        while not await ledger.used_ids(self.pg, link, int(seq), visit):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(self.POLL)
        token = state.removeprefix("fill:")
        await client.set(keys.seen_fill(link, token), bytes(bitmap))
        done = bool(await client.eval(FINISH, 3, keys.seen(link), keys.seen_bits(link), keys.seen_fill(link, token),
                                      state))
        log.info("link %s: filter of used ids %s: %d ids from the ledger, %d bits (%.2g%% maybe), %.1f s", link,
                 "complete" if done else "taken by another fill or a rebuild", count, size,
                 100 * seen_filter.maybe_rate(count, size), time.monotonic() - started)
        return done
