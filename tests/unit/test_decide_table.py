"""The table decisions (service/decide/table.py), pure: config + state + command -> step. No servers."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from jackpotd.domain.errors import FailedPrecondition, InvalidInput, NotFound
from jackpotd.domain.link import LinkConfig, TableConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.domain.rounds import COMMITTED, SETTLED, VOIDED, NoHand, SeatHand, Wager
from jackpotd.service.commands import Commit, Request, Settle, Void
from jackpotd.service.decide.table import TableState, decide_commit, decide_settle, decide_void
from jackpotd.service.entries import entry_form
from jackpotd.service.errors import Unavailable
from jackpotd.service.ports import LiveRound, Reply, Step
from jackpotd.service.replies import stored_form as stored
from jackpotd.service.results import Accepted, committed
from jackpotd.service.round_record import RoundRecord

NOW = 1_700_000_000_000
UC = 1_000_000
ROYAL = ("As", "Ks", "Qs", "Js", "Ts")
FLUSH = ("2c", "5c", "9c", "Jc", "Kc")
NOTHING = ("2d", "7h", "9s", "Jd", "4c")


def link(*, suspended: bool = False, major_cap: int | None = None, threshold: int = 0) -> LinkConfig:
    return LinkConfig(
        link_id="L", mode=SPLIT, wager_cents=100,
        pools=(PoolSpec(MAJOR, 1_000_000, major_cap), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "A-1"),),
        paytables={"caribbean-stud": default_paytable("caribbean-stud", SPLIT)},
        tables={"T": TableConfig("T", "caribbean-stud", 7, suspended)}, verification_threshold_cents=threshold)


def req(rid: str = "q1", **content: object) -> Request:
    return Request(rid, content or {"x": rid})


def commit(*seats: int, round_id: str = "r1") -> Commit:
    return Commit(req(f"c-{round_id}"), "T", round_id, [Wager(s, 100, True) for s in seats])


def fresh(balances: dict[str, int] | None = None, ledger_round: str | None = None) -> TableState:
    return TableState(NOW, balances or {}, None, ledger_round)


def live_round(step: Step, rev: str = "1") -> LiveRound:
    """The round record a committed step left in the live store."""
    return LiveRound(step.round_new_state, rev, step.round_data)


def balanced(step: Step) -> int:
    return sum(amount for _, amount in entry_form(step.entry)["postings"])


# ---- commit (§3) -----------------------------------------------------------------------------------

def test_commit_feeds_each_pool_its_rate_and_records_the_round() -> None:
    step = decide_commit(commit(1, 3), link(), "v1", fresh())
    assert step.round == ("T", "r1") and step.round_expect == "absent" and step.round_new_state == COMMITTED
    assert dict(step.deltas) == {MAJOR: 2 * 20 * UC, MINOR: 2 * 7_500_000, RESERVE: 2 * 2_500_000}
    assert balanced(step) == 0 and entry_form(step.entry)["kind"] == "commit" and entry_form(step.entry)["ts_ms"] == NOW
    assert stored(step.result)["accepted"] == [
        {"seat": s, "amount_cents": 100, "contributed_uc": 30 * UC, "overflow_uc": 0} for s in (1, 3)]
    record = RoundRecord.decode(step.round_data)
    assert record.active == [1, 3] and record.rates_version == 1 and record.game == "caribbean-stud"
    assert step.config_version == "v1" and step.guards == {}  # no cap: no pool guard


def test_commit_result_decodes_into_the_typed_answer() -> None:
    step = decide_commit(commit(2), link(), "v1", fresh())
    answer = committed(Reply(7, step.result, {MAJOR: 20 * UC}, step.content, step.request_hash), link())
    assert answer.accepted == (Accepted(2, 100, 30 * UC, 0),) and answer.seq == 7 and answer.link_id == "L"
    assert [(p.pool, p.amount_cents) for p in answer.pools] == [(MAJOR, 20), (MINOR, 0)]


def test_commit_guards_the_capped_pool_it_read() -> None:
    step = decide_commit(commit(1), link(major_cap=1_000_000), "v1", fresh({MAJOR: 42}))
    assert step.guards == {MAJOR: 42}


def test_commit_overflow_of_a_full_capped_pool_goes_to_reserve() -> None:
    step = decide_commit(commit(1), link(major_cap=1_000_000), "v1", fresh({MAJOR: 1_000_000 * UC}))
    assert MAJOR not in dict(step.deltas) and dict(step.deltas)[RESERVE] == 2_500_000 + 20 * UC
    assert stored(step.result)["accepted"][0]["overflow_uc"] == 20 * UC


def test_commit_on_a_suspended_table_is_refused() -> None:
    with pytest.raises(FailedPrecondition, match="suspended"):
        decide_commit(commit(1), link(suspended=True), "v1", fresh())


def test_commit_of_a_round_the_ledger_holds_is_refused() -> None:
    with pytest.raises(FailedPrecondition, match="SETTLED"):
        decide_commit(commit(1), link(), "v1", fresh(ledger_round=SETTLED))


def test_commit_of_a_wrong_amount_names_the_field() -> None:
    cmd = Commit(req(), "T", "r1", [Wager(1, 100, True), Wager(2, 500, True)])
    with pytest.raises(InvalidInput, match=r"wagers\[1\].amount_cents"):
        decide_commit(cmd, link(), "v1", fresh())


def test_commit_on_an_unknown_table_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_commit(Commit(req(), "other", "r1", [Wager(1, 100, True)]), link(), "v1", fresh())


def test_commit_uses_the_rates_in_force_at_its_time() -> None:
    config = link()
    later = RateSet({MAJOR: 100_000, MINOR: 100_000, RESERVE: 100_000}, 700_000, 2, NOW + 10, "A-2")
    config = LinkConfig(**{**{f: getattr(config, f) for f in config.__slots__}, "rate_sets": (*config.rate_sets,
                                                                                             later)})
    assert dict(decide_commit(commit(1), config, "v", fresh()).deltas)[MAJOR] == 20 * UC
    after = TableState(NOW + 10, {}, None, None)
    assert dict(decide_commit(commit(1), config, "v", after).deltas)[MAJOR] == 10 * UC


# ---- settle (§5) -----------------------------------------------------------------------------------

def committed_round(*seats: int) -> tuple[LinkConfig, LiveRound]:
    config = link()
    return config, live_round(decide_commit(commit(*seats), config, "v1", fresh()))


def settle(hands: dict[int, tuple[str, ...] | NoHand]) -> Settle:
    """A settle of round r1: each seat's cards, or why it has none."""
    return Settle(req("s1"), "T", "r1", [SeatHand(s, (), x) if isinstance(x, NoHand) else SeatHand(s, x)
                                         for s, x in hands.items()])


