"""Simulated tables: antes, jackpot wagers on a share of seats, the deal, voids now and then, settlement."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.domain.verification import HitStatus

from .controller import JackpotDisabled, TableController
from .deal import deal
from .packed import accepted_of, seats_of

Forced = Mapping[int, list[str]]


@dataclass
class Tally:
    """The simulator's own account of what it did, to compare with the ledger to the cent."""

    rounds: int = 0
    wagers: int = 0
    wagered_cents: int = 0
    refunded_cents: int = 0
    paid_cents: int = 0
    pending_cents: int = 0  # prizes above the verification threshold, awaiting a supervisor (RULES.md §7)
    voids: int = 0
    skipped: int = 0  # rounds played without jackpot wagers because the service was silent
    hits: Counter[str] = field(default_factory=Counter)
    hands: Counter[str] = field(default_factory=Counter)  # every wagered seat's hand, as the service evaluated it
    folded: int = 0  # wagered seats settled without a hand (FOLDED)
    latencies: list[float] = field(default_factory=list)
    committed: dict[str, int] = field(default_factory=dict)  # "table/round" -> sequence of its commit
    # (kind, table, round) -> the sequence the service answered, for every call: kind is commit, void or settle
    answers: dict[tuple[str, str, str], int] = field(default_factory=dict)


@dataclass
class Scenario:
    """Forced hands for demos and tests: {"tables": {"<table_id>": {"<round number>": {"<seat>": [cards]}}}}."""

    forced: dict[str, dict[int, dict[int, list[str]]]] = field(default_factory=dict)

    @staticmethod
    def load(path: str | Path) -> Scenario:
        raw = json.loads(Path(path).read_text())
        return Scenario({t: {int(n): {int(s): list(c) for s, c in seats.items()} for n, seats in rounds.items()}
                         for t, rounds in raw.get("tables", {}).items()})

    def hands(self, table_id: str, round_number: int) -> Forced:
        return self.forced.get(table_id, {}).get(round_number, {})


@dataclass
class TableSettings:
    game: str = "caribbean-stud"
    seats: int = 7
    wager_cents: int = 100
    share: float = 0.6  # share of seats that take the jackpot wager
    misdeal_rate: float = 0.01  # whole round void (NSW 14.4)
    absent_rate: float = 0.01  # one seat's hand void (NSW 14.12)
    fold_rate: float = 0.02  # a wagered seat folds: settled as FOLDED, no cards (its jackpot wager is lost)


async def play(controller: TableController, settings: TableSettings, rounds: int, tally: Tally,
               rng: random.Random, scenario: Scenario | None = None, prefix: str = "r",
               on_hit: Callable[[str, table_pb2.Payout], None] | None = None,
               stop: asyncio.Event | None = None) -> None:
    """Play `rounds` rounds at one table, recording everything in `tally`."""
    table_id = controller.config.table_id
    for n in range(rounds):
        if stop is not None and stop.is_set():
            return
        round_id = f"{prefix}{n}"
        forced = scenario.hands(table_id, n) if scenario else {}
        seats = list(range(1, settings.seats + 1))
        wagering = [s for s in seats if s in forced or rng.random() < settings.share]
        cards = deal(settings.game, seats, rng, forced)
        tally.rounds += 1
        if not wagering:
            await asyncio.sleep(0)
            continue
        started = time.perf_counter()
        try:
            committed = await controller.commit(round_id, [(s, settings.wager_cents) for s in wagering])
        except JackpotDisabled:
            tally.skipped += 1
            await asyncio.sleep(0.1)  # the table plays on without the jackpot; the meter listens for the service
            continue
        tally.latencies.append(time.perf_counter() - started)
        tally.committed[f"{table_id}/{round_id}"] = committed.sequence
        tally.answers["commit", table_id, round_id] = committed.sequence
        accepted = accepted_of(committed)  # either form: a round of many seats is answered packed
        tally.wagers += len(accepted)
        tally.wagered_cents += sum(a.amount_cents for a in accepted)
        if not forced and rng.random() < settings.misdeal_rate:
            voided = await controller.void(round_id, "misdeal (NSW 14.4)")
            tally.answers["void", table_id, round_id] = voided.sequence
            tally.voids += 1
            tally.refunded_cents += sum(r.amount_cents for r in voided.refunds)
            continue
        if not forced and len(wagering) > 1 and rng.random() < settings.absent_rate:
            absent = rng.choice(wagering)
            voided = await controller.void(round_id, "player absent at the deal (NSW 14.12)", [absent])
            tally.answers["void", table_id, round_id] = voided.sequence
            tally.refunded_cents += sum(r.amount_cents for r in voided.refunds)
            wagering.remove(absent)
            del cards.hands[absent]
        folds = {s: "FOLDED" for s in wagering if s not in forced and rng.random() < settings.fold_rate}
        for seat in folds:  # a folded hand is mucked: the table reports the seat, not its cards
            del cards.hands[seat]
        started = time.perf_counter()
        settled = await controller.settle(round_id, cards.hands, cards.dealer, cards.board, no_hands=folds)
        tally.latencies.append(time.perf_counter() - started)
        tally.answers["settle", table_id, round_id] = settled.sequence
        for s in seats_of(settled):
            if s.hand:
                tally.hands[s.hand] += 1
            elif s.no_hand:
                tally.folded += 1
        for p in settled.payouts:
            if p.status == HitStatus.PENDING:
                tally.pending_cents += p.amount_cents
            else:
                tally.paid_cents += p.amount_cents
            tally.hits[p.hand] += 1
            if on_hit is not None:
                on_hit(table_id, p)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]
