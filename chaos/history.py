"""The one codec of the clients' log (`history.jsonl`): JSON Lines, one event per line, appended and flushed per
event by the harness's tables (`Recorder`), parsed into typed events for the checker (`decode`, `load`).

A line is an object with `at_ms` (the client's wall clock, ms), `client`, `link`, `table`, `op` (CommitWagers,
SettleRound or VoidRound), `request_id` (exactly as sent), `attempt` (1 for the first send; a retry reuses the
request id with attempt + 1), `round_id` (the round the call is about; "" when not logged) and `event`:
  - "send": the call is about to be sent;
  - "ack": it was answered OK, with `sequence` (the response's) and `pools`: each pool of the response by
    name (PoolAmount.pool, e.g. "MAJOR") with its exact balance in µ¢ (PoolAmount.balance_ucents), as
    `pools_of(response)` makes it;
  - "error": it failed with `code` (the gRPC status name, e.g. "UNAVAILABLE") and `message`;
  - "abandon": the client gave up on this request id (it may be in the ledger, at most once).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Protocol, Self, get_args

import orjson

Op = Literal["CommitWagers", "SettleRound", "VoidRound"]
Kind = Literal["send", "ack", "error", "abandon"]
OPS: Final[tuple[str, ...]] = get_args(Op)
KINDS: Final[tuple[str, ...]] = get_args(Kind)


class HistoryError(ValueError):
    """A line of the log that is not an event of this codec: says which field and why."""


@dataclass(frozen=True, slots=True)
class Call:
    """Which request an event is about: the same for every attempt of one request id."""

    client: str
    link: str
    table: str
    op: Op
    request_id: str
    round_id: str = ""


@dataclass(frozen=True, slots=True)
class Send:
    """The client is about to send attempt `attempt` of `call`."""

    at_ms: int
    call: Call
    attempt: int


@dataclass(frozen=True, slots=True)
class Ack:
    """Attempt `attempt` of `call` was answered OK: the entry's `sequence` and the pools' balances (µ¢) after it."""

    at_ms: int
    call: Call
    attempt: int
    sequence: int
    pools: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Error:
    """Attempt `attempt` of `call` failed with gRPC status `code` (its name) and `message`."""

    at_ms: int
    call: Call
    attempt: int
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Abandon:
    """The client gave up on `call`'s request id after `attempt` attempts."""

    at_ms: int
    call: Call
    attempt: int


Event = Send | Ack | Error | Abandon


class _PoolAmount(Protocol):
    """What pools_of reads of a jackpot.v1.PoolAmount."""

    @property
    def pool(self) -> str: ...

    @property
    def balance_ucents(self) -> int: ...


class _Answer(Protocol):
    """A CommitWagers, SettleRound or VoidRound response: its pools."""

    @property
    def pools(self) -> Iterable[_PoolAmount]: ...


def pools_of(response: _Answer) -> dict[str, int]:
    """A response's pools as the log holds them: pool name -> exact balance in µ¢ (PoolAmount.balance_ucents)."""
    return {p.pool: int(p.balance_ucents) for p in response.pools}


# ---- one line ---------------------------------------------------------------------------------------------

def encode(event: Event) -> str:
    """The event as one line of the log (no newline): a JSON object, keys sorted."""
    c = event.call
    out: dict[str, Any] = {"at_ms": event.at_ms, "client": c.client, "link": c.link, "table": c.table, "op": c.op,
                           "request_id": c.request_id, "round_id": c.round_id, "attempt": event.attempt}
    match event:
        case Send():
            out["event"] = "send"
        case Ack(sequence=seq, pools=pools):
            out |= {"event": "ack", "sequence": seq, "pools": dict(pools)}
        case Error(code=code, message=message):
            out |= {"event": "error", "code": code, "message": message}
        case Abandon():
            out["event"] = "abandon"
    return orjson.dumps(out, option=orjson.OPT_SORT_KEYS).decode()


def _int(raw: Mapping[str, Any], name: str, least: int) -> int:
    """The field as an integer of at least `least` (never a bool)."""
    value = raw.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise HistoryError(f"{name} must be an integer of at least {least}, not {value!r}")
    return value


