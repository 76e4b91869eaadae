"""Finance (API.md ReportService; RULES.md §10): reconciliation of a gaming day or any period, the ledger
exported and verified, and what the pools owe now. Every figure is the ledger's (PostgreSQL); only VerifyLedger
asks Redis, to compare."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from ..clock import Clock
from ..domain.errors import FailedPrecondition, InvalidInput, NotFound
from ..domain.gaming_day import day_bounds, parse_day
from ..domain.ids import require_id
from ..domain.link import LinkConfig
from ..domain.money import floor_cents
from ..domain.pools import VISIBLE
from ..domain.rates import RateSet, rate_set_of
from ..domain.reconciliation import Reconciliation, reconcile
from .export_columns import ExportedColumns
from .math_inputs import MathView, game_figures, math_view
from .ports import AuditReport, ExportedEntry, HitRecord, ReportStore

DAY_MS = 86_400_000
MAX_PERIOD_MS = 366 * DAY_MS  # a year (and a leap day) at most in one report
LAST_MS = 253_370_764_800_000  # 9998-12-31T00:00Z: every time a report names must be a date's time
PAGE_ENTRIES = 5_000


@dataclass(frozen=True, slots=True)
class ReconciliationView:
    """A period's reconciliation with what finance needs to read it: the period, its entries, hits and chart."""

    link_id: str
    gaming_day: str
    from_ms: int
    to_ms: int
    time_zone: str
    gaming_day_start: str
    first_seq: int
    last_seq: int
    entries: int
    reconciliation: Reconciliation
    hits: Sequence[HitRecord]
    chart: Sequence[tuple[str, int, int, int]]  # (pool, at_ms, seq, µ¢)
    generated_at_ms: int
    hits_total: int


@dataclass(frozen=True, slots=True)
class PoolOwed:
    pool: str
    balance_uc: int
    reset_cents: int

    @property
    def hidden(self) -> bool:
        return self.pool not in VISIBLE


@dataclass(frozen=True, slots=True)
class LiabilityView:
    """What the pools owe players now: their balances and the prizes awaiting verification (§7), and the reset
    values (§5.8) the operator must fund beyond what RESERVE holds (docs/DECISIONS.md, Liability)."""

    link_id: str
    seq: int
    at_ms: int
    pools: Sequence[PoolOwed]
    pending: Sequence[HitRecord]
    pending_uc: int
    reset_values_cents: int
    minimum_shortfall_cents: int  # §5.7: Σ per pool of its largest guaranteed minimum beyond what it holds

    @property
    def pools_uc(self) -> int:
        return sum(p.balance_uc for p in self.pools if not p.hidden)

    @property
    def reserve_uc(self) -> int:
        return sum(p.balance_uc for p in self.pools if p.hidden)

    @property
    def reset_owed_by_operator_cents(self) -> int:
        return max(0, self.reset_values_cents - floor_cents(self.reserve_uc))

    @property
    def owed_to_players_uc(self) -> int:
        """The visible pools, RESERVE (players' contributions set aside for resets) and the prizes held."""
        return self.pools_uc + self.reserve_uc + self.pending_uc


def _config(link_id: str, raw: str | None) -> LinkConfig:
    if raw is None:
        raise NotFound("link_id", link_id, "no such link")
    return LinkConfig.from_dict(orjson.loads(raw))


def _rates(stored: Sequence[str]) -> dict[int, RateSet]:
    """Every rate set the link's configs ever held, by version (§3: a version is approved once, never changed)."""
    out: dict[int, RateSet] = {}
    for text in stored:
        for d in orjson.loads(text):
            rs = rate_set_of(d)
            out.setdefault(rs.version, rs)
    return out


