"""Hits awaiting verification (RULES.md §7), pure: a settle above the threshold holds the prize in
pending_payouts and leaves the round PENDING; an approval pays it, a rejection returns it. No servers."""

from __future__ import annotations

import pytest

from jackpotd.domain.errors import FailedPrecondition, InvalidInput, NotFound
from jackpotd.domain.ids import parse_hit_id
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE
from jackpotd.domain.rounds import PENDING, SETTLED
from jackpotd.service.commands import Audit, DecideHit, Request
from jackpotd.service.decide.hits import HitPlace, HitState, decide_hit
from jackpotd.service.decide.table import TableState, decide_commit, decide_settle
from jackpotd.service.entries import entry_form
from jackpotd.service.errors import Unavailable
from jackpotd.service.ports import LiveRound, Step
from jackpotd.service.replies import stored_form as stored
from jackpotd.service.round_record import RoundRecord
from jackpotd.store.ledger.audit import decision_problem

from .test_decide_table import FLUSH, NOW, ROYAL, UC, commit, fresh, link, live_round, settle

AUDIT = Audit("floor-1", "verified on camera", "SURV-7")
FOUR = ("9c", "9d", "9h", "9s", "2c")


def legs(step: Step) -> dict[str, int]:
    return {account: amount for account, amount in entry_form(step.entry)["postings"]}


def pending_round(threshold: int = 500_000, major_uc: int = 1_000_000 * UC) -> tuple[Step, LiveRound]:
    """Seat 1 royal (above the threshold, held), seat 2 flush (below it, paid at once)."""
    config = link(threshold=threshold)
    rnd = live_round(decide_commit(commit(1, 2), config, "v1", fresh()))
    step = decide_settle(settle({1: ROYAL, 2: FLUSH}), config, "v1",
                         TableState(NOW, {MAJOR: major_uc, MINOR: 120_000 * UC, RESERVE: 0}, rnd, None))
    return step, LiveRound(step.round_new_state, "7", step.round_data)


def decide(approve: bool, rnd: LiveRound | None, *, seat: int = 1, ledger: str | None = "PENDING",
           reason: str = "") -> Step:
    hit = f"L:T:r1:{seat}"
    return decide_hit(DecideHit(Request("d1", {"hit": hit}), hit, approve, reason, AUDIT),
                      HitPlace("L", "T", "r1", seat), link(threshold=500_000), "v1", HitState(NOW, rnd, ledger))


def test_a_settle_holds_the_prize_above_the_threshold_and_leaves_the_round_pending() -> None:
    step, _ = pending_round(major_uc=1_500_000 * UC)
    royal, flush = stored(step.result)["payouts"][1], stored(step.result)["payouts"][0]
    assert (royal["status"], flush["status"]) == ("PENDING", "PAID")
    moved = legs(step)
    assert moved["pending_payouts"] == royal["amount_cents"] * UC  # §7: held, not paid
    assert moved["payouts"] == flush["amount_cents"] * UC
    assert moved[f"pool:{MAJOR}"] == -500_000 * UC  # §7: reduced at settlement all the same (paid, then reset)
    assert step.round_new_state == PENDING and sum(moved.values()) == 0
    held = RoundRecord.decode(step.round_data).held
    assert held is not None and list(held) == [1] and held[1].amount_cents == royal["amount_cents"]


def test_no_threshold_pays_everything_at_once() -> None:
    step, _ = pending_round(threshold=0)
    assert step.round_new_state == SETTLED and "pending_payouts" not in legs(step)


def test_an_approval_pays_the_held_prize_and_finishes_the_round() -> None:
    settled, rnd = pending_round()
    amount = stored(settled.result)["payouts"][1]["amount_cents"]
    step = decide(True, rnd)
    assert legs(step) == {"pending_payouts": -amount * UC, "payouts": amount * UC}
    assert step.deltas == [] and step.round_expect == PENDING and step.round_rev == "7"
    assert step.round_new_state == SETTLED
    assert stored(step.result)["hit"]["status"] == "PAID" and entry_form(step.entry)["decision"]["seat"] == 1
    assert RoundRecord.decode(step.round_data).decided == {1: "PAID"}


