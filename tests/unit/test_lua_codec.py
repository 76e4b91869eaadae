"""The Lua scripts' codec: every verdict apply.lua or read.lua can answer maps to one outcome or error, and the
scripts answer no verdict the codec does not know. No servers: the codec is called on replies as Redis sends them."""

from __future__ import annotations

import re

import pytest
from redis.exceptions import ResponseError

from jackpotd.domain import seen_filter
from jackpotd.domain.rounds import COMMITTED, FINISHED, SETTLED
from jackpotd.service.commands import Audit
from jackpotd.service.entries import Entry, FundDetail
from jackpotd.service.errors import LinkFenced, LinkLost, Unavailable
from jackpotd.service.ports import (
    NEW_LINK,
    ROUND_ABSENT,
    Applied,
    IdReused,
    LinkExists,
    LinkRead,
    Outcome,
    Reply,
    RoundNotOpen,
    RoundsOpen,
    Stale,
    Step,
)
from jackpotd.service.replies import LinkResult, NoResult, decode_reply
from jackpotd.service.seen import Unsure, Why
from jackpotd.store.lua_codec import CLOCK_TOLERANCE_MS, Verdict, apply_call, apply_outcome, read_result, seen_args
from jackpotd.store.redis.scripts import APPLY, READ

STORED = '{"hash":"h1","seq":7,"result":{"link_id":"L"},"balances":["MAJOR","5"],"content":{"a":1}}'
ENTRY = Entry("fund", 7, "req", "h1", (), FundDetail(Audit()))
STEP = Step("L", "req", "h1", "id1", {"a": 1}, '{"a":1}', "3", ENTRY, LinkResult("L"))

# What each verdict's reply comes to (an outcome, or the error raised); a verdict missing here fails its test.
APPLIED: dict[Verdict, tuple[list[str], Outcome | type[Exception]]] = {
    Verdict.OK: (["ok", "", "8", '["MAJOR","9"]'], Applied(Reply(8, LinkResult("L"), {"MAJOR": 9}, {"a": 1}, "h1"),
                                                           first=True)),
    Verdict.DUP: (["dup", STORED], Applied(decode_reply(STORED), first=False)),
    Verdict.CONFLICT: (["conflict", STORED], IdReused(decode_reply(STORED))),
    Verdict.STALE_CONFIG: (["stale_config", "4"], Stale(contended=False)),
    Verdict.ROUND_STATE: (["round_state", "SETTLED"], RoundNotOpen("SETTLED")),
    Verdict.ROUND_MOVED: (["round_moved", ""], Stale(contended=False)),
    Verdict.POOL_MOVED: (["pool_moved", "MAJOR"], Stale(contended=True)),
    Verdict.NEGATIVE: (["negative", "MAJOR"], Stale(contended=True)),
    Verdict.EXISTS: (["exists", ""], LinkExists()),
    Verdict.ROUNDS_OPEN: (["rounds_open", "2"], RoundsOpen(2)),
    Verdict.LOST: (["lost", ""], LinkLost),
    Verdict.BEHIND: (["behind", "3"], LinkLost),
    Verdict.FENCED: (["fenced", "tampered at 4"], LinkFenced),
    Verdict.UNSURE: (["unsure", "maybe"], Unsure(Why.MAYBE)),
    Verdict.CLOCK: (["clock", "-3600000"], Unavailable),
}


@pytest.mark.parametrize("verdict", list(Verdict))
def test_every_verdict_of_a_step_maps_to_its_outcome(verdict: Verdict) -> None:
    assert verdict in APPLIED, f"apply.lua's verdict {verdict} has no expected outcome here: add it"
    reply, expected = APPLIED[verdict]
    assert reply[0] == verdict.value
    if isinstance(expected, type):
        with pytest.raises(expected, match="link L"):
            apply_outcome(STEP, reply)
    else:
        assert apply_outcome(STEP, reply) == expected


