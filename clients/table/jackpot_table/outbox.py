"""A local durable outbox (SQLite): every request id is saved before it is sent.

A controller that restarts mid-round asks for the same operation again and gets the same request id,
so the service answers it as a retry and nothing is committed twice.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    request_id  TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    table_id    TEXT NOT NULL,
    round_id    TEXT NOT NULL,
    request     BLOB NOT NULL,
    response    BLOB,
    created_at  REAL NOT NULL,
    UNIQUE (kind, table_id, round_id)
)
"""


@dataclass(frozen=True, slots=True)
class Pending:
    """A request that was saved but whose answer was never recorded."""

    request_id: str
    kind: str
    round_id: str
    request: bytes


class Outbox:
    """One SQLite file per controller; synchronous=FULL so a saved id survives a power cut."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(SCHEMA)

    def request_id(self, kind: str, table_id: str, round_id: str, request: bytes) -> tuple[str, bytes]:
        """The id (and saved request) for this operation: a new one, or the one saved before a restart."""
        row = self.db.execute("SELECT request_id, request FROM outbox WHERE kind = ? AND table_id = ? "
                              "AND round_id = ?", (kind, table_id, round_id)).fetchone()
        if row is not None:
            return str(row[0]), bytes(row[1])
        request_id = str(uuid.uuid4())
        self.db.execute("INSERT INTO outbox (request_id, kind, table_id, round_id, request, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (request_id, kind, table_id, round_id, request, time.time()))
        return request_id, request

    def answered(self, request_id: str, response: bytes) -> None:
        """The request got its answer: kept beside it, so the table's own records show what it was told."""
        self.db.execute("UPDATE outbox SET response = ? WHERE request_id = ?", (response, request_id))

    def pending(self, table_id: str) -> list[Pending]:
        """Requests sent (or about to be) but never answered, oldest first."""
        rows = self.db.execute("SELECT request_id, kind, round_id, request FROM outbox WHERE table_id = ? "
                               "AND response IS NULL ORDER BY created_at", (table_id,)).fetchall()
        return [Pending(str(r[0]), str(r[1]), str(r[2]), bytes(r[3])) for r in rows]

    def close(self) -> None:
        self.db.close()
