"""The one codec of the Lua scripts' wire format: the KEYS and ARGV that apply.lua and read.lua are called with,
and their replies decoded into the port's outcomes (a `match` over every `Verdict`). The scripts hold no
vocabulary of ours: what a round state means arrives as an argument."""

from __future__ import annotations

from enum import Enum
from typing import Literal, assert_never

import orjson
from redis.exceptions import ResponseError

from ..domain import seen_filter
from ..domain.rounds import FINISHED
from ..service.entries import encode_entry
from ..service.errors import LinkFenced, LinkLost, Unavailable, lost
from ..service.ports import (
    ROUND_ABSENT,
    Applied,
    IdReused,
    LinkExists,
    LinkRead,
    LiveRound,
    Outcome,
    Reply,
    RoundNotOpen,
    RoundsOpen,
    Stale,
    Step,
)
from ..service.replies import decode_reply, encode_result, pairs
from ..service.seen import Unsure, Why
from . import keys

SAFETY_TTL_SECONDS = 24 * 3600  # until the writer shortens it to the retention once the entry is durable
# How far a step's time (its entry's ts_ms) may be from Redis's clock when it runs (DECISIONS.md, Faults: clock
# jumps): the longest a step waits to run (resp.CALL_TIMEOUT) is the most an honest clock can seem behind.
CLOCK_TOLERANCE_MS = 5_000


class Verdict(Enum):
    """What apply.lua and read.lua answer (the first element of their reply); read.lua answers OK or a refusal."""

    OK = "ok"
    DUP = "dup"  # the request id's record holds this very content: its stored reply
    CONFLICT = "conflict"  # the request id was used for other content: its stored reply
    STALE_CONFIG = "stale_config"  # the config changed since the step was decided: decide again
    ROUND_STATE = "round_state"  # the round is not in the state the step expects (detail: what it is)
    ROUND_MOVED = "round_moved"  # the round moved on (its revision) since the step was decided: decide again
    POOL_MOVED = "pool_moved"  # a guarded pool changed since the step was decided (detail: the pool): a CAS retry
    NEGATIVE = "negative"  # a pool would go below zero, so it paid out since (detail: the pool): a CAS retry
    EXISTS = "exists"  # a create found the link
    ROUNDS_OPEN = "rounds_open"  # a step that needs the link between rounds found rounds open (detail: how many)
    LOST = "lost"  # Redis forgot the link's config or sequence
    BEHIND = "behind"  # Redis went back behind the ledger's durable mark (detail: its sequence)
    FENCED = "fenced"  # the link is fenced (detail: why)
    UNSURE = "unsure"  # the filter of used ids cannot rule out the request or new round id (detail: seen.Why)
    CLOCK = "clock"  # the step's time is off Redis's clock by more than the tolerance (detail: by how many ms)


Refused = Literal[Verdict.LOST, Verdict.BEHIND, Verdict.FENCED]  # the link's Redis state is unfit to answer from

Call = tuple[list[str], list[str | int]]  # (KEYS, ARGV)


def apply_call(step: Step, floor: int, check: str | None = None, clock_tolerance_ms: int = CLOCK_TOLERANCE_MS) -> Call:
    """apply.lua's KEYS and ARGV for `step` (their layout is documented at the top of apply.lua). With `check` (a
    bare request id the ledger may hold from before ids were scoped, or ""), the filter of used ids is asked. A step
    whose time is off Redis's clock by more than `clock_tolerance_ms` (0: unchecked) is refused."""
    link = step.link_id
    rkey = keys.round_(link, *step.round) if step.round else keys.no_round(link)
    args: list[str | int] = [
        step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
        step.round_data, step.new_config, encode_entry(step.entry),
        encode_result(step.result), SAFETY_TTL_SECONDS, step.canonical_content, floor,
        step.identity, "1" if step.between_rounds else "", "1" if step.round_new_state in FINISHED else "",
        len(step.guards)]
    for pool, bal in sorted(step.guards.items()):
        args += [pool, str(bal)]
    args.append(len(step.deltas))
    for pool, delta in step.deltas:
        args += [pool, str(delta)]
    args += [step.entry.ts_ms, clock_tolerance_ms, *seen_args(step, check)]
    return [keys.config(link), keys.balances(link), keys.seq(link), keys.journal(link),
            keys.record(link, step.request_id), rkey, keys.last(link), keys.fence(link), keys.open_rounds(link),
            keys.seen(link), keys.seen_bits(link)], args


