"""Clock jumps (issue 23): a `jackpotd serve` (an API replica and the ledger writer) whose clock jumps ±1 h under
libfaketime, beside an API replica with a true clock. No entry is dated outside the writer's bounds (the time
between the call and its answer, by the true clock) nor into the wrong gaming day: the jumped replica's steps are
refused by Redis (UNAVAILABLE naming its clock, health NOT_SERVING), and the jumped writer bounds dates by Redis's
clock. Two links have gaming days that begin 30 min before and 30 min after now: an hour's misdating shows."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, report_pb2
from jackpotd.app import GRPC
from jackpotd.embedded import free_port

from ..conftest import Isolated, unique
from .conftest import open_private
from .harness import AUDIT, Client, eventually, rid
from .process import ServerProcess

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"  # Debian's libfaketime

pytestmark = pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="libfaketime is not installed (make test "
                                                                        "installs it)")


def _start(now: datetime, minutes: int) -> str:
    """A gaming day start (HH:MM, UTC) `minutes` from now."""
    return (now + timedelta(minutes=minutes)).strftime("%H:%M")


def _gaming_day(at: datetime, start: str) -> date:
    """The gaming day of an instant, for a link in UTC whose days begin at `start`."""
    hours, minutes = map(int, start.split(":"))
    return (at - timedelta(hours=hours, minutes=minutes)).date()


async def _create(c: Client, link: str, table: str, start: str) -> None:
    await c.admin.CreateLink(admin_pb2.CreateLinkRequest(
        request_id=rid(), link_id=link, mode="COMBINED", wager_amount_cents=100, time_zone="UTC",
        gaming_day_start=start, pools=[admin_pb2.PoolConfig(pool="JACKPOT"), admin_pb2.PoolConfig(pool="RESERVE")],
        rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="JACKPOT", ppm=275_000),
                                     admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000),
        audit=AUDIT))
    await c.register(table, link)


def _health(server: ServerProcess) -> int:
    with server.health_channel() as channel:
        status: int = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2).status
    return status


async def _not_serving(server: ServerProcess) -> bool:
    return not await _serving(server)


async def _serving(server: ServerProcess) -> bool:
    """Whether the process says SERVING for "" (asked off the event loop: the true replica serves on it)."""
    return await asyncio.to_thread(_health, server) == health_pb2.HealthCheckResponse.SERVING


async def test_a_clock_jump_never_dates_an_entry_outside_the_writers_bounds_nor_its_gaming_day(
        isolated: Isolated, tmp_path: Path) -> None:
    jump = tmp_path / "faketime"
    jump.write_text("+0\n")
    now = datetime.now(UTC)
    starts = {unique("late"): _start(now, 30), unique("early"): _start(now, -30)}  # link -> its day's start
    tables = {link: unique("t") for link in starts}
    spans: dict[tuple[str, str], tuple[int, int]] = {}  # (link, request id) -> true ms before the call, after

    def true_ms() -> int:
        return time.time_ns() // 1_000_000

    async with open_private(isolated, tmp_path, role=GRPC) as p:  # the true replica: no writer of its own
        jumped = ServerProcess(free_port(), tmp_path / "jumped.log", redis_url=p.valkey.url, dsn=isolated.dsn,
                               workers=0, env={"LD_PRELOAD": LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE": str(jump),
                                               "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1"})
        await asyncio.to_thread(jumped.start)
        other = await Client.connect(jumped.target, isolated.dsn, p.valkey.url)
        try:
            c = p.client
            for link, start in starts.items():
                await _create(c, link, tables[link], start)

            async def commit(via: Client, link: str, n: int, request_id: str | None = None) -> None:
                request_id = request_id or rid()
                before = true_ms()
                await via.commit(tables[link], f"r{n}", [1], request_id=request_id)
                spans[link, request_id] = (before, true_ms())

            n = 0
            for offset in ("+0", "-1h", "+1h", "+0"):
                jump.write_text(f"{offset}\n")
                if offset != "+0":
                    await eventually(lambda: _not_serving(jumped), 15, f"the replica {offset} saying NOT_SERVING")
                    way = "behind" if offset.startswith("-") else "ahead of"
                    for link in starts:  # its steps are refused, nothing changed; the true replica takes the retry
                        request_id = rid()
                        with pytest.raises(grpc.aio.AioRpcError) as refused:
                            await other.commit(tables[link], f"r{n}", [1], request_id=request_id)
                        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value.details()
                        assert "clock is 3600" in (refused.value.details() or "") and way in (
                            refused.value.details() or ""), refused.value.details()
                        await commit(c, link, n, request_id)
                        n += 1
                else:
                    await eventually(lambda: _serving(jumped), 15, "the replica SERVING")
                    for link in starts:
                        await commit(other, link, n)
                        n += 1
                for link in starts:  # the writer (in the jumped process) dates these
                    await asyncio.sleep(1.1)  # entries a second apart: one dated by the one before shows
                    await commit(c, link, n)
                    n += 1
            for link, start in starts.items():
                rows = [r for r in await c.pg.fetch("SELECT request_id, created_at FROM entries WHERE link_id = $1 "
                                                    "ORDER BY seq", link)
                        if (link, r["request_id"].rpartition(":")[2]) in spans]
                assert len(rows) == len([k for k in spans if k[0] == link])  # each call once
                for r in rows:
                    before, after = spans[link, r["request_id"].rpartition(":")[2]]
                    at = int(r["created_at"].timestamp() * 1000)
                    assert before - 1_000 <= at <= after + 1_000, (r["request_id"], before, at, after)
                    assert _gaming_day(r["created_at"], start) == _gaming_day(
                        datetime.fromtimestamp(after / 1000, UTC), start)
                v = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
                assert v.ok, v.problems
        finally:
            await other.close()
            jump.write_text("+0\n")
            jumped.interrupt()
