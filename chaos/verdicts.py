"""The history checker's decisions, pure (no I/O): given what the tables were told (the clients' log, parsed by
chaos/history.py), what the ledger holds and what Redis holds, decide each invariant of issue 23 with counts and,
when it fails, the first few offending items in words a person can act on. chaos/check.py reads the stores."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from jackpotd.auth.identity import Role
from jackpotd.service.commands import Request

from .history import Abandon, Ack, Call, Error, Event, Send
from .report import SHOWN, Report, Verdict, verdict

KIND_OF_OP: Mapping[str, str] = {"CommitWagers": "commit", "SettleRound": "settle", "VoidRound": "void"}

# The invariants, by the names the verdicts carry (the harness adds its own liveness verdict).
WELL_FORMED = "history-well-formed"
EXACTLY_ONCE = "acknowledged-exactly-once"
SEQUENCES = "sequences-contiguous"
BALANCES = "reply-balances-match-ledger"
HELD_STATE = "no-answer-from-unheld-state"
REAL_TIME = "real-time-order"
AT_MOST_ONCE = "unacknowledged-at-most-once"
REDIS = "redis-not-ahead-of-ledger"
CHAIN = "hash-chain-and-anchors"


@dataclass(frozen=True, slots=True)
class Entry:
    """A ledger entry as the checker needs it: its request as stored, and the pools' balances (µ¢) it left, for the
    pools it posted to (`pool:<NAME>` accounts' balance_after, by NAME)."""

    seq: int
    request_id: str
    request_hash: str
    kind: str
    table_id: str = ""  # of the round a commit, settle or void is about; "" for other kinds
    round_id: str = ""
    posted: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Link:
    """One link's ledger: its head (links.last_seq) and its entries in sequence order."""

    link_id: str
    head: int
    entries: Sequence[Entry]


@dataclass(frozen=True, slots=True)
class RedisLink:
    """What Redis holds of a link: its sequence and every pool's balance (µ¢); seq 0 with no pools: nothing."""

    seq: int
    pools: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ChainAudit:
    """jackpotd's own audit of one link (store/ledger/audit.py): the chain, the projections, the anchors."""

    entries: int
    checkpoints: int
    problems: Sequence[str]


def stored_request_id(call: Call) -> str:
    """The request id as the ledger stores it: scoped to its caller, the table (`table:<table>:<request_id>`), by
    jackpotd's own Request.key. The one place the checker maps a logged id to the stored form."""
    return _scoped(call.table, call.request_id)


@cache
def _scoped(table: str, request_id: str) -> str:
    """Request.key of a table's request id (cached: a long run logs each id several times)."""
    return Request(request_id, {}, f"{Role.TABLE.value}:{table}").key


def _who(call: Call) -> str:
    """A request as a person looks it up: its id, client, table, op and round."""
    where = f" round {call.round_id}" if call.round_id else ""
    return f"{call.op} {call.request_id} ({call.client}, table {call.table}{where}, link {call.link})"


@dataclass(frozen=True, slots=True)
class _Ledger:
    """Indexes of the ledger: entries by (link, seq), by stored request id, and each link's balances after each
    entry (the running state of every pool posted so far)."""

    at: Mapping[tuple[str, int], Entry]
    by_request: Mapping[tuple[str, str], list[int]]
    after: Mapping[tuple[str, int], Mapping[str, int]]
    heads: Mapping[str, int]


def _index(links: Iterable[Link]) -> _Ledger:
    """The ledger's indexes; a doubled sequence keeps its first entry (SEQUENCES names it)."""
    at: dict[tuple[str, int], Entry] = {}
    by_request: dict[tuple[str, str], list[int]] = defaultdict(list)
    after: dict[tuple[str, int], Mapping[str, int]] = {}
    heads: dict[str, int] = {}
    for link in links:
        heads[link.link_id] = link.head
        state: dict[str, int] = {}
        for e in sorted(link.entries, key=lambda e: e.seq):
            by_request[link.link_id, e.request_id].append(e.seq)
            if (link.link_id, e.seq) in at:
                continue
            at[link.link_id, e.seq] = e
            state = {**state, **e.posted}
            after[link.link_id, e.seq] = state
    return _Ledger(at, by_request, after, heads)


def well_formed(events: Sequence[Event], problems: Sequence[str]) -> Verdict:
    """The log parses, one request id is always one call, and each answer follows a send of its attempt."""
    bad = [f"history {p}" for p in problems]
    first: dict[tuple[str, str, str], Call] = {}
    sent: set[tuple[str, str, str, int]] = set()
    for e in events:
        c = e.call
        key = (c.link, c.table, c.request_id)
        was = first.setdefault(key, c)
        if (was.op, was.client) != (c.op, c.client) or (was.round_id and c.round_id and was.round_id != c.round_id):
            bad.append(f"request {c.request_id} of table {c.table} is logged as {_who(was)} and as {_who(c)}")
        if isinstance(e, Send):
            sent.add((*key, e.attempt))
        elif isinstance(e, Error | Ack) and (*key, e.attempt) not in sent:
            bad.append(f"{_who(c)} attempt {e.attempt}: answered but never logged as sent")
    return verdict(WELL_FORMED, bad, f"{len(events)} events, {len(first)} request ids")


def _acks(events: Iterable[Event]) -> dict[tuple[str, str], list[Ack]]:
    """Each acknowledged request (link, stored id) with its acks in log order."""
    out: dict[tuple[str, str], list[Ack]] = defaultdict(list)
    for e in events:
        if isinstance(e, Ack):
            out[e.call.link, stored_request_id(e.call)].append(e)
    return out


def exactly_once(acks: Mapping[tuple[str, str], list[Ack]], ledger: _Ledger) -> Verdict:
    """Every acknowledged request is in its link's ledger exactly once, at the sequence every ack of it told."""
    bad: list[str] = []
    for (link, rid), told in acks.items():
        call, seqs = told[0].call, ledger.by_request.get((link, rid), [])
        said = sorted({a.sequence for a in told})
        if len(said) > 1:
            bad.append(f"{_who(call)} was acknowledged at different sequences {said}")
        if not seqs:
            bad.append(f"{_who(call)} was acknowledged at sequence {said[0]} but is not in the ledger "
                       f"(stored id {rid})")
        elif len(seqs) > 1:
            bad.append(f"{_who(call)} is in the ledger {len(seqs)} times, at sequences {seqs}")
        elif len(said) == 1 and said[0] != seqs[0]:
            bad.append(f"{_who(call)} was told sequence {said} but the ledger holds it at {seqs[0]}")
    n = sum(map(len, acks.values()))
    return verdict(EXACTLY_ONCE, bad, f"{len(acks)} acknowledged requests ({n} acks) checked against the ledger")


def sequences(links: Sequence[Link], acks: Mapping[tuple[str, str], list[Ack]], ledger: _Ledger) -> Verdict:
    """Each link's entries are 1..head with none reused or skipped, no two requests were told one (link, seq),
    and no ack names a sequence above its link's head."""
    bad: list[str] = []
    for link in links:
        seqs = sorted(e.seq for e in link.entries)
        if seqs != list(range(1, len(seqs) + 1)):
            doubled = sorted(s for s, n in Counter(seqs).items() if n > 1)
            missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
            bad.append(f"link {link.link_id}: sequences {'reused ' + str(doubled[:SHOWN]) if doubled else ''}"
                       f"{' ' if doubled and missing else ''}{'skipped ' + str(missing[:SHOWN]) if missing else ''}")
        if link.head != (seqs[-1] if seqs else 0):
            bad.append(f"link {link.link_id}: head {link.head} but the last entry is {seqs[-1] if seqs else 0}")
    told: dict[tuple[str, int], tuple[str, Call]] = {}
    for (link_id, rid), group in acks.items():
        for a in group:
            other = told.setdefault((link_id, a.sequence), (rid, a.call))
            if other[0] != rid:
                bad.append(f"link {link_id} sequence {a.sequence} was told to two requests: {_who(other[1])} and "
                           f"{_who(a.call)}")
            head = ledger.heads.get(link_id)
            if head is None or a.sequence > head:
                bad.append(f"{_who(a.call)} was told sequence {a.sequence}, above the ledger's head "
                           f"{'(no such link)' if head is None else head}")
    entries = sum(len(link.entries) for link in links)
    return verdict(SEQUENCES, bad, f"{len(links)} links, {entries} entries, {len(told)} acknowledged sequences")


def _differs(told: Mapping[str, int], held: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """The pools of a reply whose balance is not the ledger's: pool -> (told, held); a pool never posted is 0."""
    return {p: (v, held.get(p, 0)) for p, v in sorted(told.items()) if held.get(p, 0) != v}


def balances(acks: Mapping[tuple[str, str], list[Ack]], ledger: _Ledger) -> Verdict:
    """Every reply's pools equal the ledger's balances after the entry it was told: one total order explains
    them all (acks whose entry is missing are named by the other verdicts)."""
    bad: list[str] = []
    checked = 0
    for (link, _), group in acks.items():
        for a in group:
            held = ledger.after.get((link, a.sequence))
            if held is None:
                continue
            checked += 1
            if wrong := _differs(a.pools, held):
                said = ", ".join(f"{p} told {t} µ¢, ledger {h} µ¢" for p, (t, h) in wrong.items())
                bad.append(f"{_who(a.call)} attempt {a.attempt} at sequence {a.sequence}: {said}")
    return verdict(BALANCES, bad, f"{checked} replies' pools compared with the ledger after their entry")


def held_state(acks: Mapping[tuple[str, str], list[Ack]], ledger: _Ledger) -> Verdict:
    """No answer came from state the ledger does not hold: each ack's entry exists, is its request (id, kind,
    table, round), and its pools are balances the link's ledger held at some point."""
    bad: list[str] = []
    states: dict[str, list[Mapping[str, int]]] = defaultdict(list)
    for (link, _), state in ledger.after.items():
        states[link].append(state)
    seen: dict[tuple[str, tuple[str, ...]], set[tuple[int, ...]]] = {}  # a link's states, as a reply's pools

    def ever_held(link: str, pools: Mapping[str, int]) -> bool:
        """Whether the link's ledger held these balances after some entry (a pool never posted is 0)."""
        names = tuple(sorted(pools))
        if (link, names) not in seen:
            seen[link, names] = {tuple(s.get(p, 0) for p in names) for s in states[link]}
        return tuple(pools[p] for p in names) in seen[link, names]

    n = 0
    for (link, rid), group in acks.items():
        for a in group:
            n += 1
            e = ledger.at.get((link, a.sequence))
            if e is None:
                bad.append(f"{_who(a.call)} was answered from sequence {a.sequence}, which the ledger of link "
                           f"{link} does not hold (head {ledger.heads.get(link, 0)})")
                continue
            c = a.call
            if e.request_id != rid:
                bad.append(f"{_who(c)} was answered from sequence {a.sequence}, which the ledger holds for request "
                           f"{e.request_id}")
            elif e.kind != KIND_OF_OP[c.op] or (e.table_id and e.table_id != c.table) or (
                    e.round_id and c.round_id and e.round_id != c.round_id):
                bad.append(f"{_who(c)} was answered from sequence {a.sequence}, a {e.kind} of table {e.table_id} "
                           f"round {e.round_id} in the ledger")
            if a.pools and not ever_held(link, a.pools):
                bad.append(f"{_who(c)} attempt {a.attempt} was told pools {dict(a.pools)} µ¢, which match no "
                           f"state of link {link}'s ledger")
    return verdict(HELD_STATE, bad, f"{n} acks traced to a ledger entry and state")


def real_time(events: Iterable[Event], ledger: _Ledger) -> Verdict:
    """The link's total order agrees with real time: a request acknowledged before another was first sent has the
    lower sequence (its entry existed before the other request did). The clients share one clock (the harness's
    host); a request never acknowledged but in the ledger counts as the later one."""
    first_send: dict[tuple[str, str], tuple[int, Call]] = {}
    first_ack: dict[tuple[str, str], int] = {}
    for e in events:
        key = (e.call.link, stored_request_id(e.call))
        if isinstance(e, Send) and (key not in first_send or e.at_ms < first_send[key][0]):
            first_send[key] = (e.at_ms, e.call)
        elif isinstance(e, Ack):
            first_ack[key] = min(e.at_ms, first_ack.get(key, e.at_ms))
    by_link: dict[str, list[tuple[int, str]]] = defaultdict(list)  # (seq, stored id) of each logged request held
    for key in first_send:
        seqs = ledger.by_request.get(key, [])
        if len(seqs) == 1:
            by_link[key[0]].append((seqs[0], key[1]))
    bad: list[str] = []
    pairs = 0
    for link, held in by_link.items():
        earliest: tuple[int, int, str] | None = None  # (ack ms, seq, id) of the first-acked of the later sequences
        for seq, rid in sorted(held, reverse=True):
            sent, call = first_send[link, rid]
            pairs += 1
            if earliest is not None and earliest[0] < sent:
                later = first_send[link, earliest[2]][1]
                bad.append(f"{_who(later)} was acknowledged at {earliest[0]} ms with sequence {earliest[1]}, before "
                           f"{_who(call)} was first sent at {sent} ms, yet that one holds the lower sequence {seq}")
            if (link, rid) in first_ack and (earliest is None or first_ack[link, rid] < earliest[0]):
                earliest = (first_ack[link, rid], seq, rid)
    return verdict(REAL_TIME, bad, f"{pairs} requests in the ledger ordered against the acks before them")


def at_most_once(events: Iterable[Event], acks: Mapping[tuple[str, str], list[Ack]], ledger: _Ledger) -> Verdict:
    """Request ids never acknowledged (failed, abandoned, or sent and left) are in the ledger at most once."""
    open_: dict[tuple[str, str], tuple[Call, bool]] = {}
    for e in events:
        key = (e.call.link, stored_request_id(e.call))
        if key not in acks:
            abandoned = open_.get(key, (e.call, False))[1] or isinstance(e, Abandon)
            open_[key] = (e.call, abandoned)
    bad: list[str] = []
    landed = 0
    for key, (call, _) in open_.items():
        seqs = ledger.by_request.get(key, [])
        landed += len(seqs) == 1
        if len(seqs) > 1:
            bad.append(f"{_who(call)}, never acknowledged, is in the ledger {len(seqs)} times, at sequences {seqs}")
    gave_up = sum(a for _, a in open_.values())
    return verdict(AT_MOST_ONCE, bad, f"{len(open_)} requests never acknowledged ({gave_up} abandoned), "
                                       f"{landed} of them in the ledger once")


def redis_not_ahead(links: Sequence[Link], redis: Mapping[str, RedisLink], ledger: _Ledger) -> Verdict:
    """Redis holds no state the ledger lacks: no link's sequence above the ledger's head, and at the head the same
    balances. A Redis behind (flushed, failed over) is rebuilt from the ledger when next used: counted, not a fault."""
    bad: list[str] = []
    behind = equal = 0
    for link_id, live in sorted(redis.items()):
        head = ledger.heads.get(link_id, 0)
        if live.seq > head:
            bad.append(f"link {link_id}: Redis at sequence {live.seq}, ahead of the ledger's head {head}")
        elif live.seq < head:
            behind += 1
        else:
            equal += 1
            held = ledger.after.get((link_id, head), {})
            if wrong := {p: (live.pools.get(p, 0), held.get(p, 0)) for p in sorted({*live.pools, *held})
                         if held.get(p, 0) != live.pools.get(p, 0)}:
                said = ", ".join(f"{p} Redis {r} µ¢, ledger {h} µ¢" for p, (r, h) in wrong.items())
                bad.append(f"link {link_id} at sequence {head}: {said}")
    missing = len({link.link_id for link in links} - set(redis))
    return verdict(REDIS, bad, f"{equal} links at the ledger's head with its balances, {behind} behind "
                                f"(rebuilt on next use), {missing} absent from Redis")


def chain(audits: Mapping[str, ChainAudit], anchor_problems: Sequence[str], anchored: bool) -> Verdict:
    """The hash chain, projections and anchors as jackpotd's own audit finds them, link by link."""
    bad = [f"checkpoints: {p}" for p in anchor_problems]
    for link_id, a in sorted(audits.items()):
        bad += [f"link {link_id}: {p}" for p in a.problems]
    entries = sum(a.entries for a in audits.values())
    marks = sum(a.checkpoints for a in audits.values())
    how = f"against {marks} signed checkpoints" if anchored else "against itself only (no checkpoint key given)"
    return verdict(CHAIN, bad, f"{len(audits)} links, {entries} entries, chain verified {how}")


def decide(events: Sequence[Event], history_problems: Sequence[str], links: Sequence[Link],
           redis: Mapping[str, RedisLink], audits: Mapping[str, ChainAudit], anchor_problems: Sequence[str] = (),
           anchored: bool = False) -> Report:
    """Every invariant's verdict, in a fixed order."""
    ledger = _index(links)
    acks = _acks(events)
    return Report([
        well_formed(events, history_problems),
        exactly_once(acks, ledger),
        sequences(links, acks, ledger),
        balances(acks, ledger),
        held_state(acks, ledger),
        real_time(events, ledger),
        at_most_once(events, acks, ledger),
        redis_not_ahead(links, redis, ledger),
        chain(audits, anchor_problems, anchored),
    ])
