"""Supervision: a dead gRPC worker or embedded Valkey comes back, health says when calls cannot succeed,
and /metrics adds up what every worker process counted. Real processes and servers, never fakes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import TypeVar

import grpc
import psutil
import redis.asyncio as aioredis
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from jackpotd.api.gen.jackpot.v1 import display_pb2, display_pb2_grpc, report_pb2
from jackpotd.api.transport import Listener, listener
from jackpotd.app import jackpot_service, serve
from jackpotd.embedded import EmbeddedValkey, free_port
from jackpotd.grpc_server import SERVICES, run_grpc
from jackpotd.settings import Settings
from jackpotd.store import keys, ledger
from jackpotd.store import writer as writer_module
from jackpotd.store.heartbeats import WriterHealth
from jackpotd.store.redis.pools import RedisPools
from jackpotd.store.shards import ALL, shard_of

from ..conftest import AUTH_KEY_FILE, Isolated, unique
from .harness import Client, authorized_channel, eventually, next_matching
from .process import ServerProcess

T = TypeVar("T")
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def _children(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children() if p.status() != psutil.STATUS_ZOMBIE]
    except psutil.NoSuchProcess:
        return []


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _workers(pid: int) -> set[int]:
    """The gRPC worker processes of a `jackpotd serve` (spawned by multiprocessing)."""
    out = set()
    for p in _children(pid):
        with contextlib.suppress(psutil.Error):
            if "spawn_main" in " ".join(p.cmdline()):
                out.add(p.pid)
    return out


def _listens(pid: int, port: int) -> bool:
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
               for c in psutil.Process(pid).net_connections(kind="tcp"))


def _valkeys(pid: int) -> set[int]:
    out = set()
    for p in _children(pid):
        with contextlib.suppress(psutil.Error):
            if "valkey" in p.name():
                out.add(p.pid)
    return out


def _sample(text: str, name: str, **labels: str) -> float | None:
    """A sample's value in /metrics text, None when it is absent."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


async def _status(stub: health_pb2_grpc.HealthStub, service: str = "") -> int:
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
    return int(reply.status)


FRESH = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own, not one shared with other channels


async def _get_pools(target: str, link: str) -> bool:
    """One GetPools on a new connection (the kernel picks the worker), waiting for a listener if needed."""
    async with authorized_channel(target, options=FRESH) as channel:
        reply = await display_pb2_grpc.DisplayServiceStub(channel).GetPools(
            display_pb2.GetPoolsRequest(link_id=link), timeout=5, wait_for_ready=True)
    return reply.link_id == link


