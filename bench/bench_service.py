"""Durable CommitWagers throughput with 64 calls in flight, beside a plain gRPC echo of the same size.

Run: `make bench-service`. Starts embedded PostgreSQL and Valkey, jackpotd in its own process, and an
echo server in another; one client process drives each in turn, --rounds times for --seconds each,
with --inflight calls in flight, and prints calls per second, p50/p99 latency, the ratio to the echo
baseline per round and overall, and the CPU each process spent per call.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stack import create_link, start_stack  # noqa: E402  (bench/stack.py)
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.api.gen.jackpot.v1 import admin_pb2_grpc, table_pb2, table_pb2_grpc  # noqa: E402
from jackpotd.app import run_loop  # noqa: E402
from jackpotd.embedded import free_port  # noqa: E402

CALLS = itertools.count(1)  # numbers calls across all runs, so every round id is new
RATIO_GOAL = 0.55  # issue 22, P1: durable CommitWagers at least 55% of the echo's calls/s
CPU_GOAL = 2.0  # and half the CPU per commit of d23241c, which spent 4.0 times the echo's per call (quiet machine)


def echo_server(port: int, reply: bytes) -> None:
    """A plain gRPC server with the same messages as CommitWagers and no work: it answers a stored reply."""

    async def main() -> None:
        response = table_pb2.CommitWagersResponse.FromString(reply)

        async def echo(request: table_pb2.CommitWagersRequest, context: object) -> table_pb2.CommitWagersResponse:
            return response

        handler = grpc.method_handlers_generic_handler("bench.Echo", {"Call": grpc.unary_unary_rpc_method_handler(
            echo, table_pb2.CommitWagersRequest.FromString, table_pb2.CommitWagersResponse.SerializeToString)})
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((handler,))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    run_loop(main())  # the same event loop as jackpotd's workers, for a fair baseline


async def drive(make_call: Callable[[int], Awaitable[object]], inflight: int, seconds: float,
                label: str) -> tuple[float, list[float]]:
    """Keep `inflight` calls going for `seconds`; returns calls per second and latencies."""
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds
    bar = tqdm(total=int(seconds), desc=label, unit="s", leave=False, disable=None)  # no bar when piped

    async def worker(w: int) -> None:
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            await make_call(w * 1_000_000 + next(CALLS))
            latencies.append(time.perf_counter() - t0)

    async def tick() -> None:
        while time.perf_counter() < stop_at:
            await asyncio.sleep(1)
            bar.update(1)

    started = time.perf_counter()
    await asyncio.gather(tick(), *(worker(w) for w in range(inflight)))
    bar.close()
    return len(latencies) / (time.perf_counter() - started), latencies


def tree_cpu(pid: int, descendants: bool = True) -> float:
    """CPU seconds (user + system) of a process, and by default all its descendants, so far."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)] if descendants else [root]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def print_store_stats(redis_url: str) -> None:
    """Valkey's own accounting of the commands the run sent: calls and CPU per call, costliest first."""
    import redis

    stats = redis.Redis.from_url(redis_url).info("commandstats")
    rows = sorted(stats.items(), key=lambda kv: -kv[1]["usec"])[:8]
    print("Valkey commands: " + ", ".join(f"{k.removeprefix('cmdstat_')} {v['calls']:,} calls "
                                          f"{v['usec_per_call']:.1f} us" for k, v in rows))