def test_settle_pays_a_royal_flush_the_major_pool_and_resets_it() -> None:
    config, rnd = committed_round(1, 2)
    balances = {MAJOR: 1_200_000 * UC, MINOR: 150_000 * UC, RESERVE: 50_000 * UC}
    step = decide_settle(settle({1: ROYAL, 2: NOTHING}), config, "v1", TableState(NOW, balances, rnd, None))
    (payout,) = stored(step.result)["payouts"]
    assert (payout["seat"], payout["hand"], payout["pool"], payout["amount_cents"]) == (1, "royal_flush", MAJOR,
                                                                                        1_200_000)
    assert payout["hit_id"] == "L:T:r1:1" and payout["status"] == "PAID"
    assert stored(step.result)["seats"] == [{"seat": 1, "hand": "royal_flush"}, {"seat": 2, "hand": "high_card"}]
    assert step.guards == balances and step.round_expect == COMMITTED and step.round_rev == "1"
    assert step.round_new_state == SETTLED
    assert RoundRecord.decode(step.round_data).hands == {1: "royal_flush", 2: "high_card"}
    assert balanced(step) == 0
    (hit,) = entry_form(step.entry)["hits"]
    assert hit["cards"] == list(ROYAL) and hit["pool_before_uc"] == 1_200_000 * UC


def test_settle_above_the_verification_threshold_is_pending() -> None:
    config = link(threshold=500_000)
    rnd = live_round(decide_commit(commit(1), config, "v1", fresh()))
    step = decide_settle(settle({1: ROYAL}), config, "v1", TableState(NOW, {MAJOR: 1_000_000 * UC}, rnd, None))
    assert stored(step.result)["payouts"][0]["status"] == "PENDING"  # §7


