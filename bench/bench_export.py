"""ExportLedger and `jackpot-report export` on a large ledger (issue 22: 1,000,000 entries in 10 s over gRPC, the
CSV in 20 s).

Run: `.venv/bin/python bench/bench_export.py --entries 200000 --data /tmp/export-ledger` (the ledger is built
once in --data with bench_reports.py's builder, the real writer, and reused by later runs; without --data it is
built in a temporary directory and removed). A server process (this file with --serve) serves ReportService
behind jackpotd's own interceptor and guard (a finance token, the stream watched for revocation) over the
ledger; then, `--runs` times each:

1. ExportLedgerPages of the whole ledger as columns (jackpot_finance.calls.export_columns), drained by a client
   reading every field of every page into Python lists; with --pages-of-entries, as pages of LedgerEntry messages
   (jackpot_finance.calls.export_pages, every entry visited); with --entries-too, ExportLedger as well (one
   message per entry);
2. `jackpot-report export` (jackpot_finance.cli.run, in this process) of the whole ledger to a CSV file, with the
   file's SHA-256 (a commit writes the same CSV as another if the two agree);
3. with --floor, a bare gRPC stream of one of the ledger's entries as many times, one a message and then a
   thousand a message (a page message built at run time), to show what gRPC itself costs per message.

Each line: entries/s, and CPU µs per entry of the server process, of the client (this process) and of
PostgreSQL. Best of the runs and the spread are printed at the end. Code is imported from this file's tree, so
a copy of this file in a worktree of another commit measures that commit.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PATHS = [str(ROOT), str(ROOT / "clients" / "finance"), str(ROOT / "bench")]
sys.path[:0] = PATHS

import psutil  # noqa: E402
from bench_service import tree_cpu  # noqa: E402  (bench/bench_service.py)
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.auth.identity import Role  # noqa: E402
from jackpotd.auth.tokens import issue, new_key  # noqa: E402
from jackpotd.embedded import EmbeddedPostgres, free_port  # noqa: E402
from jackpotd.store import ledger  # noqa: E402

LINK = "bench-reports"  # bench_reports.py's link
QUICK_ENTRIES = 20_000
QUICK_DATA = "/tmp/jackpotd-export-ledger-quick"
GOALS_S = {"ExportLedgerPages": 10.0, "CSV": 20.0}  # issue 22: seconds for 1,000,000 entries


@dataclass(frozen=True)
class Run:
    entries: int
    wall_s: float
    server_s: float  # CPU of the server process
    client_s: float  # CPU of this process
    pg_s: float  # CPU of PostgreSQL, all its processes

    def line(self, name: str) -> str:
        per = 1e6 / self.entries
        return (f"  {name:<16} {self.entries:>9,} {self.wall_s:>7.2f} {self.entries / self.wall_s:>10,.0f} "
                f"{self.server_s * per:>8.1f} {self.client_s * per:>8.1f} {self.pg_s * per:>6.1f}")


async def serve(port: int) -> None:
    """ReportService as jackpotd serves it (interceptor, guard, ReportServicer over PostgresReports), without the
    other services and Redis, which ExportLedger does not use. The DSN and key come from the environment."""
    import grpc

    from jackpotd.api.gen.jackpot.v1 import report_pb2_grpc
    from jackpotd.api.interceptor import CallInterceptor
    from jackpotd.api.reports import ReportServicer
    from jackpotd.auth.guard import Guard
    from jackpotd.service.reports import ReportQueries
    from jackpotd.store.ledger.report_port import PostgresReports

    async def no_redis(link_id: str) -> tuple[dict[str, int], int]:
        return {}, 0

    pg = await ledger.connect_pool(os.environ["BENCH_DSN"], size=4)
    guard = Guard(bytes.fromhex(os.environ["BENCH_KEY"]), tables_by_token=False)
    server = grpc.aio.server(interceptors=[CallInterceptor(guard)])
    queries = ReportQueries(PostgresReports(pg, no_redis), lambda: time.time_ns() // 1_000_000)
    report_pb2_grpc.add_ReportServiceServicer_to_server(ReportServicer(queries), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("serving", flush=True)
    await server.wait_for_termination()


async def drain(target: str, token: str, last: int) -> tuple[int, int]:
    """ExportLedger of sequences 1..last, every message read: (entries, postings)."""
    from jackpot_finance.calls import export_ledger, report_stub

    from jackpotd.auth.client import bearer, open_channel
    channel = open_channel(target, interceptors=bearer(token))
    n = legs = 0
    try:
        async for e in export_ledger(report_stub(channel), LINK, from_sequence=1, to_sequence=last):
            n += 1
            legs += len(e.postings)
    finally:
        await channel.close(grace=None)
    return n, legs


async def drain_pages(target: str, token: str, last: int) -> tuple[int, int]:
    """ExportLedgerPages of sequences 1..last as pages of entries, every entry of every page visited: (entries,
    postings)."""
    from jackpot_finance.calls import export_pages, report_stub

    from jackpotd.auth.client import bearer, open_channel
    channel = open_channel(target, interceptors=bearer(token))
    n = legs = 0
    try:
        async for page in export_pages(report_stub(channel), LINK, from_sequence=1, to_sequence=last):
            for e in page:
                n += 1
                legs += len(e.postings)
    finally:
        await channel.close(grace=None)
    return n, legs


async def drain_columns(target: str, token: str, last: int) -> tuple[int, int]:
    """ExportLedgerPages of sequences 1..last as columns (jackpot_finance.calls.export_columns), every field of every
    page read into Python lists, as a client using them would: (entries, postings)."""
    from jackpot_finance.calls import export_columns, report_stub

    from jackpotd.auth.client import bearer, open_channel
    channel = open_channel(target, interceptors=bearer(token))
    n = legs = 0
    try:
        async for c in export_columns(report_stub(channel), LINK, from_sequence=1, to_sequence=last):
            fields = [list(getattr(c, name)) for name in COLUMNS]
            n += len(fields[0])
            legs += len(fields[-1])
    finally:
        await channel.close(grace=None)
    return n, legs


COLUMNS = ("sequence", "at_ms", "kind", "request_id", "table_id", "round_id", "hash_hex", "prev_hash_hex",
           "entry_json", "posting_count", "account", "amount_ucents", "balance_after_ucents")  # LedgerColumns'


async def export_csv(target: str, token: str, out: Path, last: int) -> tuple[int, int]:
    """`jackpot-report export --link LINK --from-seq 1 --to-seq LAST --out FILE` in this process: (entries, bytes
    written)."""
    from jackpot_finance import cli

    from jackpotd.auth.client import bearer, open_channel
    code = await cli.run(cli.parse(["export", "--link", LINK, "--target", target, "--from-seq", "1",
                                          "--to-seq", str(last), "--out", str(out)]),
                         lambda t: open_channel(t, interceptors=bearer(token)))
    if code:
        raise SystemExit(f"jackpot-report export exited {code}")
    return 0, out.stat().st_size


FLOOR_PAGE = 1_000  # entries a page of the floor's paged stream


def page_type() -> type[Any]:
    """The page message ExportLedgerPages sends."""
    from jackpotd.api.gen.jackpot.v1 import report_pb2
    return report_pb2.LedgerPage


async def serve_floor(port: int) -> None:
    """A bare grpc.aio stream (no database, no interceptor) of one sample entry, n times: one a message (`One`),
    or FLOOR_PAGE a message (`Pages`). The request: n (8 bytes), then the entry serialized."""
    import grpc

    from jackpotd.api.gen.jackpot.v1 import report_pb2
    page = page_type()

    def parse(b: bytes) -> tuple[int, Any]:
        return int.from_bytes(b[:8], "big"), report_pb2.LedgerEntry.FromString(b[8:])

    async def one(request: tuple[int, Any], context: Any) -> AsyncIterator[Any]:
        for _ in range(request[0]):
            yield request[1]

    async def pages(request: tuple[int, Any], context: Any) -> AsyncIterator[Any]:
        n, sample = request
        for at in range(0, n, FLOOR_PAGE):
            yield page(entries=[sample] * min(FLOOR_PAGE, n - at))

    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Floor", {
        "One": grpc.unary_stream_rpc_method_handler(one, parse, report_pb2.LedgerEntry.SerializeToString),
        "Pages": grpc.unary_stream_rpc_method_handler(pages, parse, page.SerializeToString)})])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("serving", flush=True)
    await server.wait_for_termination()


async def drain_floor(target: str, method: str, n: int, sample: bytes) -> int:
    """The floor's stream drained, every entry visited: entries."""
    import grpc

    from jackpotd.api.gen.jackpot.v1 import report_pb2
    paged = method == "Pages"
    decode = page_type().FromString if paged else report_pb2.LedgerEntry.FromString
    got = 0
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_stream(f"/bench.Floor/{method}", request_serializer=lambda b: b,
                                    response_deserializer=decode)(n.to_bytes(8, "big") + sample)
        async for message in call:
            for _ in (message.entries if paged else (message,)):
                got += 1
    return got


