"""Wiring: stores (embedded or configured), migrations, recovery, the ledger writer and the gRPC server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .api.errors import ErrorInterceptor
from .api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, display_pb2, display_pb2_grpc, table_pb2, table_pb2_grpc
from .api.servicers import AdminServicer, DisplayServicer, TableServicer
from .embedded import EmbeddedPostgres, EmbeddedValkey
from .service.operations import JackpotService
from .settings import Settings
from .store import ledger, recovery
from .store.redis_pools import RedisPools
from .store.writer import LedgerWriter

log = logging.getLogger("jackpotd")
SERVICES = ("jackpot.v1.TableService", "jackpot.v1.DisplayService", "jackpot.v1.AdminService")


@dataclass
class Stores:
    """Connected stores, and the embedded servers behind them if we started them."""

    redis: RedisPools
    pg: asyncpg.Pool
    dsn: str
    embedded: tuple[EmbeddedPostgres, EmbeddedValkey] | None = None


def _endpoints_file(settings: Settings) -> Path:
    return Path(settings.state_dir) / "endpoints.json"


@contextlib.asynccontextmanager
async def open_stores(settings: Settings) -> AsyncIterator[Stores]:
    """Connect to the configured stores, or reuse or start the embedded ones under the state directory."""
    embedded = None
    redis_url, dsn = settings.redis_url, settings.postgres_dsn
    if settings.embedded:
        endpoints = _endpoints_file(settings)
        running = json.loads(endpoints.read_text()) if endpoints.exists() else None
        if running and _alive(running["pid"]):  # another jackpotd on this state dir owns the servers
            redis_url, dsn = running["redis_url"], running["postgres_dsn"]
        else:
            state = Path(settings.state_dir).resolve()
            state.mkdir(parents=True, exist_ok=True)
            pg = await asyncio.to_thread(EmbeddedPostgres(state / "postgres" / "data").start)
            valkey = await asyncio.to_thread(EmbeddedValkey(state / "valkey").start)
            embedded = (pg, valkey)
            redis_url, dsn = valkey.url, pg.dsn
            endpoints.write_text(json.dumps({"pid": os.getpid(), "redis_url": redis_url, "postgres_dsn": dsn}))
    try:
        await ledger.migrate(dsn)
        pool = await ledger.connect_pool(dsn, size=20)
        redis = RedisPools(redis_url)
        try:
            yield Stores(redis, pool, dsn, embedded)
        finally:
            await redis.close()
            await pool.close()
    finally:
        if embedded:
            _endpoints_file(settings).unlink(missing_ok=True)
            embedded[1].stop()
            embedded[0].stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


async def serve(settings: Settings, *, demo: bool = False, ready: asyncio.Event | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM: recover, then serve; on exit stop in order and stop embedded servers."""
    async with open_stores(settings) as stores:
        actions = await recovery.recover(stores.redis, stores.pg)
        for a in actions:
            log.info("recovery: link %s %s", a.link_id, a.action)
        writer = LedgerWriter(stores.redis, stores.pg)
        await writer.start()
        service = JackpotService(stores.redis, stores.pg, writer)
        server = grpc.aio.server(interceptors=[ErrorInterceptor()],
                                 options=[("grpc.so_reuseport", 0), ("grpc.max_concurrent_streams", 1000)])
        table_pb2_grpc.add_TableServiceServicer_to_server(TableServicer(service), server)
        display_pb2_grpc.add_DisplayServiceServicer_to_server(DisplayServicer(service), server)
        admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(service), server)
        health_servicer = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        names = [table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
                 display_pb2.DESCRIPTOR.services_by_name["DisplayService"].full_name,
                 admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
                 health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME]
        reflection.enable_server_reflection(names, server)
        port = server.add_insecure_port(settings.listen)  # plain text only on loopback (ARCHITECTURE, Security)
        await server.start()
        for name in ("", *SERVICES):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        _start_metrics(settings.metrics_port)
        log.info("jackpotd serving on %s (port %d)%s", settings.listen, port,
                 " with embedded PostgreSQL and Valkey" if stores.embedded else "")
        if demo:
            from .demo import load_demo

            await load_demo(service)
        if stop is None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("stopping: draining calls, then the ledger writer, then the stores")
        for name in ("", *SERVICES):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await server.stop(grace=5)
        await writer.stop()


def _start_metrics(port: int) -> None:
    if port <= 0:
        return
    from prometheus_client import start_http_server

    try:
        start_http_server(port, addr="127.0.0.1")
        log.info("metrics on http://127.0.0.1:%d/metrics", port)
    except OSError as e:
        log.warning("metrics endpoint not started on port %d: %s", port, e)
