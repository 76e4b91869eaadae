"""A round as the live store and the ledger hold it while it is open: what each seat contributed, so a void
reverses exactly that (§6), and what was voided. Encoded and decoded here only."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..canonical import canonical_json
from ..domain.contributions import SeatContribution
from ..domain.postings import Posting
from .seat_runs import RUNS_FROM, from_runs, run_at, run_seats


@dataclass(frozen=True, slots=True)
class HeldHit:
    """§7: a hit above the verification threshold, its prize held in pending_payouts until it is decided."""

    hit_id: str
    pool: str
    amount_cents: int
    funded_by_operator_cents: int
    approvals_needed: int = 1  # 2 at or above the link's dual-approval threshold (NM 15.1.24.12)


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """An open (or finished) round's stored data. `seats` by seat number; `voided` seats were refunded."""

    game: str
    rates_version: int
    seats: Mapping[int, SeatContribution]
    voided: tuple[int, ...] = ()
    hands: Mapping[int, str] | None = None  # set at settle: each hitting seat's category
    void_reasons: tuple[Mapping[str, Any], ...] = ()
    held: Mapping[int, HeldHit] | None = None  # §7: seats whose hit awaits a supervisor (a PENDING round)
    decided: Mapping[int, str] | None = None  # §7: seats whose held hit was decided: PAID or REJECTED
    approvals: Mapping[int, tuple[str, ...]] | None = None  # §7: seats whose held hit has a first of two approvals

    @property
    def active(self) -> list[int]:
        """Seats whose wager is still open (wagered and not voided), in order."""
        if not self.voided:  # the usual case: no set of a big round's seats
            return sorted(self.seats)
        return sorted(set(self.seats) - set(self.voided))

    def encode(self) -> str:
        """Canonical JSON; identical leg sets are stored once (equal wagers usually have equal legs)."""
        seats = self.seats if isinstance(self.seats, StoredSeats) else StoredSeats.of(self.seats)
        data: dict[str, Any] = {"game": self.game, "rates_version": self.rates_version, "legs": seats.legs,
                                "voided": list(self.voided)}
        if seats.runs is not None:  # a round of more than RUNS_FROM seats (seat_runs)
            data["seat_runs"] = seats.runs
        else:
            data["seats"] = seats.raw
        if self.hands is not None:
            data["hands"] = {str(s): hand for s, hand in self.hands.items()}
        if self.void_reasons:
            data["void_reasons"] = [dict(r) for r in self.void_reasons]
        if self.held:
            # the approvals needed only when two: a round without dual control is stored as it always was
            data["held"] = {str(s): [h.hit_id, h.pool, h.amount_cents, h.funded_by_operator_cents,
                                     *([h.approvals_needed] if h.approvals_needed != 1 else [])]
                            for s, h in self.held.items()}
        if self.decided:
            data["decided"] = {str(s): status for s, status in self.decided.items()}
        if self.approvals:
            data["approvals"] = {str(s): list(actors) for s, actors in self.approvals.items()}
        return canonical_json(data)

    @staticmethod
    def decode(raw: str) -> RoundRecord:
        """A record from its stored JSON, of any version."""
        d = orjson.loads(raw)
        seats = StoredSeats(d["legs"], runs=d["seat_runs"]) if "seat_runs" in d else StoredSeats(d["legs"], d["seats"])
        return RoundRecord(d["game"], d["rates_version"], seats, tuple(d["voided"]),
                           None if "hands" not in d else {int(s): hand for s, hand in d["hands"].items()},
                           tuple(d.get("void_reasons", ())),
                           {int(s): HeldHit(*h) for s, h in d["held"].items()} if "held" in d else None,
                           {int(s): status for s, status in d["decided"].items()} if "decided" in d else None,
                           {int(s): tuple(a) for s, a in d["approvals"].items()} if "approvals" in d else None)


class StoredSeats(Mapping[int, SeatContribution]):
    """A round's seats as stored, read lazily: each distinct leg set once (`legs`), and each seat's [leg set,
    wager, overflow] by seat text (`raw`) or, in a round of more than RUNS_FROM seats, as runs of seats alike
    (`runs`: [first, last, leg set, wager, overflow]). A 100,000-seat round is read at settle and stored again
    without a Python object per seat: a seat's contribution is built only when asked for (a void)."""

    __slots__ = ("_sets", "_starts", "legs", "raw", "runs")

    def __init__(self, legs: list[list[list[Any]]], raw: dict[str, list[int]] | None = None, *,
                 runs: list[list[int]] | None = None) -> None:
        self.legs = legs
        self.raw = raw if raw is not None else {}
        self.runs = runs
        self._sets = [tuple(Posting(a, v) for a, v in leg_set) for leg_set in legs]
        self._starts = [r[0] for r in runs] if runs is not None else []

    @staticmethod
    def of(seats: Mapping[int, SeatContribution]) -> StoredSeats:
        """Seats as they are stored. Seats sharing one tuple of legs (equal wagers, contributions.contribute) are
        matched by identity before value."""
        legs: list[list[list[Any]]] = []
        index: dict[tuple[Posting, ...], int] = {}
        known: dict[int, int] = {}  # id of a leg tuple -> its index; the tuples live as long as `seats`
        runs: list[list[int]] = []  # [first, last, leg set, wager, overflow], built in the same pass
        run = [-2, -2, -1, 0, 0]
        for seat, wager, postings, overflow in sorted(seats.values()):
            at = known.get(id(postings))
            if at is None:
                at = index.get(postings)
                if at is None:
                    at = index[postings] = len(legs)
                    legs.append([list(p) for p in postings])
                known[id(postings)] = at
            if seat == run[1] + 1 and at == run[2] and wager == run[3] and overflow == run[4]:
                run[1] = seat
            else:
                run = [seat, seat, at, wager, overflow]
                runs.append(run)
        if len(seats) > RUNS_FROM:
            return StoredSeats(legs, runs=runs)
        return StoredSeats(legs, {str(seat): list(values) for seat, values in from_runs(runs)})

    def _row(self, seat: int) -> Sequence[int] | None:
        if self.runs is not None:
            return run_at(self.runs, self._starts, seat)
        return self.raw.get(str(seat))

    def __getitem__(self, seat: int) -> SeatContribution:
        row = self._row(seat) if isinstance(seat, int) else None
        if row is None:
            raise KeyError(seat)
        at, wager, overflow = row
        return SeatContribution(seat, wager, self._sets[at], overflow)

    def __contains__(self, seat: object) -> bool:
        return isinstance(seat, int) and self._row(seat) is not None

    def __iter__(self) -> Iterator[int]:
        return run_seats(self.runs) if self.runs is not None else map(int, self.raw)

    def __len__(self) -> int:
        return sum(r[1] - r[0] + 1 for r in self.runs) if self.runs is not None else len(self.raw)


def new_round(game: str, rates_version: int, seats: Sequence[SeatContribution]) -> RoundRecord:
    return RoundRecord(game, rates_version, {c.seat: c for c in seats})