def seen_args(step: Step, check: str | None) -> list[str | int]:
    """apply.lua's last two ARGV: the ids to look up in the filter of used ids (the request's, and a new round's;
    none without `check`), and the ids the step adds to it (its request's and its round's)."""
    request = seen_filter.encode([seen_filter.request_key(step.request_id)])
    rnd = seen_filter.encode([seen_filter.round_key(*step.round)]) if step.round else ""
    added = request + rnd
    if check is None:
        return ["", added]
    asked = [request]
    if check:
        asked.append(seen_filter.encode([seen_filter.request_key(check)]))
    if rnd and step.round_expect == ROUND_ABSENT:  # a round already open is the live store's to answer for
        asked.append(rnd)
    return ["".join(asked), added]


def apply_outcome(step: Step, reply: list[str]) -> Outcome:
    """What apply.lua's reply comes to; LinkLost or LinkFenced when it refused the link's Redis state."""
    status, detail, *fresh = reply
    verdict = Verdict(status)
    match verdict:
        case Verdict.OK:  # the stored reply is what we sent plus the sequence and balances
            seq, balances = fresh
            return Applied(Reply(int(seq), step.result, pairs(orjson.loads(balances)), step.content,
                                 step.request_hash), first=True)
        case Verdict.DUP:
            return Applied(decode_reply(detail), first=False)
        case Verdict.CONFLICT:
            return IdReused(decode_reply(detail))
        case Verdict.ROUND_STATE:
            return RoundNotOpen(detail)
        case Verdict.ROUNDS_OPEN:
            return RoundsOpen(int(detail))
        case Verdict.EXISTS:
            return LinkExists()
        case Verdict.STALE_CONFIG | Verdict.ROUND_MOVED:
            return Stale(contended=False)
        case Verdict.POOL_MOVED | Verdict.NEGATIVE:
            return Stale(contended=True)
        case Verdict.UNSURE:
            return Unsure(Why(detail))
        case Verdict.LOST | Verdict.BEHIND | Verdict.FENCED:
            raise refusal(step.link_id, verdict, detail)
        case Verdict.CLOCK:
            raise clock_refused(step.link_id, int(detail))
        case _:
            assert_never(verdict)


def clock_refused(link_id: str, skew_ms: int) -> Unavailable:
    """The error of a step decided by a clock that jumped: nothing changed; another process may take the retry."""
    way = "ahead of" if skew_ms > 0 else "behind"
    return Unavailable(f"link {link_id}: this jackpotd's clock is {abs(skew_ms) / 1000:.1f} s {way} Redis's (more than "
                       f"{CLOCK_TOLERANCE_MS / 1000:g} s): the step was refused and nothing changed; correct its "
                       "clock (NTP), and retry with the same request_id")


def read_call(link_id: str, floor: int, round_: tuple[str, str] | None) -> Call:
    """read.lua's KEYS and ARGV: the link's sequence, balances and one round (or an unused key)."""
    rkey = keys.round_(link_id, *round_) if round_ else keys.no_round(link_id)
    return [keys.config(link_id), keys.seq(link_id), keys.balances(link_id), rkey, keys.fence(link_id)], [floor]


def read_result(link_id: str, reply: list[str]) -> LinkRead:
    """What read.lua's reply comes to; LinkLost or LinkFenced when it refused the link's Redis state."""
    status, *rest = reply
    verdict = Verdict(status)
    match verdict:
        case Verdict.OK:
            seq, balances, rnd = rest
            flat = orjson.loads(rnd)
            fields = dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {}
            live = LiveRound(fields["state"], fields.get("rev", ""), fields.get("data", "")) if fields else None
            return LinkRead(int(seq), pairs(orjson.loads(balances)), live)
        case Verdict.LOST | Verdict.BEHIND | Verdict.FENCED:
            raise refusal(link_id, verdict, rest[0] if rest else "")
        case (Verdict.DUP | Verdict.CONFLICT | Verdict.STALE_CONFIG | Verdict.ROUND_STATE | Verdict.ROUND_MOVED
              | Verdict.POOL_MOVED | Verdict.NEGATIVE | Verdict.EXISTS | Verdict.ROUNDS_OPEN | Verdict.UNSURE
              | Verdict.CLOCK):
            raise ResponseError(f"read.lua answered {verdict.value!r}, a verdict only apply.lua gives")  # a bug
        case _:
            assert_never(verdict)


def refusal(link_id: str, verdict: Refused, detail: str) -> LinkLost | LinkFenced:
    """The error for a step or read that found the link's Redis state unfit to answer from."""
    match verdict:
        case Verdict.FENCED:
            return LinkFenced(f"link {link_id} is fenced: {detail}; an operator must resolve it "
                              "(jackpotd fenced), then retry with the same request_id")
        case Verdict.LOST:
            return lost(link_id)
        case Verdict.BEHIND:
            return LinkLost(f"link {link_id}: Redis went back to sequence {detail}, behind the ledger; it is being "
                            "rebuilt from the ledger, retry with the same request_id")
        case _:
            assert_never(verdict)