async def test_killed_worker_is_respawned_and_calls_keep_succeeding(isolated: Isolated, tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = ServerProcess(free_port(), tmp_path / "serve.log", redis_url=isolated.redis_url, dsn=isolated.dsn,
                           state_dir=str(state), workers=2, metrics_port=free_port())
    await asyncio.to_thread(server.start)
    assert server.proc is not None
    pid = server.proc.pid
    client = await Client.connect(server.target, isolated.dsn, isolated.redis_url)
    try:
        link = unique("respawn")
        await client.create_link(link)
        workers = await eventually(lambda: _async(_workers(pid) if len(_workers(pid)) == 2 else None), 20,
                                   "two workers")
        for _ in range(10):
            assert await _get_pools(server.target, link)
        ok_before = await eventually(lambda: _async(_sample(server.metrics(), "jackpotd_requests_total",
                                                             method="GetPools", code="OK")), 10, "counted")
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        # Calls on connections to the dying worker fail (UNAVAILABLE: clients retry with the same
        # request id); once it is gone every new connection goes to a live worker.
        await eventually(lambda: _async(not _running(victim)), 5, "the killed worker gone")
        for _ in range(10):  # the other worker serves meanwhile
            assert await _get_pools(server.target, link)
        respawned = await eventually(
            lambda: _async(w if len(w := _workers(pid)) == 2 and victim not in w else None), 15, "a new worker")
        (new,) = respawned - workers
        await eventually(lambda: _async(_listens(new, server.port)), 30, "the new worker listening")
        for _ in range(20):  # new connections, spread over both workers by the kernel
            assert await _get_pools(server.target, link)
        # the new worker answered some of them: its own counter file is in the supervisor's metrics dir
        await eventually(lambda: _async((state / "metrics" / str(pid) / f"counter_{new}.db").exists()), 5,
                         "calls counted by the new worker")
        async with grpc.aio.insecure_channel(server.target, options=FRESH) as channel:
            assert await _status(health_pb2_grpc.HealthStub(channel)) == SERVING
        text = server.metrics()
        assert _sample(text, "jackpotd_process_restarts_total", process="worker") == 1
        after = _sample(text, "jackpotd_requests_total", method="GetPools", code="OK")
        assert after is not None and after >= ok_before  # the dead worker's counts stay in the sums
        log = server.log.read_text()
        assert f"(pid {victim}) was killed by SIGKILL" in log and "respawned as pid" in log
    finally:
        await client.close()
        assert await asyncio.to_thread(server.interrupt) == 0
    assert not list((state / "metrics").iterdir())  # the metrics files went with the supervisor


async def test_requests_counted_in_workers_reach_metrics(isolated: Isolated, tmp_path: Path) -> None:
    """Calls counted in the workers reach /metrics, streams when they end; the series an alert watches are there
    at 0 from the start (restarts at once, a link's fence and rebuilds as soon as its writer follows it)."""
    server = ServerProcess(free_port(), tmp_path / "serve.log", redis_url=isolated.redis_url, dsn=isolated.dsn,
                           state_dir=str(tmp_path / "state"), workers=2, metrics_port=free_port())
    await asyncio.to_thread(server.start)
    client = await Client.connect(server.target, isolated.dsn, isolated.redis_url)
    try:
        assert _sample(await asyncio.to_thread(server.metrics), "jackpotd_process_restarts_total",
                       process="worker") == 0
        link = unique("metrics")
        await client.create_link(link)
        for _ in range(20):
            assert await _get_pools(server.target, link)
        watch = client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=link))
        await next_matching(watch, lambda _: True, 5, "the snapshot")
        watch.cancel()
        [e async for e in client.report.ExportLedger(report_pb2.ExportLedgerRequest(link_id=link))]

        async def zeros() -> str | None:
            text = await asyncio.to_thread(server.metrics)
            at_zero = [_sample(text, "jackpotd_link_fenced", link=link)] + [
                _sample(text, "jackpotd_link_rebuilds_total", link=link, reason=why) for why in
                ("lost", "behind", "forked")]
            return text if at_zero == [0, 0, 0, 0] else None

        await eventually(zeros, 10, "the link's fence and rebuild series at 0")

        async def streams_counted() -> str | None:
            text = await asyncio.to_thread(server.metrics)
            watched = _sample(text, "jackpotd_requests_total", method="WatchPools", code="CANCELLED")
            exported = _sample(text, "jackpotd_requests_total", method="ExportLedger", code="OK")
            return text if watched == 1 and exported == 1 else None

        text = await eventually(streams_counted, 10, "WatchPools and ExportLedger counted when they ended")
        assert _sample(text, "jackpotd_request_seconds_count", method="ExportLedger") == 1

        async def counted() -> str | None:
            text = await asyncio.to_thread(server.metrics)
            n = _sample(text, "jackpotd_requests_total", method="GetPools", code="OK")
            return text if n is not None and n >= 20 else None

        text = await eventually(counted, 10, "GetPools counted on /metrics")
        assert (_sample(text, "jackpotd_request_seconds_count", method="GetPools") or 0) >= 20
        assert (_sample(text, "jackpotd_requests_total", method="CreateLink", code="OK") or 0) >= 1
    finally:
        await client.close()
        assert await asyncio.to_thread(server.interrupt) == 0


