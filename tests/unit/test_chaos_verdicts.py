"""The history checker's verdicts (chaos/verdicts.py): a consistent history passes every invariant, and each kind
of corruption (an ack missing from the ledger, a doubled request, a reused or skipped sequence, a wrong balance
in a reply, an ack beyond the head, Redis ahead of the ledger, a broken chain) fails the verdict that names it."""

from __future__ import annotations

import ast
import dataclasses
import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chaos import verdicts as v
from chaos.history import OPS, Abandon, Ack, Call, Error, Event, Send
from chaos.report import Report

# Each corruption is tried on fewer worlds than the consistent case: a world costs a few ms to draw, and the
# verdict that must catch it does not depend on the world's size.
CORRUPTED = settings(max_examples=30)
SHOWN_POOLS = ("MAJOR", "MINOR")  # what a table's reply carries (RESERVE only to admins)


@dataclass
class World:
    """A run as the checker sees it: the clients' log, the ledger, Redis and the chain's audits."""

    events: list[Event] = field(default_factory=list)
    links: list[v.Link] = field(default_factory=list)
    redis: dict[str, v.RedisLink] = field(default_factory=dict)
    audits: dict[str, v.ChainAudit] = field(default_factory=dict)

    def report(self) -> Report:
        return v.decide(self.events, [], self.links, self.redis, self.audits)

    def failed(self) -> set[str]:
        return {x.name for x in self.report().verdicts if not x.ok}

    def acks(self) -> list[int]:
        return [i for i, e in enumerate(self.events) if isinstance(e, Ack)]

    def entry_index(self, link_id: str, request_id: str) -> tuple[int, int]:
        for i, link in enumerate(self.links):
            for j, e in enumerate(link.entries):
                if link.link_id == link_id and e.request_id == request_id:
                    return i, j
        raise AssertionError(request_id)

    def set_link(self, i: int, entries: list[v.Entry], head: int | None = None) -> None:
        link = self.links[i]
        self.links[i] = replace(link, entries=entries, head=link.head if head is None else head)


POOL_SETS = (("MAJOR",), ("MINOR",), ("MAJOR", "MINOR"), ("MAJOR", "MINOR", "RESERVE"), ("RESERVE",))
FATES = ("ack", "ack", "twice", "abandon", "lost")
# One operation of a link: (an operator's entry?, which table, op, pools moved, by how much, failed tries, fate).
# Drawn as one tuple per operation, so a world costs few draws (hypothesis's health check times generation).
OPERATIONS = st.tuples(st.integers(0, 5), st.integers(0, 2), st.sampled_from(OPS), st.sampled_from(POOL_SETS),
                       st.integers(-5_000_000, 5_000_000), st.integers(0, 2), st.sampled_from(FATES))


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Links fed by tables whose calls fail, retry, are answered (sometimes twice, a replayed retry) or abandoned
    (applied or not), with operators' entries between them; the ledger and Redis agree with what was told."""
    w = World()
    clock = itertools.count(1)  # one call after another: each event a ms after the one before
    for n in range(draw(st.integers(1, 2))):
        link = f"L{n}"
        state: dict[str, int] = {}
        entries: list[v.Entry] = []
        for k, (admin, t, op, pools, delta, failed, fate) in enumerate(draw(st.lists(OPERATIONS, min_size=1,
                                                                                        max_size=12))):
            moved = {p: state.get(p, 0) + delta * (i + 1) for i, p in enumerate(pools)}
            if k and admin == 0:  # an operator's entry (funding): no table was told of it
                state |= moved
                entries.append(v.Entry(len(entries) + 1, f"admin:ops:f{n}-{k}", "h", "fund", posted=moved))
                continue
            table = f"T{n}-{t}"
            call = Call(f"client-{table}", link, table, op, f"req-{n}-{k}", f"round-{k}")
            fate = "ack" if k == 0 else fate
            attempt = 1
            for _ in range(failed):
                w.events.append(Send(next(clock), call, attempt))
                w.events.append(Error(next(clock), call, attempt, "UNAVAILABLE", "busy"))
                attempt += 1
            w.events.append(Send(next(clock), call, attempt))
            if fate != "lost":
                state |= moved
                entries.append(v.Entry(len(entries) + 1, v.stored_request_id(call), "h",
                                       v.KIND_OF_OP[call.op], table, call.round_id, moved))
            told = {p: state.get(p, 0) for p in SHOWN_POOLS}
            if fate in ("ack", "twice"):
                w.events.append(Ack(next(clock), call, attempt, len(entries), told))
            if fate == "twice":  # the answer was lost on its way; the retry is answered from the stored reply
                w.events.append(Send(next(clock), call, attempt + 1))
                w.events.append(Ack(next(clock), call, attempt + 1, len(entries), told))
            if fate in ("abandon", "lost"):
                w.events.append(Error(next(clock), call, attempt, "DEADLINE_EXCEEDED", "slow"))
                w.events.append(Abandon(next(clock), call, attempt))
        w.links.append(v.Link(link, len(entries), entries))
        w.redis[link] = v.RedisLink(len(entries), dict(state))
        w.audits[link] = v.ChainAudit(len(entries), 0, [])
    return w


