"""PostgreSQL adapter: migrations, the group-committing ledger writer, reads for recovery and audit, and the
service's Ledger port. With the Redis adapter, the only code that imports a driver, and the only code that
holds SQL. Callers use `ledger.X`.

schema: migrate, connect_pool, role_problems, ping · errors: what a refusal is (LeaseFenced: a stale lease) ·
leases: the writer shards' epochs and the writers' liveness · chain: the
hash chain and write_batch · bulk: the append's one statement, or COPY for a large batch · reads: heads, snapshot
and single lookups · lookups: the batched request-id/round lookup · fences · audit · admin_audit: the trail of
administrative acts · service_port: PostgresLedger.
"""

from ...service.ports import AdminAct, AdminActFilter  # the trail's rows and queries, named here for its callers
from .admin_audit import PostgresAuditTrail, admin_acts, record_admin_act
from .audit import audit_link
from .chain import (
    Appended,
    Head,
    HeadCache,
    JournalEntry,
    Refused,
    Written,
    chain_hash,
    heads_of,
    journal_entries,
    write_batch,
)
from .errors import LeaseFenced, lease_fenced, refuses
from .fences import Fence, FenceKind, clear_fence, fence_text, fences, refused_entry, set_fence
from .lookups import HeldConnection, Lookups, used_ids
from .reads import (
    LinkSnapshot,
    entry_identities,
    heads,
    last_hit,
    link_known,
    snapshot,
    stored_reply,
    table_link,
)
from .schema import (
    APP_ROLE,
    MIGRATIONS,
    Connection,
    MigrationRefused,
    Pool,
    connect_pool,
    migrate,
    ping,
    role_problems,
)
from .service_port import DRIVER_ERRORS, PostgresLedger, unavailable

__all__ = [
    "APP_ROLE",
    "DRIVER_ERRORS",
    "MIGRATIONS",
    "AdminAct",
    "AdminActFilter",
    "Appended",
    "Connection",
    "Fence",
    "FenceKind",
    "Head",
    "HeadCache",
    "HeldConnection",
    "JournalEntry",
    "LeaseFenced",
    "LinkSnapshot",
    "Lookups",
    "MigrationRefused",
    "Pool",
    "PostgresAuditTrail",
    "PostgresLedger",
    "Refused",
    "Written",
    "admin_acts",
    "audit_link",
    "chain_hash",
    "clear_fence",
    "connect_pool",
    "entry_identities",
    "fence_text",
    "fences",
    "heads",
    "heads_of",
    "journal_entries",
    "last_hit",
    "lease_fenced",
    "link_known",
    "migrate",
    "ping",
    "record_admin_act",
    "refused_entry",
    "refuses",
    "role_problems",
    "set_fence",
    "snapshot",
    "stored_reply",
    "table_link",
    "unavailable",
    "used_ids",
    "write_batch",
]