async def test_killed_embedded_valkey_is_restarted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    endpoints = state / "endpoints.json"
    server = ServerProcess(free_port(), tmp_path / "serve.log", state_dir=str(state), demo=True,
                           metrics_port=free_port())
    await asyncio.to_thread(server.start, 120)
    assert server.proc is not None
    pid = server.proc.pid
    running = json.loads(endpoints.read_text())
    client = await Client.connect(server.target, running["postgres_dsn"], running["redis_url"])
    try:
        async def seeded() -> bool:  # the demo is loaded just after the service starts serving
            reply = await client.display.GetPools(display_pb2.GetPoolsRequest(link_id="demo"), timeout=5)
            return {p.pool: p.amount_cents for p in reply.pools} == {"MAJOR": 1_000_000, "MINOR": 100_000}

        await eventually(seeded, 30, "the demo seeded")
        await client.fund("demo", "MAJOR", 12_345)  # answered once the ledger holds it
        before = {p.pool: p.amount_cents for p in (await client.display.GetPools(
            display_pb2.GetPoolsRequest(link_id="demo"))).pools}
        assert before == {"MAJOR": 1_012_345, "MINOR": 100_000}
        (old,) = _valkeys(pid)
        os.kill(old, signal.SIGKILL)
        await eventually(lambda: _async(_valkeys(pid) - {old}), 20, "a new valkey-server")
        r = aioredis.Redis.from_url(running["redis_url"])  # the same URL: restarted on the same socket and port
        try:
            assert await eventually(r.ping, 10, "PING")
        finally:
            await r.aclose()
        # Rebuilt: the ledger writer puts the link back from PostgreSQL; the clients of the supervisor and
        # of the worker reconnect by themselves.
        async with authorized_channel(server.target, options=FRESH) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            await eventually(lambda: _equals(_status(stub), SERVING), 20, "SERVING after the restart")
            await eventually(lambda: _equals(_status(stub, "link:demo"), SERVING), 20, "link:demo SERVING")
            display = display_pb2_grpc.DisplayServiceStub(channel)

            async def pools() -> dict[str, int]:
                reply = await display.GetPools(display_pb2.GetPoolsRequest(link_id="demo"), timeout=5)
                return {p.pool: p.amount_cents for p in reply.pools}

            assert await eventually(lambda: _equals(pools(), before), 20, "the pools rebuilt")
        text = await asyncio.to_thread(server.metrics)
        assert _sample(text, "jackpotd_process_restarts_total", process="valkey") == 1
        assert _sample(text, "jackpotd_process_restarts_total", process="postgres") == 0  # there at 0 all along
        log = server.log.read_text()
        assert f"embedded valkey (pid {old}" in log and "was killed by SIGKILL" in log
        assert "embedded valkey restarted as pid" in log
    finally:
        await client.close()
        assert await asyncio.to_thread(server.interrupt) == 0


async def test_health_follows_redis(isolated: Isolated, tmp_path: Path) -> None:
    valkey = EmbeddedValkey(tmp_path / "valkey").start()
    listen = f"127.0.0.1:{free_port()}"
    settings = Settings(redis_url=valkey.url, postgres_dsn=isolated.dsn, listen=listen, metrics_port=0, workers=0,
                        auth_key_file=AUTH_KEY_FILE)
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(settings, ready=ready, stop=stop))
    channel = grpc.aio.insecure_channel(listen)
    try:
        await asyncio.wait_for(ready.wait(), 60)
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", *SERVICES):
            await eventually(lambda n=name: _equals(_status(stub, n), SERVING), 10, f"{name!r} SERVING")
        valkey.stop()
        for name in ("", *SERVICES):
            await eventually(lambda n=name: _equals(_status(stub, n), NOT_SERVING), 5,
                             f"{name!r} NOT_SERVING without Redis")
        valkey.start()
        await eventually(lambda: _equals(_status(stub), SERVING), 15, "SERVING once Redis is back")
    finally:
        await channel.close()
        stop.set()
        await asyncio.wait_for(task, 60)
        valkey.stop()