@given(worlds())
def test_a_consistent_history_passes_every_invariant(w: World) -> None:
    report = w.report()
    assert report.ok, report.render()
    assert [x.name for x in report.verdicts] == [v.WELL_FORMED, v.EXACTLY_ONCE, v.SEQUENCES, v.BALANCES,
                                                 v.HELD_STATE, v.REAL_TIME, v.AT_MOST_ONCE, v.REDIS, v.CHAIN]
    assert all(line.startswith("PASS ") for line in report.render().splitlines())


@CORRUPTED
@given(worlds(), st.data())
def test_an_acknowledged_call_missing_from_the_ledger_is_caught(w: World, data: st.DataObject) -> None:
    ack = w.events[data.draw(st.sampled_from(w.acks()))]
    i, j = w.entry_index(ack.call.link, v.stored_request_id(ack.call))
    entries = list(w.links[i].entries)
    del entries[j]  # and the later ones renumbered, so that the sequences alone look whole
    w.set_link(i, [*entries[:j], *(replace(e, seq=e.seq - 1) for e in entries[j:])], head=len(entries))
    report = w.report()
    assert v.EXACTLY_ONCE in w.failed()
    assert f"{ack.call.request_id} " in report.render() and "not in the ledger" in report.render()


@CORRUPTED
@given(worlds(), st.data())
def test_a_doubled_request_is_caught(w: World, data: st.DataObject) -> None:
    ack = w.events[data.draw(st.sampled_from(w.acks()))]
    i, j = w.entry_index(ack.call.link, v.stored_request_id(ack.call))
    link = w.links[i]
    w.set_link(i, [*link.entries, replace(link.entries[j], seq=link.head + 1)], head=link.head + 1)
    assert v.EXACTLY_ONCE in w.failed()
    assert "in the ledger 2 times" in w.report().render()


def test_an_abandoned_request_applied_twice_is_caught() -> None:
    call = Call("c", "L", "T", "VoidRound", "r1", "round-1")
    entry = v.Entry(1, v.stored_request_id(call), "h", "void", "T", "round-1", {"MAJOR": 5})
    w = World([Send(1, call, 1), Abandon(2, call, 1)], [v.Link("L", 2, [entry, replace(entry, seq=2)])],
              {"L": v.RedisLink(2, {"MAJOR": 5})}, {"L": v.ChainAudit(2, 0, [])})
    assert w.failed() == {v.AT_MOST_ONCE}
    assert "never acknowledged, is in the ledger 2 times, at sequences [1, 2]" in w.report().render()


@CORRUPTED
@given(worlds(), st.data())
def test_a_sequence_told_to_two_requests_is_caught(w: World, data: st.DataObject) -> None:
    assume(len(w.acks()) >= 2)
    first, second = data.draw(st.lists(st.sampled_from(w.acks()), min_size=2, max_size=2, unique=True))
    a, b = w.events[first], w.events[second]
    assert isinstance(a, Ack) and isinstance(b, Ack)
    if (a.call.link, a.call.request_id) == (b.call.link, b.call.request_id) or a.call.link != b.call.link:
        return  # a replayed retry of one request, or two links: both may say what they said
    w.events[second] = replace(b, sequence=a.sequence)
    assert v.SEQUENCES in w.failed()
    assert "was told to two requests" in w.report().render()


