"""The SQL of the writer shards' epochs and the writers' liveness (migration 019; store/leader.py, store/liveness.py):
renewing a holder, ending a silent holder's sessions, taking a shard's epoch, and what health reads of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

APP_NAME = "jackpotd-writer "  # + the holder: the application_name of every PostgreSQL session of a writer process
HOLDERS_KEPT = "1 day"  # a holder silent this long (a process long gone) is forgotten

_RENEW = ("INSERT INTO writer_holders AS w (holder, renewed_at, redis_ok_at) VALUES ($1, clock_timestamp(), "
          "clock_timestamp() - make_interval(secs => $4)) ON CONFLICT (holder) DO UPDATE SET renewed_at = "
          "clock_timestamp(), redis_ok_at = EXCLUDED.redis_ok_at "
          "WHERE $3 OR w.renewed_at >= clock_timestamp() - make_interval(secs => $2) RETURNING 1")
_STALE = ("SELECT h.holder, a.pid, extract(epoch FROM clock_timestamp() - h.renewed_at)::float8 AS silent, "
          "pg_terminate_backend(a.pid) AS ended FROM writer_holders h JOIN pg_stat_activity a "
          "ON a.application_name = $3 || h.holder AND a.datname = current_database() "
          "WHERE h.renewed_at < clock_timestamp() - make_interval(secs => $1) AND h.holder <> $2")
_FORGET = f"DELETE FROM writer_holders WHERE renewed_at < clock_timestamp() - interval '{HOLDERS_KEPT}'"
_BUMP = ("UPDATE writer_leases SET epoch = epoch + 1, holder = $2, taken_at = clock_timestamp() WHERE shard = $1 "
         "RETURNING epoch")
_BLOCKERS = ("SELECT DISTINCT l.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
             "WHERE l.relation = 'writer_leases'::regclass AND l.granted AND l.pid <> pg_backend_pid()")
_STATES = ("SELECT l.shard, l.epoch, l.holder, extract(epoch FROM clock_timestamp() - h.renewed_at)::float8 "
           "AS silent, extract(epoch FROM clock_timestamp() - h.redis_ok_at)::float8 AS redis_silent "
           "FROM writer_leases l LEFT JOIN writer_holders h USING (holder) ORDER BY l.shard")
_LIVE = ("SELECT holder, extract(epoch FROM clock_timestamp() - renewed_at)::float8 AS silent, "
         "extract(epoch FROM clock_timestamp() - redis_ok_at)::float8 AS redis_silent FROM writer_holders "
         "WHERE renewed_at >= clock_timestamp() - make_interval(secs => $1)")


@dataclass(frozen=True, slots=True)
class Ended:
    """A silent holder's session ended so its advisory locks are freed: who, which backend, silent how long."""

    holder: str
    pid: int
    silent_s: float


@dataclass(frozen=True, slots=True)
class ShardLease:
    """A shard's lease as PostgreSQL holds it: its epoch, who took it last, and how long that holder has been silent
    (None: no liveness row, a holder long gone or none), and how long since it last heard its Redis answer (None:
    not known)."""

    shard: int
    epoch: int
    holder: str | None
    silent_s: float | None
    redis_silent_s: float | None = None


@dataclass(frozen=True, slots=True)
class Peer:
    """Another writer process alive now (renewed within the lease time): how long since its renewal and since it
    last heard its Redis answer (None: not known), both by PostgreSQL's clock."""

    holder: str
    silent_s: float
    redis_silent_s: float | None


@dataclass(frozen=True, slots=True)
class LeaseStates:
    """Every shard's lease, the holders that renewed within the last few seconds (alive, so able to lead), and
    those of them whose Redis answered within as long (so able to make links durable)."""

    shards: dict[int, ShardLease]
    live: frozenset[str]
    reaching: frozenset[str] = frozenset()


async def renew(conn: Any, holder: str, lease_s: float, rejoin: bool, timeout: float,
                redis_silent_s: float | None = None) -> bool:
    """Renew the holder's liveness by PostgreSQL's clock, with how long since it last heard its Redis (None: not
    known). False when PostgreSQL finds it silent past the lease time already (so others may have ended its
    sessions): only `rejoin` (it holds nothing now) renews it then."""
    return await conn.fetchval(_RENEW, holder, float(lease_s), rejoin, redis_silent_s, timeout=timeout) is not None


async def peers(conn: Any, me: str, lease_s: float, timeout: float) -> list[Peer]:
    """The other writer processes alive now (renewed within the lease time), for a leader cut off from Redis."""
    return [Peer(str(r["holder"]), float(r["silent"]), None if r["redis_silent"] is None else float(r["redis_silent"]))
            for r in await conn.fetch(_LIVE, float(lease_s), timeout=timeout) if r["holder"] != me]


async def end_silent(conn: Any, me: str, lease_s: float, timeout: float | None) -> list[Ended]:
    """End every session of each other holder silent past the lease time (its advisory locks go with them), and
    forget holders long gone."""
    rows = await conn.fetch(_STALE, float(lease_s), me, APP_NAME, timeout=timeout)
    await conn.execute(_FORGET, timeout=timeout)
    return [Ended(r["holder"], int(r["pid"]), float(r["silent"])) for r in rows]


async def take_epoch(conn: Any, shard: int, holder: str, timeout: float | None) -> int:
    """Bump the shard's epoch for its new holder (waiting on appends in flight, which hold its row FOR SHARE, up to
    the session's lock_timeout); the epoch this holder's appends must carry from now."""
    return int(await conn.fetchval(_BUMP, shard, holder, timeout=timeout))


async def blockers(conn: Any, timeout: float | None) -> list[tuple[int, str]]:
    """The other sessions holding a lock on writer_leases now: (pid, application_name)."""
    return [(int(r["pid"]), str(r["application_name"] or "")) for r in await conn.fetch(_BLOCKERS, timeout=timeout)]


async def lease_states(pg: Any, live_within_s: float, timeout: float) -> LeaseStates:
    """Every shard's lease and the holders alive (renewed within `live_within_s`), for health."""
    async with pg.acquire(timeout=timeout) as conn:
        shards = await conn.fetch(_STATES, timeout=timeout)
        live = await conn.fetch(_LIVE, float(live_within_s), timeout=timeout)
    return LeaseStates({int(r["shard"]): ShardLease(int(r["shard"]), int(r["epoch"]), r["holder"],
                                                    None if r["silent"] is None else float(r["silent"]),
                                                    None if r["redis_silent"] is None else float(r["redis_silent"]))
                        for r in shards}, frozenset(str(r["holder"]) for r in live),
                       frozenset(str(r["holder"]) for r in live
                                 if r["redis_silent"] is not None and r["redis_silent"] - r["silent"] <= live_within_s))
