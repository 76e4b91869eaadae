"""The service layer as the gRPC servicers see it: table commands, admin commands and reads, sharing one
write path and one view of the links, and the administrative audit trail."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..clock import Clock, now_ms
from .admin import AdminCommands
from .admin_trail import AdminTrail
from .engine import WritePath
from .links import Links
from .ports import AuditTrail, Durability, Ledger, LiveStore
from .reads import Reads
from .table import TableCommands


@dataclass(frozen=True, slots=True)
class Services:
    table: TableCommands
    admin: AdminCommands
    reads: Reads
    trail: AdminTrail = field(default_factory=AdminTrail)

    @staticmethod
    def build(live: LiveStore, ledger: Ledger, durability: Durability, clock: Clock = now_ms,
              trail: AuditTrail | None = None) -> Services:
        links = Links(live, ledger, durability)
        engine = WritePath(live, ledger, durability, links)
        return Services(TableCommands(engine, links, clock), AdminCommands(engine, links, live, ledger, clock),
                        Reads(links, live, ledger, durability), AdminTrail(trail, links.current_link_of))
