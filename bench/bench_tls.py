"""What mTLS costs on durable CommitWagers: plain text with a table token beside mTLS with the table's certificate.

Run: `.venv/bin/python bench/bench_tls.py [--pin]`. Starts two identical stacks (embedded PostgreSQL, Valkey
and jackpotd in its own process): one serving plain text on loopback, whose tables present bearer tokens
(`jackpotd serve` with an auth key), one serving TLS with client certificates required, whose tables present
their certificates (issued by `jackpotd.auth.issue` into the stack's directory). One client drives each in
turn, --rounds times for --seconds each, with --inflight tables, each on a connection of its own as real
tables are, one call in flight per table; it prints calls per second, p50/p99 latency and the CPU each
process spent per call, then what opening the connections cost (the TLS handshakes).

--pin puts the client on core 0 and every server process on the other cores, so the client's own CPU does
not compete with the service's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_service import drive, pct, tree_cpu  # noqa: E402  (bench/bench_service.py)
from stack import Stack, create_link, start_stack  # noqa: E402  (bench/stack.py)

from jackpotd.api.gen.jackpot.v1 import admin_pb2_grpc, table_pb2, table_pb2_grpc  # noqa: E402
from jackpotd.auth.client import bearer, open_channel  # noqa: E402
from jackpotd.auth.identity import Role  # noqa: E402
from jackpotd.auth.issue import IssueOrder, issue_into  # noqa: E402
from jackpotd.auth.tokens import issue, read_key  # noqa: E402
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port  # noqa: E402
from tests.integration.process import ServerProcess  # noqa: E402

WAGERS = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)]


class TlsServerProcess(ServerProcess):
    """`jackpotd serve` on TLS: it is up once health answers over TLS (with a client certificate)."""

    def __init__(self, port: int, log: Path, creds: Path, **kw: object) -> None:
        super().__init__(port, log, **kw)  # type: ignore[arg-type]
        self.creds = creds
        self.args += ["--tls-cert-file", str(creds / "server.pem"), "--tls-key-file", str(creds / "server.key"),
                      "--tls-ca-file", str(creds / "ca.pem"), "--auth-key-file", str(creds / "auth.key")]

    def credentials(self, cert: str) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials((self.creds / "ca.pem").read_bytes(),
                                            (self.creds / f"{cert}.key").read_bytes(),
                                            (self.creds / f"{cert}.pem").read_bytes())

    def health_channel(self) -> grpc.Channel:
        return grpc.secure_channel(self.target, self.credentials("roles/admin-bench"))


def start_tls_stack(workers: int, tables: list[str]) -> tuple[Stack, TlsServerProcess]:
    """As stack.start_stack, serving TLS with credentials issued into the stack's directory."""
    root = Path(tempfile.mkdtemp(prefix="jackpotd-bench-tls-"))
    os.chmod(root, 0o755)
    creds = root / "credentials"
    issue_into(creds, IssueOrder(tables=tables, roles=[(Role.ADMIN, "bench")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
        valkey = EmbeddedValkey(root / "valkey").start()
    server = TlsServerProcess(free_port(), root / "jackpotd.log", creds, redis_url=valkey.url, dsn=pg.dsn,
                              workers=workers)
    stack = Stack(pg, valkey, server, read_key(creds / "auth.key"), root)
    try:
        server.start()
    except BaseException:
        stack.stop()
        raise
    return stack, server


@dataclass
class Side:
    """One stack and how its tables and its administrator connect to it."""

    name: str
    stack: Stack
    table_channel: Callable[[str], grpc.aio.Channel]
    admin_channel: Callable[[], grpc.aio.Channel]
    metadata: Callable[[str], tuple[tuple[str, str], ...] | None]


async def set_up(side: Side, tables: list[str]) -> None:
    async with side.admin_channel() as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        await create_link(admin, "bench", tables)


def pin(stack: Stack, cores: set[int]) -> None:
    """Move a stack's server processes (and their children, present and future) to `cores`."""
    import psutil

    assert stack.server.proc is not None and stack.pg.proc is not None and stack.valkey.proc is not None
    for pid in (stack.server.proc.pid, stack.pg.proc.pid, stack.valkey.proc.pid):
        for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                p.cpu_affinity(sorted(cores))


Measured = tuple[float, list[float], dict[str, float]]


async def measure(side: Side, stubs: dict[str, table_pb2_grpc.TableServiceStub], tables: list[str],
                  seconds: float, label: str) -> Measured:
    stack = side.stack
    assert stack.server.proc is not None and stack.pg.proc is not None and stack.valkey.proc is not None
    parts = {"client": (os.getpid(), False), "jackpotd": (stack.server.proc.pid, True),
             "postgres": (stack.pg.proc.pid, True), "valkey": (stack.valkey.proc.pid, True)}

    def cpu() -> dict[str, float]:
        return {k: tree_cpu(pid, tree) for k, (pid, tree) in parts.items()}

    async def commit(n: int) -> object:
        table = tables[n // 1_000_000]
        return await stubs[table].CommitWagers(table_pb2.CommitWagersRequest(
            request_id=str(uuid.uuid4()), table_id=table, round_id=f"r{n}", wagers=WAGERS),
            metadata=side.metadata(table))

    before = cpu()
    rate, lat = await drive(commit, len(tables), seconds, label)
    used = {k: v - before[k] for k, v in cpu().items()}
    return rate, lat, {k: v / len(lat) * 1e6 for k, v in used.items()}


async def connect_cost(side: Side, tables: list[str]) -> tuple[float, float]:
    """Open a fresh connection per table and make one call on each: wall ms per connection and jackpotd CPU
    µs per connection (the handshake, for TLS)."""
    assert side.stack.server.proc is not None
    pid = side.stack.server.proc.pid
    channels = [side.table_channel(t) for t in tables]
    cpu0, t0 = tree_cpu(pid), time.perf_counter()
    try:
        await asyncio.gather(*(table_pb2_grpc.TableServiceStub(c).CommitWagers(table_pb2.CommitWagersRequest(
            request_id=str(uuid.uuid4()), table_id=t, round_id=f"connect-{uuid.uuid4().hex[:8]}", wagers=WAGERS),
            metadata=side.metadata(t)) for c, t in zip(channels, tables, strict=True)))
        return (time.perf_counter() - t0) / len(tables) * 1000, (tree_cpu(pid) - cpu0) / len(tables) * 1e6
    finally:
        for c in channels:
            await c.close()


async def run(args: argparse.Namespace) -> None:
    tables = [f"bench-{w}" for w in range(args.inflight)]
    plain = start_stack("jackpotd-bench-plain-", args.workers)
    try:
        tls, tls_server = start_tls_stack(args.workers, tables)
    except BaseException:
        plain.stop()
        raise
    try:
        if args.pin and (os.cpu_count() or 1) >= 2:
            others = set(range(1, os.cpu_count() or 2))
            os.sched_setaffinity(0, {0})
            pin(plain, others)
            pin(tls, others)
            print(f"pinned: client on core 0, servers on cores {sorted(others)}")
        key = plain.auth_key
        table_tokens = {t: issue(key, Role.TABLE, t) for t in tables}
        admin_token = issue(key, Role.ADMIN, "bench")
        sides = [
            Side("plain text + token", plain, lambda t: grpc.aio.insecure_channel(plain.server.target),
                 lambda: open_channel(plain.server.target, interceptors=bearer(admin_token)),
                 lambda t: (("authorization", f"Bearer {table_tokens[t]}"),)),
            Side("mTLS (table certificate)", tls,
                 lambda t: grpc.aio.secure_channel(tls_server.target, tls_server.credentials(f"tables/{t}")),
                 lambda: grpc.aio.secure_channel(tls_server.target, tls_server.credentials("roles/admin-bench")),
                 lambda t: None),
        ]
        stubs: list[dict[str, table_pb2_grpc.TableServiceStub]] = []
        channels: list[grpc.aio.Channel] = []
        for side in sides:
            await set_up(side, tables)
            by_table = {}
            for t in tables:
                channel = side.table_channel(t)
                channels.append(channel)
                by_table[t] = table_pb2_grpc.TableServiceStub(channel)
            stubs.append(by_table)
            await measure(side, by_table, tables, 1.0, f"warm-up {side.name}")
        runs: list[list[Measured]] = [[], []]
        for r in range(args.rounds):  # alternating, so a slow spell of the machine hits both
            for i, side in enumerate(sides):
                runs[i].append(await measure(side, stubs[i], tables, args.seconds, f"{side.name} {r + 1}"))
        connects = [await connect_cost(side, tables) for side in sides]
        print(f"CommitWagers (7 seats), {args.inflight} tables each on its own connection, one call in flight each, "
              f"{args.rounds} rounds of {args.seconds:.0f} s, {args.workers} worker(s)")
        print(f"{'round':6} " + " ".join(f"{s.name + ' calls/s':>32}" for s in sides) + f" {'ratio':>6}")
        ratios = []
        for r in range(args.rounds):
            a, b = runs[0][r][0], runs[1][r][0]
            ratios.append(b / a)
            print(f"{r + 1:<6} {a:>32,.0f} {b:>32,.0f} {b / a:>6.0%}")
        for i, side in enumerate(sides):
            total = sum(len(lat) for _, lat, _ in runs[i]) / (args.rounds * args.seconds)
            lat = [x for _, run_lat, _ in runs[i] for x in run_lat]
            cpu = {k: statistics.mean(run[2][k] for run in runs[i]) for k in runs[i][0][2]}
            print(f"{side.name}: {total:,.0f} calls/s, p50 {pct(lat, .5):.2f} ms, p99 {pct(lat, .99):.2f} ms; "
                  "CPU per call " + ", ".join(f"{k} {v:,.0f} us" for k, v in cpu.items())
                  + f"; total {sum(cpu.values()):,.0f} us")
        print(f"mTLS / plain text calls/s: median of rounds {statistics.median(ratios):.0%}")
        for side, (ms, us) in zip(sides, connects, strict=True):
            print(f"new connection + first call, {side.name}: {ms:.2f} ms wall per connection "
                  f"({args.inflight} at once), jackpotd CPU {us:,.0f} us per connection")
        for channel in channels:
            await channel.close()
    finally:
        tls.stop()
        plain.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5, help="how long to drive each stack in a round")
    parser.add_argument("--rounds", type=int, default=4, help="plain and mTLS runs, alternating")
    parser.add_argument("--inflight", type=int, default=64, help="tables, each with one call in flight")
    parser.add_argument("--workers", type=int, default=1, help="jackpotd gRPC worker processes")
    parser.add_argument("--pin", action="store_true", help="client on core 0, servers on the other cores")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
