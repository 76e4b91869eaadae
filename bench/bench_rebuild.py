"""P7 (issue 22): Redis rebuilt from a ledger of 1,000,000 entries in at most 10 s.

Run: `.venv/bin/python bench/bench_rebuild.py --entries 1000000 --data /tmp/jackpotd-rebuild-ledger` (`make
bench-rebuild` builds 200,000). The ledger is built once in --data with bench_reports.py's builder (the real
writer, `ledger.write_batch`), every round settled as tables settle them: 8 tables committing a round of 7 seats
and settling it, and every 50th entry a pool funding; later runs reuse it. Then embedded Valkey and `jackpotd
serve` (one worker) start on it and, `--runs` times: Valkey FLUSHALL, then the time until

1. Redis holds the link again as the ledger does (its sequence, last request and pool balances, compared with
   `ledger.snapshot`): the writer's probe found the link lost and recovery.rebuild replaced its keys;
2. gRPC health says SERVING for the link (`link:<id>`); the health reporter asks the stores once a second, so
   this figure includes up to a second of its period.

Each line: both times, CPU seconds of jackpotd (supervisor, worker and writer), PostgreSQL and Valkey from the
FLUSHALL to SERVING, and jackpotd's largest RSS meanwhile. Code is imported from this file's tree, so a copy of
this file in a worktree of another commit measures that commit (on a ledger it finds in --data).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "clients" / "finance")]

import grpc  # noqa: E402
import psutil  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402
from bench_reports import FUND_EVERY, LINK, SEATS, Journal  # noqa: E402  (bench/bench_reports.py)
from bench_service import tree_cpu  # noqa: E402  (bench/bench_service.py)
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.domain.rounds import COMMITTED, SeatHand  # noqa: E402
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port  # noqa: E402
from jackpotd.service.commands import Request, Settle  # noqa: E402
from jackpotd.service.decide.table import TableState, decide_settle  # noqa: E402
from jackpotd.service.ports import LiveRound  # noqa: E402
from jackpotd.store import keys, ledger  # noqa: E402
from tests.integration.process import STARTING, ServerProcess  # noqa: E402

# Distinct cards for the seven seats, none a hand the paytable pays: every settle prices no hit, and the pools grow.
QUIET = [("2C", "4D", "6H", "8S", "TC"), ("3C", "5D", "7H", "9S", "JC"), ("2D", "4H", "6S", "8C", "TD"),
         ("3D", "5H", "7S", "9C", "JD"), ("2H", "4S", "6C", "8D", "TH"), ("3H", "5S", "7C", "9D", "JH"),
         ("2S", "4C", "6D", "8H", "TS")]
TARGET_S = 10.0


class SettlingJournal(Journal):
    """bench_reports.py's journal with each round settled by the entry after its commit, as a table does: the
    rounds table holds finished rounds, and Redis only the open ones (none, between the rounds)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: tuple[str, str, LiveRound] | None = None  # the round committed last and not yet settled

    def entry(self, n: int, now_ms: int) -> ledger.JournalEntry:
        if self.live is None or n % FUND_EVERY == FUND_EVERY - 1:
            out = super().entry(n, now_ms)
            body = out.body
            if body["kind"] == "commit":
                rnd = body["round"]
                self.live = (rnd["table_id"], rnd["round_id"], LiveRound(COMMITTED, str(out.seq), rnd["data"]))
            return out
        table, round_id, live = self.live
        self.live = None
        hands = [SeatHand(seat, QUIET[seat - 1]) for seat in range(1, SEATS + 1)]
        settle = Settle(Request(str(uuid.uuid4()), {"table_id": table, "round_id": round_id}), table, round_id, hands)
        return self.append(decide_settle(settle, self.config, self.version,
                                         TableState(now_ms, self.balances, live, None)))


async def build_if_needed(pg: EmbeddedPostgres, entries: int) -> int:
    """The ledger in --data, built unless it is there already: its head."""
    await ledger.migrate(pg.dsn)
    pool = await ledger.connect_pool(pg.app_dsn(), size=2)
    try:
        have = int(await pool.fetchval("SELECT coalesce(max(last_seq), 0) FROM links WHERE link_id = $1", LINK))
        if have == 0:
            from bench_reports import build
            started = time.perf_counter()
            await build(pool, entries, 2_000, SettlingJournal())
            print(f"built {entries:,} entries in {time.perf_counter() - started:.0f} s")
        elif have < entries:
            raise SystemExit(f"--data holds {have:,} entries, fewer than --entries {entries:,}: use another --data")
        return int(await pool.fetchval("SELECT last_seq FROM links WHERE link_id = $1", LINK))
    finally:
        await pool.close()


@dataclass(frozen=True)
class Run:
    rebuilt_s: float  # FLUSHALL to Redis holding the ledger's state of the link
    serving_s: float  # FLUSHALL to health SERVING for the link
    jackpotd_s: float  # CPU seconds
    pg_s: float
    valkey_s: float
    rss_mb: float  # jackpotd's processes, largest sum seen

    def line(self) -> str:
        return (f"  {self.rebuilt_s:>9.2f} {self.serving_s:>9.2f} {self.jackpotd_s:>9.2f} {self.pg_s:>7.2f} "
                f"{self.valkey_s:>8.2f} {self.rss_mb:>8.0f}")


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its descendants, MB."""
    total = 0
    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        return 0.0
    return total / 1e6


async def in_step(r: aioredis.Redis, snap: ledger.LinkSnapshot) -> bool:
    """Whether Redis holds the link as the ledger's snapshot does: sequence, last request, pool balances."""
    seq, last = await r.get(keys.seq(LINK)), await r.get(keys.last(LINK))
    balances = await r.hgetall(keys.balances(LINK))
    return (seq == str(snap.last_seq) and last == snap.last_identity
            and {k: int(v) for k, v in balances.items()} == snap.pool_balances)


