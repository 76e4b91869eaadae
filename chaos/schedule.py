"""The seeded fault schedule (pure): the same seed and length give the same faults, at the same offsets, on the
same targets, for the same durations. Faults follow one another with a short gap; their kinds come in a seeded
order that goes through every kind before repeating one, so even a two-minute run covers most of them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

WRITERS, APIS = ("w1", "w2"), ("a1", "a2")
JACKPOTD = (*WRITERS, *APIS)
LEADER, VALKEY_PRIMARY, VALKEY_REPLICA = "leader-writer", "valkey-primary", "valkey-replica"  # asked at the start
KINDS = ("pause", "partition-route", "kill", "latency-200", "partition-role", "disk-full", "latency-2000",
         "clock-jump", "partition-replica")


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: from `at` seconds into the chaos phase, for `duration` seconds, on `target`.

    `target` is a role (w1, a2, pg, vk2 ...), `leader-writer` or `valkey-primary`, or for a proxy fault
    `STORE>ROLE` (the store's proxy, that role's connections; ROLE `*`: everyone's). `detail` says more: a
    blackhole's direction, a latency in ms, a clock jump in seconds.
    """

    at: float
    kind: str
    target: str
    duration: float
    detail: str = ""

    def describe(self) -> str:
        """One line of the printed schedule."""
        more = f" {self.detail}" if self.detail else ""
        return f"+{self.at:6.1f}s  {self.kind:<20} {self.target:<16} for {self.duration:4.1f}s{more}"


def _fault(rng: random.Random, kind: str, at: float) -> Fault:
    """One fault of `kind` starting at `at`, its target and duration drawn from `rng`."""
    if kind == "pause":
        return Fault(at, kind, rng.choice([LEADER, LEADER, *APIS, VALKEY_PRIMARY, "pg"]), rng.uniform(8, 15))
    if kind == "kill":
        return Fault(at, kind, rng.choice([*JACKPOTD, LEADER, VALKEY_PRIMARY, "pg", "pgs", "sen"]),
                     rng.uniform(2, 8), "kill -9, restarted after")
    if kind == "partition-route":
        store = rng.choice(["pg", VALKEY_PRIMARY])
        return Fault(at, kind, f"{store}>{rng.choice(JACKPOTD)}", rng.uniform(5, 15),
                     rng.choice(["both", "both", "up", "down"]))
    if kind == "partition-role":
        return Fault(at, kind, rng.choice([LEADER, *JACKPOTD, "pg", VALKEY_PRIMARY]), rng.uniform(5, 15))
    if kind == "partition-replica":  # a primary cut off from its replica (the replica connects through its proxy)
        return Fault(at, kind, rng.choice(["pg>pgs", f"{VALKEY_PRIMARY}>{VALKEY_REPLICA}"]), rng.uniform(5, 15),
                     "both")
    if kind.startswith("latency-"):
        store = rng.choice(["pg", VALKEY_PRIMARY])
        return Fault(at, kind, f"{store}>{rng.choice([*JACKPOTD, '*'])}", rng.uniform(10, 20),
                     f"{kind.split('-')[1]} ms round trip")
    if kind == "disk-full":
        return Fault(at, kind, "pg", rng.uniform(8, 12))
    if kind == "clock-jump":
        return Fault(at, kind, rng.choice(["w2", "a2"]), rng.uniform(15, 25), rng.choice(["+3600", "-3600"]))
    raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")


def make(seed: int, seconds: float, *, start: float = 5.0) -> list[Fault]:
    """The schedule of `seed` over a chaos phase of `seconds`: faults one after another, none ending past it."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    at, kinds = start, list[str]()
    while True:
        if not kinds:
            kinds = list(KINDS)
            rng.shuffle(kinds)
        fault = _fault(rng, kinds.pop(0), round(at, 1))
        fault = Fault(fault.at, fault.kind, fault.target, round(fault.duration, 1), fault.detail)
        if fault.at + fault.duration > seconds:
            return faults
        faults.append(fault)
        at = fault.at + fault.duration + rng.uniform(2, 5)