def test_a_rejection_returns_the_pools_part_to_the_pool_and_the_shortfall_to_the_operator() -> None:
    # MAJOR $8,200 with a $10,000 royal: the operator advanced $1,800 (§5.7), then reset MAJOR (§5.8).
    settled, rnd = pending_round(major_uc=820_000 * UC)
    royal = stored(settled.result)["payouts"][1]
    assert (royal["amount_cents"], royal["funded_by_operator_cents"]) == (1_000_000, 180_000)
    step = decide(False, rnd, reason="cards fouled")
    assert legs(step) == {"pending_payouts": -1_000_000 * UC, f"pool:{MAJOR}": 820_000 * UC,
                          "operator_funding": 180_000 * UC}
    assert stored(step.result)["hit"] == {"hit_id": "L:T:r1:1", "status": "REJECTED", "hand": "royal_flush",
                                  "amount_cents": 1_000_000,
                                  "pool": MAJOR, "returned_to_pool_uc": 820_000 * UC,
                                  "returned_to_operator_cents": 180_000}
    assert entry_form(step.entry)["decision"]["reason"] == "cards fouled"


def test_a_round_with_two_held_hits_stays_pending_until_both_are_decided() -> None:
    config = link(threshold=100)  # the flush too
    rnd = live_round(decide_commit(commit(1, 2), config, "v1", fresh()))
    settled = decide_settle(settle({1: ROYAL, 2: FOUR}), config, "v1",
                            TableState(NOW, {MAJOR: 1_000_000 * UC, MINOR: 120_000 * UC}, rnd, None))
    first = decide(True, LiveRound(PENDING, "3", settled.round_data), seat=2)
    assert first.round_new_state == PENDING
    second = decide(False, LiveRound(PENDING, "4", first.round_data), seat=1, reason="misdealt")
    assert second.round_new_state == SETTLED
    assert RoundRecord.decode(second.round_data).decided == {2: "PAID", 1: "REJECTED"}
    with pytest.raises(FailedPrecondition, match="decided already: PAID"):
        decide(False, LiveRound(PENDING, "4", first.round_data), seat=2, reason="again")


@pytest.mark.parametrize(("ledger", "error"), [(None, NotFound), ("PAID", FailedPrecondition),
                                               ("REJECTED", FailedPrecondition), ("PENDING", Unavailable)])
def test_a_hit_the_live_store_does_not_hold_pending(ledger: str | None, error: type[Exception]) -> None:
    # None: no such hit; PAID/REJECTED: nothing to decide; PENDING in the ledger only: Redis lost it (retry)
    with pytest.raises(error):
        decide(True, None, ledger=ledger)


def test_a_seat_paid_at_once_in_a_pending_round_is_not_pending() -> None:
    _, rnd = pending_round()
    with pytest.raises(FailedPrecondition, match="the hit is PAID"):
        decide(True, rnd, seat=2, ledger="PAID")


@pytest.mark.parametrize("bad", ["", "x", "a:b:c", "a:b:c:x", "a:b:c:0", "a:b:c:1:2", "a b:c:d:1",
                                 "a:b:c:" + "9" * 6, "x" * 65 + ":b:c:1", "a\x00:b:c:1"])
def test_a_malformed_hit_id_is_refused(bad: str) -> None:
    with pytest.raises(InvalidInput, match=r"^hit_id="):
        parse_hit_id(bad)


def test_a_hit_id_names_link_table_round_and_seat() -> None:
    assert parse_hit_id("L-1:T.2:r_3:10") == ("L-1", "T.2", "r_3", 10)


def test_audit_checks_a_decision_against_the_hit_it_decides() -> None:
    held = {("T", "r1", 1): (MAJOR, 1_000_000, 180_000, "PENDING"), ("T", "r1", 2): (MINOR, 10_000, 0, "PAID")}
    decision = {"hit_id": "L:T:r1:1", "table_id": "T", "round_id": "r1", "seat": 1, "status": "REJECTED"}
    right = {"pending_payouts": -1_000_000 * UC, f"pool:{MAJOR}": 820_000 * UC, "operator_funding": 180_000 * UC}
    assert decision_problem("reject_hit", decision, held, right) == ""
    all_to_the_pool = {"pending_payouts": -1_000_000 * UC, f"pool:{MAJOR}": 1_000_000 * UC}
    assert "moves" in decision_problem("reject_hit", decision, held, all_to_the_pool)
    assert "records the decision" in decision_problem("approve_hit", decision, held, right)
    paid_at_once = {**decision, "seat": 2, "hit_id": "L:T:r1:2"}
    assert "not held" in decision_problem("approve_hit", {**paid_at_once, "status": "PAID"}, held, {})