@pytest.mark.parametrize("verdict", list(Verdict))
def test_every_verdict_of_a_read_maps_to_a_read_or_an_error(verdict: Verdict) -> None:
    if verdict is Verdict.OK:
        read = read_result("L", ["ok", "8", '["MAJOR","9"]', '["state","COMMITTED","rev","5","data","d"]'])
        assert read == LinkRead(8, {"MAJOR": 9}, read.round) and read.round is not None
        assert (read.round.state, read.round.rev, read.round.data) == (COMMITTED, "5", "d")
        assert read_result("L", ["ok", "8", "{}", "{}"]) == LinkRead(8, {}, None)  # cjson writes [] as {}
        return
    refused = {Verdict.LOST: LinkLost, Verdict.BEHIND: LinkLost, Verdict.FENCED: LinkFenced}
    with pytest.raises(refused.get(verdict, ResponseError)):  # a step's verdict from read.lua is a bug
        read_result("L", [verdict.value, "3"])


def test_the_scripts_answer_only_verdicts_the_codec_knows() -> None:
    answered = set(re.findall(r"return \{'(\w+)'", APPLY)) | set(re.findall(r"return \{'(\w+)'", READ))
    assert answered == {v.value for v in Verdict}


def test_the_scripts_know_no_round_state_and_only_the_callers_markers() -> None:
    for state in (*FINISHED, COMMITTED):
        assert f"'{state}'" not in APPLY and f"'{state}'" not in READ
    assert f"'{NEW_LINK}'" in APPLY and f"'{ROUND_ABSENT}'" in APPLY


@pytest.mark.parametrize(("new_state", "finishes"), [(SETTLED, "1"), ("VOIDED", "1"), (COMMITTED, ""), ("", "")])
def test_a_step_tells_apply_lua_whether_it_finishes_its_round(new_state: str, finishes: str) -> None:
    step = Step("L", "req", "h1", "id1", {}, "{}", "3", ENTRY, NoResult(), round=("T", "r1"), round_expect=COMMITTED,
                round_new_state=new_state, guards={"MAJOR": 5}, deltas=[("MAJOR", -5)])
    keys, args = apply_call(step, 2)
    assert len(keys) == 11 and args[4] == new_state and args[14] == finishes
    assert args[15:-4] == [1, "MAJOR", "5", 1, "MAJOR", "-5"]  # ARGV 16 on: the guards, then the deltas
    assert args[-4:-2] == [ENTRY.ts_ms, CLOCK_TOLERANCE_MS]  # then the step's time and how far off it may be


def test_a_step_asks_the_filter_for_its_request_and_a_new_round_and_adds_both() -> None:
    """Issue 22, P1: the last two ARGV. An open round is the live store's to answer for, so a settle asks only for
    its request; a bare legacy id is asked as a request; without `check` (the ledger was asked) nothing is."""
    request, rnd = seen_filter.request_key("req"), seen_filter.round_key("T", "r1")
    commit = Step("L", "req", "h1", "id1", {}, "{}", "3", ENTRY, NoResult(), round=("T", "r1"),
                  round_expect=ROUND_ABSENT, round_new_state=COMMITTED)
    settle = Step("L", "req", "h1", "id1", {}, "{}", "3", ENTRY, NoResult(), round=("T", "r1"),
                  round_expect=COMMITTED, round_new_state=SETTLED)
    both = seen_filter.encode([request, rnd])
    assert seen_args(commit, "") == [both, both]
    assert seen_args(commit, "old") == [seen_filter.encode([request, seen_filter.request_key("old"), rnd]), both]
    assert seen_args(settle, "") == [seen_filter.encode([request]), both]
    assert seen_args(commit, None) == ["", both]
    assert apply_call(commit, 0, "")[1][-2:] == [both, both]
    assert seen_args(STEP, None) == ["", seen_filter.encode([seen_filter.request_key("req")])]
