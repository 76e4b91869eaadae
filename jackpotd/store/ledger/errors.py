"""What a PostgreSQL error means for the ledger writer: refused for what a statement carries (retrying it
unchanged cannot succeed, so its link is fenced), refused for the writer's stale lease (LeaseFenced: the writer
stops), or anything else (retried as it is)."""

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



LEASE_FENCED = "JPL01"  # ledger_lease_held (migration 019): not a refused class, so no link is ever fenced for it


class LeaseFenced(Exception):
    """PostgreSQL refused an append because the writer's lease epoch of a shard is not the shard's any more: another
    writer took the shard over (this one was paused or cut off). The writer stops at once; no link is at fault."""

    def __init__(self, shard: int, epoch: int, held: int) -> None:
        super().__init__(f"PostgreSQL refused the append: shard {shard}'s lease epoch is {epoch}, this writer holds "
                         f"{held}: another writer took it over")
        self.shard, self.epoch, self.held = shard, epoch, held


def lease_fenced(error: BaseException) -> LeaseFenced | None:
    """The typed refusal when `error` is PostgreSQL's JPL01 (its DETAIL "shard=3 epoch=8 held=7"), else None."""
    if getattr(error, "sqlstate", None) != LEASE_FENCED:
        return None
    try:
        fields = dict(part.split("=", 1) for part in str(getattr(error, "detail", "") or "").split())
        return LeaseFenced(int(fields["shard"]), int(fields["epoch"]), int(fields["held"]))
    except (KeyError, ValueError):
        return LeaseFenced(-1, -1, -1)