async def serving(health: health_pb2_grpc.HealthStub) -> bool:
    try:
        reply = await health.Check(health_pb2.HealthCheckRequest(service=f"link:{LINK}"), timeout=1)
    except grpc.aio.AioRpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


async def once(server: ServerProcess, pg: EmbeddedPostgres, valkey: EmbeddedValkey, r: aioredis.Redis,
               health: health_pb2_grpc.HealthStub, snap: ledger.LinkSnapshot, timeout: float) -> Run:
    """One FLUSHALL and the rebuild after it."""
    assert server.proc is not None and pg.proc is not None and valkey.proc is not None
    pids = (server.proc.pid, pg.proc.pid, valkey.proc.pid)
    before = [tree_cpu(p) for p in pids]
    started = time.perf_counter()
    await r.flushall()
    rebuilt = 0.0
    peak = rss_mb(pids[0])
    deadline = started + timeout
    while True:
        now = time.perf_counter()
        if now > deadline:
            raise SystemExit(f"not rebuilt and serving {timeout:.0f} s after FLUSHALL; see {server.log}")
        if not rebuilt and await in_step(r, snap):
            rebuilt = time.perf_counter() - started
        if rebuilt and await serving(health):
            break
        peak = max(peak, rss_mb(pids[0]))
        await asyncio.sleep(0.01)
    done = time.perf_counter() - started
    cpu = [tree_cpu(p) - b for p, b in zip(pids, before, strict=True)]
    return Run(rebuilt, done, cpu[0], cpu[1], cpu[2], peak)


async def bench(args: argparse.Namespace, root: Path) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
    work = Path(tempfile.mkdtemp(prefix="jackpotd-bench-rebuild-"))
    os.chmod(work, 0o755)
    server: ServerProcess | None = None
    valkey: EmbeddedValkey | None = None
    try:
        head = await build_if_needed(pg, args.entries)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            valkey = EmbeddedValkey(work / "valkey").start()
        (work / "auth.key").touch(mode=0o600)
        (work / "auth.key").write_bytes(os.urandom(32))
        os.environ["JACKPOTD_AUTH_KEY_FILE"] = str(work / "auth.key")
        server = ServerProcess(free_port(), work / "jackpotd.log", redis_url=valkey.url, dsn=pg.dsn, workers=1)
        started = time.perf_counter()
        server.start(timeout=600)
        print(f"ledger of link {LINK}: {head:,} entries; jackpotd serving it {time.perf_counter() - started:.1f} s "
              f"after starting on an empty Valkey; code from {ROOT}")
        pool = await ledger.connect_pool(pg.app_dsn(), size=1)
        try:
            snap = await ledger.snapshot(pool, LINK)
        finally:
            await pool.close()
        r = aioredis.Redis.from_url(valkey.url, decode_responses=True)
        runs = []
        try:
            async with grpc.aio.insecure_channel(server.target, options=STARTING) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                await wait_for(lambda: serving(health), 60)
                print(f"  {'rebuilt s':>9} {'SERVING s':>9} {'jackpotd':>9} {'PG':>7} {'Valkey':>8} {'RSS MB':>8}"
                      "  (CPU s from FLUSHALL to SERVING)")
                for _ in range(args.runs):
                    await asyncio.sleep(2)  # a quiet moment: the writer's probe and health in their steady state
                    run = await once(server, pg, valkey, r, health, snap, 120)
                    runs.append(run)
                    print(run.line(), flush=True)
        finally:
            await r.aclose()
        best = min(runs, key=lambda x: x.serving_s)
        spread = sorted(x.serving_s for x in runs)
        met = best.serving_s <= TARGET_S
        print(f"best: rebuilt in {best.rebuilt_s:.2f} s, SERVING in {best.serving_s:.2f} s (spread "
              f"{spread[0]:.2f}..{spread[-1]:.2f} s over {len(runs)} runs) from a ledger of {head:,} entries; "
              f"target {TARGET_S:.0f} s: {'met' if met else 'NOT met'}")
        record(Figure("P7 rebuild", f"FLUSHALL to SERVING, ledger of {head:,} entries", f"{best.serving_s:.2f} s",
                      f"{best.jackpotd_s + best.pg_s + best.valkey_s:.2f} s (jackpotd, PG, Valkey)",
                      f"rebuilt (Redis matches the ledger) in {best.rebuilt_s:.2f} s",
                      f"at most {TARGET_S:.0f} s for 1,000,000 entries", met if head >= 1_000_000 else None))
        return 0 if met else 1
    finally:
        if server is not None and server.proc is not None and server.proc.poll() is None:
            server.interrupt()
        if valkey is not None:
            valkey.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


async def wait_for(check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise SystemExit(f"jackpotd did not say SERVING for link {LINK} within {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1_000_000, help="ledger entries (default 1,000,000)")
    parser.add_argument("--data", metavar="DIR", help="keep the built ledger here and reuse it (default: a "
                                                      "temporary directory, removed)")
    parser.add_argument("--runs", type=int, default=3, help="FLUSHALLs measured (default 3)")
    args = parser.parse_args()
    root = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="jackpotd-bench-rebuild-data-"))
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    try:
        sys.exit(asyncio.run(bench(args, root)))
    finally:
        if not args.data:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
