"""The writers' heartbeat codec: the exact JSON every version writes, the older heartbeat without shards, a round
trip, a clear refusal of anything else, and how the live heartbeats merge."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.store.heartbeats import WriterHealth, WritersHealth, decode, encode, merged

HEALTHS = st.builds(WriterHealth, st.integers(0, 2**53), st.lists(st.integers(0, 255), unique=True).map(tuple),
                    st.dictionaries(st.text(), st.text(), max_size=5), st.none() | st.text(min_size=1))


def test_the_json_is_the_one_every_version_writes() -> None:
    assert encode(WriterHealth(1700, (0, 2), {"L1": "fenced: why"})) == \
        '{"at_ms": 1700, "shards": [0, 2], "problems": {"L1": "fenced: why"}}'
    assert encode(WriterHealth(1700, (1,), {}, "appending has failed for 4 s: refused")) == \
        '{"at_ms": 1700, "shards": [1], "problems": {}, "stalled": "appending has failed for 4 s: refused"}'


@given(HEALTHS)
def test_every_heartbeat_round_trips(health: WriterHealth) -> None:
    assert decode(encode(health)) == health
    assert decode(encode(health).encode()) == health


def test_a_heartbeat_of_a_writer_before_shards_writes_the_shards_given() -> None:
    older = json.dumps({"at_ms": 5, "problems": {"L": "x"}})
    assert decode(older, shards=[0, 1]) == WriterHealth(5, (0, 1), {"L": "x"})
    assert decode(json.dumps({"at_ms": 5, "problems": None, "stalled": ""})) == WriterHealth(5, ())


@pytest.mark.parametrize("raw", ["", "[]", "{}", '{"at_ms": "soon"}', '{"at_ms": 1, "problems": [1]}',
                                 '{"at_ms": 1, "shards": ["a"]}', "not json"])
def test_anything_else_is_refused_naming_the_text(raw: str) -> None:
    with pytest.raises(ValueError, match="malformed writer heartbeat") as refused:
        decode(raw)
    assert repr(raw) in str(refused.value)


def test_the_live_heartbeats_merge_with_a_stalled_writers_shards_unwritten() -> None:
    assert merged([]) is None
    one = WriterHealth(10, (0, 2), {"A": "a"})
    two = WriterHealth(20, (1, 3), {"B": "b"}, "appending has failed")
    assert merged([one, two]) == WritersHealth(20, (0, 2), {1: "appending has failed", 3: "appending has failed"},
                                               {"A": "a", "B": "b"})
    assert merged([two]) == WritersHealth(20, (), {1: "appending has failed", 3: "appending has failed"},
                                          {"B": "b"}, "appending has failed")