async def print_pg_stats(dsn: str, calls: int) -> None:
    """PostgreSQL's own counts per commit over the run: index scans of the ledger's tables (the per-call "was this
    id used?" lookup scans `entries` and `rounds` once a call; issue 22 P1) and transactions."""
    import asyncpg

    await asyncio.sleep(1.5)  # backends flush their statistics at most once a second
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT relname, idx_scan FROM pg_stat_user_tables WHERE relname IN ('entries', "
                                "'rounds') ORDER BY relname")
        xacts = await conn.fetchval("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    finally:
        await conn.close()
    print("PostgreSQL per commit: " + ", ".join(f"{r['relname']} index scans {r['idx_scan'] / calls:.2f}" for r in rows)
          + f", transactions {xacts / calls:.2f}")


PG_XACTS = "PostgreSQL transactions"


async def pg_xacts(dsn: str) -> float:
    """Transactions PostgreSQL has committed (read-only ones too), once the backends flushed their statistics."""
    import asyncpg

    await asyncio.sleep(1.1)  # backends flush their statistics at most once a second when idle
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_stat_force_next_flush()")
        return float(await conn.fetchval("SELECT sum(xact_commit) FROM pg_stat_database"))
    finally:
        await conn.close()


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))] * 1000


async def run(args: argparse.Namespace) -> None:
    stack = start_stack("jackpotd-bench-", args.workers)
    pg, valkey, server = stack.pg, stack.valkey, stack.server
    echo_port = free_port()
    try:
        channel = stack.channel()
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        table_stub = table_pb2_grpc.TableServiceStub(channel)
        link = "bench"
        await create_link(admin, link, [f"bench-{w}" for w in range(args.inflight)])
        wagers = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)]
        sample = table_pb2.CommitWagersRequest(request_id=str(uuid.uuid4()), table_id="bench-0", round_id="r0",
                                               wagers=wagers)

        async def commit(n: int) -> object:
            w = n // 1_000_000
            return await table_stub.CommitWagers(table_pb2.CommitWagersRequest(
                request_id=str(uuid.uuid4()), table_id=f"bench-{w}", round_id=f"r{n}", wagers=wagers))

        warm = await commit(0)
        reply = warm.SerializeToString()  # type: ignore[attr-defined]
        request = sample.SerializeToString()
        proc = multiprocessing.get_context("spawn").Process(target=echo_server, args=(echo_port, reply),
                                                            daemon=True)
        proc.start()
        echo_channel = grpc.aio.insecure_channel(f"127.0.0.1:{echo_port}")
        await echo_channel.channel_ready()
        echo_call = echo_channel.unary_unary("/bench.Echo/Call",
                                             request_serializer=table_pb2.CommitWagersRequest.SerializeToString,
                                             response_deserializer=table_pb2.CommitWagersResponse.FromString)

        async def echo(n: int) -> object:  # the client does exactly what it does for CommitWagers
            w = n // 1_000_000
            return await echo_call(table_pb2.CommitWagersRequest(
                request_id=str(uuid.uuid4()), table_id=f"bench-{w}", round_id=f"r{n}", wagers=wagers))

        assert server.proc is not None and pg.proc is not None and valkey.proc is not None and proc.pid is not None
        parts = {"client": os.getpid(), "echo server": proc.pid, "jackpotd supervisor and writer": server.proc.pid,
                 "jackpotd workers": server.proc.pid, "postgres": pg.proc.pid, "valkey": valkey.proc.pid}

        async def measured(fn: Callable[[int], Awaitable[object]], label: str) -> tuple[float, list[float],
                                                                                         dict[str, float]]:
            def cpu() -> dict[str, float]:
                out = {k: tree_cpu(v, k not in ("client", "jackpotd supervisor and writer")) for k, v in parts.items()}
                out["jackpotd workers"] -= out["jackpotd supervisor and writer"]
                return out

            xacts = await pg_xacts(pg.dsn)
            before = cpu()
            rate, lat = await drive(fn, args.inflight, args.seconds, label)
            used = {k: v - before[k] for k, v in cpu().items()}
            per_call = {k: v / len(lat) * 1e6 for k, v in used.items() if v > 0.01}
            per_call[PG_XACTS] = (await pg_xacts(pg.dsn) - xacts) / len(lat) * 1e6  # shown per call, not in µs
            return rate, lat, per_call

        # Echo and commit alternate, round after round, so a slow spell of the machine hits both.
        echo_runs, commit_runs = [], []
        for r in range(args.rounds):
            echo_runs.append(await measured(echo, f"echo {r + 1}/{args.rounds}"))
            commit_runs.append(await measured(commit, f"CommitWagers {r + 1}/{args.rounds}"))
        proc.terminate()
        print(f"request {len(request)} bytes, reply {len(reply)} bytes, {args.inflight} calls in flight, "
              f"{args.rounds} rounds of {args.seconds:.0f} s each")
        print(f"{'round':6} {'echo calls/s':>13} {'commit calls/s':>15} {'ratio':>6} {'commit p50 ms':>14} "
              f"{'commit p99 ms':>14}")
        ratios = []
        for r, ((e_rate, _, _), (c_rate, c_lat, _)) in enumerate(zip(echo_runs, commit_runs, strict=True)):
            ratios.append(c_rate / e_rate)
            print(f"{r + 1:<6} {e_rate:>13,.0f} {c_rate:>15,.0f} {c_rate / e_rate:>6.0%} {pct(c_lat, .5):>14.2f} "
                  f"{pct(c_lat, .99):>14.2f}")
        echo_total = sum(len(lat) for _, lat, _ in echo_runs) / (args.rounds * args.seconds)
        commit_total = sum(len(lat) for _, lat, _ in commit_runs) / (args.rounds * args.seconds)
        print(f"durable CommitWagers (7 seats) / plain gRPC echo: median of rounds {statistics.median(ratios):.0%}, "
              f"all rounds {commit_total:,.0f} / {echo_total:,.0f} calls/s = {commit_total / echo_total:.0%} "
              f"(target at least {RATIO_GOAL:.0%})")
        totals: dict[str, dict[str, float]] = {}
        for name, runs in (("echo", echo_runs), ("CommitWagers", commit_runs)):
            cpu = totals[name] = {k: statistics.mean(run[2].get(k, 0.0) for run in runs) for k in parts}
            print(f"CPU per call, {name}: " + ", ".join(f"{k} {v:,.0f} us" for k, v in cpu.items() if v >= 1)
                  + f"; total {sum(cpu.values()):,.0f} us")
        mine, commit_cpu, echo_cpu = totals["CommitWagers"], sum(totals["CommitWagers"].values()), \
            sum(totals["echo"].values())
        ratio = commit_total / echo_total
        record(Figure("P1 service", "durable CommitWagers / echo (7 seats, 64 in flight)",
                      f"{ratio:.0%} ({commit_total:,.0f} / {echo_total:,.0f} calls/s)",
                      f"{commit_cpu:,.0f} us/commit = {commit_cpu / echo_cpu:.1f}x echo's (workers "
                      f"{mine['jackpotd workers']:,.0f}, PG {mine['postgres']:,.0f})",
                      f"echo {echo_cpu:,.0f} us/call",
                      f"at least {RATIO_GOAL:.0%}; CPU at most {CPU_GOAL:.1f}x echo's", ratio >= RATIO_GOAL
                      and commit_cpu / echo_cpu <= CPU_GOAL))
        xacts = statistics.mean(run[2][PG_XACTS] for run in commit_runs) / 1e6
        print(f"PostgreSQL transactions per CommitWagers (the writer's, the workers' reads): {xacts:.2f}")
        if args.store_stats:
            print_store_stats(valkey.url)
            await print_pg_stats(pg.dsn, sum(len(lat) for _, lat, _ in commit_runs) + 1)
        await channel.close()
        await echo_channel.close()
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5, help="how long to drive each server in a round")
    parser.add_argument("--rounds", type=int, default=4, help="echo and commit runs, alternating")
    parser.add_argument("--store-stats", action="store_true", help="also print Valkey's per-command CPU")
    parser.add_argument("--inflight", type=int, default=64, help="calls in flight")
    parser.add_argument("--workers", type=int, default=1, help="jackpotd gRPC worker processes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
