"""Stored replies read back as the atomic step wrote them."""

from __future__ import annotations

from typing import get_args

import orjson
import pytest

from jackpotd.canonical import canonical_json
from jackpotd.service.decide.reads import announcements
from jackpotd.service.replies import (
    LostResult,
    Reply,
    Result,
    decode_reply,
    decode_result,
    encode_reply,
    encode_result,
    stored_form,
)

RESULT = {"accepted": [{"seat": 1, "amount_cents": 100, "contributed_uc": 30_000_000, "overflow_uc": 0}]}
CONTENT = {"table_id": "t1", "round_id": "r1", "wagers": [[1, 100, True]]}
BALANCES = ["MAJOR", "20000000", "MINOR", "7500000"]


def test_reply_as_the_atomic_step_writes_it() -> None:
    # apply.lua concatenates the caller's canonical JSON into the reply rather than re-encoding it
    raw = ('{"hash":"abc","seq":' + "42" + ',"result":' + canonical_json(RESULT) + ',"balances":'
           + orjson.dumps(BALANCES).decode() + ',"content":' + canonical_json(CONTENT) + "}")
    reply = decode_reply(raw)
    assert (reply.seq, reply.hash) == (42, "abc")
    assert stored_form(reply.result) == RESULT and reply.content == CONTENT
    assert reply.balances == {"MAJOR": 20_000_000, "MINOR": 7_500_000}


def test_empty_balances_read_as_no_pools() -> None:
    # cjson encodes an empty HGETALL as {} rather than []
    raw = '{"hash":"h","seq":1,"result":{},"balances":{},"content":{}}'
    assert decode_reply(raw).balances == {}


# Each kind's stored result exactly as earlier versions wrote it (the ledger's hash chain covers these bytes, and
# a retry is answered from them): the codec must read each and write it back byte for byte.
STORED = [
    '{"accepted":[{"amount_cents":100,"contributed_uc":30000000,"overflow_uc":0,"seat":1}]}',
    '{"payouts":[{"amount_cents":1000000,"funded_by_operator_cents":0,"hand":"royal_flush","hit_id":"L:T:r:3",'
    '"pool":"MAJOR","pool_before_uc":100000000000,"rule":"§5.3","seat":3,"status":"PAID"}],'
    '"resets":[{"from_operator_cents":0,"from_reserve_cents":500,"pool":"MAJOR"}],'
    '"seats":[{"hand":"royal_flush","seat":3},{"hand":"","no_hand":"FOLDED","seat":4}],"unwagered":[5]}',
    '{"payouts":[],"resets":[],"seats":[{"hand":"high_card","seat":1}]}',
    '{"refunds":[{"amount_cents":100,"seat":1},{"amount_cents":500,"seat":2}]}',
    '{"hit":{"amount_cents":1000000,"hand":"royal_flush","hit_id":"L:T:r:3","pool":"MAJOR",'
    '"returned_to_operator_cents":7,"returned_to_pool_uc":99,"status":"REJECTED"}}',
    '{"link_id":"L"}',
    '{"link_id":"L","mode":"COMBINED"}',
    "{}",
    '{"lost":true}',
]


@pytest.mark.parametrize("text", STORED)
def test_every_kind_of_stored_result_reads_and_writes_back_byte_for_byte(text: str) -> None:
    assert encode_result(decode_result(orjson.loads(text))) == text


def test_every_kind_of_result_has_a_stored_example() -> None:
    kinds = {type(decode_result(orjson.loads(text))) for text in STORED}
    assert kinds == set(get_args(Result))  # a new kind of result needs its stored form pinned above


def test_a_stored_result_of_no_known_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="keys \\['surprise'\\]"):
        decode_result({"surprise": 1})


def test_an_accepted_loss_reads_back_and_announces_nothing() -> None:
    # `jackpotd unfence --accept` writes these; the signs' feed reads one at a link's head
    written = encode_reply(Reply(3, LostResult(), {"MAJOR": 5}, {"lost": 3, "link_id": "L"}, "h"))
    assert written == ('{"balances":["MAJOR","5"],"content":{"link_id":"L","lost":3},"hash":"h",'
                       '"result":{"lost":true},"seq":3}')
    reply = decode_reply(written)
    assert reply == Reply(3, LostResult(), {"MAJOR": 5}, {"lost": 3, "link_id": "L"}, "h")
    assert announcements("lost", reply) == ()
