"""apply.lua against a real Valkey, through the Redis adapter: the stored request hash read by field, a guard that
moved, a round that a step finishes (apply.lua is told so; it knows no state names), and a step decided by a clock
that jumped (issue 23)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from jackpotd.clock import now_ms
from jackpotd.domain.rounds import COMMITTED, SETTLED
from jackpotd.service.commands import Audit
from jackpotd.service.entries import Entry, FundDetail
from jackpotd.service.errors import Unavailable
from jackpotd.service.ports import NEW_LINK, ROUND_ABSENT, Applied, IdReused, Stale, Step
from jackpotd.service.replies import LinkResult
from jackpotd.service.seen import Unsure, Why
from jackpotd.store import keys
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique


@pytest_asyncio.fixture
async def redis(isolated: Isolated) -> AsyncIterator[RedisPools]:
    pools = await RedisPools.open(isolated.redis_url)
    yield pools
    await pools.close()


def step(link: str, request_id: str, content: str = "{}", version: str = "1", *, skew_ms: int = 0,
         **checks: Any) -> Step:
    """A step of `link` with `request_id` whose hash is its content's (so other content is another hash), decided
    now (by a clock `skew_ms` off)."""
    digest = hashlib.sha256(content.encode()).hexdigest()
    entry = Entry("fund", now_ms() + skew_ms, request_id, digest, (), FundDetail(Audit()))
    return Step(link, request_id, digest, f"{request_id}:{digest}", orjson.loads(content), content, version,
                entry, LinkResult(link), **checks)


async def created(redis: RedisPools) -> str:
    link = unique("lua")
    outcome = await redis.apply(step(link, "create", version=NEW_LINK, new_config='{"pools":[]}',
                                     deltas=[("MAJOR", 100)]), 0)
    assert isinstance(outcome, Applied) and outcome.first
    return link


async def test_a_record_is_read_by_field_whatever_the_order_of_its_fields(redis: RedisPools) -> None:
    link = await created(redis)
    first = await redis.apply(step(link, "fund", '{"a":1}', deltas=[("MAJOR", 5)]), 0)
    assert isinstance(first, Applied) and first.first
    record = keys.record(link, "fund")
    stored = orjson.loads(await redis.client.get(record))
    assert next(iter(stored)) == "hash"  # as apply.lua writes it: read by offset before, by field now
    reordered = {k: stored[k] for k in sorted(stored, key=lambda k: k == "hash")}
    assert list(reordered)[-1] == "hash"
    assert await redis.client.set(record, orjson.dumps(reordered), keepttl=True, xx=True)
    again = await redis.apply(step(link, "fund", '{"a":1}', deltas=[("MAJOR", 5)]), 0)
    assert again == Applied(first.reply, first=False)
    other = await redis.apply(step(link, "fund", '{"a":2}', deltas=[("MAJOR", 5)]), 0)
    assert other == IdReused(first.reply)
    assert await redis.balances(link) == {"MAJOR": 105}


async def test_a_guarded_pool_that_moved_is_a_contended_retry(redis: RedisPools) -> None:
    link = await created(redis)
    outcome = await redis.apply(step(link, "pay", guards={"MAJOR": 99}, deltas=[("MAJOR", -99)]), 0)
    assert outcome == Stale(contended=True)
    assert await redis.balances(link) == {"MAJOR": 100} and await redis.seq(link) == 1


async def test_a_step_that_finishes_its_round_closes_it(redis: RedisPools) -> None:
    link = await created(redis)
    rnd = ("T", "r1")
    opened = await redis.apply(step(link, "commit", round=rnd, round_expect=ROUND_ABSENT, round_new_state=COMMITTED,
                                    round_data="d"), 0)
    assert isinstance(opened, Applied)
    assert await redis.client.get(keys.open_rounds(link)) == "1"
    assert await redis.client.ttl(keys.round_(link, *rnd)) == -1  # open: kept
    rev = str(opened.reply.seq)
    settled = await redis.apply(step(link, "settle", round=rnd, round_expect=COMMITTED, round_rev=rev,
                                     round_new_state=SETTLED, round_data="d"), 0)
    assert isinstance(settled, Applied)
    assert await redis.client.get(keys.open_rounds(link)) == "0"
    assert await redis.client.ttl(keys.round_(link, *rnd)) > 0  # finished: let go once the ledger holds it


async def test_the_filter_of_used_ids_is_trusted_only_once_complete_and_only_ever_added_to(redis: RedisPools) -> None:
    """Issue 22, P1: an id whose bits are not all set was never used (no ledger question); an unfinished filter, or
    an id (the request's, its bare legacy id, a new round's) with every bit set, is Unsure and changes nothing."""
    link = await created(redis)
    rnd = ("T", "r1")

    def commit(request_id: str) -> Step:
        return step(link, request_id, f'{{"{request_id}":1}}', round=rnd, round_expect=ROUND_ABSENT,
                    round_new_state=COMMITTED, round_data="d")

    assert await redis.apply(commit("a"), 0, "") == Unsure(Why.UNFILLED)  # no filter yet
    await redis.client.hset(keys.seen(link), mapping={"state": "fill:x", "bits": str(1 << 20)})
    assert await redis.apply(commit("a"), 0, "") == Unsure(Why.UNFILLED)  # a fill under way
    assert await redis.client.get(keys.seq(link)) == "1"  # nothing applied
    opened = await redis.apply(commit("a"), 0)  # the ledger was asked: no check, and its ids are added
    assert isinstance(opened, Applied) and opened.first
    await redis.client.hset(keys.seen(link), "state", "ok")
    assert await redis.apply(step(link, "b", '{"b":1}'), 0, "a") == Unsure(Why.MAYBE)  # "a" as a bare legacy id
    assert await redis.apply(commit("c"), 0, "") == Unsure(Why.MAYBE)  # its new round was used
    assert await redis.client.get(keys.seq(link)) == "2"
    settled = await redis.apply(step(link, "s", round=rnd, round_expect=COMMITTED, round_rev=str(opened.reply.seq),
                                     round_new_state=SETTLED, round_data="d"), 0, "")  # an open round is not asked
    fresh = await redis.apply(step(link, "d", '{"d":1}'), 0, "")  # never used: applied without a question
    assert isinstance(settled, Applied) and isinstance(fresh, Applied) and fresh.reply.seq == 4
    assert await redis.apply(step(link, "e", '{"e":1}'), 0, "d") == Unsure(Why.MAYBE)  # "d" is now used


async def test_a_step_decided_by_a_clock_that_jumped_is_refused_and_changes_nothing(redis: RedisPools) -> None:
    link = await created(redis)
    for skew in (3_600_000, -3_600_000):
        way = "ahead of" if skew > 0 else "behind"
        with pytest.raises(Unavailable, match=f"clock is 3600.0 s {way} Redis's"):
            await redis.apply(step(link, "jumped", '{"j":1}', skew_ms=skew, deltas=[("MAJOR", 5)]), 0)
        assert await redis.seq(link) == 1 and await redis.balances(link) == {"MAJOR": 100}
        assert await redis.client.get(keys.record(link, "jumped")) is None
    near = await redis.apply(step(link, "jumped", '{"j":1}', skew_ms=-4_000, deltas=[("MAJOR", 5)]), 0)
    assert isinstance(near, Applied) and near.first  # within the tolerance (a step that waited its turn)
    again = await redis.apply(step(link, "jumped", '{"j":1}', skew_ms=3_600_000, deltas=[("MAJOR", 5)]), 0)
    assert again == Applied(near.reply, first=False)  # a retry is answered from its record, whatever the clock