def _str(raw: Mapping[str, Any], name: str, *, empty: bool = False) -> str:
    """The field as a string; `empty`: it may be "" or left out."""
    value = raw.get(name, "" if empty else None)
    if not isinstance(value, str) or (not empty and not value):
        raise HistoryError(f"{name} must be a{'' if empty else ' non-empty'} string, not {value!r}")
    return value


def _pools(value: object) -> dict[str, int]:
    """An ack's pools: pool name -> integer µ¢."""
    if not isinstance(value, dict):
        raise HistoryError(f"pools must be an object of pool name -> µ¢, not {value!r}")
    for k, v in value.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise HistoryError(f"pools.{k} must be an integer (µ¢), not {v!r}")
    return dict(value)


def decode(line: str) -> Event:
    """One line of the log as its event; HistoryError naming the field when it is not one."""
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise HistoryError(f"not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise HistoryError(f"not a JSON object: {line[:80]!r}")
    op, kind = raw.get("op"), raw.get("event")
    if op not in OPS:
        raise HistoryError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    if kind not in KINDS:
        raise HistoryError(f"event must be one of {', '.join(KINDS)}, not {kind!r}")
    call = Call(_str(raw, "client"), _str(raw, "link"), _str(raw, "table"), op, _str(raw, "request_id"),
                _str(raw, "round_id", empty=True))
    at, attempt = _int(raw, "at_ms", 0), _int(raw, "attempt", 1)
    if kind == "send":
        return Send(at, call, attempt)
    if kind == "ack":
        return Ack(at, call, attempt, _int(raw, "sequence", 1), _pools(raw.get("pools")))
    if kind == "error":
        return Error(at, call, attempt, _str(raw, "code"), _str(raw, "message", empty=True))
    return Abandon(at, call, attempt)


def parse(lines: Iterable[str]) -> tuple[list[Event], list[str]]:
    """The events of the log's lines, and what is wrong with those that are not events ("line N: why"). A last
    line cut short (a client killed mid-write) is one of those."""
    events: list[Event] = []
    problems: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(decode(line))
        except HistoryError as e:
            problems.append(f"line {n}: {e}")
    return events, problems


def load(path: str | os.PathLike[str]) -> tuple[list[Event], list[str]]:
    """The events of the log at `path`, and its lines that are not events (see parse)."""
    with open(path, encoding="utf-8") as f:
        return parse(f)


# ---- the writer -------------------------------------------------------------------------------------------

def wall_ms() -> int:
    """The client's wall clock in ms: what `at_ms` records."""
    return time.time_ns() // 1_000_000


class Recorder:
    """Appends one line per event to the log, written whole by one write(2) on an O_APPEND file (so each line is
    in the file when the call returns, and lines of several tasks, threads or processes never interleave)."""

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], int] = wall_ms) -> None:
        self.path = Path(path)
        self._clock = clock
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, event: Event) -> None:
        """Append one event (its line and a newline) in a single write."""
        data = (encode(event) + "\n").encode()
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"the history {self.path} is closed")
            done = os.write(self._fd, data)
            while done < len(data):  # a short write (a full disk returns an error instead): finish the line
                done += os.write(self._fd, data[done:])

    def send(self, call: Call, attempt: int) -> None:
        """Attempt `attempt` of `call` is about to be sent."""
        self.write(Send(self._clock(), call, attempt))

    def ack(self, call: Call, attempt: int, sequence: int, pools: Mapping[str, int]) -> None:
        """Attempt `attempt` of `call` was answered: the response's `sequence` and `pools_of(response)`."""
        self.write(Ack(self._clock(), call, attempt, sequence, dict(pools)))

    def error(self, call: Call, attempt: int, code: str, message: str) -> None:
        """Attempt `attempt` of `call` failed: the gRPC status's name (`e.code().name`) and details."""
        self.write(Error(self._clock(), call, attempt, code, message))

    def abandon(self, call: Call, attempt: int) -> None:
        """The client gives up on `call`'s request id after `attempt` attempts."""
        self.write(Abandon(self._clock(), call, attempt))

    def close(self) -> None:
        """Flush to disk and close (idempotent)."""
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> Self:
        """The recorder itself, closed on leaving the block."""
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Closed, whatever happened in the block."""
        self.close()