async def test_link_health_follows_the_writers_problems(isolated: Isolated) -> None:
    """run_grpc with no ledger writer at all: the heartbeat is the test's to set."""
    await ledger.migrate(isolated.dsn)
    redis, pg = RedisPools(isolated.redis_url), await ledger.connect_pool(isolated.dsn, size=2)
    raw = aioredis.Redis.from_url(isolated.redis_url, decode_responses=True)
    listen = f"127.0.0.1:{free_port()}"
    problems: dict[str, str] | None = None  # None: no writer reports
    written = sorted(ALL)  # the shards the writers say they write
    stalled: str | None = None  # why one writer cannot append

    async def beat() -> None:  # what the ledger writers do every 0.5 s: two of them, half of the shards each
        while True:
            if problems is not None:
                for member, half in enumerate((written[::2], written[1::2])):
                    await redis.set_health(member, WriterHealth(int(time.time() * 1000), tuple(half),
                                                                problems if member else {},
                                                                stalled if member == slow else None))
            await asyncio.sleep(0.2)

    a, c = unique("ok"), unique("unknown")
    b = next(name for name in (unique("stuck") for _ in range(1000)) if shard_of(name) != shard_of(a))
    # b on a shard of its own: when a's shard loses its writer, only a may stop serving
    slow = shard_of(b) % 2  # the writer that will stall: b's (member n writes the shards of parity n)
    await raw.sadd(keys.LINKS, a, b)
    beating = asyncio.create_task(beat())
    try:
        async with _health_of_run_grpc(redis, pg, listen) as stub:

            async def statuses(*names: str) -> tuple[int, ...]:
                return tuple([await _status(stub, n) for n in names])

            names = ("", SERVICES[0], f"link:{a}", f"link:{b}")
            # no heartbeat: nothing becomes durable, so nothing serves
            assert await statuses(*names) == (NOT_SERVING,) * 4
            problems = {}
            await eventually(lambda: _equals(statuses(*names), (SERVING,) * 4), 5, "all SERVING")
            problems = {b: "ledger disagrees with the pools", c: "not in Redis"}
            await eventually(lambda: _equals(statuses(*names, f"link:{c}"),
                                             (SERVING, SERVING, SERVING, NOT_SERVING, NOT_SERVING)), 5,
                             "only the named links NOT_SERVING")
            problems = {}
            written = sorted(ALL - {shard_of(a)})  # the writer of a's shard died, and no other has taken it yet
            await eventually(lambda: _equals(statuses(*names), (SERVING, SERVING, NOT_SERVING, SERVING)), 5,
                             "only the links of the unwritten shard NOT_SERVING")
            written = sorted(ALL)
            await eventually(lambda: _equals(statuses(*names), (SERVING,) * 4), 5, "all SERVING again")
            stalled = "appending has failed for 4 s: connection refused"  # one writer cannot append
            await eventually(lambda: _equals(statuses("", *names[2:]), (
                SERVING, *(NOT_SERVING if shard_of(link) % 2 == slow else SERVING for link in (a, b)))), 5,
                "the stalled writer's links NOT_SERVING, the others and the service SERVING")
            stalled = None
            await eventually(lambda: _equals(statuses(*names), (SERVING,) * 4), 5, "all SERVING again")
            problems = None
            await raw.delete(keys.health(0), keys.health(1))  # the writers stopped; a writer of the version
            await raw.set(keys.HEALTH_BEFORE_SHARDS, json.dumps({"at_ms": int(time.time() * 1000), "problems": {}}),
                          px=3000)  # before shards writes every link (a rolling upgrade)
            await eventually(lambda: _equals(statuses(*names), (SERVING,) * 4), 2, "an older writer's heartbeat")
            await raw.delete(keys.HEALTH_BEFORE_SHARDS)
            await eventually(lambda: _equals(statuses(*names), (NOT_SERVING,) * 4), 5, "all NOT_SERVING")
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        await raw.aclose()
        await redis.close()
        await pg.close()


async def test_stopped_ledger_writer_turns_health_not_serving(isolated: Isolated) -> None:
    redis, pg = RedisPools(isolated.redis_url), await ledger.connect_pool(isolated.dsn, size=4)
    await ledger.migrate(isolated.dsn)
    listen = f"127.0.0.1:{free_port()}"
    writer = writer_module.LedgerWriter(redis, pg)
    await writer.start()
    try:
        async with _health_of_run_grpc(redis, pg, listen) as stub:
            await eventually(lambda: _equals(_status(stub), SERVING), 5, "SERVING with a writer")
            await writer.stop()
            await eventually(lambda: _equals(_status(stub), NOT_SERVING), 8, "NOT_SERVING once it stopped")
    finally:
        await writer.stop()
        await redis.close()
        await pg.close()


@contextlib.asynccontextmanager
async def _health_of_run_grpc(redis: RedisPools, pg: ledger.Pool, listen: str
                              ) -> AsyncIterator[health_pb2_grpc.HealthStub]:
    """run_grpc on these stores (no supervisor, no writer of its own) and a health stub of it; stopped after."""
    ready, stop = asyncio.Event(), asyncio.Event()
    async with jackpot_service(redis, pg) as service:
        task = asyncio.create_task(run_grpc(service, _listener(listen), stop, ready=ready))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            async with grpc.aio.insecure_channel(listen) as channel:
                yield health_pb2_grpc.HealthStub(channel)
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)


def _listener(listen: str) -> Listener:
    return listener(Settings(listen=listen, auth_key_file=AUTH_KEY_FILE))


async def _async(value: T) -> T:
    return value


async def _equals(got: Awaitable[object], want: object) -> bool:
    return await got == want
