"""A writer process's liveness (issue 23): its holder name, renewed in PostgreSQL every second by PostgreSQL's own
clock, and its own judgement, by its monotonic clock, of whether its lease still stands. A process paused (SIGSTOP,
a VM freeze) or cut off from PostgreSQL stops renewing: a standby ends its sessions after the lease time and takes
its shards (store/leader.py), and the process itself, on waking, knows at once that it must not write."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable

import asyncpg

from ..clock import wait_set
from .ledger import leases
from .throttle import Throttled

log = logging.getLogger("jackpotd.leader")
# A session PostgreSQL hears nothing from (a leader's host crashed, a partition) keeps its lock until the server
# notices the peer is gone: with these, within about 11 s rather than the operating system's two hours.
KEEPALIVES = {"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"}


class LeaseExpired(Exception):
    """This process's lease time passed since its last renewal: it must stop writing (ledger and Redis) at once."""


def holder_name() -> str:
    """A name no other writer process ever had: host, pid and a random tail (a pid is reused after a restart)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"


def still_fresh(renewed_at: float | None, now: float, lease_s: float) -> bool:
    """Whether a lease renewed at `renewed_at` (monotonic, when the renewal was sent; None: never) still stands at
    `now`. Measured from the sending: PostgreSQL dated the renewal later, so a standby's judgement comes after ours."""
    return renewed_at is not None and now - renewed_at <= lease_s


class Liveness:
    """Renews this process's holder row every EVERY seconds on a connection of its own, and says whether the lease
    still stands. Once the lease time passes without a renewal it stays expired (others may have taken its shards)
    until `rejoin`, called once the process has stopped writing and let its leases go."""

    EVERY = 1.0

    def __init__(self, dsn: str, lease_s: float = 5.0, holder: str | None = None) -> None:
        self.dsn = dsn
        self.lease_s = lease_s
        self.holder = holder or holder_name()
        self.application_name = leases.APP_NAME + self.holder
        self.renewed_at: float | None = None  # monotonic, when the last renewal that succeeded was sent
        self.expired = False
        self._rejoin = True  # holding nothing: the next renewal may revive a row PostgreSQL finds silent
        self._conn: asyncpg.Connection | None = None
        self._complain = Throttled(log, every=10.0).warn
        # seconds since this process last heard its Redis, told PostgreSQL with each renewal (store/redis/cutoff.py)
        self.redis_silent: Callable[[], float | None] = lambda: None

    def fresh(self) -> bool:
        """Whether this process may write now: renewed within the lease time, by its monotonic clock (which keeps
        counting while the process is stopped, so a woken process knows at once)."""
        if self.expired:
            return False
        if still_fresh(self.renewed_at, time.monotonic(), self.lease_s):
            return True
        if self.renewed_at is not None:
            self.expired = True
        return False

    def silent_s(self) -> float:
        """Seconds since the last renewal that succeeded was sent (inf: none since joining)."""
        return float("inf") if self.renewed_at is None else time.monotonic() - self.renewed_at

    def why_not(self) -> str:
        """Why this process may not take a lease now (it is not fresh)."""
        if self.renewed_at is None:
            return "this process has not renewed its lease since it joined"
        return f"this process has not renewed its lease for {self.silent_s():.1f} s"

    def check(self) -> None:
        """Raise LeaseExpired unless this process may write now (before every append, rebuild or announcement)."""
        if not self.fresh():
            raise LeaseExpired(f"this writer has not renewed its lease for {self.silent_s():.1f} s (the lease time "
                               f"is {self.lease_s:g} s): another writer may hold its shards")

    def rejoin(self) -> None:
        """Start afresh: the process has stopped writing and let every lease go, so it may renew again."""
        self.expired, self.renewed_at, self._rejoin = False, None, True

    async def renew(self) -> bool:
        """Renew once; False when PostgreSQL cannot be reached in time or finds this holder silent already."""
        sent = time.monotonic()
        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncpg.connect(self.dsn, timeout=min(5.0, self.lease_s), server_settings={
                    **KEEPALIVES, "application_name": self.application_name})
            ok = await leases.renew(self._conn, self.holder, self.lease_s, self._rejoin, timeout=self.lease_s / 2,
                                    redis_silent_s=self.redis_silent())
        except Exception as e:
            silent = "" if self.renewed_at is None else f" after {self.silent_s():.1f} s of silence"
            self._complain(f"writer lease: renewing {self.holder} failed{silent} ({type(e).__name__}: {e}); "
                           "trying again")
            await self.close()
            return False
        if not ok:
            if not self.expired:
                log.error("writer lease: PostgreSQL finds %s silent for longer than the lease time (%g s): its shards "
                          "may be another writer's now", self.holder, self.lease_s)
            self.expired = True
        elif not self.expired:
            self.renewed_at, self._rejoin = sent, False
        return ok

    async def run(self, stop: asyncio.Event) -> None:
        """Renew every EVERY seconds until `stop` is set."""
        while not stop.is_set():
            started = time.monotonic()
            await self.renew()
            await wait_set(stop, max(0.0, self.EVERY - (time.monotonic() - started)))

    async def close(self) -> None:
        """Close the renewal connection (quietly: it may be broken)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2)
            if not conn.is_closed():
                conn.terminate()
