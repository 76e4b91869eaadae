"""The clients' log codec (chaos/history.py): every event reads back as written, lines of concurrent writers
never interleave, and a bad line is named with its field."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaos import history as h
from jackpotd.api.gen.jackpot.v1 import common_pb2, table_pb2

ids = st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)
calls = st.builds(h.Call, ids, ids, ids, st.sampled_from(h.OPS), ids, st.one_of(st.just(""), ids))
ms = st.integers(0, 2**53)
attempts = st.integers(1, 50)
events = st.one_of(
    st.builds(h.Send, ms, calls, attempts),
    st.builds(h.Ack, ms, calls, attempts, st.integers(1, 2**40),
              st.dictionaries(st.sampled_from(["MAJOR", "MINOR", "JACKPOT"]), st.integers(-(2**62), 2**62))),
    st.builds(h.Error, ms, calls, attempts, st.sampled_from(["UNAVAILABLE", "DEADLINE_EXCEEDED"]), st.text()),
    st.builds(h.Abandon, ms, calls, attempts),
)


@given(events)
def test_every_event_reads_back_as_written(event: h.Event) -> None:
    line = h.encode(event)
    assert "\n" not in line
    assert h.decode(line) == event


def test_pools_of_a_response_are_its_exact_balances_in_ucents() -> None:
    response = table_pb2.CommitWagersResponse(sequence=7, pools=[
        common_pb2.PoolAmount(pool="MAJOR", amount_cents=12, balance_ucents=12_345_678),
        common_pb2.PoolAmount(pool="MINOR", amount_cents=0, balance_ucents=999_999)])
    assert h.pools_of(response) == {"MAJOR": 12_345_678, "MINOR": 999_999}


@pytest.mark.parametrize(("line", "field"), [
    ('{"op": "CommitWagers"}', "event"),
    ('{"op": "Fund", "event": "send"}', "op"),
    ('{"op": "VoidRound", "event": "ack", "client": "c", "link": "l", "table": "t", "request_id": "r", '
     '"at_ms": 1, "attempt": 1, "sequence": 0, "pools": {}}', "sequence"),
    ('{"op": "VoidRound", "event": "ack", "client": "c", "link": "l", "table": "t", "request_id": "r", '
     '"at_ms": 1, "attempt": 1, "sequence": 3, "pools": {"MAJOR": 1.5}}', "pools.MAJOR"),
    ('{"op": "VoidRound", "event": "send", "client": "c", "link": "l", "table": "t", "request_id": "r", '
     '"at_ms": 1, "attempt": true}', "attempt"),
    ('[1, 2]', "object"),
    ('{"op": "VoidRo', "JSON"),
])
def test_a_bad_line_is_named_by_its_field(line: str, field: str) -> None:
    with pytest.raises(h.HistoryError, match=field):
        h.decode(line)
    events, problems = h.parse(["", line])
    assert events == [] and problems and problems[0].startswith("line 2:")


async def test_lines_of_concurrent_tasks_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with h.Recorder(path, clock=lambda: 42) as rec:
        async def table(n: int) -> None:
            call = h.Call(f"table-{n}", "L", f"T{n}", "CommitWagers", "x" * 5000 + str(n), f"r{n}")
            for attempt in range(1, 21):
                rec.send(call, attempt)
                await asyncio.sleep(0)
                rec.error(call, attempt, "UNAVAILABLE", "y" * 3000)
            rec.ack(call, 21, 9, {"MAJOR": n})
            rec.abandon(call, 21)
        await asyncio.gather(*(table(n) for n in range(8)))
    events, problems = h.load(path)
    assert problems == []
    assert len(events) == 8 * 42
    assert sum(isinstance(e, h.Ack) for e in events) == 8
    assert all(e.at_ms == 42 for e in events)
    with pytest.raises(ValueError, match="closed"):
        rec.abandon(events[0].call, 1)
