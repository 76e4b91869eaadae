"""A leader cut off from its Redis (issue 23): the pure verdicts of store/redis/cutoff.py (give its shards up only to
a live writer whose Redis answers, stay aside for the cool-down and until its own answers, never flap when Redis is
down for everyone) and what health says of a live holder cut off from its Redis."""

from __future__ import annotations

from jackpotd.health import cut_off, unled
from jackpotd.store.ledger.leases import LeaseStates, Peer, ShardLease
from jackpotd.store.redis.cutoff import GiveUp, Keep, Rejoin, StayAside, best_peer, while_aside, while_leading

LEASE = 5.0
FINE = Peer("b:2:y", 0.4, 0.6)  # renewed 0.4 s ago, heard its Redis 0.6 s ago


def test_a_leader_whose_redis_answers_keeps_its_shards_whatever_the_others() -> None:
    assert while_leading(0.3, LEASE, [FINE]) == Keep(None)
    assert while_leading(LEASE, LEASE, [FINE]) == Keep(None)  # the lease time itself: not yet


def test_a_leader_silent_past_the_lease_time_gives_up_to_a_live_writer_whose_redis_answers() -> None:
    verdict = while_leading(5.2, LEASE, [Peer("c:3:z", 0.2, 4.0), FINE])
    assert verdict == GiveUp("its Redis has not answered for 5.2 s (the lease time is 5 s), and writer b:2:y's Redis "
                             "answered 0.6 s ago", "b:2:y")


def test_a_leader_keeps_its_shards_when_nobody_could_do_better() -> None:
    alone = while_leading(9.0, LEASE, [])
    assert isinstance(alone, Keep) and alone.why is not None
    assert alone.why.endswith("no other live writer reaches Redis: keeping its shards (nobody could do better)")
    down_for_everyone = [Peer("b:2:y", 0.4, 4.9)]  # its Redis went silent as ours did: a shared outage
    assert isinstance(while_leading(5.1, LEASE, down_for_everyone), Keep)
    assert isinstance(while_leading(9.0, LEASE, [Peer("b:2:y", 0.4, None)]), Keep)  # an earlier version: unknown
    assert isinstance(while_leading(9.0, LEASE, [Peer("b:2:y", 5.5, 0.1)]), Keep)  # silent in PostgreSQL: not live


def test_the_best_peer_is_the_one_that_heard_its_redis_last() -> None:
    assert best_peer([Peer("c:3:z", 0.1, 2.0), FINE, Peer("d:4:w", 0.1, 2.6)], LEASE) == FINE
    assert best_peer([Peer("d:4:w", 0.1, 2.6)], LEASE) is None  # 2.5 s before its renewal: too long
    assert best_peer([Peer("e:5:v", 0.9, 2.6)], LEASE) == Peer("e:5:v", 0.9, 2.6)  # 1.7 s: its renewal is 0.9 s old
    assert best_peer([Peer("e:5:v", 0.9, 2.6)], 3.0) is None  # never more than half a short lease time


def test_a_writer_aside_stays_out_for_the_cool_down_and_until_its_redis_answers() -> None:
    cooling = while_aside(3.0, 0.1, LEASE, [FINE])
    assert cooling == StayAside("cooling down for 10 s (writer b:2:y leads)")
    still_cut = while_aside(12.0, 7.0, LEASE, [FINE])
    assert still_cut == StayAside("its Redis has not answered for 7.0 s (writer b:2:y leads)")
    assert while_aside(12.0, 0.4, LEASE, [FINE]) == Rejoin("its Redis answers again (0.4 s ago)")


def test_a_writer_aside_comes_back_at_once_when_no_other_can_lead() -> None:
    assert while_aside(1.0, 9.0, LEASE, []) == Rejoin("no other live writer reaches Redis")
    assert while_aside(1.0, 9.0, LEASE, [Peer("b:2:y", 0.4, 6.0)]) == Rejoin("no other live writer reaches Redis")


def test_health_says_a_live_holder_is_cut_off_from_its_redis_and_who_can_take_over() -> None:
    cut = ShardLease(3, 7, "a:1:x", 0.5, 8.4)
    handed = unled(3, LeaseStates({3: cut}, frozenset({"a:1:x", "b:2:y"}), frozenset({"b:2:y"})))
    assert handed == ("no ledger writer writes its shard 3 now: a:1:x holds its lease (epoch 7) but has not heard its "
                      "Redis for 8 s (cut off from Redis?); it gives it up to writer b:2:y, whose Redis answers, once "
                      "the lease time has passed")
    kept = unled(3, LeaseStates({3: cut}, frozenset({"a:1:x"})))
    assert kept.endswith("no other live writer reaches Redis, so it keeps it (nobody could do better)")
    recovering = unled(3, LeaseStates({3: ShardLease(3, 8, "b:2:y", 0.3, 0.2)}, frozenset({"b:2:y"})))
    assert recovering.endswith("and is taking it over")


def test_health_says_why_no_writer_heartbeats_when_the_only_holder_is_cut_off_from_redis() -> None:
    cut = ShardLease(3, 7, "a:1:x", 0.5, 8.4)
    assert cut_off(LeaseStates({3: cut, 4: ShardLease(4, 2, "a:1:x", 0.5, 8.4)}, frozenset({"a:1:x"}))) == [
        "ledger writer cut off from Redis: a:1:x holds writer leases but has not heard its Redis for 8 s; no other "
        "live writer reaches Redis, so it keeps them (nobody could do better)"]
    assert cut_off(LeaseStates({3: cut}, frozenset())) == []  # not alive: the lease's own reason says so
    assert cut_off(LeaseStates({3: ShardLease(3, 7, "a:1:x", 0.5, 0.4)}, frozenset({"a:1:x"}))) == []
    assert cut_off(None) == []
