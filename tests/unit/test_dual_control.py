"""Dual control (RULES.md §7, NM 15.1.24.12), pure: which hits wait and for how many supervisors, the same person
twice refused (directly or through a console), the first approval chained with no postings, the second paying,
a rejection by one supervisor at any time, and the link setting's validation and stored form. No servers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.domain import verification as v
from jackpotd.domain.errors import FailedPrecondition, InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE
from jackpotd.service.commands import Audit, DecideHit, Request
from jackpotd.service.decide.hits import HitPlace, HitState, decide_hit
from jackpotd.service.decide.reads import announcements
from jackpotd.service.decide.table import TableState, decide_commit, decide_settle
from jackpotd.service.entries import FIRST_APPROVAL, entry_form
from jackpotd.service.ports import LiveRound, Step
from jackpotd.service.replies import Reply, decode_result, encode_result
from jackpotd.service.replies import stored_form as stored
from jackpotd.service.round_record import RoundRecord
from jackpotd.store.ledger.audit import approval_problem

from .test_decide_table import FLUSH, NOW, ROYAL, UC, commit, fresh, link, live_round, settle

DUAL = 800_000  # $8,000: the royal ($10,000) needs two supervisors, the flush ($100) none
ALICE, BOB = "supervisor:alice", "supervisor:bob"
cents = st.integers(min_value=0, max_value=10**12)


@given(cents, cents, cents)
def test_a_hit_waits_above_the_verification_threshold_or_at_the_dual_one(amount: int, verify: int, dual: int) -> None:
    status = v.status_of(amount, verify, dual)
    needed = v.approvals_needed(amount, verify, dual)
    assert (status == v.PENDING) == ((verify > 0 and amount > verify) or (dual > 0 and amount >= dual))
    assert needed == (0 if status == v.PAID else 2 if dual and amount >= dual else 1)
    assert v.status_of(amount, verify) == v.status_of(amount, verify, 0)  # 0: dual control off, as before


def test_the_dual_threshold_is_inclusive_and_the_verification_one_is_not() -> None:
    assert v.approvals_needed(DUAL, 0, DUAL) == 2 and v.approvals_needed(DUAL - 1, 0, DUAL) == 0
    assert v.approvals_needed(DUAL, DUAL, 0) == 0 and v.approvals_needed(DUAL + 1, DUAL, 0) == 1
    assert v.approvals_needed(DUAL, DUAL, DUAL) == 2


names = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@given(names, names)
def test_a_person_is_the_part_after_the_last_for(console: str, person: str) -> None:
    actor = f"supervisor:{person}"
    assert v.person_of(actor) == actor
    assert v.person_of(f"console:{console} for {actor}") == actor
    assert v.person_of(f"console:{console} for admin:x for {actor}") == actor


@given(st.lists(names, min_size=0, max_size=2, unique=True), names, st.sampled_from([1, 2]), st.booleans())
def test_an_approval_pays_once_enough_distinct_persons_approved(earlier: list[str], actor: str, needed: int,
                                                                 through_console: bool) -> None:
    before = tuple(f"supervisor:{n}" for n in earlier[:needed - 1])
    me = f"console:floor-1 for supervisor:{actor}" if through_console else f"supervisor:{actor}"
    outcome = v.approve(before, needed, me)
    if f"supervisor:{actor}" in before:
        assert outcome == v.SamePerson(f"supervisor:{actor}")
    elif len(before) + 1 >= needed:
        assert outcome == v.Pays((*before, me))
    else:
        assert outcome == v.Awaits((*before, me))


def test_the_link_setting_is_validated_and_stored_only_when_set() -> None:
    base = link(threshold=500_000)
    assert "dual_approval_threshold_cents" not in base.to_dict()  # configs without it keep their bytes
    dual = replace(base, dual_approval_threshold_cents=DUAL)
    assert LinkConfig.from_dict(dual.to_dict()) == dual and LinkConfig.from_dict(base.to_dict()) == base
    with pytest.raises(InvalidInput) as e:
        replace(base, dual_approval_threshold_cents=-1)
    assert e.value.field == "dual_approval_threshold_cents" and e.value.value == -1
    with pytest.raises(InvalidInput) as e:
        replace(base, dual_approval_threshold_cents=499_999)
    assert (e.value.field, e.value.value) == ("dual_approval_threshold_cents", 499_999)
    assert "verification_threshold_cents (500000)" in str(e.value)
    assert replace(base, verification_threshold_cents=0, dual_approval_threshold_cents=1).dual_approval_threshold_cents


def dual_round() -> tuple[Step, LiveRound, LinkConfig]:
    """Seat 1 royal ($10,000: two approvals), seat 2 flush (paid at once)."""
    config = replace(link(), dual_approval_threshold_cents=DUAL)
    rnd = live_round(decide_commit(commit(1, 2), config, "v1", fresh()))
    step = decide_settle(settle({1: ROYAL, 2: FLUSH}), config, "v1",
                         TableState(NOW, {MAJOR: 1_000_000 * UC, MINOR: 120_000 * UC, RESERVE: 0}, rnd, None))
    return step, LiveRound(step.round_new_state, "7", step.round_data), config


def decide(approve: bool, rnd: LiveRound, config: LinkConfig, actor: str, reason: str = "") -> Step:
    return decide_hit(DecideHit(Request("d", {"hit": "L:T:r1:1"}), "L:T:r1:1", approve, reason,
                                Audit(actor, "verified", "SURV-1")),
                      HitPlace("L", "T", "r1", 1), config, "v1", HitState(NOW, rnd, v.PENDING))


def reply_of(step: Step, seq: int) -> Reply:
    return Reply(seq, decode_result(stored(step.result)), {}, {}, "")


def test_a_settle_holds_a_hit_at_the_dual_threshold_for_two_approvals() -> None:
    step, _, _ = dual_round()
    flush, royal = stored(step.result)["payouts"]
    assert (royal["status"], royal["approvals_needed"], flush["status"]) == ("PENDING", 2, "PAID")
    assert "approvals_needed" not in flush  # a settle without dual control is stored as it always was
    assert [h["approvals_needed"] for h in entry_form(step.entry)["hits"] if h["seat"] == 1] == [2]
    assert [(a.status, a.approvals, a.approvals_needed) for a in announcements("settle", reply_of(step, 5))] == [
        ("PAID", 0, 0), ("PENDING", 0, 2)]


def test_the_first_approval_is_recorded_without_postings_and_the_second_person_pays() -> None:
    settled, rnd, config = dual_round()
    first = decide(True, rnd, config, ALICE)
    assert first.entry.kind == FIRST_APPROVAL and entry_form(first.entry)["postings"] == []
    assert entry_form(first.entry)["approval"] == {"hit_id": "L:T:r1:1", "table_id": "T", "round_id": "r1", "seat": 1}
    assert stored(first.result)["hit"]["status"] == "PENDING" and first.round_new_state == "PENDING"
    assert (stored(first.result)["hit"]["approved_by"], stored(first.result)["hit"]["approvals_needed"]) == ([ALICE], 2)
    assert [(a.status, a.approvals, a.approvals_needed) for a in announcements(FIRST_APPROVAL, reply_of(first, 6))] \
        == [("PENDING", 1, 2)]
    after = LiveRound(first.round_new_state, "8", first.round_data)
    assert RoundRecord.decode(first.round_data).approvals == {1: (ALICE,)}
    for same in (ALICE, f"console:floor-1 for {ALICE}"):
        with pytest.raises(FailedPrecondition) as e:
            decide(True, after, config, same)
        assert (e.value.field, e.value.value) == ("hit_id", "L:T:r1:1")
        assert "dual control (NM 15.1.24.12): supervisor:alice approved it already" in str(e.value)
    second = decide(True, after, config, f"console:floor-1 for {BOB}")
    amount = stored(settled.result)["payouts"][1]["amount_cents"]
    assert second.entry.kind == "approve_hit" and second.round_new_state == "SETTLED"
    assert {a: x for a, x in entry_form(second.entry)["postings"]} == {"pending_payouts": -amount * UC,
                                                                       "payouts": amount * UC}
    hit = stored(second.result)["hit"]
    assert (hit["status"], hit["approved_by"]) == ("PAID", [ALICE, f"console:floor-1 for {BOB}"])
    assert RoundRecord.decode(second.round_data).approvals is None


def test_one_supervisor_rejects_before_or_after_a_first_approval() -> None:
    _, rnd, config = dual_round()
    assert decide(False, rnd, config, ALICE, "fouled").entry.kind == "reject_hit"
    first = decide(True, rnd, config, ALICE)
    rejected = decide(False, LiveRound(first.round_new_state, "8", first.round_data), config, ALICE, "fouled")
    hit = stored(rejected.result)["hit"]
    assert (rejected.entry.kind, hit["status"], hit["approved_by"]) == ("reject_hit", "REJECTED", [ALICE])


def test_a_single_approval_is_stored_as_it_always_was() -> None:
    config = dual_round()[2]
    one = replace(config, dual_approval_threshold_cents=0, verification_threshold_cents=500_000)
    step = decide_settle(settle({1: ROYAL}), one, "v1",
                         TableState(NOW, {MAJOR: 1_000_000 * UC}, live_round(decide_commit(commit(1), one, "v1",
                                                                                           fresh())), None))
    paid = decide(True, LiveRound(step.round_new_state, "7", step.round_data), one, ALICE)
    assert set(stored(paid.result)["hit"]) == {"hit_id", "status", "hand", "amount_cents", "pool",
                                               "returned_to_pool_uc", "returned_to_operator_cents"}
    assert decode_result(stored(paid.result)) == paid.result
    assert encode_result(decode_result(stored(paid.result))) == encode_result(paid.result)


def test_decisions_are_announced_with_their_approvals() -> None:
    _, rnd, config = dual_round()
    first = decide(True, rnd, config, ALICE)
    paid = decide(True, LiveRound(first.round_new_state, "8", first.round_data), config, BOB)
    assert [(a.status, a.approvals, a.approvals_needed) for a in announcements("approve_hit", reply_of(paid, 7))] \
        == [("PAID", 2, 2)]
    one = replace(config, dual_approval_threshold_cents=0, verification_threshold_cents=500_000)
    step = decide_settle(settle({1: ROYAL}), one, "v1",
                         TableState(NOW, {MAJOR: 1_000_000 * UC}, live_round(decide_commit(commit(1), one, "v1",
                                                                                           fresh())), None))
    single = decide(True, LiveRound(step.round_new_state, "7", step.round_data), one, ALICE)
    assert [(a.status, a.approvals, a.approvals_needed) for a in announcements("approve_hit", reply_of(single, 7))] \
        == [("PAID", 1, 1)]


def test_the_audit_names_a_first_approval_that_does_not_fit_its_hit() -> None:
    where = ("T", "r1", 1)
    first = {"hit_id": "L:T:r1:1", "table_id": "T", "round_id": "r1", "seat": 1}
    held = {where: ("MAJOR", 1_000_000, 0, "PENDING")}
    assert approval_problem(first, held, {where: 2}, {}) == ""
    assert "not held for two approvals" in approval_problem(first, held, {where: 1}, {})
    assert "not held for two approvals" in approval_problem(first, {where: ("MAJOR", 1, 0, "PAID")}, {where: 2}, {})
    assert "moves nothing" in approval_problem(first, held, {where: 2}, {"payouts": 5, "pending_payouts": -5})
