"""Typed results, and their stored form: the reply of a request is stored as plain JSON (Redis for the
retention, the ledger forever) and decoded here, in one place, into these objects."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..domain.link import LinkConfig
from ..domain.money import floor_cents
from ..domain.pricing import Reset
from ..domain.verification import HitStatus
from .ports import Reply

T = TypeVar("T")


def stored(item: Any) -> dict[str, Any]:
    """A result row as stored: its fields by name (the stored keys are the field names; rows are leaf
    slotted dataclasses, so __slots__ lists every field)."""
    return {name: getattr(item, name) for name in item.__slots__}


def stored_seat(seat: SeatResult) -> dict[str, Any]:
    """A seat of a settle as stored: `no_hand` only for a seat without a hand, so a seat with cards is stored as
    it always was."""
    row = stored(seat)
    if not seat.no_hand:
        del row["no_hand"]
    return row


def _rows(kind: type[T], rows: Any) -> tuple[T, ...]:
    return tuple(kind(**row) for row in rows)


@dataclass(frozen=True, slots=True)
class PoolView:
    """A pool as signs and meters show it: floored cents, its reset value, and the exact µ¢."""

    pool: str
    amount_cents: int
    reset_cents: int
    balance_ucents: int


# ---- rows of stored results (field names are the stored keys) --------------------------------------

@dataclass(frozen=True, slots=True)
class Accepted:
    seat: int
    amount_cents: int
    contributed_uc: int  # what this wager put into the pools, µ¢
    overflow_uc: int


@dataclass(frozen=True, slots=True)
class Payout:
    seat: int
    hand: str
    amount_cents: int
    pool: str
    funded_by_operator_cents: int
    hit_id: str
    status: str  # PAID, or PENDING above the verification threshold (§7)
    pool_before_uc: int
    rule: str


@dataclass(frozen=True, slots=True)
class SeatResult:
    seat: int
    hand: str  # the category evaluated; "" for a seat without a hand
    no_hand: str = ""  # FOLDED, MUCKED or DEAD: why the table said it had none (replies before it: "")


@dataclass(frozen=True, slots=True)
class Refund:
    seat: int
    amount_cents: int


# ---- what each operation answers -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Answer:
    """What every mutating call answers: the entry's sequence, the link, its pools after the entry."""

    seq: int
    link_id: str
    pools: tuple[PoolView, ...]


@dataclass(frozen=True, slots=True)
class Committed(Answer):
    accepted: tuple[Accepted, ...]


@dataclass(frozen=True, slots=True)
class Settled(Answer):
    payouts: tuple[Payout, ...]
    resets: tuple[Reset, ...]  # §5.8, as the domain priced them
    seats: tuple[SeatResult, ...]
    unwagered: tuple[int, ...] = ()  # seats whose hands were sent without a jackpot wager: never paid


@dataclass(frozen=True, slots=True)
class Voided(Answer):
    refunds: tuple[Refund, ...]


@dataclass(frozen=True, slots=True)
class HitDecision:
    """§7: a PENDING hit approved (PAID) or rejected (REJECTED), and what a rejection gave back."""

    hit_id: str
    status: str
    hand: str
    amount_cents: int
    pool: str
    returned_to_pool_uc: int
    returned_to_operator_cents: int


@dataclass(frozen=True, slots=True)
class HitDecided(Answer):
    hit: HitDecision


@dataclass(frozen=True, slots=True)
class PoolsChanged(Answer):
    """NZ 11.6A/B: the link's new mode and pools (RESERVE included: administrators see it)."""

    mode: str


def pool_views(config: LinkConfig, balances: Mapping[str, int], include_hidden: bool = False
               ) -> tuple[PoolView, ...]:
    """The link's pools in configuration order; hidden pools (RESERVE) only when asked (§1)."""
    return tuple(PoolView(spec.name, floor_cents(balances.get(spec.name, 0)), spec.reset_cents,
                          balances.get(spec.name, 0))
                 for spec in config.pools if spec.visible or include_hidden)


def committed(reply: Reply, config: LinkConfig) -> Committed:
    return Committed(reply.seq, config.link_id, pool_views(config, reply.balances),
                     _rows(Accepted, reply.result["accepted"]))


def payouts_of(reply: Reply) -> tuple[Payout, ...]:
    """The payouts a stored reply holds (a settle's; none for other replies)."""
    return _rows(Payout, reply.result.get("payouts", ()))


def settled(reply: Reply, config: LinkConfig) -> Settled:
    r = reply.result
    return Settled(reply.seq, config.link_id, pool_views(config, reply.balances), payouts_of(reply),
                   _rows(Reset, r["resets"]), _rows(SeatResult, r["seats"]), tuple(r.get("unwagered", ())))


def voided(reply: Reply, config: LinkConfig) -> Voided:
    return Voided(reply.seq, config.link_id, pool_views(config, reply.balances),
                  _rows(Refund, reply.result["refunds"]))


def hit_decided(reply: Reply, config: LinkConfig) -> HitDecided:
    return HitDecided(reply.seq, config.link_id, pool_views(config, reply.balances),
                      HitDecision(**reply.result["hit"]))


def pools_changed(reply: Reply, config: LinkConfig) -> PoolsChanged:
    """The stored mode is the act's; the config is the one in force now (the pools it names)."""
    return PoolsChanged(reply.seq, config.link_id, pool_views(config, reply.balances, include_hidden=True),
                        reply.result["mode"])


def answered(reply: Reply, config: LinkConfig) -> Answer:
    """A funding or a configuration change (whose sequence number is the config's version)."""
    return Answer(reply.seq, config.link_id, pool_views(config, reply.balances))


# ---- what signs and meters are sent ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HitAnnouncement:
    """A hit, as every sign and meter on the link announces it (§8)."""

    table_id: str
    seat: int
    hand: str
    amount_cents: int
    pool: str
    hit_id: str
    sequence: int
    pool_amount_after_cents: int = 0
    status: str = HitStatus.PAID  # §7: PENDING while it awaits a supervisor; a decision announces PAID or REJECTED


@dataclass(frozen=True, slots=True)
class TableView:
    """A table as signs show it (§8): online while its controller holds a meter stream open; suspended while
    its jackpot wagers are off (NSW 14.13)."""

    table_id: str
    online: bool
    suspended: bool


def table_views(config: LinkConfig, online: Collection[str]) -> tuple[TableView, ...]:
    """The link's tables in id order."""
    return tuple(TableView(t.table_id, t.table_id in online, t.suspended)
                 for t in sorted(config.tables.values(), key=lambda t: t.table_id))


@dataclass(frozen=True, slots=True)
class LinkUpdate:
    """What meters and signs are sent: the link's sequence, its pools, a hit when one is announced, and the
    link's tables."""

    seq: int
    pools: tuple[PoolView, ...]
    hit: HitAnnouncement | None = None
    tables: tuple[TableView, ...] = ()


@dataclass(frozen=True, slots=True)
class PoolsNow:
    """GetPools: the pools the ledger holds, and the link's latest hit."""

    seq: int
    link_id: str
    pools: tuple[PoolView, ...]
    last_hit: HitAnnouncement | None
    tables: tuple[TableView, ...] = ()


@dataclass(frozen=True, slots=True)
class MeterUpdate:
    """What a table's meter is sent: its link's update, and whether it may take jackpot wagers now."""

    link_id: str
    update: LinkUpdate
    jackpot_enabled: bool
