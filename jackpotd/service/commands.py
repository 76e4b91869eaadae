"""What callers ask the service to do: the request id with the content it stands for, and each operation's
parameters as plain values (servicers build these from protos)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..canonical import canonical_json, request_identity
from ..domain.ids import require_text
from ..domain.link import LinkConfig, TableConfig
from ..domain.paytable import PaytableEntry
from ..domain.pools import PoolSpec
from ..domain.rates import RateSet
from ..domain.rounds import PackedHands, PackedWagers, SeatHand, Wager


@dataclass(frozen=True, slots=True)
class Request:
    """A mutating request: the caller's id and the content the id stands for, in canonical JSON and hashed.

    A request id belongs to its caller (ARCHITECTURE.md, Idempotency): `caller` is the authenticated caller
    (`table:<id>`, or `<role>:<name>`), and the stores know the request by `key`, `<caller>:<request_id>`, so no
    caller can claim or block another's id. Roles, names and ids hold no ':', so keys of different callers never
    meet. Without a caller (tests of the service layer) the key is the id itself."""

    request_id: str
    content: Mapping[str, Any]
    caller: str = ""
    key: str = field(init=False)  # how Redis and the ledger know the request: unique per link
    canonical: str = field(init=False)
    hash: str = field(init=False)  # of the content: the same id with other content is refused
    identity: str = field(init=False)  # of the key and the content: what the ledger must hold to answer

    def __post_init__(self) -> None:
        canonical = canonical_json(self.content)
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        key = f"{self.caller}:{self.request_id}" if self.caller else self.request_id
        object.__setattr__(self, "key", key)  # frozen: computed once, here
        object.__setattr__(self, "canonical", canonical)
        object.__setattr__(self, "hash", digest)
        object.__setattr__(self, "identity", request_identity(key, digest))

    @property
    def legacy_id(self) -> str:
        """The id as ledgers written before ids were scoped hold it ('' when the key is the id): a retry that
        spans the upgrade is matched by it and its content hash."""
        return self.request_id if self.caller else ""


@dataclass(frozen=True, slots=True)
class Audit:
    """Who, why and under which approval (RULES.md §9)."""

    actor: str = ""
    reason: str = ""
    approval_ref: str = ""

    def __post_init__(self) -> None:
        for name in ("actor", "reason", "approval_ref"):
            require_text(f"audit.{name}", getattr(self, name))

    def as_dict(self) -> dict[str, str]:
        return {"actor": self.actor, "reason": self.reason, "approval_ref": self.approval_ref}


@dataclass(frozen=True, slots=True)
class RtpOverride:
    """Issue 33: a configuration whose jackpot wager returns 100% or more at the reset values, accepted on purpose
    (a seeded promotion) under its approval reference; never a default."""

    approval_ref: str
    reason: str = ""

    def __post_init__(self) -> None:
        require_text("rtp_override.approval_ref", self.approval_ref, required=True)
        require_text("rtp_override.reason", self.reason)


# ---- table commands (API.md TableService) ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RoundCommand:
    """A table's command on one of its rounds."""

    request: Request
    table_id: str
    round_id: str


@dataclass(frozen=True, slots=True)
class Commit(RoundCommand):
    wagers: Sequence[Wager] | PackedWagers  # packed: the columns as sent (API.md Columns)
    columns: bool = False  # sent in the packed form (API.md Columns): refusals name its columns


@dataclass(frozen=True, slots=True)
class Settle(RoundCommand):
    hands: Sequence[SeatHand] | PackedHands  # packed: the columns as sent (API.md Columns)
    dealer_cards: Sequence[str] = ()
    board_cards: Sequence[str] = ()
    columns: bool = False  # sent in the packed form (API.md Columns): refusals name its columns


@dataclass(frozen=True, slots=True)
class Void(RoundCommand):
    reason: str
    seats: Sequence[int] = ()


# ---- admin commands (API.md AdminService) ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Fund:
    request: Request
    link_id: str
    pool: str
    amount_cents: int
    audit: Audit


@dataclass(frozen=True, slots=True)
class CreateLink:
    request: Request
    config: LinkConfig
    audit: Audit
    rtp_override: RtpOverride | None = None  # issue 33: None refuses a game returning 100% or more at reset


@dataclass(frozen=True, slots=True)
class RegisterTable:
    request: Request
    link_id: str
    table: TableConfig
    audit: Audit


@dataclass(frozen=True, slots=True)
class SuspendTable:
    request: Request
    table_id: str
    suspended: bool  # False: resume
    audit: Audit


@dataclass(frozen=True, slots=True)
class SetRates:
    request: Request
    link_id: str
    pools_ppm: Mapping[str, int]
    retained_ppm: int
    effective_at_ms: int  # 0: now
    audit: Audit
    rtp_override: RtpOverride | None = None  # issue 33: None refuses a game returning 100% or more at reset


@dataclass(frozen=True, slots=True)
class SetPaytable:
    request: Request
    link_id: str
    game: str
    entries: Sequence[PaytableEntry]
    audit: Audit
    rtp_override: RtpOverride | None = None  # issue 33: None refuses a game returning 100% or more at reset


@dataclass(frozen=True, slots=True)
class UpdateLink:
    request: Request
    link_id: str
    wager_cents: int  # 0: unchanged
    pools: Sequence[PoolSpec]  # empty: unchanged
    verification_threshold_cents: int | None  # None: unchanged
    audit: Audit
    dual_approval_threshold_cents: int | None = None  # None: unchanged (NM 15.1.24.12)
    rtp_override: RtpOverride | None = None  # issue 33: None refuses a game returning 100% or more at reset


@dataclass(frozen=True, slots=True)
class DecideHit:
    """§7: a supervisor approves a PENDING hit (it is paid) or rejects it (its prize goes back)."""

    request: Request
    hit_id: str
    approve: bool
    reason: str  # required to reject
    audit: Audit


@dataclass(frozen=True, slots=True)
class CombinePools:
    """NZ 11.6B: MAJOR and MINOR into one JACKPOT."""

    request: Request
    link_id: str
    jackpot: PoolSpec
    rates: RateSet  # in force from the act
    audit: Audit


@dataclass(frozen=True, slots=True)
class SplitPools:
    """NZ 11.6A: JACKPOT into MAJOR and MINOR, its balance allocated explicitly (µ¢ per pool)."""

    request: Request
    link_id: str
    pools: Sequence[PoolSpec]
    allocation: Mapping[str, int]
    rates: RateSet
    audit: Audit


Restructure = CombinePools | SplitPools
ConfigCommand = CreateLink | RegisterTable | SuspendTable | SetRates | SetPaytable | UpdateLink
