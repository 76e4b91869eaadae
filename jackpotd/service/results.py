"""What each operation answers, built from its stored reply (service/replies.py holds the stored form and its
codec), and what signs and meters are sent."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..domain.link import LinkConfig
from ..domain.money import floor_cents
from ..domain.pricing import Reset
from ..domain.verification import HitStatus
from .replies import (
    Accepted,
    CommitResult,
    HitDecision,
    HitResult,
    LinkResult,
    Payout,
    Refund,
    Reply,
    Result,
    SeatResult,
    SettleResult,
    VoidResult,
)

_R = TypeVar("_R", bound=Result)


@dataclass(frozen=True, slots=True)
class PoolView:
    """A pool as signs and meters show it: floored cents, its reset value, and the exact µ¢."""

    pool: str
    amount_cents: int
    reset_cents: int
    balance_ucents: int


# ---- what each operation answers -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Answer:
    """What every mutating call answers: the entry's sequence, the link, its pools after the entry."""

    seq: int
    link_id: str
    pools: tuple[PoolView, ...]


@dataclass(frozen=True, slots=True)
class Committed(Answer):
    accepted: Sequence[Accepted]  # a big round's may be RunRows (seat_runs): rows made only when read


@dataclass(frozen=True, slots=True)
class Settled(Answer):
    payouts: tuple[Payout, ...]
    resets: tuple[Reset, ...]  # §5.8, as the domain priced them
    seats: Sequence[SeatResult]  # a big round's may be RunRows (seat_runs): rows made only when read
    unwagered: tuple[int, ...] = ()  # seats whose hands were sent without a jackpot wager: never paid


@dataclass(frozen=True, slots=True)
class Voided(Answer):
    refunds: tuple[Refund, ...]


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


def _expect(reply: Reply, kind: type[_R]) -> _R:
    """The reply's result, which must be of `kind`: a request id replayed for another kind of call is refused
    before this (its content differs), so a mismatch here is a bug."""
    if not isinstance(reply.result, kind):
        raise TypeError(f"reply {reply.seq}: expected a {kind.__name__}, found {type(reply.result).__name__}")
    return reply.result


def committed(reply: Reply, config: LinkConfig) -> Committed:
    return Committed(reply.seq, config.link_id, pool_views(config, reply.balances),
                     _expect(reply, CommitResult).accepted)


def payouts_of(reply: Reply) -> tuple[Payout, ...]:
    """The payouts a stored reply holds (a settle's; none for other replies)."""
    return reply.result.payouts if isinstance(reply.result, SettleResult) else ()


def settled(reply: Reply, config: LinkConfig) -> Settled:
    r = _expect(reply, SettleResult)
    return Settled(reply.seq, config.link_id, pool_views(config, reply.balances), r.payouts, r.resets, r.seats,
                   r.unwagered)


def voided(reply: Reply, config: LinkConfig) -> Voided:
    return Voided(reply.seq, config.link_id, pool_views(config, reply.balances), _expect(reply, VoidResult).refunds)


def hit_decided(reply: Reply, config: LinkConfig) -> HitDecided:
    return HitDecided(reply.seq, config.link_id, pool_views(config, reply.balances), _expect(reply, HitResult).hit)


def pools_changed(reply: Reply, config: LinkConfig) -> PoolsChanged:
    """The stored mode is the act's; the config is the one in force now (the pools it names)."""
    return PoolsChanged(reply.seq, config.link_id, pool_views(config, reply.balances, include_hidden=True),
                        _expect(reply, LinkResult).mode or "")


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
    approvals: int = 0  # §7: the approvals it has (0 or 1) ...
    approvals_needed: int = 0  # ... and needs: 1, or 2 under dual control (NM 15.1.24.12); 0 paid at once


@dataclass(frozen=True, slots=True)
class TableView:
    """A table as signs show it (§8): online while its controller holds a meter stream open; suspended while
    its jackpot wagers are off (NSW 14.13); when its last round settled or was voided (epoch ms, 0: none)."""

    table_id: str
    online: bool
    suspended: bool
    last_round_at_ms: int = 0


def table_views(config: LinkConfig, online: Collection[str],
                last_rounds: Mapping[str, int] | None = None) -> tuple[TableView, ...]:
    """The link's tables in id order."""
    last = last_rounds or {}
    return tuple(TableView(t.table_id, t.table_id in online, t.suspended, last.get(t.table_id, 0))
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
