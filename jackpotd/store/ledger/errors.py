"""What a PostgreSQL error means for the ledger writer: refused for what a statement carries (retrying it
unchanged cannot succeed, so its link is fenced), or anything else (retried as it is)."""

from __future__ import annotations

import asyncpg

# SQLSTATE classes of a statement refused for what it carries, not for the state of the server: data
# exceptions, integrity violations, trigger refusals. Anything else (connections, serialization,
# resources, shutdown) is retried as it is.
_REFUSED_CLASSES = frozenset({"22", "23", "27", "44", "P0"})


# Unique keys a second writer collides on when it appends the same entries: its head moved, nothing is wrong.
_RACED = frozenset({"entries_pkey", "postings_pkey"})


def refuses(error: BaseException) -> bool:
    """Whether the ledger refused a statement for what it carries, so retrying it unchanged cannot succeed.
    Values the driver cannot even encode count too; a key another writer got to first does not."""
    if isinstance(error, asyncpg.InterfaceError) and isinstance(error, ValueError):
        return True  # asyncpg's own DataError: a value it cannot encode, before PostgreSQL sees it
    state = getattr(error, "sqlstate", None)
    if getattr(error, "constraint_name", None) in _RACED:
        return False
    return isinstance(error, asyncpg.PostgresError) and isinstance(state, str) and state[:2] in _REFUSED_CLASSES


