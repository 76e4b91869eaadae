"""What a sign or meter is sent (service/decide/reads.py, pure) and how a watcher's mailbox paces it
(service/feed.py Watcher: hits one by one, pools coalesced, never waiting on a slow reader)."""

from __future__ import annotations

import asyncio

import pytest

from jackpotd.domain.pools import MAJOR, MINOR
from jackpotd.service.decide.reads import announcements, hits_of
from jackpotd.service.errors import Unavailable
from jackpotd.service.feed import BACKLOG_MAX, Watcher
from jackpotd.service.ports import Reply
from jackpotd.service.replies import decode_result
from jackpotd.service.results import HitAnnouncement, LinkUpdate, pool_views

from .test_decide_table import UC, link

PAYOUT = {"seat": 3, "hand": "royal_flush", "amount_cents": 1_000_000, "pool": MAJOR, "hit_id": "L:T:r:3",
          "funded_by_operator_cents": 0, "status": "PAID", "pool_before_uc": 0, "rule": "§5"}


def reply(seq: int, payouts: list[dict[str, object]] | None = None) -> Reply:
    result = {"payouts": payouts, "resets": [], "seats": []} if payouts is not None else {"accepted": []}
    return Reply(seq, decode_result(result), {MAJOR: 1_000_000 * UC + 999_999, MINOR: 5 * UC}, {"table_id": "T"}, "h")


def test_pools_show_floored_cents_and_hide_reserve() -> None:
    views = pool_views(link(), {MAJOR: 12 * UC + 999_999, MINOR: 5})
    assert [(v.pool, v.amount_cents, v.balance_ucents) for v in views] == [(MAJOR, 12, 12 * UC + 999_999),
                                                                             (MINOR, 0, 5)]
    assert [v.pool for v in pool_views(link(), {}, include_hidden=True)] == [MAJOR, MINOR, "RESERVE"]


def test_every_hit_is_announced_with_its_pool_after() -> None:
    (hit,) = hits_of(reply(9, [PAYOUT]))
    assert (hit.table_id, hit.seat, hit.hand, hit.sequence, hit.pool_amount_after_cents) == ("T", 3, "royal_flush",
                                                                                             9, 1_000_000)
    assert hits_of(reply(10)) == ()


def test_a_decision_is_announced_with_the_hits_new_status() -> None:
    hit = {"hit_id": "L:T:r:3", "status": "REJECTED", "hand": "royal_flush", "amount_cents": 1_000_000,
           "pool": MAJOR, "returned_to_pool_uc": 0, "returned_to_operator_cents": 0}
    (a,) = announcements("reject_hit", Reply(12, decode_result({"hit": hit}), {MAJOR: 7 * UC}, {}, "h"))
    assert (a.table_id, a.seat, a.hand, a.status, a.pool_amount_after_cents, a.sequence) == (
        "T", 3, "royal_flush", "REJECTED", 7, 12)
    (held,) = announcements("settle", reply(9, [{**PAYOUT, "status": "PENDING"}]))
    assert held.status == "PENDING"  # §7: every sign shows it pending


def update(seq: int, hit: bool = False) -> LinkUpdate:
    announced = HitAnnouncement("T", 1, "flush", 100, MINOR, f"L:T:r{seq}:1", seq) if hit else None
    return LinkUpdate(seq, (), announced)


async def test_hits_go_out_one_by_one_and_pools_are_coalesced_to_the_latest() -> None:
    w = Watcher(start=5)
    w.offer([update(4, True), update(6, True), update(7, True)], update(8))  # 4 came before the stream
    w.offer([], update(9))
    got = [await w.next(0.01) for _ in range(4)]
    assert [(u.seq, u.hit is not None) for u in got if u] == [(6, True), (7, True), (9, False)]
    assert got[3] is None


async def test_pools_older_than_what_the_stream_showed_are_not_sent() -> None:
    w = Watcher(start=5)
    w.showed(update(10))  # a heartbeat's snapshot
    w.offer([update(9, True)], update(9))
    first = await w.next(0.01)
    assert first is not None and first.hit is not None  # the hit still goes out
    assert await w.next(0.01) is None  # its pools are older than those shown


async def test_a_watcher_that_stops_reading_is_let_go_without_waiting() -> None:
    w = Watcher(start=0)
    for seq in range(1, BACKLOG_MAX + 2):
        w.offer([update(seq, True)], update(seq))  # never blocks the feed
    with pytest.raises(Unavailable, match="unread"):
        await w.next(0.01)


async def test_next_waits_for_an_offer() -> None:
    w = Watcher(start=0)
    waiting = asyncio.ensure_future(w.next(5))
    await asyncio.sleep(0)  # one turn of the loop: the task runs into its wait, nothing offered yet
    assert not waiting.done()
    w.offer([], update(3))
    got = await asyncio.wait_for(waiting, 1)
    assert got is not None and got.seq == 3
