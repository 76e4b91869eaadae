"""The read decisions (service/decide/reads.py): what a sign or meter is sent, and when. Pure."""

from __future__ import annotations

from jackpotd.domain.pools import MAJOR, MINOR
from jackpotd.service.decide.reads import HEARTBEAT, METER_INTERVAL, Due, Pacing, hits_of
from jackpotd.service.ports import Reply
from jackpotd.service.results import pool_views

from .test_decide_table import UC, link

PAYOUT = {"seat": 3, "hand": "royal_flush", "amount_cents": 1_000_000, "pool": MAJOR, "hit_id": "L:T:r:3",
          "funded_by_operator_cents": 0, "status": "PAID", "pool_before_uc": 0, "rule": "§5"}


def reply(seq: int, payouts: list[dict[str, object]] | None = None) -> Reply:
    result = {"payouts": payouts} if payouts is not None else {"accepted": []}
    return Reply(seq, result, {MAJOR: 1_000_000 * UC + 999_999, MINOR: 5 * UC}, {"table_id": "T"}, "h")


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


def test_a_hit_goes_out_at_once_and_its_pools_wait_for_the_interval() -> None:
    pacing = Pacing(last_sent=0.0)
    (update,) = pacing.received(reply(5, [PAYOUT]), link(), now=0.05)
    assert update.hit is not None and update.seq == 5 and pacing.last_sent == 0.05
    assert pacing.due(0.05 + METER_INTERVAL) is Due.LATEST
    latest = pacing.latest_update(link(), now=0.2)
    assert latest.hit is None and latest.seq == 5 and pacing.due(0.2) is Due.NOTHING


def test_pool_moves_are_coalesced_to_the_last() -> None:
    pacing = Pacing(last_sent=0.0)
    for seq in (1, 2, 3):
        assert pacing.received(reply(seq), link(), now=0.01 * seq) == []
    assert pacing.latest_update(link(), now=0.1).seq == 3


def test_a_quiet_link_gets_a_heartbeat() -> None:
    pacing = Pacing(last_sent=10.0)
    assert pacing.due(10.0 + HEARTBEAT - 0.01) is Due.NOTHING
    assert pacing.due(10.0 + HEARTBEAT) is Due.HEARTBEAT
    pacing.sent(12.5)
    assert pacing.due(13.0) is Due.NOTHING