@CORRUPTED
@given(worlds(), st.data())
def test_a_reused_or_skipped_ledger_sequence_is_caught(w: World, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(w.links) - 1))
    entries = list(w.links[i].entries)
    j = data.draw(st.integers(0, len(entries) - 1))
    if data.draw(st.booleans()):  # skipped: every entry from j on moved one up
        w.set_link(i, [*entries[:j], *(replace(e, seq=e.seq + 1) for e in entries[j:])], head=len(entries) + 1)
        said = "skipped"
    else:  # reused: a second entry at entry j's sequence
        w.set_link(i, [*entries, replace(entries[j], request_id="admin:ops:another")])
        said = "reused"
    assert v.SEQUENCES in w.failed()
    assert said in w.report().render()


@CORRUPTED
@given(worlds(), st.data(), st.sampled_from(SHOWN_POOLS), st.integers(1, 10**6))
def test_a_wrong_balance_in_a_reply_is_caught(w: World, data: st.DataObject, pool: str, off: int) -> None:
    at = data.draw(st.sampled_from(w.acks()))
    ack = w.events[at]
    assert isinstance(ack, Ack)
    w.events[at] = replace(ack, pools={**ack.pools, pool: ack.pools[pool] + off})
    assert v.BALANCES in w.failed()
    assert f"{pool} told {ack.pools[pool] + off} µ¢, ledger {ack.pools[pool]} µ¢" in w.report().render()


@CORRUPTED
@given(worlds(), st.data())
def test_an_ack_beyond_the_ledgers_head_is_caught(w: World, data: st.DataObject) -> None:
    at = data.draw(st.sampled_from(w.acks()))
    ack = w.events[at]
    assert isinstance(ack, Ack)
    head = next(link.head for link in w.links if link.link_id == ack.call.link)
    w.events[at] = replace(ack, sequence=head + data.draw(st.integers(1, 3)))
    failed = w.failed()
    assert {v.SEQUENCES, v.HELD_STATE} <= failed
    assert "above the ledger's head" in w.report().render()


@CORRUPTED
@given(worlds(), st.data())
def test_an_answer_from_state_the_ledger_never_held_is_caught(w: World, data: st.DataObject) -> None:
    at = data.draw(st.sampled_from(w.acks()))
    ack = w.events[at]
    assert isinstance(ack, Ack)
    w.events[at] = replace(ack, pools={p: 10**15 + n for n, p in enumerate(SHOWN_POOLS)})
    assert {v.BALANCES, v.HELD_STATE} <= w.failed()
    assert "which match no state" in w.report().render()


@CORRUPTED
@given(worlds(), st.data())
def test_redis_ahead_of_the_ledger_or_apart_from_it_is_caught(w: World, data: st.DataObject) -> None:
    link = data.draw(st.sampled_from(sorted(w.redis)))
    live = w.redis[link]
    ahead = data.draw(st.booleans())
    w.redis[link] = (replace(live, seq=live.seq + 1) if ahead
                     else replace(live, pools={**live.pools, "MAJOR": live.pools.get("MAJOR", 0) + 1}))
    assert w.failed() == {v.REDIS}
    assert ("ahead of the ledger's head" if ahead else "MAJOR Redis") in w.report().render()


@CORRUPTED
@given(worlds())
def test_redis_behind_the_ledger_is_counted_not_failed(w: World) -> None:
    w.redis = {k: v.RedisLink(0, {}) for k in w.redis}
    report = w.report()
    assert report.ok, report.render()
    assert f"{len(w.redis)} behind" in report.render()


def test_a_broken_chain_and_a_bad_line_fail_with_their_words() -> None:
    report = v.decide([], ["line 3: op must be one of CommitWagers"], [], {},
                      {"L": v.ChainAudit(3, 1, ["first altered entry: seq 2: it posts ..."])}, ["cp.jsonl:1: bad MAC"])
    assert not report.ok
    assert {x.name: x.ok for x in report.verdicts}[v.WELL_FORMED] is False
    text = report.render()
    assert "FAIL hash-chain-and-anchors: 2 problem(s)" in text
    assert "link L: first altered entry: seq 2" in text and "checkpoints: cp.jsonl:1: bad MAC" in text


