"""Issue 22, P1: the filter of used ids answers "never used" without the ledger, and stays exact: a repeat is caught
after the live store let its record go, after a FLUSHALL and rebuild (the filter lost), with the filter lying
"maybe"; every such doubt is one question to the ledger (an unfinished filter: test_apply_script.py)."""

from __future__ import annotations

import grpc
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from jackpotd.domain import seen_filter
from jackpotd.store import keys

from ..conftest import unique
from .conftest import Private
from .harness import Client, eventually, rid

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]


def asked(why: str) -> float:
    """How often this process's calls asked the ledger whether an id was used, for `why` (service/seen.py)."""
    return REGISTRY.get_sample_value("jackpotd_ledger_id_questions_total", {"why": why}) or 0.0


def all_asked() -> float:
    return sum(asked(why) for why in ("maybe", "unfilled", "refused"))


async def _filled(c: Client, link: str) -> bool:
    return bool(await c.redis.hget(keys.seen(link), "state") == "ok")


async def filled(c: Client, link: str) -> None:
    await eventually(lambda: _filled(c, link), 20, f"the filter of link {link} filled by the writer")


async def new_link(c: Client) -> tuple[str, str]:
    link, table = unique("seen"), unique("tbl")
    await c.create_link(link)
    await c.register(table, link)
    return link, table


async def entries(c: Client, link: str) -> int:
    return int(await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link))


async def repeats_caught(c: Client, table: str, commit_id: str, seq: int) -> None:
    """A retry of the commit of round r1 is answered as it was; r1 with a new request id is refused."""
    assert (await c.commit(table, "r1", [1], request_id=commit_id)).sequence == seq
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await c.commit(table, "r1", [1])
    assert err.value.code() == S.FAILED_PRECONDITION and "SETTLED" in (err.value.details() or ""), err.value


async def test_new_ids_skip_the_ledger_and_a_repeat_after_the_retention_is_one_ledger_question(
        private: Private) -> None:
    c = private.client
    link, table = await new_link(c)
    await filled(c, link)
    before = all_asked()
    commit_id = rid()
    first = await c.commit(table, "r1", [1], request_id=commit_id)
    await c.settle(table, "r1", {1: FLUSH})
    for n in range(2, 6):
        await c.commit(table, f"r{n}", [1, 2])
        await c.settle(table, f"r{n}", {1: FLUSH})
    assert all_asked() == before  # ten calls, none asked the ledger
    # every id the ledger holds is in the filter, as Redis holds it (the script's bits and Python's agree)
    raw = aioredis.Redis.from_url(private.valkey.url)
    try:
        bits = await raw.get(keys.seen_bits(link)) or b""
    finally:
        await raw.aclose()
    size = int(await c.redis.hget(keys.seen(link), "bits"))
    ids = [seen_filter.request_key(r["request_id"]) for r in
           await c.pg.fetch("SELECT request_id FROM entries WHERE link_id = $1", link)]
    ids += [seen_filter.round_key(r["table_id"], r["round_id"]) for r in
            await c.pg.fetch("SELECT table_id, round_id FROM rounds WHERE link_id = $1", link)]
    assert len(ids) == 2 + 10 + 5 and all(seen_filter.has_bits(bits.ljust(size // 8, b"\0"), i, size) for i in ids)
    # the live store let the record go: the filter says "maybe", the ledger answers
    assert await c.redis.delete(keys.record(link, f"table:{table}:{commit_id}")) == 1
    count, maybe = await entries(c, link), asked("maybe")
    await repeats_caught(c, table, commit_id, first.sequence)
    assert asked("maybe") == maybe + 2 and await entries(c, link) == count


async def test_after_flushall_and_rebuild_old_ids_are_caught_before_and_after_the_filter_is_filled_again(
        private: Private) -> None:
    c = private.client
    link, table = await new_link(c)
    await filled(c, link)
    commit_id = rid()
    first = await c.commit(table, "r1", [1], request_id=commit_id)
    await c.settle(table, "r1", {1: FLUSH})
    count = await entries(c, link)
    await c.redis.flushall()  # the filter goes with everything else
    await eventually(lambda: c.pools(link), 20, "the link rebuilt")
    if not await _filled(c, link):  # until a fill completes, every call asks the ledger
        unfilled = asked("unfilled")
        await repeats_caught(c, table, commit_id, first.sequence)
        assert asked("unfilled") == unfilled + 2
    await filled(c, link)
    await repeats_caught(c, table, commit_id, first.sequence)  # now from the filled filter's "maybe"
    assert await entries(c, link) == count
    before = all_asked()
    await c.commit(table, "r2", [1])  # and a new round is applied without the ledger
    assert all_asked() == before and await entries(c, link) == count + 1


async def test_a_false_maybe_is_only_a_ledger_question(private: Private) -> None:
    c = private.client
    link, table = await new_link(c)
    await filled(c, link)
    size = int(await c.redis.hget(keys.seen(link), "bits"))
    await c.redis.set(keys.seen_bits(link), b"\xff" * (size // 8))  # every id now looks used
    maybe, count = asked("maybe"), await entries(c, link)
    commit = await c.commit(table, "r1", [1, 2])
    await c.settle(table, "r1", {1: FLUSH})
    assert [a.seat for a in commit.accepted] == [1, 2] and await entries(c, link) == count + 2
    assert asked("maybe") == maybe + 2
