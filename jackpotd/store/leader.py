"""Who writes the ledger (issue 13): the links are divided into writer shards (store/shards.py), and each shard is
written by the one process holding its lease, a PostgreSQL session advisory lock on a connection of the process's
own. Any number of `jackpotd writer` (or `serve`) processes may run: each takes a fair share of the shards (all of
them when it is alone, half of them when there are two, none beyond the number of shards), and the others' shards
are taken over within POLL seconds of a writer's death: kill -9 closes its connection, and PostgreSQL frees its
locks with it. A writer paused or cut off keeps its session, so each process also renews its liveness
(store/liveness.py): a standby ends the sessions of one silent past the lease time, takes its shards, and bumps
each shard's epoch, which every append carries and PostgreSQL checks (issue 23). The ledger's head guard (a batch
whose head moved is refused) stays the last line of defence should two ever write one link at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from ..backoff import Backoff, exponential
from ..clock import wait_set
from ..metrics import WRITER_LEADER, WRITER_SHARDS
from . import keys
from .ledger import leases
from .liveness import KEEPALIVES, Liveness
from .redis.cutoff import RedisCutoff
from .shards import SHARDS, describe
from .throttle import Throttled
from .writer import LedgerWriter

log = logging.getLogger("jackpotd.leader")
T = TypeVar("T")

# Advisory lock keys: 4242 migrations, 4243 VerifyLedger. LEASE_KEY alone (the bigint form) was the single writer
# lease of earlier versions: every writer now holds it shared, so an older writer and a newer one never both write.
LEASE_KEY = 4244
SHARD_KEY = 4244  # (SHARD_KEY, shard): a shard's lease, in the two-key form
MEMBER_KEY = 4245  # (MEMBER_KEY, n): writer process n is alive; their number decides each one's share
LOCK_TIMEOUT_MS = "1000"  # a takeover's bump of an epoch waits this long for appends in flight, then tries again
MINE = ("SELECT objid::int FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 "
        "AND pid = pg_backend_pid() AND granted")
MEMBERS = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 "
           "AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")


async def writers_running(pg: Any) -> int:
    """How many ledger writer processes hold their membership lock on this database now."""
    return int(await pg.fetchval(MEMBERS, MEMBER_KEY))


class NotNow(Exception):
    """Why this process cannot take part in the leases now: it will ask again."""


class WriterLease:
    """This process's writer leases: its membership among the writers and the shards it holds, all on one
    connection (closing it frees them all)."""

    POLL = 0.5  # how often the shares are asked again
    CHECK_TIMEOUT = 2.0

    def __init__(self, dsn: str, liveness: Liveness | None = None) -> None:
        self.dsn = dsn
        self.liveness = liveness  # None: nobody silent is ended, nothing asked of this one's own (tests of the locks)
        self.holder = liveness.holder if liveness is not None else f"unnamed:{id(self):x}"
        self.conn: asyncpg.Connection | None = None
        self.member: int | None = None
        self.shards: frozenset[int] = frozenset()
        self.epochs: dict[int, int] = {}  # each shard held -> the epoch this process took it at
        self._complain = Throttled(log).warn  # for what is tried several times a second
        self._unanswered: asyncio.Future[Any] | None = None  # a question on the lease connection left to finish

    async def _join(self) -> asyncpg.Connection:
        """The lease connection, joined as a member: on a primary (a standby's lock guards nothing it writes),
        with no writer of an earlier version leading. Raises when it cannot be now."""
        if self.conn is not None and not self.conn.is_closed():
            return self.conn
        if self.shards:  # the connection closed under shards still being written: held() steps down first
            raise ConnectionError("the lease connection closed while its shards are written")
        await self.release()
        named = {"application_name": self.liveness.application_name} if self.liveness is not None else {}
        conn = await asyncpg.connect(self.dsn, timeout=5, server_settings={
            **KEEPALIVES, **named, "lock_timeout": LOCK_TIMEOUT_MS})
        try:
            if await conn.fetchval("SELECT pg_is_in_recovery()", timeout=self.CHECK_TIMEOUT):
                raise NotNow("the database is a standby")
            if not await conn.fetchval("SELECT pg_try_advisory_lock_shared($1::bigint)", LEASE_KEY,
                                       timeout=self.CHECK_TIMEOUT):
                raise NotNow("a writer of an earlier version holds the single writer lease")
            for n in range(keys.WRITER_MEMBERS):
                if await conn.fetchval("SELECT pg_try_advisory_lock($1::int, $2::int)", MEMBER_KEY, n,
                                       timeout=self.CHECK_TIMEOUT):
                    self.conn, self.member, self.shards = conn, n, frozenset()
                    return conn
            raise NotNow(f"{keys.WRITER_MEMBERS} writers are running already")
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise

    async def claim(self) -> frozenset[int] | None:
        """Take free shards up to this process's fair share, and say which it should hold from now: its share,
        less any it must give back (the caller stops writing those, then calls `give_back`). None when the
        database cannot be asked now: any failure is "not now", a standby must never stop asking."""
        try:
            conn = await self._join()
            if self.liveness is not None:
                if not self.liveness.fresh():
                    raise NotNow(self.liveness.why_not())
                ended = await self._asked(leases.end_silent(conn, self.holder, self.liveness.lease_s, None))
                for holder in sorted({e.holder for e in ended}):
                    its = [e for e in ended if e.holder == holder]
                    log.warning("writer %s has not renewed its lease for %.1f s (paused, or cut off from PostgreSQL?): "
                                "ended its sessions (pids %s), so its shards can be taken over", holder,
                                its[0].silent_s, ", ".join(str(e.pid) for e in its))
            # a lock taken by a query whose answer was lost (a timeout) is held but not known: nobody writes its
            # shard, so let it go (its writer is not this process's, which writes only self.shards)
            mine = {int(r[0]) for r in await self._asked(conn.fetch(MINE, SHARD_KEY))}
            await self._unlock(conn, frozenset(mine) - self.shards)
            members = int(await self._asked(conn.fetchval(MEMBERS, MEMBER_KEY)))
            share = math.ceil(SHARDS / max(1, members))
            held = self.shards
            if len(held) > share:  # another writer joined: keep the lowest, give the rest back
                return frozenset(sorted(held)[:share])
            assert self.member is not None
            start = self.member * share % SHARDS  # members start apart, so they rarely ask for the same shard
            taken = set(held)
            for shard in sorted(range(SHARDS), key=lambda s: (s - start) % SHARDS):
                if len(taken) >= share:
                    break
                if shard not in taken and await self._asked(conn.fetchval(
                        "SELECT pg_try_advisory_lock($1::int, $2::int)", SHARD_KEY, shard)) \
                        and await self._take_epoch(conn, shard):
                    taken.add(shard)
            self.shards = frozenset(taken)
            return self.shards
        except NotNow as e:  # a standby, an older writer, too many writers: say why this one waits
            self._complain(f"writer leases: standing by, {e}; asking again every {self.POLL:g} s")
            await self.release()
            return None
        except Exception as e:
            self._complain(f"writer leases: PostgreSQL cannot be asked ({type(e).__name__}: {e}); trying again")
            if not self.shards:  # holding some, the connection is the writer's to give up (held(), then stop
                await self.release()  # writing first): closing it here would free shards still being written
            return None

    async def _take_epoch(self, conn: asyncpg.Connection, shard: int) -> bool:
        """Bump the shard's epoch, just taken, before anything of it is recovered or written: from now PostgreSQL
        refuses the appends of any earlier holder. An append in flight holds the row: after LOCK_TIMEOUT_MS the
        shard is let go (and asked again at the next poll), naming the sessions in the way."""
        try:
            self.epochs[shard] = await self._asked(leases.take_epoch(conn, shard, self.holder, None))
            return True
        except asyncpg.LockNotAvailableError:
            held = await self._asked(leases.blockers(conn, None))
            log.warning("writer leases: shard %d's epoch is locked by %s (an append in flight); letting it go and "
                        "asking again", shard, ", ".join(f"pid {p} ({name or 'no name'})" for p, name in held)
                        or "a session that has just finished")
            await self._unlock(conn, frozenset({shard}))
            return False

    async def give_back(self, shards: frozenset[int]) -> None:
        """Release these shards' leases (their writer has stopped); on failure, drop the whole connection."""
        if self.conn is None:
            return
        try:
            await self._unlock(self.conn, shards & self.shards)
            self.shards -= shards
            for shard in shards:
                self.epochs.pop(shard, None)
        except Exception:
            await self.release()

    async def _unlock(self, conn: asyncpg.Connection, shards: frozenset[int]) -> None:
        """Release the shards' locks, however many times this session took each (advisory locks count)."""
        for shard in sorted(shards):
            while await self._asked(conn.fetchval("SELECT pg_advisory_unlock($1::int, $2::int)", SHARD_KEY, shard)):
                pass

    async def _asked(self, query: Awaitable[T]) -> T:
        """A question on the lease connection, awaited CHECK_TIMEOUT seconds at most but never cancelled (it is left
        to finish): asyncpg closes a connection whose timed-out query is still being cancelled, and its locks with it.
        While one is unanswered, the next is not asked (TimeoutError)."""
        task = asyncio.ensure_future(query)
        if self._unanswered is not None and not self._unanswered.done():
            task.cancel()  # not yet sent: nothing of it reaches PostgreSQL
            raise TimeoutError("an earlier question on the lease connection is unanswered")
        done, _ = await asyncio.wait([task], timeout=self.CHECK_TIMEOUT)
        if not done:
            self._unanswered = task
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # its outcome is nobody's now
            raise TimeoutError(f"no answer within {self.CHECK_TIMEOUT:g} s")
        return task.result()

    async def why_lost(self) -> str | None:
        """Why the shards this session believes it holds are no longer its own (None: they are, or cannot be
        confirmed while its liveness stands: a check that timed out is not a lease lost, and PostgreSQL's epoch
        check refuses whatever is appended after a takeover)."""
        if self.conn is None or self.conn.is_closed():
            return "its lease connection is closed (PostgreSQL restarted, failed over, or ended the session?)"
        try:
            mine = {int(r[0]) for r in await self._asked(self.conn.fetch(MINE, SHARD_KEY))}
        except Exception as e:
            liveness = self.liveness
            if liveness is None or self.conn.is_closed() or not liveness.fresh():
                return f"the lease check failed ({type(e).__name__}: {e})"
            self._complain(f"writer leases: the lease check did not answer within {self.CHECK_TIMEOUT:g} s "
                           f"({type(e).__name__}); the lease stands for {liveness.lease_s - liveness.silent_s():.1f} s "
                           "more without a renewal")
            return None
        gone = self.shards - mine
        return f"the lock of shards {describe(gone)} is gone (PostgreSQL restarted or failed over?)" if gone else None

    async def held(self) -> bool:
        """Whether this session still holds every shard it believes it holds, or cannot tell while its liveness
        stands (`why_lost`)."""
        return await self.why_lost() is None

    async def release(self) -> None:
        """Give every lease up (closing the connection frees the locks)."""
        conn, self.conn, self.member, self.shards = self.conn, None, None, frozenset()
        self.epochs, self._unanswered = {}, None  # (a question left unanswered fails with its connection)
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)
            if not conn.is_closed():  # a partition: do not wait for a goodbye PostgreSQL cannot hear
                conn.terminate()


