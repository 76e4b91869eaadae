"""The ports: what the service layer needs of the live store, the ledger and the durability watcher.

Adapters implement them (store/redis/pools.py, store/ledger/, store/durability.py) and alone import their
drivers; every adapter raises errors.Unavailable (or LinkLost, LinkFenced) for a store it cannot use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..domain.link import LinkConfig
from .entries import Entry
from .export_columns import ExportedColumns
from .export_columns import ExportedEntry as ExportedEntry  # where it has always been imported from
from .replies import Reply, Result
from .seen import Unsure

ROUND_ABSENT = "absent"  # Step.round_expect: the round must not exist yet (a commit)
NEW_LINK = "new"  # Step.config_version: the link must not exist yet (a create)


@dataclass
class Step:
    """One atomic step: the checks it makes and the movement it applies (made by a decision function)."""

    link_id: str
    request_id: str  # the request's key: unique per link (commands.Request.key)
    request_hash: str
    identity: str  # canonical.request_identity: what the next journal entry names as the one it follows
    content: Mapping[str, Any]
    canonical_content: str
    config_version: str  # the version the step was decided on; NEW_LINK to create the link
    entry: Entry
    result: Result
    round: tuple[str, str] | None = None  # (table_id, round_id)
    round_expect: str = ""  # "": no round; ROUND_ABSENT; or the state the round must be in
    round_rev: str = ""
    round_new_state: str = ""
    round_data: str = ""
    refusal_field: tuple[str, str] | None = None  # what a refusal for the round's state names; default round_id
    between_rounds: bool = False  # NZ 11.6A/B: refused while any round of the link is open
    new_config: str = ""
    guards: Mapping[str, int] = field(default_factory=dict)
    deltas: Sequence[tuple[str, int]] = ()


# ---- what applying a step can come to (the adapter's verdicts, as the service needs them) ----------

@dataclass(frozen=True, slots=True)
class Applied:
    """The step is applied: now (`first`), or earlier under the same request id and content."""

    reply: Reply
    first: bool


@dataclass(frozen=True, slots=True)
class IdReused:
    """The request id was used before for different content; `reply` is what it was used for."""

    reply: Reply


@dataclass(frozen=True, slots=True)
class Stale:
    """What the step was decided on has changed (config, round, pools): decide again on fresh state.
    `contended` when pools another request moved are the reason (a CAS retry, counted)."""

    contended: bool


@dataclass(frozen=True, slots=True)
class RoundNotOpen:
    """The step's round is not in the state it expects (`state`: what it is)."""

    state: str


@dataclass(frozen=True, slots=True)
class RoundsOpen:
    """A step that needs the link between rounds found `count` rounds open."""

    count: int


@dataclass(frozen=True, slots=True)
class LinkExists:
    """A create found the link there already."""


Outcome = Applied | IdReused | Stale | RoundNotOpen | RoundsOpen | LinkExists | Unsure


@dataclass(frozen=True, slots=True)
class LiveRound:
    """A round as the live store holds it: its state, its revision (each step on it moves it on) and its
    stored data (service/round_record.py)."""

    state: str
    rev: str
    data: str


@dataclass(frozen=True, slots=True)
class LinkRead:
    """A checked read of a link: its sequence, pool balances and (when asked) one round, if held."""

    seq: int
    balances: dict[str, int]
    round: LiveRound | None


@dataclass(frozen=True, slots=True)
class Seen:
    """What the ledger holds of a request id and a round: the request's content hash and the round's state
    (None where it holds nothing). Redis lets both go after the retention; the ledger keeps them forever."""

    request_hash: str | None
    round_state: str | None
    legacy: bool = False  # the ledger holds the request under its unscoped id (written before ids were scoped)


@dataclass(frozen=True, slots=True)
class LastHit:
    """The link's latest hit as the ledger holds it (signs show it on connecting)."""

    hit_id: str
    table_id: str
    seat: int
    hand: str
    amount_cents: int
    pool: str
    seq: int
    status: str  # PAID, PENDING (§7) or REJECTED
    approvals: int = 0  # §7: approvals it has, and needs (2 under dual control; 0: paid at once)
    approvals_needed: int = 0