OTHER_EXPORT = """
import asyncio, sys
from jackpot_finance import cli
from jackpotd.auth.client import bearer, open_channel
target, token, out, last, link = sys.argv[1:6]
sys.exit(asyncio.run(cli.run(cli.parse(["export", "--link", link, "--target", target, "--from-seq", "1",
                                        "--to-seq", last, "--out", out]),
                             lambda t: open_channel(t, interceptors=bearer(token)))))
"""


def compare_csv(other: Path, target: str, token: str, root: Path, last: int) -> None:
    """`jackpot-report export` of this tree and of the tree `other` (another commit's worktree: its client, its
    rows), against the same server: the two files must be the same bytes."""
    mine, theirs = root / "mine.csv", root / "theirs.csv"
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(other), str(other / "clients" / "finance")])}
        subprocess.run([sys.executable, "-c", OTHER_EXPORT, target, token, str(theirs), str(last), LINK], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        env["PYTHONPATH"] = os.pathsep.join(PATHS)
        subprocess.run([sys.executable, "-c", OTHER_EXPORT, target, token, str(mine), str(last), LINK], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        a, b = sha256_of(mine), sha256_of(theirs)
        print(f"CSV of this tree {a[:16]} ({mine.stat().st_size:,} bytes), of {other} {b[:16]} "
              f"({theirs.stat().st_size:,} bytes): {'THE SAME' if a == b else 'DIFFERENT'}", flush=True)
        if a != b:
            raise SystemExit("the CSV differs from the other tree's")
    finally:
        mine.unlink(missing_ok=True)
        theirs.unlink(missing_ok=True)


async def read_store(dsn: str, last: int) -> None:
    """The store's read alone as columns (`export_columns.entry_columns`, in this process): every chunk decoded,
    nothing sent."""
    from jackpotd.store.ledger.export_columns import entry_columns

    pg = await ledger.connect_pool(dsn, size=4)
    try:
        async for _ in entry_columns(pg, LINK, 1, last):
            pass
    finally:
        await pg.close()


async def encode_pages(dsn: str, last: int) -> None:
    """What the server does for ExportLedgerPages with `columns` but the gRPC stream (in this process): the store's
    read, the pages built (jackpotd.api.ledger_pages.ledger_column_pages) and encoded."""
    from jackpotd.api.ledger_pages import ledger_column_pages
    from jackpotd.store.ledger.export_columns import entry_columns

    pg = await ledger.connect_pool(dsn, size=4)
    try:
        async for page in ledger_column_pages(LINK, 1, last, entry_columns(pg, LINK, 1, last)):
            page.SerializeToString()
    finally:
        await pg.close()


def sha256_of(path: Path) -> str:
    """The file's SHA-256 (two runs, or two commits, wrote the same CSV if they agree)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


async def measure(server: psutil.Process, pg: psutil.Process, call: object, entries: int) -> Run:
    s, p, c, w = tree_cpu(server.pid), tree_cpu(pg.pid), time.process_time(), time.perf_counter()
    await call  # type: ignore[misc]
    w, c = time.perf_counter() - w, time.process_time() - c
    return Run(entries, w, tree_cpu(server.pid) - s, c, tree_cpu(pg.pid) - p)


async def build_if_needed(server: EmbeddedPostgres, entries: int) -> int:
    """The ledger: built with bench_reports.py's builder unless --data already holds it. Its entry count."""
    from bench_reports import build

    await ledger.migrate(server.dsn)
    pg = await ledger.connect_pool(server.app_dsn(), size=2)
    try:
        have = int(await pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", LINK))
        if have == 0:
            started = time.perf_counter()
            await build(pg, entries, 2_000)
            print(f"built {entries:,} entries in {time.perf_counter() - started:.0f} s")
        elif have < entries:
            raise SystemExit(f"--data holds {have:,} entries, fewer than --entries {entries:,}: use another --data")
        return int(await pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", LINK))
    finally:
        await pg.close()


async def bench(args: argparse.Namespace, root: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
    proc: subprocess.Popen[bytes] | None = None
    try:
        total = await build_if_needed(pg, args.entries)
        total = min(total, args.export or total)
        key = new_key()
        port = free_port()
        env = {**os.environ, "BENCH_DSN": pg.app_dsn(), "BENCH_KEY": key.hex(),
               "PYTHONPATH": os.pathsep.join(PATHS)}
        proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], env=env, stdout=subprocess.PIPE)
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"serving":
            raise SystemExit("the server did not start")
        target, token = f"127.0.0.1:{port}", issue(key, Role.FINANCE, "bench")
        server, postgres = psutil.Process(proc.pid), psutil.Process(pg.proc.pid)  # type: ignore[union-attr]
        print(f"ledger of link {LINK}: exporting sequences 1..{total:,}; {args.runs} runs each; code from {ROOT}")
        print(f"  {'':<16} {'entries':>9} {'wall s':>7} {'entries/s':>10} {'srv µs':>8} {'cli µs':>8} {'PG µs':>6}"
              "  (CPU per entry)")
        results: dict[str, list[Run]] = {"ExportLedgerPages": [], "CSV": []}
        if args.pages_of_entries:
            results["Pages, entries"] = []
        if args.entries_too:
            results["ExportLedger"] = []
        out = root / "export.csv"
        for _ in range(0 if args.only_in_process else args.runs):
            r = await measure(server, postgres, drain_columns(target, token, total), total)
            results["ExportLedgerPages"].append(r)
            print(r.line("ExportLedgerPages"), flush=True)
            if args.pages_of_entries:
                r = await measure(server, postgres, drain_pages(target, token, total), total)
                results["Pages, entries"].append(r)
                print(r.line("Pages, entries"), flush=True)
            if args.entries_too:
                r = await measure(server, postgres, drain(target, token, total), total)
                results["ExportLedger"].append(r)
                print(r.line("ExportLedger"), flush=True)
            r = await measure(server, postgres, export_csv(target, token, out, total), total)
            results["CSV"].append(r)
            print(r.line("CSV"), f" {out.stat().st_size / 1e6:,.0f} MB sha256 {sha256_of(out)[:16]}", flush=True)
            out.unlink(missing_ok=True)
        if args.in_process or args.only_in_process:
            for name, step in (("store read", read_store), ("pages encoded", encode_pages)):
                results[name] = []
                for _ in range(args.runs):
                    r = await measure(server, postgres, step(pg.app_dsn(), total), total)
                    results[name].append(r)
                    print(r.line(name), flush=True)
        if args.compare_with:
            compare_csv(Path(args.compare_with), target, token, root, total)
        if args.floor:
            from jackpot_finance.calls import export_ledger, report_stub

            from jackpotd.auth.client import bearer, open_channel
            async with open_channel(target, interceptors=bearer(token)) as channel:
                sample = b""  # a commit of seven seats, as most of the ledger's entries are
                async for e in export_ledger(report_stub(channel), LINK, from_sequence=20, to_sequence=20):
                    sample = e.SerializeToString()
            floor_port = free_port()
            floor = subprocess.Popen([sys.executable, __file__, "--serve-floor", str(floor_port)], env=env,
                                     stdout=subprocess.PIPE)
            try:
                assert floor.stdout is not None
                floor.stdout.readline()
                bare = psutil.Process(floor.pid)
                for method, name in (("One", "bare, 1/message"), ("Pages", f"bare, {FLOOR_PAGE:,}/msg")):
                    results[name] = []
                    for _ in range(args.runs):
                        r = await measure(bare, postgres, drain_floor(f"127.0.0.1:{floor_port}", method, total,
                                                                      sample), total)
                        results[name].append(r)
                        print(r.line(name), flush=True)
            finally:
                floor.terminate()
                floor.wait(10)
        print("best (spread of entries/s over the runs):")
        for name, runs in results.items():
            if not runs:
                continue
            rates = sorted(r.entries / r.wall_s for r in runs)
            best = max(runs, key=lambda r: r.entries / r.wall_s)
            print(best.line(name), f" spread {rates[0]:,.0f}..{rates[-1]:,.0f};"
                  f" 1,000,000 entries in {1e6 / rates[-1]:.1f} s")
            goal_s = GOALS_S.get(name)
            if goal_s is not None:
                per = 1e6 / best.entries
                record(Figure("Export", f"{name}, {best.entries:,} entries", f"{rates[-1]:,.0f} entries/s "
                              f"(1,000,000 in {1e6 / rates[-1]:,.0f} s)", f"server {best.server_s * per:.0f} + client "
                              f"{best.client_s * per:.0f} + PG {best.pg_s * per:.0f} us/entry", "",
                              f"1,000,000 in at most {goal_s:.0f} s", 1e6 / rates[-1] <= goal_s))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        pg.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=200_000, help="ledger entries to build (default 200,000)")
    parser.add_argument("--data", metavar="DIR", help="keep the built ledger here and reuse it (default: a "
                                                      "temporary directory, removed)")
    parser.add_argument("--export", type=int, default=0, metavar="N",
                        help="export sequences 1..N only (default: the whole ledger)")
    parser.add_argument("--runs", type=int, default=3, help="measurements of each (default 3)")
    parser.add_argument("--pages-of-entries", action="store_true",
                        help="also time ExportLedgerPages as pages of LedgerEntry messages (the form before columns)")
    parser.add_argument("--entries-too", action="store_true",
                        help="also time ExportLedger (one message per entry; about 8 minutes for 1,000,000)")
    parser.add_argument("--in-process", action="store_true",
                        help="also time, in this process, the store's read alone and the pages built and encoded "
                             "without gRPC (their CPU is in the client's column)")
    parser.add_argument("--only-in-process", action="store_true", help="time only what --in-process times")
    parser.add_argument("--compare-with", metavar="TREE",
                        help="also export the CSV with the client of another worktree (e.g. the base commit's) "
                             "and check that the two files are the same bytes")
    parser.add_argument("--floor", action="store_true",
                        help="also time a bare gRPC stream of a sample entry (no database, no interceptor), one "
                             f"entry a message and {FLOOR_PAGE:,} a message: the floor of the stream's cost")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true",
                        help=f"make bench's version: {QUICK_ENTRIES:,} entries (built once in {QUICK_DATA}), one run")
    args = parser.parse_args()
    if args.quick:
        args.entries, args.runs, args.data = QUICK_ENTRIES, 1, args.data or QUICK_DATA
    if args.serve or args.serve_floor:
        asyncio.run(serve(args.serve) if args.serve else serve_floor(args.serve_floor))
        return
    root = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="jackpotd-bench-export-"))
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    try:
        asyncio.run(bench(args, root))
    finally:
        if not args.data:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
