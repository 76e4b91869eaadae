"""Durable CommitWagers throughput through one `jackpotd grpc` API replica and through two (issue 13), with one
`jackpotd writer` beside them, and the CPU every process spends per call, so the scaling is visible.

Run: `make bench-replicas`. Starts embedded PostgreSQL and Valkey, a writer, and two API replicas (each one
process serving in itself); the client keeps --inflight calls going through one replica, then through both
(round robin over their addresses), alternating --rounds times for --seconds each. On a 2-core machine the two
replicas share the cores with the writer, the stores and the client, so the ratio shows where the cores go, not
what more machines would give: read CPU per call beside it.

`--cluster` runs the same on a three-primary Valkey Cluster instead of one Valkey, with the tables spread over
`--links` links (default: 6 with a cluster, else 1) and `--writers` writer processes dividing the shards.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_service import drive, pct, tree_cpu
from stack import ROOT, create_link, start_stores

sys.path.insert(0, str(ROOT))

import os
import shutil

from jackpotd.api.gen.jackpot.v1 import admin_pb2_grpc, table_pb2, table_pb2_grpc
from jackpotd.app import run_loop
from jackpotd.auth.client import TableTokens, open_channel
from jackpotd.embedded import EmbeddedValkeyCluster, free_port
from tests.integration.process import ServerProcess


async def run(args: argparse.Namespace) -> None:
    root, pg, valkey, auth_key = start_stores("jackpotd-replicas-")
    cluster = EmbeddedValkeyCluster(root / "cluster").start() if args.cluster else None
    redis_url = cluster.url if cluster else valkey.url
    extra = {"JACKPOTD_REDIS_CLUSTER": "true"} if cluster else {}
    env: dict[str, Any] = {"redis_url": redis_url, "dsn": pg.dsn, "env": extra}
    writers = [ServerProcess(free_port(), root / f"writer-{n}.log", metrics_port=free_port(), command="writer",
                             **env) for n in range(args.writers)]
    apis = [ServerProcess(free_port(), root / f"grpc-{n}.log", workers=0, command="grpc", **env) for n in (1, 2)]
    processes = [*writers, *apis]
    try:
        for p in processes:
            p.start()
        tokens = TableTokens(auth_key).interceptors()
        one = open_channel(apis[0].target, interceptors=tokens)
        both = open_channel("ipv4:" + ",".join(a.target for a in apis), interceptors=tokens,
                            options=[("grpc.lb_policy_name", "round_robin")])
        tables = [f"bench-{w}" for w in range(args.inflight)]
        links = args.links or (6 if cluster else 1)
        for n in range(links):  # table w on link w % links
            await create_link(admin_pb2_grpc.AdminServiceStub(one), f"bench-link-{n}", tables[n::links])
        wagers = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)]

        def committer(channel: object) -> Callable[[int], Awaitable[object]]:
            stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[arg-type]

            async def commit(n: int) -> object:
                return await stub.CommitWagers(table_pb2.CommitWagersRequest(
                    request_id=str(uuid.uuid4()), table_id=f"bench-{n // 1_000_000}", round_id=f"r{n}",
                    wagers=wagers))

            return commit

        await committer(one)(999_998)  # warm both channels (round ids the runs never use)
        await committer(both)(999_999)
        assert pg.proc is not None and valkey.proc is not None
        stores = [n.proc.pid for n in cluster.nodes if n.proc] if cluster else [valkey.proc.pid]
        parts = {"client": [os.getpid()], "writers": [w.proc.pid for w in writers if w.proc],
                 "API replica 1": [apis[0].proc.pid if apis[0].proc else 0],
                 "API replica 2": [apis[1].proc.pid if apis[1].proc else 0],
                 "postgres": [pg.proc.pid], "valkey": stores}

        async def measured(channel: object, label: str) -> tuple[float, list[float], dict[str, float]]:
            before = cpu_now()
            rate, lat = await drive(committer(channel), args.inflight, args.seconds, label)
            used = {k: v - before[k] for k, v in cpu_now().items()}
            return rate, lat, {k: v / len(lat) * 1e6 for k, v in used.items()}

        def cpu_now() -> dict[str, float]:
            return {k: sum(tree_cpu(pid, k in ("postgres",)) for pid in pids) for k, pids in parts.items()}

        quiet = cpu_now()  # what the processes spend while no table plays (the writers' polling, heartbeats)
        await asyncio.sleep(args.seconds)
        idle = {k: (v - quiet[k]) / args.seconds * 100 for k, v in cpu_now().items()}
        runs: dict[str, list[tuple[float, list[float], dict[str, float]]]] = {"one replica": [], "two replicas": []}
        for r in range(args.rounds):  # alternating, so a slow spell of the machine hits both
            runs["one replica"].append(await measured(one, f"one replica {r + 1}/{args.rounds}"))
            runs["two replicas"].append(await measured(both, f"two replicas {r + 1}/{args.rounds}"))
        print(f"{args.inflight} calls in flight on {links} link(s), {args.writers} writer(s), "
              f"{'a 3-primary Valkey Cluster' if cluster else 'one Valkey'}, {args.rounds} rounds of "
              f"{args.seconds:.0f} s each, {os.cpu_count()} cores")
        print(f"{'':14} {'calls/s (median)':>17} {'p50 ms':>8} {'p99 ms':>8}  CPU per call (us)")
        rates = {}
        for name, rs in runs.items():
            rates[name] = statistics.median(x[0] for x in rs)
            lat = [v for x in rs for v in x[1]]
            cpu = {k: statistics.mean(x[2][k] for x in rs) for k in parts}
            print(f"{name:14} {rates[name]:>17,.0f} {pct(lat, .5):>8.2f} {pct(lat, .99):>8.2f}  "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in cpu.items() if v >= 1) + f"; total {sum(cpu.values()):,.0f}")
        print(f"two replicas / one: {rates['two replicas'] / rates['one replica']:.2f}x")
        print("idle, % of a core: " + ", ".join(f"{k} {v:.1f}" for k, v in idle.items() if k != "client"))
        await one.close()
        await both.close()
    finally:
        for p in processes:
            if p.proc is not None and p.proc.poll() is None:
                p.interrupt()
        if cluster:
            cluster.stop()
        valkey.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inflight", type=int, default=64, help="calls in flight (default 64)")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per measured run (default 5)")
    p.add_argument("--rounds", type=int, default=3, help="runs of each (default 3)")
    p.add_argument("--cluster", action="store_true", help="a 3-primary Valkey Cluster instead of one Valkey")
    p.add_argument("--links", type=int, default=0, help="links the tables are spread over (default 6 with "
                                                        "--cluster, else 1)")
    p.add_argument("--writers", type=int, default=1, help="jackpotd writer processes (default 1)")
    started = time.perf_counter()
    run_loop(run(p.parse_args()))
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
