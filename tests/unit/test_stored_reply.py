"""Stored replies read back as the atomic step wrote them."""

from __future__ import annotations

import orjson

from jackpotd.canonical import canonical_json
from jackpotd.store.replies import parse_reply

RESULT = {"accepted": [{"seat": 1, "amount_cents": 100, "contributed_uc": 30_000_000, "overflow_uc": 0}]}
CONTENT = {"table_id": "t1", "round_id": "r1", "wagers": [[1, 100, True]]}
BALANCES = ["MAJOR", "20000000", "MINOR", "7500000"]


def test_reply_as_the_atomic_step_writes_it() -> None:
    # apply.lua concatenates the caller's canonical JSON into the reply rather than re-encoding it
    raw = ('{"hash":"abc","seq":' + "42" + ',"result":' + canonical_json(RESULT) + ',"balances":'
           + orjson.dumps(BALANCES).decode() + ',"content":' + canonical_json(CONTENT) + "}")
    reply = parse_reply(raw)
    assert (reply.seq, reply.hash) == (42, "abc")
    assert reply.result == RESULT and reply.content == CONTENT
    assert reply.balances == {"MAJOR": 20_000_000, "MINOR": 7_500_000}


def test_empty_balances_read_as_no_pools() -> None:
    # cjson encodes an empty HGETALL as {} rather than []
    raw = '{"hash":"h","seq":1,"result":{},"balances":{},"content":{}}'
    assert parse_reply(raw).balances == {}
