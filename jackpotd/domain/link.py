"""A link's whole configuration as data (RULES.md §1, §3, §9), with its plain-dict form for storage."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import hands as h
from .errors import InvalidInput, NotFound
from .ids import require_id
from .money import require_non_negative_cents, require_positive_cents
from .paytable import Paytable, PaytableEntry, default_paytable
from .pools import PoolSpec, require_pool_set
from .rates import RateSet, rate_set_of

MAX_SEATS = 100_000  # online "tables" may be large (issue 22: a 100,000-seat round)
_GAMING_DAY_START = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
_TIME_ZONE = re.compile(r"[A-Za-z][A-Za-z0-9_+/-]{0,63}")  # IANA names: letters, digits, / _ + -


@dataclass(frozen=True, slots=True)
class TableConfig:
    """A table on the link: its game, seats 1..N, and whether jackpot wagers are suspended (NSW 14.13)."""

    table_id: str
    game: str
    seats: int
    suspended: bool = False

    def __post_init__(self) -> None:
        require_id("table_id", self.table_id)
        if self.game not in h.GAMES:
            raise InvalidInput("game", self.game, f"unknown game; known games: {', '.join(h.GAMES)}")
        if isinstance(self.seats, bool) or not 1 <= self.seats <= MAX_SEATS:
            raise InvalidInput("seats", self.seats, f"must be from 1 to {MAX_SEATS}")


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """Everything about a link except its balances."""

    link_id: str
    mode: str
    wager_cents: int
    pools: tuple[PoolSpec, ...]
    rate_sets: tuple[RateSet, ...]
    paytables: Mapping[str, Paytable]
    tables: Mapping[str, TableConfig] = field(default_factory=dict)
    verification_threshold_cents: int = 0
    gaming_day_start: str = "06:00"
    time_zone: str = "UTC"
    dual_approval_threshold_cents: int = 0  # §7, NM 15.1.24.12: at or above it a hit needs two supervisors (0: off)

    def __post_init__(self) -> None:
        require_id("link_id", self.link_id)
        require_pool_set(self.mode, self.pools)
        require_positive_cents("wager_amount_cents", self.wager_cents)
        require_non_negative_cents("verification_threshold_cents", self.verification_threshold_cents)
        require_non_negative_cents("dual_approval_threshold_cents", self.dual_approval_threshold_cents)
        if 0 < self.dual_approval_threshold_cents < self.verification_threshold_cents:
            raise InvalidInput("dual_approval_threshold_cents", self.dual_approval_threshold_cents,
                               "must be at or above verification_threshold_cents "
                               f"({self.verification_threshold_cents}) when both are set")
        names = tuple(p.name for p in self.pools)
        for rs in self.rate_sets:
            rs.require_pools(names)
        for table in self.paytables.values():
            table.require_pools(names)
        if not self.rate_sets:
            raise InvalidInput("rates", None, "a link needs a rate set")
        if _GAMING_DAY_START.fullmatch(self.gaming_day_start) is None:  # §10: a gaming day starts at a local time
            raise InvalidInput("gaming_day_start", self.gaming_day_start, "must be a time of day HH:MM")
        if _TIME_ZONE.fullmatch(self.time_zone) is None or ".." in self.time_zone:
            raise InvalidInput("time_zone", self.time_zone, "must be a time zone name such as Australia/Sydney")

    def paytable(self, game: str) -> Paytable:
        table = self.paytables.get(game)
        if table is None:
            raise InvalidInput("game", game, f"link {self.link_id} has no paytable for this game")
        return table

    def table(self, table_id: str) -> TableConfig:
        t = self.tables.get(table_id)
        if t is None:
            raise NotFound("table_id", table_id, "no such table")
        return t

    def with_table(self, table: TableConfig) -> LinkConfig:
        """The config with a table added or changed; a new game gets its default paytable (§4)."""
        paytables = dict(self.paytables)
        if table.game not in paytables:
            paytables[table.game] = default_paytable(table.game, self.mode)
        return replace(self, tables={**self.tables, table.table_id: table}, paytables=paytables)

    def pool_spec(self, name: str) -> PoolSpec:
        for p in self.pools:
            if p.name == name:
                return p
        raise InvalidInput("pool", name, f"not a pool of link {self.link_id}")

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, stable across versions, for Redis and the ledger."""
        return {
            "link_id": self.link_id, "mode": self.mode, "wager_cents": self.wager_cents,
            "verification_threshold_cents": self.verification_threshold_cents,
            "gaming_day_start": self.gaming_day_start, "time_zone": self.time_zone,
            "pools": [{"name": p.name, "reset_cents": p.reset_cents, "cap_cents": p.cap_cents,
                       "overflow_to": p.overflow_to} for p in self.pools],
            "rate_sets": [{"version": r.version, "pools_ppm": dict(r.pools_ppm), "retained_ppm": r.retained_ppm,
                           "effective_at_ms": r.effective_at_ms, "approval_ref": r.approval_ref}
                          for r in self.rate_sets],
            "paytables": {g: [{"category": e.category, "pool": e.pool, "min_cents": e.min_cents,
                               "percent_ppm": e.percent_ppm, "resets_pool": e.resets_pool}
                              for e in t.entries.values()] for g, t in self.paytables.items()},
            "tables": {t.table_id: {"game": t.game, "seats": t.seats, "suspended": t.suspended}
                       for t in self.tables.values()},
            # only when set: a config without dual control keeps the very bytes earlier versions chained
            **({"dual_approval_threshold_cents": self.dual_approval_threshold_cents}
               if self.dual_approval_threshold_cents else {}),
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> LinkConfig:
        """A config from its plain-dict form, of any version."""
        return LinkConfig(
            link_id=d["link_id"], mode=d["mode"], wager_cents=d["wager_cents"],
            verification_threshold_cents=d["verification_threshold_cents"],
            gaming_day_start=d["gaming_day_start"], time_zone=d["time_zone"],
            pools=tuple(PoolSpec(p["name"], p["reset_cents"], p["cap_cents"], p["overflow_to"]) for p in d["pools"]),
            rate_sets=tuple(rate_set_of(r) for r in d["rate_sets"]),
            paytables={g: Paytable(g, {e["category"]: PaytableEntry(e["category"], e["pool"], e["min_cents"],
                                                                   e["percent_ppm"], e["resets_pool"])
                                       for e in entries}) for g, entries in d["paytables"].items()},
            tables={tid: TableConfig(tid, t["game"], t["seats"], t["suspended"]) for tid, t in d["tables"].items()},
            dual_approval_threshold_cents=d.get("dual_approval_threshold_cents", 0),  # configs before it: off
        )
