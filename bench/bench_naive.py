"""jackpotd beside its naive twin (issue 22, P2): the same CommitWagers and SettleRound, side by side in one run.

Run: `make bench-naive` (or `bench/bench_naive.py --seconds 10 --rounds 3 --tables 64`). Starts one embedded
PostgreSQL and one Valkey, jackpotd (Redis for the pools, group-committed hash-chained ledger) in its own process,
and the naive twin (bench/naive/: jackpotd's protos, interceptor, guard and pure domain, but one PostgreSQL
transaction per call, the link's pool rows locked with SELECT ... FOR UPDATE, the entry and its postings inserted,
synchronous_commit on) in another, on a database of its own in the same PostgreSQL. One client drives each in turn,
round after round: `--tables` tables of 7 seats on one link, each committing a round and then settling it, one call
in flight per table. Per server it prints calls/s, p50/p99 of each call, the CPU each process spent per call, and
PostgreSQL's transaction commits and WAL fsyncs per call (pg_stat_database; PostgreSQL 18 counts WAL writes and
fsyncs in pg_stat_io, object 'wal').
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing
import os
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_service import pct, tree_cpu  # noqa: E402  (bench/bench_service.py)
from naive.server import serve, setup  # noqa: E402  (bench/naive/)
from stack import create_link, start_stack  # noqa: E402  (bench/stack.py)
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.api.gen.jackpot.v1 import admin_pb2_grpc, table_pb2, table_pb2_grpc  # noqa: E402
from jackpotd.auth.client import TableTokens, open_channel  # noqa: E402
from jackpotd.domain.cards import RANKS, SUITS  # noqa: E402
from jackpotd.domain.hands import evaluate_hand  # noqa: E402
from jackpotd.domain.link import TableConfig  # noqa: E402
from jackpotd.domain.paytable import default_paytable  # noqa: E402
from jackpotd.domain.pools import PoolSpec  # noqa: E402
from jackpotd.domain.rates import RateSet  # noqa: E402
from jackpotd.embedded import free_port  # noqa: E402
from jackpotd.service.admin_requests import new_link  # noqa: E402

ROUNDS = itertools.count(1)  # every round id is new, across runs and servers
GAME = "caribbean-stud"
# The processes a server's calls run through; the other server idles meanwhile (its own background work, shown
# on its own but left out of the total).
THROUGH = {"jackpotd": ("client", "jackpotd", "postgres", "valkey"), "naive": ("client", "naive", "postgres")}


def quiet_round(seats: int) -> tuple[list[table_pb2.SeatHand], list[str]]:
    """Distinct cards for every seat and the dealer with no hand on the paytable: every settle prices no hit, so
    both servers do the same work (a hit would drain the pools, and its size depends on the pools)."""
    paid = set(default_paytable(GAME, "SPLIT").entries)
    rng = random.Random(22)
    while True:
        deck = [r + s for r in RANKS for s in SUITS]
        rng.shuffle(deck)
        hands = [deck[5 * s:5 * s + 5] for s in range(seats + 1)]
        if all(evaluate_hand(GAME, h) not in paid for h in hands[:seats]):
            return [table_pb2.SeatHand(seat=s + 1, cards=h) for s, h in enumerate(hands[:seats])], hands[seats]


@dataclass
class Run:
    """One server driven for one round: calls, latencies per method, CPU per process, PostgreSQL counters."""

    server: str
    seconds: float
    commits: list[float] = field(default_factory=list)
    settles: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # failed calls by status (not counted as calls)
    cpu: dict[str, float] = field(default_factory=dict)  # µs per call
    pg: dict[str, float] = field(default_factory=dict)  # per call

    @property
    def calls(self) -> int:
        return len(self.commits) + len(self.settles)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    @property
    def cpu_total(self) -> float:
        """CPU per call of the processes the calls run through (µs)."""
        return sum(self.cpu[k] for k in THROUGH[self.server])


async def pg_counters(dsn: str) -> dict[str, float]:
    """Cluster-wide transactions committed (read-only ones too), WAL fsyncs and writes, and WAL bytes, after the
    backends flushed their statistics."""
    await asyncio.sleep(1.2)  # backends flush their statistics at most once a second when idle
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_stat_force_next_flush()")
        commits = await conn.fetchval("SELECT sum(xact_commit) FROM pg_stat_database")
        io = await conn.fetchrow("SELECT coalesce(sum(fsyncs), 0) AS fsyncs, coalesce(sum(writes), 0) AS writes "
                                 "FROM pg_stat_io WHERE object = 'wal'")
        wal_bytes = await conn.fetchval("SELECT wal_bytes FROM pg_stat_wal")
    finally:
        await conn.close()
    fsyncs, writes = (io["fsyncs"], io["writes"]) if io else (0, 0)
    return {"commits": float(commits), "WAL fsyncs": float(fsyncs), "WAL writes": float(writes),
            "WAL bytes": float(wal_bytes)}


async def drive(server: str, target: str, auth_key: bytes, tables: list[str], seconds: float,
                hands: list[table_pb2.SeatHand], dealer: list[str], parts: dict[str, int], dsn: str) -> Run:
    """Each table commits a round and settles it, again and again, for `seconds`; CPU and PostgreSQL measured."""
    channel = open_channel(target, interceptors=TableTokens(auth_key).interceptors())
    stub = table_pb2_grpc.TableServiceStub(channel)
    wagers = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)]
    run = Run(server, seconds)

    async def table(t: str, stop_at: float) -> None:
        while time.perf_counter() < stop_at:
            round_id = f"r{next(ROUNDS)}"
            try:
                t0 = time.perf_counter()
                await stub.CommitWagers(table_pb2.CommitWagersRequest(request_id=str(uuid.uuid4()), table_id=t,
                                                                      round_id=round_id, wagers=wagers))
                t1 = time.perf_counter()
                run.commits.append(t1 - t0)
                await stub.SettleRound(table_pb2.SettleRoundRequest(request_id=str(uuid.uuid4()), table_id=t,
                                                                    round_id=round_id, hands=hands,
                                                                    dealer_cards=dealer))
                run.settles.append(time.perf_counter() - t1)
            except grpc.aio.AioRpcError as e:  # counted and shown; the table goes on with a new round
                run.errors[e.code().name] = run.errors.get(e.code().name, 0) + 1

    await asyncio.gather(*(table(t, time.perf_counter() + 0.5) for t in tables))  # warm: connections, caches
    run.commits.clear()
    run.settles.clear()
    run.errors.clear()

    def cpu() -> dict[str, float]:
        return {k: tree_cpu(pid, k != "client") for k, pid in parts.items()}

    pg_before, cpu_before = await pg_counters(dsn), cpu()
    started = time.perf_counter()
    await asyncio.gather(*(table(t, started + seconds) for t in tables))
    run.seconds = time.perf_counter() - started
    cpu_after, pg_after = cpu(), await pg_counters(dsn)
    run.cpu = {k: (cpu_after[k] - cpu_before[k]) / run.calls * 1e6 for k in parts}
    run.pg = {k: (pg_after[k] - pg_before[k]) / run.calls for k in pg_after}
    await channel.close()
    return run


def report(runs: list[Run], tables: int) -> None:
    """Per run one line, then per server the best round and the spread, CPU and PostgreSQL per call."""
    print(f"{'server':8} {'calls/s':>8} {'commit p50/p99 ms':>18} {'settle p50/p99 ms':>18} {'CPU us/call':>12} "
          f"{'PG xacts/call':>14} {'WAL fsyncs/call':>16} {'WAL bytes/call':>15}")
    for r in runs:
        print(f"{r.server:8} {r.rate:>8,.0f} {pct(r.commits, .5):>8.1f} /{pct(r.commits, .99):>8.1f} "
              f"{pct(r.settles, .5):>8.1f} /{pct(r.settles, .99):>8.1f} {r.cpu_total:>12,.0f} "
              f"{r.pg['commits']:>14.3f} {r.pg['WAL fsyncs']:>16.3f} {r.pg['WAL bytes']:>15,.0f}")
    headline: dict[str, str] = {}  # per server: best calls/s and fsyncs per call, for make bench's table
    cpus: dict[str, str] = {}
    for name in dict.fromkeys(r.server for r in runs):
        mine = [r for r in runs if r.server == name]
        rates = [r.rate for r in mine]
        cpu = {k: statistics.mean(r.cpu[k] for r in mine) for k in mine[0].cpu}
        idle = [k for k in cpu if k not in THROUGH[name]]
        headline[name] = (f"{max(rates):,.0f} calls/s, "
                          f"{statistics.mean(r.pg['WAL fsyncs'] for r in mine):.2f} WAL fsyncs/call")
        cpus[name] = f"{sum(cpu[k] for k in THROUGH[name]):,.0f} us/call"
        print(f"{name}: best {max(rates):,.0f} calls/s (spread {min(rates):,.0f}-{max(rates):,.0f}); CPU per call "
              + ", ".join(f"{k} {cpu[k]:,.0f} us" for k in THROUGH[name])
              + f"; total {sum(cpu[k] for k in THROUGH[name]):,.0f} us (idle meanwhile: "
              + ", ".join(f"{k} {cpu[k]:,.0f} us" for k in idle) + ")"
              f"; per call {statistics.mean(r.pg['commits'] for r in mine):.3f} PostgreSQL transactions, "
              f"{statistics.mean(r.pg['WAL fsyncs'] for r in mine):.3f} WAL fsyncs")
    if "jackpotd" in headline and "naive" in headline:
        record(Figure("P2 naive twin", f"jackpotd, {tables} tables commit+settle", headline["jackpotd"],
                      cpus["jackpotd"], f"naive twin {headline['naive']}, {cpus['naive']}"))


async def run(args: argparse.Namespace) -> None:
    stack = start_stack("jackpotd-naive-", args.workers)
    pg, valkey, server = stack.pg, stack.valkey, stack.server
    tables = [f"bench-{t}" for t in range(args.tables)]
    naive = None
    try:
        channel = stack.channel()
        await create_link(admin_pb2_grpc.AdminServiceStub(channel), "bench", tables)
        await channel.close()
        owner = await asyncpg.connect(pg.dsn)
        await owner.execute("CREATE DATABASE naive")
        await owner.close()
        pools = tuple(PoolSpec(p) for p in ("MAJOR", "MINOR", "RESERVE"))
        rates = RateSet({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}, 700_000, 1, 0, "BENCH")
        config = new_link("bench", "SPLIT", 100, pools, rates, [GAME], 0, "", "")
        for t in tables:
            config = config.with_table(TableConfig(t, GAME, 7))
        await setup(pg.owner_dsn("naive"), config)
        port = free_port()
        naive = multiprocessing.get_context("spawn").Process(
            target=serve, args=(port, pg.owner_dsn("naive"), stack.auth_key, args.connections), daemon=True)
        naive.start()
        probe = open_channel(f"127.0.0.1:{port}")
        await asyncio.wait_for(probe.channel_ready(), 60)
        await probe.close()
        assert server.proc is not None and pg.proc is not None and valkey.proc is not None and naive.pid is not None
        parts = {"client": os.getpid(), "jackpotd": server.proc.pid, "naive": naive.pid, "postgres": pg.proc.pid,
                 "valkey": valkey.proc.pid}
        hands, dealer = quiet_round(7)
        targets: dict[str, str] = {"jackpotd": server.target, "naive": f"127.0.0.1:{port}"}
        runs: list[Run] = []
        for r in range(args.rounds):  # alternating, so a slow spell of the shared machine hits both
            for name, target in targets.items():
                runs.append(await drive(name, target, stack.auth_key, tables, args.seconds, hands, dealer, parts,
                                        pg.dsn))
                print(f"round {r + 1}/{args.rounds} {name}: {runs[-1].rate:,.0f} calls/s", file=sys.stderr)
        print(f"{args.tables} tables of 7 seats on one link, each committing then settling (one call in flight per "
              f"table), {args.rounds} rounds of {args.seconds:.0f} s per server; naive: {args.connections} "
              f"PostgreSQL connections")
        report(runs, args.tables)
    finally:
        if naive is not None:
            naive.terminate()
            naive.join(10)
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10, help="how long to drive each server in a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each driving jackpotd then the naive twin")
    parser.add_argument("--tables", type=int, default=64, help="tables on the link, each with one call in flight")
    parser.add_argument("--connections", type=int, default=32, help="the naive twin's PostgreSQL connections")
    parser.add_argument("--workers", type=int, default=1, help="jackpotd gRPC worker processes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
