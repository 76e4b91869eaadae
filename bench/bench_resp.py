"""A/B: jackpotd's own pipelined RESP client (`jackpotd.store.resp.RespPipeline`) against redis-py's asyncio
pipeline with hiredis, on the hot path's shape: batches of N EVALSHA of a small script.

Run pinned: `taskset -c 0 .venv/bin/python bench/bench_resp.py`. It starts an embedded Valkey (moved to the
other cores, so the client has core 0 to itself), then for each transport (the Unix socket the embedded
Valkey is reached through, and loopback TCP as for a real Redis) and each batch size N, runs both clients
in turn, --rounds times (alternating which goes first), --commands commands each time, one batch in flight
at a time as `RedisPools` does. It prints, per client, the median over the rounds of commands per second
and of the client process's CPU per command (time.process_time: encoding, parsing, the event loop).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402
from redis.utils import HIREDIS_AVAILABLE  # noqa: E402

from jackpotd.app import run_loop  # noqa: E402
from jackpotd.embedded import EmbeddedValkey  # noqa: E402
from jackpotd.store.resp import RespPipeline  # noqa: E402

# The reply has apply.lua's shape: a status, a detail, a sequence and a flat list of balances.
SCRIPT = """
redis.call('HINCRBY', KEYS[1], 'MAJOR', ARGV[1])
local seq = redis.call('INCR', KEYS[2])
return {'ok', '', tostring(seq), redis.call('HGETALL', KEYS[1])}
"""
# Arguments of about the size and number of a CommitWagers step (hashes, versions, a JSON entry).
ENTRY = ('{"kind":"commit","request_id":"r-0000000001","table_id":"demo-table-1","round_id":"1",'
         '"wagers":[{"seat":1,"amount_cents":100,"ante_placed":true}],"postings":[["MAJOR","200000"],'
         '["MINOR","75000"],["RESERVE","25000"]],"at":"2026-01-01T00:00:00.000000Z"}')
ARGS: list[str | int] = [1, "a" * 64, "7", "open", "3", "committed", ENTRY, "", ENTRY, '{"ok":true}', 86400,
                         "{link:demo}:events", "c" * 64, 41, "i" * 64, 0]

Run = Callable[[Sequence[Sequence[str | int]]], Awaitable[list[Any]]]


class RedisPy:
    """The same interface over redis-py's asyncio pipeline (hiredis parses the replies when installed)."""

    def __init__(self, url: str) -> None:
        self.client: Any = aioredis.Redis.from_url(url, decode_responses=True)

    async def execute(self, commands: Sequence[Sequence[str | int]]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        result: list[Any] = await pipe.execute(raise_on_error=False)
        return result

    async def close(self) -> None:
        await self.client.aclose()


async def measure(execute: Run, batch: list[list[str | int]], commands: int) -> tuple[float, float]:
    """(commands per second, client CPU µs per command) for `commands` commands sent `len(batch)` at a time."""
    rounds = max(1, commands // len(batch))
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        replies = await execute(batch)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert replies[0][0] == "ok", replies[0]
    sent = rounds * len(batch)
    return sent / wall, cpu / sent * 1e6


async def compare(url: str, sizes: Sequence[int], rounds: int, commands: int) -> list[str]:
    setup: Any = aioredis.Redis.from_url(url, decode_responses=True)
    sha = await setup.script_load(SCRIPT)
    await setup.aclose()
    clients: dict[str, RespPipeline | RedisPy] = {"RespPipeline": RespPipeline(url), "redis-py+hiredis": RedisPy(url)}
    lines = []
    try:
        for n in sizes:
            batch: list[list[str | int]] = [["EVALSHA", sha, 2, f"{{link:b{i}}}:pools", f"{{link:b{i}}}:seq", *ARGS]
                                            for i in range(n)]
            for client in clients.values():  # connect, warm up
                await measure(client.execute, batch, commands // 10)
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
            for r in range(rounds):
                order = list(clients.items()) if r % 2 == 0 else list(reversed(clients.items()))
                for name, client in order:
                    figures[name].append(await measure(client.execute, batch, commands))
            medians = {name: (statistics.median(f[0] for f in fs), statistics.median(f[1] for f in fs))
                       for name, fs in figures.items()}
            (_, (base_rate, base_cpu)) = next(iter(medians.items()))
            for name, (rate, cpu) in medians.items():
                lines.append(f"  N={n:<3} {name:<17} {rate:>9,.0f} commands/s  {cpu:6.1f} µs CPU/command  "
                             f"(rate x{rate / base_rate:.2f}, CPU x{cpu / base_cpu:.2f})")
    finally:
        for client in clients.values():
            await client.close()
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="measurements per client, batch size and transport")
    ap.add_argument("--commands", type=int, default=20_000, help="commands per measurement")
    ap.add_argument("--sizes", default="1,8,64", help="batch sizes (commands per round trip)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="jackpotd-bench-resp-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        valkey = EmbeddedValkey(root / "valkey").start()
    mine = os.sched_getaffinity(0)
    others = set(range(os.cpu_count() or 1)) - mine
    if others and valkey.proc is not None:
        os.sched_setaffinity(valkey.proc.pid, others)
    print(f"client on CPUs {sorted(mine)}, Valkey on {sorted(others or mine)}; hiredis: {HIREDIS_AVAILABLE}; "
          f"{args.rounds} rounds of {args.commands} commands, medians")
    try:
        transports = [("Unix socket", valkey.url), ("TCP", valkey.url_for(0, tcp=True))]
        for label, url in transports:
            if url.startswith("unix:") and valkey.socket is None:
                continue
            print(f"{label} ({url}):")
            for line in run_loop(compare(url, sizes, args.rounds, args.commands)):
                print(line)
    finally:
        valkey.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
