"""The service layer as the gRPC servicers see it: table commands, admin commands and reads, sharing one
write path and one view of the links."""

from __future__ import annotations

from dataclasses import dataclass

from ..clock import Clock, now_ms
from .admin import AdminCommands
from .engine import WritePath
from .links import Links
from .ports import Durability, Ledger, LiveStore
from .reads import Reads
from .table import TableCommands


@dataclass(frozen=True, slots=True)
class Services:
    table: TableCommands
    admin: AdminCommands
    reads: Reads

    @staticmethod
    def build(live: LiveStore, ledger: Ledger, durability: Durability, clock: Clock = now_ms) -> Services:
        links = Links(live, ledger, durability)
        engine = WritePath(links)
        return Services(TableCommands(engine, clock), AdminCommands(engine, clock), Reads(links))