MakeWriter = Callable[[frozenset[int], int], LedgerWriter]  # (shards, member) -> the writer of those shards
Recover = Callable[[frozenset[int]], Awaitable[Any]]  # brings the shards' links in line with the ledger


class LeadingWriter:
    """Runs the ledger writer of the shards this process holds: recovery of a shard's links first (a writer that
    takes over drains what Redis holds beyond the ledger), then the writer, until a lease is lost, the shares
    change or the process stops. A change of shards restarts the writer on the new set."""

    CHECK_EVERY = 1.0
    BACKOFF_MAX = 8.0  # seconds between attempts to lead after failures in a row
    STOP_WAIT = 10.0  # seconds stop() waits for the loop before cancelling it

    def __init__(self, lease: WriterLease, make_writer: MakeWriter, recover: Recover,
                 cutoff: RedisCutoff | None = None) -> None:
        self.lease = lease
        self.cutoff = cutoff  # gives the shards up when its Redis is silent and another's is not
        self.make_writer = make_writer
        self.recover = recover
        self.writer: LedgerWriter | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._renewing: asyncio.Task[None] | None = None
        self._renewed_till_stopped = asyncio.Event()  # renewals go on until the writer has stopped

    @property
    def leading(self) -> bool:
        return self.writer is not None and self.writer.alive

    @property
    def shards(self) -> frozenset[int]:
        return self.writer.shards if self.leading and self.writer is not None else frozenset()

    async def start(self) -> None:
        """Take this process's share at once (so an all-in-one `serve` recovers before it serves); then watch the
        leases and shares in the background. Never raises: a failure to lead now is retried there."""
        liveness = self.lease.liveness
        if self.cutoff is not None:
            self.cutoff.start()
        if liveness is not None:  # renewed once first, so a lone `serve` leads before it serves
            await liveness.renew()
            self._renewing = asyncio.create_task(liveness.run(self._renewed_till_stopped), name="writer-liveness")
            self._renewing.add_done_callback(self._ended)
        try:
            await self._rebalance()
        except Exception as e:
            log.error("leading the ledger writer failed: %s; trying again", e)
            await self._step_down()
        self._task = asyncio.create_task(self._run(), name="leading-writer")
        self._task.add_done_callback(self._ended)

    @staticmethod
    def _ended(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:  # a bug: say so loudly, never silently
            log.critical("the writer lease's loop (%s) died: %r; this process will not lead again until restarted",
                         task.get_name(), task.exception())

    async def _rebalance(self) -> None:
        """Hold this process's share: give back what others should write, take what nobody writes, and restart
        the writer when its shards change."""
        if self.writer is None and self.cutoff is not None and not await self.cutoff.may_claim():
            return  # aside: it gave its shards up, cut off from its Redis
        wanted = await self.lease.claim()
        if wanted is None or (self.writer is not None and wanted == self.writer.shards and self.writer.alive):
            return
        written = self.writer.shards if self.writer is not None and self.writer.alive else frozenset()
        await self._stop_writer()  # before any lease goes: never two writers on one shard
        await self.lease.give_back(self.lease.shards - wanted)
        if not wanted or self.lease.member is None or not wanted <= self.lease.shards:  # none, or lost them all
            return
        log.info("this process holds the writer lease of shards %s: recovering the links of %s, then writing "
                 "the ledger", describe(wanted), describe(wanted - written))
        if wanted - written:  # the shards it wrote a moment ago are in step already
            await self.recover(wanted - written)
        self.writer = self.make_writer(wanted, self.lease.member)
        await self.writer.start()
        WRITER_LEADER.set(1)
        for shard in wanted:
            WRITER_SHARDS.labels(str(shard)).set(1)

    async def _stop_writer(self, graceful: bool = True) -> None:
        writer, self.writer = self.writer, None
        WRITER_LEADER.set(0)
        for shard in range(SHARDS):
            WRITER_SHARDS.labels(str(shard)).set(0)
        if writer is not None:
            try:
                await writer.stop(graceful)
            except Exception as e:
                log.error("stopping the ledger writer failed: %s", e)

    async def _step_down(self, graceful: bool = True) -> None:
        """Stop writing, then give every lease up, whatever stopping the writer raises. Not `graceful` when the
        leases are lost already: another may be writing, stop at once."""
        try:
            await self._stop_writer(graceful)
        finally:
            await self.lease.release()

    async def _run(self) -> None:
        """Every CHECK_EVERY seconds: stop a writer whose lease is lost or that died, and lead the shards held."""
        backoff = Backoff(exponential(2 * WriterLease.POLL, self.BACKOFF_MAX))  # 1, 2, 4, 8 s after failures
        while not self._stop.is_set():
            try:
                await wait_set(self._stop, self.CHECK_EVERY if self.writer is not None else WriterLease.POLL)
                if self._stop.is_set():
                    return
                liveness = self.lease.liveness
                # paused, or cut off: others may write its shards now
                if liveness is not None and not liveness.fresh() and liveness.expired:
                    if self.writer is not None or self.lease.conn is not None:
                        log.error("this process has not renewed its writer lease for %.1f s (paused, or cut off from "
                                  "PostgreSQL?): stopping at once; PostgreSQL refuses its appends from now on",
                                  liveness.silent_s())
                        await self._step_down(graceful=False)
                    liveness.rejoin()
                    await liveness.renew()  # at once: a standby again, and able to take its share
                elif self.writer is not None and (gone := await self.lease.why_lost()) is not None:
                    log.error("a writer lease is lost: %s; stopping the writer at once", gone)
                    await self._step_down(graceful=False)
                elif self.writer is not None and self.cutoff is not None and await self.cutoff.leading() is not None:
                    await self._step_down(graceful=False)  # cut off from its Redis: another writer's answers
                elif self.writer is not None and not self.writer.alive:
                    lost = self.writer.lost is not None  # said already, in one line, by the writer
                    log.error("the ledger writer stopped: giving its leases up%s", " at once" if lost else "")
                    await self._step_down(graceful=not lost)
                await self._rebalance()
                backoff.reset()
            except Exception as e:  # recovery or the writer's start failed: give the leases to another, back off
                log.error("leading the ledger writer failed: %s; standing by", e)
                await self._step_down()
                await wait_set(self._stop, backoff.failed())

    async def stop(self) -> None:
        """Stop writing and give the leases up (waiting STOP_WAIT seconds at most for the loop)."""
        self._stop.set()
        task, self._task = self._task, None
        try:
            if task is not None:
                done, _ = await asyncio.wait([task], timeout=self.STOP_WAIT)
                if not done:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
        finally:
            await self._step_down()
            self._renewed_till_stopped.set()
            renewing, self._renewing = self._renewing, None
            if renewing is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(renewing, 5)
            if self.lease.liveness is not None:
                await self.lease.liveness.close()
            if self.cutoff is not None:
                await self.cutoff.close()
