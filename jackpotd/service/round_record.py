"""A round as the live store and the ledger hold it while it is open: what each seat contributed, so a void
reverses exactly that (§6), and what was voided. Encoded and decoded here only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..canonical import canonical_json
from ..domain.contributions import SeatContribution
from ..domain.postings import Posting


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
        return sorted(set(self.seats) - set(self.voided))

    def encode(self) -> str:
        """Canonical JSON; identical leg sets are stored once (equal wagers usually have equal legs)."""
        legs: list[list[list[Any]]] = []
        index: dict[tuple[Posting, ...], int] = {}
        by_seat: dict[str, list[int]] = {}
        for seat, c in sorted(self.seats.items()):
            at = index.get(c.postings)
            if at is None:
                at = index[c.postings] = len(legs)
                legs.append([list(p) for p in c.postings])
            by_seat[str(seat)] = [at, c.wager_cents, c.overflow_uc]
        data: dict[str, Any] = {"game": self.game, "rates_version": self.rates_version, "seats": by_seat,
                                "legs": legs, "voided": list(self.voided)}
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
        legs = [tuple(Posting(a, v) for a, v in leg_set) for leg_set in d["legs"]]
        seats = {int(s): SeatContribution(int(s), wager, legs[at], overflow)
                 for s, (at, wager, overflow) in d["seats"].items()}
        return RoundRecord(d["game"], d["rates_version"], seats, tuple(d["voided"]),
                           None if "hands" not in d else {int(s): hand for s, hand in d["hands"].items()},
                           tuple(d.get("void_reasons", ())),
                           {int(s): HeldHit(*h) for s, h in d["held"].items()} if "held" in d else None,
                           {int(s): status for s, status in d["decided"].items()} if "decided" in d else None,
                           {int(s): tuple(a) for s, a in d["approvals"].items()} if "approvals" in d else None)


def new_round(game: str, rates_version: int, seats: Sequence[SeatContribution]) -> RoundRecord:
    return RoundRecord(game, rates_version, {c.seat: c for c in seats})