def test_settle_without_a_hit_moves_nothing_and_guards_nothing() -> None:
    config, rnd = committed_round(1)
    step = decide_settle(settle({1: NOTHING}), config, "v1", TableState(NOW, {MAJOR: 5}, rnd, None))
    assert step.deltas == [] and step.guards == {} and stored(step.result)["payouts"] == []


def test_settle_checks_a_seat_without_a_wager_never_pays_it_and_names_it() -> None:
    config, rnd = committed_round(1, 3)
    step = decide_settle(settle({1: NOTHING, 2: ROYAL, 3: NoHand.FOLDED}), config, "v1", TableState(NOW, {}, rnd, None))
    assert stored(step.result)["payouts"] == []
    assert stored(step.result)["seats"] == [{"seat": 1, "hand": "high_card"},
                                            {"seat": 3, "hand": "", "no_hand": "FOLDED"}]
    assert stored(step.result)["unwagered"] == [2]


def test_a_royal_flush_on_a_wrong_seat_is_refused_naming_the_wagered_seats_left_out() -> None:
    """Issue 19: wagers on seats 1 and 2, a settle with one hand for seat 3 (a royal flush) must not settle the
    round as two losses and pay nothing."""
    config, rnd = committed_round(1, 2)
    with pytest.raises(InvalidInput) as refused:
        decide_settle(settle({3: ROYAL}), config, "v1", TableState(NOW, {}, rnd, None))
    assert refused.value.field == "hands" and refused.value.value == [1, 2]
    assert "seats 1, 2 wagered" in str(refused.value)


def test_one_wagered_seat_left_out_is_refused_even_when_the_others_are_there() -> None:
    config, rnd = committed_round(1, 2, 5)
    with pytest.raises(InvalidInput, match=r"hands=\[5\]: seat 5 wagered"):
        decide_settle(settle({1: NOTHING, 2: NoHand.MUCKED}), config, "v1", TableState(NOW, {}, rnd, None))


@pytest.mark.parametrize("why", list(NoHand))
def test_every_reason_for_no_hand_is_a_loss(why: NoHand) -> None:
    config, rnd = committed_round(1, 2)
    step = decide_settle(settle({1: why, 2: FLUSH}), config, "v1", TableState(NOW, {}, rnd, None))
    assert [p["seat"] for p in stored(step.result)["payouts"]] == [2]
    assert stored(step.result)["seats"][0] == {"seat": 1, "hand": "", "no_hand": why.value}
    assert "unwagered" not in stored(step.result)


def test_a_seat_with_neither_cards_nor_a_reason_is_refused() -> None:
    config, rnd = committed_round(1, 2)
    with pytest.raises(InvalidInput, match=r"hands\[1\]\.cards=\[\]: seat 2 has no cards"):
        decide_settle(settle({1: FLUSH, 2: ()}), config, "v1", TableState(NOW, {}, rnd, None))


def test_a_seat_with_cards_and_a_reason_is_refused() -> None:
    config, rnd = committed_round(1)
    cmd = Settle(req("s1"), "T", "r1", [SeatHand(1, ROYAL, NoHand.FOLDED)])
    with pytest.raises(InvalidInput, match=r"hands\[0\]\.cards=.*stated as FOLDED"):
        decide_settle(cmd, config, "v1", TableState(NOW, {}, rnd, None))


def test_a_voided_seat_is_not_asked_for_and_its_cards_are_never_paid() -> None:
    """An absent player's seat (voided, NSW 14.12) holds no wager any more: not required, and never paid."""
    config, rnd = committed_round(1, 2)
    voided = decide_void(Void(req("v1"), "T", "r1", "absent", [2]), config, "v1", TableState(NOW, {}, rnd, None))
    rnd = live_round(voided, "2")
    step = decide_settle(settle({1: NOTHING, 2: ROYAL}), config, "v1", TableState(NOW, {}, rnd, None))
    assert stored(step.result)["payouts"] == [] and stored(step.result)["unwagered"] == [2]


@pytest.mark.parametrize(("ledger_round", "error"), [(None, NotFound), (SETTLED, FailedPrecondition),
                                                     (VOIDED, FailedPrecondition), (COMMITTED, Unavailable)])
