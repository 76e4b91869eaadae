"""The gRPC server of a process: the four services plus health and reflection on one listener, behind the
interceptor, with the guard's revocation list kept current until it stops."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .api.gen.jackpot.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    display_pb2,
    display_pb2_grpc,
    report_pb2,
    report_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from .api.interceptor import CallInterceptor
from .api.reports import ReportServicer
from .api.servicers import AdminServicer, DisplayServicer, TableServicer
from .api.transport import Listener
from .auth.guard import Guard
from .clock import wait_set
from .health import HealthReporter
from .service.reports import ReportQueries
from .service.services import Services
from .store import ledger
from .store.ledger.revocations import revoked
from .store.redis.pools import RedisPools
from .store.throttle import Throttled

log = logging.getLogger("jackpotd")
SERVICES = ("jackpot.v1.TableService", "jackpot.v1.DisplayService", "jackpot.v1.AdminService",
            "jackpot.v1.ReportService")


@dataclass(frozen=True, slots=True)
class JackpotService:
    """The service layer wired to its stores: what the servicers call, and the stores health checks."""

    services: Services
    reports: ReportQueries
    redis: RedisPools
    pg: ledger.Pool


async def run_grpc(service: JackpotService, listen: Listener, stop: asyncio.Event, *, reuse_port: bool = False,
                   ready: asyncio.Event | None = None) -> None:
    """Serve the four services plus health and reflection until `stop` is set."""
    server = grpc.aio.server(interceptors=[CallInterceptor(listen.guard, record=service.services.trail.record)],
                             options=[("grpc.so_reuseport", int(reuse_port)), ("grpc.max_concurrent_streams", 1000)])
    table_pb2_grpc.add_TableServiceServicer_to_server(TableServicer(service.services), server)
    display_pb2_grpc.add_DisplayServiceServicer_to_server(DisplayServicer(service.services), server)
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(service.services), server)
    report_pb2_grpc.add_ReportServiceServicer_to_server(ReportServicer(service.reports), server)
    health_servicer = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
             display_pb2.DESCRIPTOR.services_by_name["DisplayService"].full_name,
             admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
             report_pb2.DESCRIPTOR.services_by_name["ReportService"].full_name,
             health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)
    reporter = HealthReporter(health_servicer, service.redis, service.pg, ("", *SERVICES))
    await reporter.not_serving()  # should the first check fail
    await reporter.update()  # the first caller gets a real answer
    await load_revocations(service.pg, listen.guard)  # before the first call is taken
    revocations = asyncio.create_task(follow_revocations(service.pg, listen.guard, stop), name="revocations")
    if listen.credentials is None:
        server.add_insecure_port(listen.address)  # loopback only: transport.listener refuses anything else
    else:
        server.add_secure_port(listen.address, listen.credentials)
    await server.start()
    health_task = asyncio.create_task(reporter.run(stop), name="health")
    if ready is not None:
        ready.set()
    await stop.wait()
    await health_task
    await revocations
    await reporter.shutdown()
    await server.stop(grace=5)


REVOCATIONS_EVERY = 1.0  # seconds: a revoked credential is refused, and its streams ended, within about two


async def load_revocations(pg: ledger.Pool, guard: Guard) -> None:
    """The revocation list into the guard (an error is logged: it is read again every REVOCATIONS_EVERY s)."""
    try:
        guard.revoke(await revoked(pg))
    except Exception as e:
        log.error("the revocation list could not be read (%s); it is read again every %g s", e, REVOCATIONS_EVERY)


async def follow_revocations(pg: ledger.Pool, guard: Guard, stop: asyncio.Event) -> None:
    """Keep the guard's revocation list current (`jackpotd revoke`) and end the streams of credentials revoked or
    expired, every REVOCATIONS_EVERY seconds until `stop`. The list only grows: a failed read keeps the last."""
    complain = Throttled(log).warn
    while True:  # load_revocations has read it just before
        await wait_set(stop, REVOCATIONS_EVERY)
        if stop.is_set():
            return
        try:
            guard.revoke(await revoked(pg))
        except Exception as e:  # the database is away: what is known stays revoked, expiry is still enforced
            complain(f"reading the revocation list failed: {e}")
        ended = guard.sweep()
        if ended:
            log.warning("ended %d stream(s) whose credential was revoked or expired", ended)
