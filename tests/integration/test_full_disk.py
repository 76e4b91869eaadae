"""A full disk under PostgreSQL (issue 23): callers hear UNAVAILABLE with a reason, never INTERNAL nor a hang; no
link is fenced for it; health says why; once space is freed the service recovers by itself, nothing acknowledged
lost or doubled. Root: the data directory is on a size-limited tmpfs mounted (and always unmounted) here."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.embedded import EmbeddedPostgres
from jackpotd.health import check
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique
from .conftest import open_private
from .harness import Client, eventually, rid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: root only")

SIZE_MB = 160  # a fresh cluster (about 40 MB, a 16 MB WAL segment among it), the migrations, and some room


@contextlib.contextmanager
def small_disk(where: Path) -> Iterator[Path]:
    """A tmpfs of SIZE_MB at `where`, unmounted when the block ends, whatever happened in it."""
    where.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0755", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(path: Path) -> int:
    """Write `path` until the disk refuses (ENOSPC); the bytes written."""
    chunk = b"\0" * (1 << 20)
    written = 0
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                break
        for size in (64 << 10, 8 << 10, 512):  # the last crumbs too
            with contextlib.suppress(OSError):
                while True:
                    written += f.write(chunk[:size])
    return written


async def _commit(c: Client, table: str, round_id: str, request_id: str) -> int:
    done = await c.table.CommitWagers(table_pb2.CommitWagersRequest(
        request_id=request_id, table_id=table, round_id=round_id,
        wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)]), timeout=3)
    return int(done.sequence)


async def test_a_full_disk_is_unavailable_with_a_reason_then_recovers_with_nothing_lost(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        pg = EmbeddedPostgres(disk / "postgres" / "data", secrets=tmp_path / "secrets").start()
        try:
            stores = Isolated(pg.owner_dsn(), "", pg.app_dsn())
            async with open_private(stores, tmp_path) as p:
                c = p.client
                link, table = unique("disk"), unique("tbl")
                await c.create_link(link)
                await c.register(table, link)
                acknowledged: dict[str, int] = {}
                for n in range(3):
                    request_id = rid()
                    acknowledged[request_id] = await _commit(c, table, f"r{n}", request_id)
                filler = disk / "filler"
                assert fill(filler) > 0
                # calls go on until the ledger can hold no more: each is answered, or UNAVAILABLE with a reason
                refused: dict[str, tuple[str, str]] = {}  # request id -> (round, why)
                started = time.monotonic()
                n = 3
                while not refused:
                    assert time.monotonic() - started < 120, "a full disk never refused a call"
                    request_id, round_id = rid(), f"r{n}"
                    try:
                        acknowledged[request_id] = await _commit(c, table, round_id, request_id)
                    except grpc.aio.AioRpcError as e:
                        assert e.code() == grpc.StatusCode.UNAVAILABLE, (e.code(), e.details())
                        refused[request_id] = (round_id, e.details() or "")
                    n += 1
                assert all("retry with the same request_id" in why for _, why in refused.values()), refused
                # health says why: the writer has been failing to append, for lack of space
                redis = await RedisPools.open(p.valkey.url)
                pool = await asyncpg.create_pool(pg.owner_dsn(), min_size=1, max_size=2)
                try:
                    verdict = await eventually(lambda: _not_serving(redis, pool), 30, "health saying why")
                    assert any("No space left on device" in r or "could not extend" in r or "disk full" in r.lower()
                               for r in verdict.reasons), verdict.reasons
                    os.unlink(filler)
                    # freed: the same request ids are answered, once; the link was never fenced
                    for request_id, (round_id, _) in refused.items():
                        acknowledged[request_id] = await eventually(
                            lambda r=request_id, rd=round_id: _commit(c, table, rd, r), 60,
                            "the retry once space is freed")
                    last = rid()
                    acknowledged[last] = await _commit(c, table, f"r{n}", last)
                    await eventually(lambda: _serving(redis, pool), 30, "health SERVING again")
                finally:
                    await redis.close()
                    await pool.close()
                await _every_one_once(c, link, acknowledged)
        finally:
            if pg.proc is not None:
                pg.proc.send_signal(signal.SIGQUIT)
            pg.stop()


async def _not_serving(redis: RedisPools, pool: asyncpg.Pool) -> object:
    verdict = await check(redis, pool)
    return None if verdict.serving else verdict


async def _serving(redis: RedisPools, pool: asyncpg.Pool) -> bool:
    return (await check(redis, pool)).serving


async def _every_one_once(c: Client, link: str, acknowledged: dict[str, int]) -> None:
    """Every acknowledged request is in the ledger once, at the sequence it was told; no sequence skipped."""
    rows = await c.pg.fetch("SELECT seq, request_id FROM entries WHERE link_id = $1 ORDER BY seq", link)
    seqs = [r["seq"] for r in rows]
    assert seqs == list(range(1, len(seqs) + 1))
    held: dict[str, list[int]] = {}
    for r in rows:
        held.setdefault(r["request_id"].rpartition(":")[2], []).append(r["seq"])
    for request_id, seq in acknowledged.items():
        assert held.get(request_id) == [seq], (request_id, seq, held.get(request_id))
