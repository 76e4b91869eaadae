"""Wiring: stores (embedded or configured), migrations, recovery, the ledger writer and the gRPC workers.

`serve` runs as a supervisor: it migrates, recovers, runs the one ledger writer, and starts N gRPC
worker processes sharing the listen port. With workers=0 the gRPC server runs in the same process
(tests do this). Workers hold no state: they talk to Redis and PostgreSQL like any replica would.
While serving, the supervisor respawns a dead worker and restarts a dead embedded server (`supervisor.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from prometheus_client import start_http_server

from .api.transport import listener
from .auth.credentials import development_credentials
from .clock import Clock, now_ms
from .grpc_server import JackpotService, run_grpc
from .listen_lock import hold_listen
from .metrics import multiprocess_dir, registry
from .service.reports import ReportQueries
from .service.services import Services
from .settings import Settings
from .signals import stop_on_signals
from .store import checkpoints, ledger, recovery
from .store.durability import DurabilityWatcher
from .store.leader import LeadingWriter, WriterLease
from .store.ledger import PostgresLedger, leases
from .store.ledger.report_port import PostgresReports
from .store.liveness import Liveness, holder_name
from .store.redis.cutoff import RedisCutoff
from .store.redis.pools import RedisPools
from .store.shards import describe, shard_of
from .store.writer import LedgerWriter
from .stores import Stores, open_stores, worker_stores
from .supervisor import Supervisor, wait_serving

log = logging.getLogger("jackpotd")


@contextlib.asynccontextmanager
async def jackpot_service(redis: RedisPools, pg: ledger.Pool, settings: Settings | None = None,
                          clock: Clock = now_ms) -> AsyncIterator[JackpotService]:
    """The service layer with its durability watcher running. `settings` say where the chain's checkpoints are
    (VerifyLedger checks them); `clock` dates entries (tests set it)."""
    watcher = DurabilityWatcher(redis, pg)
    await watcher.start()
    postgres = PostgresLedger(pg)

    async def live(link_id: str) -> tuple[dict[str, int], int]:
        return await redis.balances(link_id), await redis.seq(link_id)

    anchors = (checkpoints.anchors_of(settings.checkpoint_key_file, settings.checkpoints) if settings is not None
               else checkpoints.anchors_of("", ""))
    reports = PostgresReports(pg, live, anchors)
    try:
        services = Services.build(redis, postgres, watcher, clock, trail=ledger.PostgresAuditTrail(pg))
        yield JackpotService(services, ReportQueries(reports, clock), redis, pg)
    finally:
        await postgres.close()
        await watcher.stop()


def _leading_writer(settings: Settings, stores: Stores, clock: Clock, holder: str) -> LeadingWriter:
    """The ledger writer of this process, run on the shards whose leases it holds; `holder` names it in PostgreSQL
    (every session of its pool carries it already)."""
    if not settings.checkpoint_key_file:
        log.warning("no checkpoint_key_file: no anchors of the ledger are kept outside the database, so a truncation "
                    "or a rewrite of it while jackpotd is stopped cannot be told at start (OPERATIONS.md, Anchors)")
    liveness = Liveness(stores.dsn, settings.writer_lease_seconds, holder)
    lease = WriterLease(stores.dsn, liveness)
    cutoff = RedisCutoff(stores.redis.ping, stores.pg, holder, settings.writer_lease_seconds)
    liveness.redis_silent = cutoff.redis_silent

    def writer(shards: frozenset[int], member: int) -> LedgerWriter:
        return LedgerWriter(stores.redis, stores.pg, linger=settings.group_commit_ms / 1000,
                            retention_seconds=settings.retention_seconds,
                            checkpoints=checkpoints.checkpointer_of(settings.checkpoint_key_file, settings.checkpoints),
                            clock=clock, shards=shards, member=member, leads=lease.held,
                            epochs={s: lease.epochs[s] for s in shards}, lease_check=liveness.check)

    async def recover(shards: frozenset[int]) -> None:
        anchors = checkpoints.checkpointer_of(settings.checkpoint_key_file, settings.checkpoints)
        for a in await recovery.recover(stores.redis, stores.pg, owns=lambda link: shard_of(link) in shards,
                                        anchors=anchors, fresh_redis=stores.embedded is not None,
                                        epochs={s: lease.epochs[s] for s in shards}, check=liveness.check):
            log.info("recovery: link %s %s", a.link_id, a.said)

    return LeadingWriter(lease, writer, recover, cutoff)


def with_default_anchor_key(settings: Settings, *, create: bool) -> Settings:
    """Embedded stores without a checkpoint key use (and, when `create`, make) STATE_DIR/secrets/checkpoint.key, so
    `make run` keeps anchors of the ledger outside the database by default."""
    if not settings.embedded or settings.checkpoint_key_file:
        return settings
    key = checkpoints.default_key_file(settings.state_dir, create=create)
    return settings if key is None else settings.model_copy(update={"checkpoint_key_file": str(key)})


ALL, GRPC, WRITER = "all", "grpc", "writer"  # the roles a process runs (`jackpotd serve`, `grpc`, `writer`)


async def serve(settings: Settings, *, demo: bool = False, ready: asyncio.Event | None = None,
                stop: asyncio.Event | None = None, clock: Clock = now_ms, role: str = ALL) -> None:
    """Run until SIGINT or SIGTERM; on exit stop in order and stop embedded servers. `all`: lead the ledger writer
    if its lease is free (recovering first) and serve gRPC; `grpc`: serve only, stateless; `writer`: the lease and
    the writer only, standing by while another holds it. A process that listens first takes its port's host-wide
    lock (ListenBusy when another jackpotd holds it), before any store starts or any worker binds."""
    held = None if role == WRITER else hold_listen(settings.listen, state_dir=settings.state_dir,
                                                     command="serve" if role == ALL else role)
    try:
        await _serve(settings, demo=demo, ready=ready, stop=stop, clock=clock, role=role)
    finally:
        if held is not None:
            held.release()


async def _serve(settings: Settings, *, demo: bool, ready: asyncio.Event | None, stop: asyncio.Event | None,
                 clock: Clock, role: str) -> None:
    """`serve` once this process holds its listen port."""
    settings = with_default_anchor_key(settings, create=True)
    if settings.embedded and not settings.auth_key_file and not settings.tls_cert_file:  # `make run` (README)
        credentials = await asyncio.to_thread(development_credentials, settings.state_dir)
        settings = settings.model_copy(update={"auth_key_file": str(credentials / "auth.key")})  # workers too
        log.info("development credentials in %s: tokens/*.token (bearer), ca.pem, server.*, roles/, tables/ "
                 "(TLS); the service checks tokens with auth.key", credentials)
    # a refused listen address or an unusable TLS file fails here, before anything (a writer listens on nothing)
    listen = listener(settings) if role != WRITER else None
    if stop is None:
        stop = asyncio.Event()
        stop_on_signals(stop)
    holder = holder_name()  # this process's name as a writer: on every PostgreSQL session of it (store/liveness.py)
    async with open_stores(settings, application_name="" if role == GRPC else leases.APP_NAME + holder) as stores:
        if clock is not now_ms:  # a test's clock is its own fiction: steps and dates are not checked against Redis's
            stores.redis.clock_tolerance_ms = 0
        leader = None if role == GRPC else _leading_writer(settings, stores, clock, holder)
        if leader is not None:
            await leader.start()
        _start_metrics(settings.metrics_port, settings.metrics_host)
        if role == WRITER:
            log.info("jackpotd writer: %s", f"writing shards {describe(leader.shards)}" if leader and leader.leading
                     else "standing by for a shard's lease")
            if ready is not None:
                ready.set()
            try:
                await stop.wait()
            finally:
                if leader is not None:
                    await leader.stop()
            return
        assert listen is not None
        supervisor = Supervisor(settings, stores, stop, worker_main)
        try:
            async with jackpot_service(stores.redis, stores.pg, settings, clock) as service:
                grpc_task = None
                if settings.workers == 0:
                    serving = asyncio.Event()
                    grpc_task = asyncio.create_task(run_grpc(service, listen, stop, ready=serving))
                    await _first(serving.wait(), grpc_task)
                else:
                    if multiprocess_dir() is None and settings.metrics_port > 0:
                        log.warning("PROMETHEUS_MULTIPROC_DIR is not set: the workers' metrics will not reach "
                                    "/metrics (start with `jackpotd serve`)")
                    supervisor.start_workers()
                    await asyncio.to_thread(wait_serving, supervisor.listen, supervisor.alive_workers())
                watching = asyncio.create_task(supervisor.run(), name="supervisor")
                log.info("jackpotd serving on %s (%s, %s)%s",
                         supervisor.listen if settings.workers else settings.listen,
                         "TLS, client certificates required" if listen.credentials else "plain text, loopback",
                         f"{settings.workers} worker process{'es' if settings.workers > 1 else ''}" if settings.workers
                         else "in-process",
                         " with embedded PostgreSQL and Valkey" if stores.embedded else "")
                if demo:
                    from .demo import load_demo

                    await load_demo(service.services)
                if ready is not None:
                    ready.set()
                await stop.wait()
                await watching
                log.info("stopping: draining calls, then the ledger writer, then the stores")
                await supervisor.stop_workers()
                if grpc_task is not None:
                    await grpc_task
        finally:
            if leader is not None:
                await leader.stop()
    if supervisor.failure:
        raise RuntimeError(supervisor.failure)


async def _first(waiting: Coroutine[Any, Any, object], task: asyncio.Task[None]) -> None:
    """Wait for `waiting` unless `task` fails first (a bad listen address, say)."""
    waiter = asyncio.ensure_future(waiting)
    done, _ = await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()


def worker_main(settings_dict: dict[str, object], number: int) -> None:
    """Entry point of a gRPC worker process: stateless, dies with its supervisor."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a killed supervisor takes its workers along
    settings = Settings.model_validate(settings_dict)
    logging.basicConfig(level=settings.log_level, format=f"%(asctime)s %(levelname)-7s worker-{number} "
                                                         "%(name)s: %(message)s")

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        async with worker_stores(settings) as (redis, pg), jackpot_service(redis, pg, settings) as service:
            await run_grpc(service, listener(settings), stop, reuse_port=True)

    tune_gc()
    run_loop(main())


GC_THRESHOLDS = (50_000, 10, 10)  # Python's are (700, 10, 10): see tune_gc


def tune_gc() -> None:
    """Collect garbage in larger steps, with what the process imported frozen out of every collection: a
    100,000-seat round allocates about a million objects, which at Python's thresholds set off full collections
    costing a third of its CPU (DECISIONS.md, Performance). Called once a process has started, before its loop."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_loop(main: Coroutine[Any, Any, Any]) -> Any:
    """Run on uvloop when it is installed (JACKPOTD_EVENT_LOOP=asyncio forces the standard loop)."""
    if os.environ.get("JACKPOTD_EVENT_LOOP", "uvloop") == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(main)
    return asyncio.run(main)


def _start_metrics(port: int, host: str = "127.0.0.1") -> None:
    """/metrics (on loopback unless `host` says otherwise); with worker processes it adds up every process's."""
    if port <= 0:
        return
    try:
        start_http_server(port, addr=host, registry=registry())
        log.info("metrics on http://%s:%d/metrics", host, port)
    except OSError as e:
        log.warning("metrics endpoint not started on port %d: %s", port, e)
