"""Deadline-aware answers (issue 23): a caller whose store is paused hears UNAVAILABLE, naming what did not answer,
before its deadline, never DEADLINE_EXCEEDED; its retry with the same request id is applied once."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.app import GRPC
from jackpotd.embedded import free_port
from jackpotd.store.resp import RespPipeline

from ..conftest import Isolated, Servers, unique
from .conftest import open_private
from .harness import Client, eventually, rid, while_unavailable
from .process import ServerProcess

DEADLINE = 3.0  # the table's deadline: a controller's, as the issue states it


async def _unavailable_in_time(c: Client, table: str, round_id: str, request_id: str) -> str:
    """A commit with a 3 s deadline: it must end UNAVAILABLE before the deadline; its message."""
    started = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await c.table.CommitWagers(table_pb2.CommitWagersRequest(
            request_id=request_id, table_id=table, round_id=round_id,
            wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)]), timeout=DEADLINE)
    took = time.monotonic() - started
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, (refused.value.code(), refused.value.details())
    assert took < DEADLINE, took
    details: str = refused.value.details() or ""
    assert "the caller's deadline" in details and "retry with the same request_id" in details, details
    return details


async def _once(c: Client, link: str, request_id: str) -> int:
    """How many ledger entries of the link carry this request (its key ends with the id)."""
    count: int = await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1 AND request_id LIKE $2",
                                     link, f"%{request_id}")
    return count


async def test_a_paused_valkey_is_unavailable_before_the_deadline_and_the_retry_applies_once(
        isolated: Isolated, tmp_path: Path) -> None:
    async with open_private(isolated, tmp_path) as p:
        c = p.client
        link, table = unique("dl"), unique("tbl")
        await c.create_link(link)
        await c.register(table, link)
        await c.commit(table, "r0", [1])  # warm: the link's config is cached, its connections open
        assert p.valkey.proc is not None
        request_id = rid()
        p.valkey.proc.send_signal(signal.SIGSTOP)
        try:
            details = await _unavailable_in_time(c, table, "r1", request_id)
            assert "Redis" in details, details
        finally:
            p.valkey.proc.send_signal(signal.SIGCONT)
        done = await while_unavailable(lambda: c.commit(table, "r1", [1], request_id=request_id), 30,
                                       "the retry after SIGCONT")
        again = await c.commit(table, "r1", [1], request_id=request_id)
        assert again.sequence == done.sequence
        await eventually(lambda: _once(c, link, request_id), 10, "the retry in the ledger")
        assert await _once(c, link, request_id) == 1
        assert await c.pg.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1", link) == done.sequence


async def test_a_stopped_writer_is_unavailable_before_the_deadline_and_the_retry_applies_once(
        isolated: Isolated, tmp_path: Path) -> None:
    """The API alone in-process; the ledger writer a `jackpotd writer` process, SIGSTOPped: the commit is applied
    in Redis but never recorded, so the durability wait is what runs out."""
    async with open_private(isolated, tmp_path, role=GRPC) as p:
        writer = ServerProcess(free_port(), tmp_path / "writer.log", redis_url=p.valkey.url, dsn=isolated.dsn,
                               command="writer", metrics_port=free_port())
        await asyncio.to_thread(writer.start)
        assert writer.proc is not None
        try:
            c = p.client
            link, table = unique("dl"), unique("tbl")
            await c.create_link(link)
            await c.register(table, link)
            await c.commit(table, "r0", [1])
            request_id = rid()
            writer.proc.send_signal(signal.SIGSTOP)
            try:
                details = await _unavailable_in_time(c, table, "r1", request_id)
                assert "the ledger" in details and "not yet recorded" in details, details
            finally:
                writer.proc.send_signal(signal.SIGCONT)
            done = await while_unavailable(lambda: c.commit(table, "r1", [1], request_id=request_id), 30,
                                           "the retry after SIGCONT")
            assert await _once(c, link, request_id) == 1
            assert await c.pg.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1", link) == done.sequence
        finally:
            writer.interrupt()


async def test_a_redis_reply_cut_short_is_never_read_half_way(servers: Servers) -> None:
    """A Redis reply cut short by its timeout mid-read: the connection is dropped, never read half-way by the next
    batch (which gets its own reply); a real Valkey, a reply too big to arrive within a millisecond."""
    url = servers.redis_url(15)
    pipe = RespPipeline(url)
    try:
        big = "x" * (32 << 20)
        await pipe.execute([["SET", "deadline-big", big]], timeout=30)
        with pytest.raises(Exception, match="did not answer within"):
            await pipe.execute([["GET", "deadline-big"]], timeout=0.001)
        assert await pipe.execute([["SET", "deadline-small", "1"], ["GET", "deadline-small"]]) == ["OK", "1"]
        assert await pipe.execute([["DEL", "deadline-big", "deadline-small"]]) == [2]
    finally:
        await pipe.close()