def _zone(config: LinkConfig) -> ZoneInfo:
    try:
        return ZoneInfo(config.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise FailedPrecondition("time_zone", config.time_zone, "is not a time zone this server knows") from None


def period_of(gaming_day: str, from_ms: int, to_ms: int) -> tuple[date | None, int, int]:
    """The period asked for: a gaming day (bounds found once the link's zone is known) or [from_ms, to_ms)."""
    if gaming_day:
        if from_ms or to_ms:
            raise InvalidInput("gaming_day", gaming_day, "give a gaming day, or from_ms and to_ms, not both")
        return parse_day("gaming_day", gaming_day), 0, 0
    if from_ms <= 0:
        raise InvalidInput("from_ms", from_ms, "give a gaming day, or a period from_ms (Unix ms, > 0) to to_ms")
    if to_ms <= from_ms:
        raise InvalidInput("to_ms", to_ms, f"must be after from_ms={from_ms}")
    if to_ms > LAST_MS:
        raise InvalidInput("to_ms", to_ms, f"must be at most {LAST_MS} (9998-12-31)")
    if to_ms - from_ms > MAX_PERIOD_MS:
        raise InvalidInput("to_ms", to_ms, "a report covers at most 366 days")
    return None, from_ms, to_ms


class ReportQueries:
    """ReportService's use cases."""

    VERIFY_AT_ONCE = 1  # a verification reads a whole link: callers take turns rather than pile up in memory

    def __init__(self, store: ReportStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._verifying = asyncio.Semaphore(self.VERIFY_AT_ONCE)

    async def reconciliation(self, link_id: str, gaming_day: str, from_ms: int, to_ms: int) -> ReconciliationView:
        """§10 for a gaming day of the link (its start, in its time zone: 23 or 25 hours across a clock change) or
        for [from_ms, to_ms)."""
        require_id("link_id", link_id)
        day, from_ms, to_ms = period_of(gaming_day, from_ms, to_ms)
        if day is not None:
            config = _config(link_id, await self.store.config(link_id))
            begin, end = day_bounds(day, config.gaming_day_start, _zone(config))
            from_ms, to_ms = int(begin.timestamp()) * 1000, int(end.timestamp()) * 1000
        data = await self.store.period(link_id, from_ms, to_ms)
        config = _config(link_id, data.config)
        pools = {p.name: (0, 0) for p in config.pools}
        for pool in {*data.opening, *data.closing}:
            pools[pool] = (data.opening.get(pool, 0), data.closing.get(pool, 0))
        return ReconciliationView(
            link_id, gaming_day, from_ms, to_ms, config.time_zone, config.gaming_day_start, data.first_seq,
            data.last_seq, data.entries, reconcile(pools, data.totals, _rates(data.rate_sets)), data.hits, data.chart,
            self.clock(),
            data.hits_total)

    async def export_range(self, link_id: str, from_seq: int, to_seq: int, from_ms: int,
                           to_ms: int) -> tuple[int, int]:
        """The sequences [first, last] an export covers: by sequence (0: from the first, to the last), or the
        entries dated in [from_ms, to_ms) when either time is given."""
        require_id("link_id", link_id)
        if from_seq < 0 or to_seq < 0:
            raise InvalidInput("from_sequence" if from_seq < 0 else "to_sequence", min(from_seq, to_seq),
                               "must not be negative")
        if to_seq and from_seq > to_seq:
            raise InvalidInput("to_sequence", to_seq, f"must not be before from_sequence={from_seq}")
        by_time = bool(from_ms or to_ms)
        if by_time:
            if from_seq or to_seq:
                raise InvalidInput("from_ms", from_ms, "export by sequence or by time, not both")
            period_of("", from_ms, to_ms)
        _config(link_id, await self.store.config(link_id))
        return await self.store.export_range(link_id, from_seq, to_seq, from_ms if by_time else None,
                                             to_ms if by_time else None)

    def export(self, link_id: str, first: int, last: int) -> AsyncIterator[list[ExportedEntry]]:
        return self.store.export(link_id, first, last)

    def export_columns(self, link_id: str, first: int, last: int) -> AsyncIterator[ExportedColumns]:
        """The same entries as `export`, as columns a chunk at a time (ExportLedgerPages with `columns`)."""
        return self.store.export_columns(link_id, first, last)

    async def verify(self, link_id: str) -> AuditReport:
        require_id("link_id", link_id)
        _config(link_id, await self.store.config(link_id))
        async with self._verifying:
            return await self.store.verify(link_id)

    async def liability(self, link_id: str) -> LiabilityView:
        require_id("link_id", link_id)
        data = await self.store.liability(link_id)
        config = _config(link_id, data.config)
        resets = {e.pool for t in config.paytables.values() for e in t.entries.values() if e.resets_pool}
        pools = [PoolOwed(p.name, data.pools.get(p.name, 0), p.reset_cents) for p in config.pools]
        pools += [PoolOwed(name, uc, 0) for name, uc in sorted(data.pools.items())
                  if uc and name not in {p.name for p in config.pools}]
        minimum = {p.name: 0 for p in config.pools}
        for table in config.paytables.values():
            for e in table.entries.values():
                minimum[e.pool] = max(minimum.get(e.pool, 0), e.min_cents)
        shortfall = sum(max(0, cents - floor_cents(data.pools.get(pool, 0))) for pool, cents in minimum.items())
        return LiabilityView(link_id, data.seq, data.at_ms, pools, data.pending, data.pending_uc,
                             sum(p.reset_cents for p in config.pools if p.name in resets), shortfall)

    async def math(self, link_id: str) -> MathView:
        """GetMath (issue 24): the link's config, its version and every pool's balance, as the ledger holds them
        now (one snapshot of it, as liability's)."""
        require_id("link_id", link_id)
        data = await self.store.liability(link_id)
        view = math_view(data, _config(link_id, data.config))
        # exact figures are pure but not free (a break-even is a search over cents): off the event loop
        return replace(view, games=await asyncio.to_thread(game_figures, view.config, view.balances_uc))