def test_an_answer_for_another_request_at_its_sequence_is_caught() -> None:
    call = Call("c", "L", "T", "CommitWagers", "r1", "round-1")
    other = dataclasses.replace(call, request_id="r2")
    entry = v.Entry(1, v.stored_request_id(other), "h", "commit", "T", "round-1", {"MAJOR": 5})
    w = World([Send(1, call, 1), Ack(2, call, 1, 1, {"MAJOR": 5})], [v.Link("L", 1, [entry])],
              {"L": v.RedisLink(1, {"MAJOR": 5})}, {"L": v.ChainAudit(1, 0, [])})
    assert {v.EXACTLY_ONCE, v.HELD_STATE} <= w.failed()
    assert "which the ledger holds for request table:T:r2" in w.report().render()


def test_the_stored_form_of_a_logged_request_id_is_scoped_to_its_table() -> None:
    assert v.stored_request_id(Call("c", "L", "T-1", "SettleRound", "0190-abc")) == "table:T-1:0190-abc"


def test_many_problems_are_named_five_and_counted() -> None:
    calls = [Call("c", "L", "T", "CommitWagers", f"r{n}") for n in range(12)]
    w = World([Ack(1, c, 1, n + 1, {}) for n, c in enumerate(calls)], [v.Link("L", 0, [])], {}, {})
    detail = next(x.detail for x in w.report().verdicts if x.name == v.EXACTLY_ONCE)
    assert detail.startswith("12 problem(s)") and detail.endswith("... and 7 more")


def test_the_verdicts_are_a_functional_core() -> None:
    """chaos/verdicts.py imports no driver and nothing that does I/O: chaos/check.py is its shell."""
    tree = ast.parse(Path(v.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and not n.level}
    assert "jackpotd" in imported  # the check sees imports at all
    assert not imported & {"asyncpg", "redis", "hiredis", "grpc", "os", "pathlib", "socket", "subprocess", "asyncio",
                           "io"}, imported


@CORRUPTED
@given(worlds(), st.data())
def test_a_head_that_is_not_the_last_entry_is_caught(w: World, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(w.links) - 1))
    link = w.links[i]
    head = link.head + data.draw(st.sampled_from([-1, 1]))
    w.set_link(i, list(link.entries), head=head)
    assert v.SEQUENCES in w.failed()
    assert f"link {link.link_id}: head {head} but the last entry is {link.head}" in w.report().render()


def test_a_log_that_contradicts_itself_is_not_well_formed() -> None:
    call = Call("c", "L", "T", "CommitWagers", "r1", "round-1")
    entry = v.Entry(1, v.stored_request_id(call), "h", "commit", "T", "round-1", {"MAJOR": 5})
    events: list[Event] = [Send(1, call, 1), Ack(2, call, 1, 1, {"MAJOR": 5}), Ack(3, call, 2, 1, {"MAJOR": 5}),
                           Send(4, replace(call, op="VoidRound"), 3)]
    w = World(events, [v.Link("L", 1, [entry])], {"L": v.RedisLink(1, {"MAJOR": 5})}, {"L": v.ChainAudit(1, 0, [])})
    assert w.failed() == {v.WELL_FORMED}
    detail = next(x.detail for x in w.report().verdicts if x.name == v.WELL_FORMED)
    assert "attempt 2: answered but never logged as sent" in detail
    assert "is logged as CommitWagers r1" in detail and "and as VoidRound r1" in detail


@CORRUPTED
@given(worlds(), st.data())
def test_an_order_that_contradicts_real_time_is_caught(w: World, data: st.DataObject) -> None:
    acked = sorted({(e.call.link, e.sequence, e.call.request_id) for e in w.events if isinstance(e, Ack)})
    pairs = [(a, b) for a, b in itertools.combinations(acked, 2) if a[0] == b[0] and a[2] != b[2]]
    assume(pairs)
    _, (_, high, later) = data.draw(st.sampled_from(pairs))
    # the later request's whole exchange moved before everything: it was acknowledged before the first was sent
    w.events = [replace(e, at_ms=0) if e.call.request_id == later else e for e in w.events]
    assert w.failed() == {v.REAL_TIME}
    assert f"{later} (" in w.report().render() and f"with sequence {high}, before" in w.report().render()