def test_settle_of_a_round_the_live_store_does_not_hold(ledger_round: str | None, error: type[Exception]) -> None:
    with pytest.raises(error):
        decide_settle(settle({1: FLUSH}), link(), "v1", TableState(NOW, {}, None, ledger_round))


def test_settle_of_a_settled_round_is_refused() -> None:
    config, rnd = committed_round(1)
    with pytest.raises(FailedPrecondition, match="SETTLED"):
        decide_settle(settle({1: FLUSH}), config, "v1", TableState(NOW, {}, replace(rnd, state=SETTLED), None))


def test_settle_with_a_card_twice_names_the_field() -> None:
    config, rnd = committed_round(1, 2)
    with pytest.raises(InvalidInput, match="cards"):
        decide_settle(settle({1: FLUSH, 2: ("2c", "3d", "4h", "5s", "7c")}), config, "v1",
                      TableState(NOW, {}, rnd, None))


# ---- void (§6) -------------------------------------------------------------------------------------

def test_void_of_the_whole_round_reverses_every_contribution_exactly() -> None:
    config = link()
    made = decide_commit(commit(1, 2), config, "v1", fresh())
    pools = dict(made.deltas)
    step = decide_void(Void(req("v1"), "T", "r1", "misdeal"), config, "v1",
                       TableState(NOW, pools, live_round(made), None))
    assert dict(step.deltas) == {p: -v for p, v in pools.items()}
    assert stored(step.result)["refunds"] == [{"seat": 1, "amount_cents": 100}, {"seat": 2, "amount_cents": 100}]
    assert step.round_new_state == VOIDED and entry_form(step.entry)["reason"] == "misdeal" and balanced(step) == 0


def test_partial_void_leaves_the_round_open_and_a_second_void_of_the_seat_is_refused() -> None:
    config = link()
    made = decide_commit(commit(1, 2), config, "v1", fresh())
    pools = dict(made.deltas)
    step = decide_void(Void(req("v1"), "T", "r1", "device", [2]), config, "v1",
                       TableState(NOW, pools, live_round(made), None))
    assert step.round_new_state == COMMITTED and RoundRecord.decode(step.round_data).active == [1]
    assert RoundRecord.decode(step.round_data).void_reasons == ({"seats": [2], "reason": "device"},)
    after = LiveRound(COMMITTED, "2", step.round_data)
    with pytest.raises(InvalidInput, match=r"seats\[0\]"):
        decide_void(Void(req("v2"), "T", "r1", "again", [2]), config, "v1", TableState(NOW, pools, after, None))


def test_void_after_the_pool_paid_out_is_made_up_by_operator_funding() -> None:
    config = link()
    made = decide_commit(commit(1), config, "v1", fresh())
    step = decide_void(Void(req("v1"), "T", "r1", "misdeal"), config, "v1",
                       TableState(NOW, {MAJOR: 0, MINOR: 7_500_000, RESERVE: 2_500_000}, live_round(made), None))
    postings = dict((a, v) for a, v in entry_form(step.entry)["postings"])
    assert postings["operator_funding"] == -20 * UC and balanced(step) == 0  # §5.7 reading, whole cents


def test_void_of_a_settled_round_needs_a_supervisor() -> None:
    config, rnd = committed_round(1)
    with pytest.raises(FailedPrecondition, match="supervisor"):
        decide_void(Void(req(), "T", "r1", "late"), config, "v1",
                    TableState(NOW, {}, replace(rnd, state=SETTLED), None))


def test_round_record_round_trips_and_stores_equal_legs_once() -> None:
    made = decide_commit(commit(1, 2, 3), link(), "v1", fresh())
    record = RoundRecord.decode(made.round_data)
    assert RoundRecord.decode(record.encode()) == record and record.encode() == made.round_data
    assert len(orjson.loads(made.round_data)["legs"]) == 1


def test_a_step_that_does_not_balance_never_leaves_the_decision() -> None:
    from jackpotd.domain.postings import Posting
    from jackpotd.service.commands import Audit
    from jackpotd.service.decide.steps import step
    from jackpotd.service.entries import FundDetail

    with pytest.raises(AssertionError, match="do not balance"):
        step("L", req(), "fund", "v1", NOW, postings=[Posting("operator_funding", -5), Posting("pool:MAJOR", 4)],
             detail=FundDetail(Audit()))