@dataclass(frozen=True, slots=True)
class HitRecord:
    """A hit as the ledger holds it: what traces the payout to its round, seat, cards, pool and rule (§10)."""

    hit_id: str
    link_id: str
    table_id: str
    round_id: str
    seat: int
    hand: str
    cards: tuple[str, ...]
    pool: str
    amount_cents: int
    funded_by_operator_cents: int
    pool_before_uc: int
    rule: str
    status: str  # PAID, PENDING (§7: awaiting a supervisor) or REJECTED
    seq: int  # the settle's entry
    at_ms: int = 0  # when the settle's entry is dated (reports)
    approved_by: tuple[str, ...] = ()  # §7: audit actors who approved it, in order (two under dual control)
    approvals_needed: int = 0  # 0 paid at settlement, 1, or 2 under dual control (NM 15.1.24.12)
    rejected_by: str = ""  # REJECTED: the audit actor who rejected it


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """An entry the ledger holds, as signs need it: its kind, and its reply when it announces something (a hit
    paid or decided) or is the last of a range (the pools then); the table whose round it settled or voided
    ('' for any other entry) and when (TableStatus.last_round_at_ms)."""

    seq: int
    kind: str
    reply: Reply | None
    round_table: str = ""
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class PeriodData:
    """What the ledger holds of a link for a period (reports): its flows summed, its pools' balances before and
    after it, its hits and the points of each pool's balance through it."""

    link_id: str
    config: str | None  # the link's current configuration (JSON); None: the ledger does not hold the link
    from_ms: int
    to_ms: int
    first_seq: int
    last_seq: int
    entries: int
    totals: Mapping[tuple[str, str, str], tuple[int, int]]  # (account, flow, detail) -> (µ¢, items)
    opening: Mapping[str, int]  # pool -> µ¢ after the last entry before the period
    closing: Mapping[str, int]  # pool -> µ¢ after the last entry of the period
    hits: Sequence[HitRecord]  # the first store.ledger.reports.HITS_LISTED
    chart: Sequence[tuple[str, int, int, int]]  # (pool, at_ms, seq, µ¢)
    hits_total: int = 0
    rate_sets: Sequence[str] = ()  # every rate set the link ever had: JSON lists as the configs store them


@dataclass(frozen=True, slots=True)
class LiabilityData:
    """The ledger's balances of a link now (reports: what the pools owe)."""

    link_id: str
    config: str | None
    seq: int
    at_ms: int
    pools: Mapping[str, int]  # µ¢
    pending_uc: int  # what pending_payouts holds
    pending: Sequence[HitRecord]
    config_version: int = 0  # the config's version: the sequence of the entry that made it (GetMath)


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What the audit of one link found (the chain, balances, projections, summaries, Redis): VerifyLedger's
    answer and `jackpotd audit`'s."""

    link_id: str
    entries: int
    chain_ok: bool
    balanced: bool
    summaries_ok: bool
    ledger_pools: Mapping[str, int]
    redis_pools: Mapping[str, int]
    redis_seq: int
    problems: Sequence[str]
    first_altered: int | None
    checkpoints: int
    altered_range_end: int | None = None  # the first altered entry is one of first_altered..this
    notes: Sequence[str] = ()  # incidents an operator accepted

    @property
    def ok(self) -> bool:
        return not self.problems


class ReportStore(Protocol):
    """Finance's reads: the ledger alone, except `verify`, which compares it with the live store."""

    async def config(self, link_id: str) -> str | None: ...

    async def period(self, link_id: str, from_ms: int, to_ms: int) -> PeriodData: ...

    async def export_range(self, link_id: str, from_seq: int, to_seq: int, from_ms: int | None,
                           to_ms: int | None) -> tuple[int, int]: ...

    def export(self, link_id: str, first: int, last: int) -> AsyncIterator[list[ExportedEntry]]: ...

    def export_columns(self, link_id: str, first: int, last: int) -> AsyncIterator[ExportedColumns]: ...

    async def liability(self, link_id: str) -> LiabilityData: ...

    async def verify(self, link_id: str) -> AuditReport: ...


class LiveStore(Protocol):
    """The live pools (Redis): atomic steps, checked reads, stored replies, the link catalogue."""

    async def apply(self, step: Step, floor: int, check: str | None = None) -> Outcome: ...

    async def read(self, link_id: str, floor: int, round_: tuple[str, str] | None = None) -> LinkRead: ...

    async def record(self, link_id: str, request_id: str) -> Reply | None: ...

    async def config(self, link_id: str) -> tuple[str, LinkConfig] | None: ...

    async def link_of_table(self, table_id: str) -> str | None: ...

    async def set_table_link(self, table_id: str, link_id: str) -> None: ...

    async def add_link(self, link_id: str) -> None: ...

    async def mark_online(self, table_id: str, ttl_ms: int) -> None:
        """The table's controller holds a meter stream open, for the next `ttl_ms` ms (signs show it online)."""

    async def online(self, table_ids: Sequence[str]) -> set[str]:
        """Those of the tables whose controller holds a meter stream open now."""



class Ledger(Protocol):
    """What the service reads of the PostgreSQL ledger: answers that outlive Redis's retention."""

    async def seen(self, link_id: str, table_id: str, round_id: str, key: str, legacy_id: str = "",
                   request_hash: str = "") -> Seen: ...

    async def stored_reply(self, link_id: str, request_id: str) -> Reply | None: ...

    async def link_known(self, link_id: str) -> bool: ...

    async def table_link(self, table_id: str) -> str | None: ...

    async def last_hit(self, link_id: str) -> LastHit | None: ...

    async def hits(self, link_id: str, table_id: str, status: str, limit: int) -> list[HitRecord]: ...

    async def hit(self, link_id: str, table_id: str, round_id: str, seat: int) -> HitRecord | None: ...

    async def entries(self, link_id: str, after: int, upto: int) -> list[LedgerEntry]: ...

    async def last_rounds(self, link_id: str, table_ids: Sequence[str]) -> dict[str, int]:
        """When each table's last round settled or was voided (epoch ms); tables without one are absent."""

    async def close(self) -> None: ...


class Durability(Protocol):
    """The ledger's durable mark per link, as the writer announces it."""

    def floor(self, link_id: str) -> int: ...

    async def wait_durable(self, link_id: str, seq: int, identity: str | None = None) -> None: ...

    def on_durable(self, listener: Callable[[str, int], None]) -> None:
        """Call `listener(link, mark)` whenever the ledger's durable mark of a link moves (or a rebuild sets it)."""


@dataclass(frozen=True, slots=True)
class AdminAct:
    """One administrative act: who (the authenticated actor, '' when there was none; `agent`: the console it acted
    through, "console:<name>", or ''), what and how it ended (`outcome`: OK or the status code's name; `detail`:
    the status message). `id` and `at` are the trail's."""

    actor: str
    role: str
    method: str
    request_id: str = ""
    link_id: str = ""
    table_id: str = ""
    reason: str = ""
    approval_ref: str = ""
    outcome: str = "OK"
    detail: str = ""
    id: int = 0
    at: datetime | None = None
    agent: str = ""


@dataclass(frozen=True, slots=True)
class AdminActFilter:
    """Which acts to list: empty strings and None match any; `limit` 0 means the trail's default."""

    link_id: str = ""
    actor: str = ""
    method: str = ""
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 0


class AuditTrail(Protocol):
    """The trail of administrative acts (store/ledger/admin_audit.py): one row per AdminService call, append-only."""

    async def record(self, act: AdminAct) -> None: ...

    async def acts(self, query: AdminActFilter) -> Sequence[AdminAct]:
        """The acts `query` selects, newest first."""


__all__ = [
    "NEW_LINK",
    "ROUND_ABSENT",
    "AdminAct",
    "AdminActFilter",
    "Applied",
    "AuditReport",
    "AuditTrail",
    "Durability",
    "HitRecord",
    "IdReused",
    "LastHit",
    "Ledger",
    "LedgerEntry",
    "LinkExists",
    "LinkRead",
    "LiveRound",
    "LiveStore",
    "Outcome",
    "Reply",
    "RoundNotOpen",
    "RoundsOpen",
    "Seen",
    "Stale",
    "Step",
]
