"""Finance on a busy day: reconciliation of a gaming day of 1,000,000 ledger entries (target: under 2 s), an
unaligned period, and the day's export (issue 12).

Run: `make bench-reports` (or `.venv/bin/python bench/bench_reports.py --entries 10000` to try it small).
Starts embedded PostgreSQL in a temporary directory (removed at the end), migrates it, and builds one link's
ledger with the real writer (`ledger.write_batch`, which adds the finance summaries in its append statement):
a create_link, its tables registered and its pools seeded the hour before the gaming day, then --entries
entries spread evenly over the gaming day (Australia/Sydney, from 06:00): 7-seat commits of $1 wagers made by
the service's own decision (decide_commit), and every 50th a pool funding (decide_fund). Each entry carries the
balances, reply and `after` that Redis's journal would hand the writer. Then, with the service's report code
(ReportQueries over PostgresReports, as ReportService calls it, without gRPC):

1. GetReconciliation of the gaming day, 5 times (the first just after building, then warm), and of the day
   less 7 minutes at each end (ragged quarter hours read from the entries themselves), 5 times; every
   identity must hold.
2. ExportLedger of the day: the entries read page by page (reports.entries), then again with each made into
   the LedgerEntry proto and written as CSV rows by jackpot-report (jackpot_finance.spreadsheet.export_rows).
3. The summary rows the day's reconciliation reads.

Each figure: wall seconds in this process (the service's side of the call), this process's CPU seconds
(time.process_time), and PostgreSQL's CPU seconds (all of the cluster's processes). Exits 1 if a
reconciliation of the day takes 2 s or more, or an identity does not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo

import orjson
import psutil
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_service import tree_cpu  # noqa: E402  (bench/bench_service.py)
from jackpot_finance.spreadsheet import ENCODING, EXPORT_COLUMNS, export_rows  # noqa: E402
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.api.gen.jackpot.v1 import report_pb2  # noqa: E402
from jackpotd.domain.gaming_day import day_bounds  # noqa: E402
from jackpotd.domain.link import LinkConfig, TableConfig  # noqa: E402
from jackpotd.domain.paytable import default_paytable  # noqa: E402
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec  # noqa: E402
from jackpotd.domain.rates import RateSet  # noqa: E402
from jackpotd.domain.rounds import Wager  # noqa: E402
from jackpotd.embedded import EmbeddedPostgres  # noqa: E402
from jackpotd.service.commands import Audit, Commit, CreateLink, Fund, RegisterTable, Request  # noqa: E402
from jackpotd.service.decide.admin import AdminState, decide_config, decide_fund  # noqa: E402
from jackpotd.service.decide.table import TableState, decide_commit  # noqa: E402
from jackpotd.service.entries import encode_entry  # noqa: E402
from jackpotd.service.ports import NEW_LINK, Step  # noqa: E402
from jackpotd.service.replies import encode_result  # noqa: E402
from jackpotd.service.reports import ReconciliationView, ReportQueries  # noqa: E402
from jackpotd.store import ledger  # noqa: E402
from jackpotd.store.ledger import reports  # noqa: E402
from jackpotd.store.ledger.report_port import PostgresReports  # noqa: E402
from jackpotd.store.ledger.summaries import time_of  # noqa: E402

LINK = "bench-reports"
GAME = "caribbean-stud"
TABLES = [f"bench-table-{n}" for n in range(1, 9)]
SEATS = 7
FUND_EVERY = 50  # every 50th entry of the day funds a pool; the others are commits
FUND_CENTS = 5_000
TIME_ZONE = "Australia/Sydney"
DAY_START = "06:00"
DAY = date(2025, 5, 14)  # a Wednesday of 24 hours in Sydney (AEST, no clock change)
EDGE_MS = 7 * 60_000  # the unaligned period: the day less 7 minutes at each end
RUNS = 5
TARGET_S = 2.0
AUDIT = Audit("bench", "bench_reports", "BENCH-1")
T = TypeVar("T")


def link_config() -> LinkConfig:
    """The benches' link (bench/stack.py create_link), in Sydney with its gaming day from 06:00."""
    return LinkConfig(
        link_id=LINK, mode=SPLIT, wager_cents=100,
        pools=(PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "BENCH-1"),),
        paytables={GAME: default_paytable(GAME, SPLIT)}, time_zone=TIME_ZONE, gaming_day_start=DAY_START)


class Journal:
    """The link's journal as Redis's atomic step (store/apply.lua) hands it to the ledger writer: each step's
    entry with the pools' balances after it, the stored reply, and the request it follows."""

    def __init__(self) -> None:
        self.config = link_config()
        self.version = NEW_LINK  # the config's version: the sequence of the entry that last changed it
        self.seq = 0
        self.balances: dict[str, int] = {}  # pool -> µ¢, as the balances hash holds them
        self.after = ""  # the identity of the last request

    def append(self, step: Step) -> ledger.JournalEntry:
        self.seq += 1
        for pool, delta in step.deltas:
            self.balances[pool] = self.balances.get(pool, 0) + delta
        if step.new_config:
            self.config, self.version = LinkConfig.from_dict(orjson.loads(step.new_config)), str(self.seq)
        flat = [str(x) for pool, uc in self.balances.items() for x in (pool, uc)]
        balances = orjson.dumps(flat).decode() if flat else "{}"  # cjson writes an empty HGETALL as {}
        reply = (f'{{"hash":"{step.request_hash}","seq":{self.seq},"result":{encode_result(step.result)},'
                 f'"balances":{balances},"content":{step.canonical_content}}}')
        entry = ledger.JournalEntry(LINK, self.seq, encode_entry(step.entry), dict(self.balances), reply,
                                    self.after)
        self.after = step.identity
        return entry

    def setup(self, now_ms: int) -> list[ledger.JournalEntry]:
        """The link created, its tables registered and its pools seeded, as demo.py does it."""
        state = AdminState(now_ms)
        out = [self.append(decide_config(CreateLink(request({"link": LINK}), self.config, AUDIT), self.config,
                                         self.version, state))]
        for table in TABLES:
            register = RegisterTable(request({"table_id": table}), LINK, TableConfig(table, GAME, SEATS), AUDIT)
            out.append(self.append(decide_config(register, self.config, self.version, state)))
        for pool, cents in ((MAJOR, 1_000_000), (MINOR, 100_000)):
            seed = Fund(request({"pool": pool, "amount_cents": cents}), LINK, pool, cents, AUDIT)
            out.append(self.append(decide_fund(seed, self.config, self.version, state)))
        return out

    def entry(self, n: int, now_ms: int) -> ledger.JournalEntry:
        """The day's nth entry: a pool funded, or a table's round committed with a $1 wager on every seat."""
        if n % FUND_EVERY == FUND_EVERY - 1:
            pool = MAJOR if n // FUND_EVERY % 2 else MINOR
            fund = Fund(request({"pool": pool, "amount_cents": FUND_CENTS}), LINK, pool, FUND_CENTS, AUDIT)
            return self.append(decide_fund(fund, self.config, self.version, AdminState(now_ms)))
        table, round_id = TABLES[n % len(TABLES)], f"r{n}"
        wagers = [Wager(seat, 100, True) for seat in range(1, SEATS + 1)]
        content = {"table_id": table, "round_id": round_id,  # as TableServicer.CommitWagers names it
                   "wagers": [[w.seat, w.amount_cents, w.ante_placed] for w in wagers]}
        commit = Commit(Request(str(uuid.uuid4()), content), table, round_id, wagers)
        state = TableState(now_ms, self.balances, None, None)  # no round live, none in the ledger
        return self.append(decide_commit(commit, self.config, self.version, state))


def request(content: dict[str, object]) -> Request:
    return Request(str(uuid.uuid4()), content)


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float  # this process
    pg_cpu_s: float  # PostgreSQL, all its processes


class Meter:
    """Wall, this process's CPU and PostgreSQL's CPU around a call."""

    def __init__(self, postgres_pid: int) -> None:
        self.postgres = psutil.Process(postgres_pid)

    def pg_cpu(self) -> float:
        return tree_cpu(self.postgres.pid)

    async def time(self, call: Callable[[], Awaitable[T]]) -> tuple[T, Timed]:
        pg, cpu, wall = self.pg_cpu(), time.process_time(), time.perf_counter()
        value = await call()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return value, Timed(wall, cpu, self.pg_cpu() - pg)


@contextmanager
def postgres() -> Iterator[EmbeddedPostgres]:
    """Embedded PostgreSQL in a new temporary directory, stopped and removed at the end (as bench/stack.py
    starts it, without the Valkey and jackpotd this bench does not need)."""
    root = Path(tempfile.mkdtemp(prefix="jackpotd-bench-reports-"))
    os.chmod(root, 0o755)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg = EmbeddedPostgres(root / "postgres" / "data").start()
        try:
            yield pg
        finally:
            pg.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def day_ms() -> tuple[int, int]:
    begin, end = day_bounds(DAY, DAY_START, ZoneInfo(TIME_ZONE))
    return int(begin.timestamp()) * 1000, int(end.timestamp()) * 1000


@dataclass
class Built:
    """How the build went: entries of the day dated in the unaligned period, and the CPU seconds of this process
    spent making the entries (the service's decisions) apart from those spent in the writer (write_batch)."""

    in_period: int = 0
    making_s: float = 0.0
    writing_s: float = 0.0


async def build(pg: ledger.Pool, entries: int, batch: int, journal: Journal | None = None) -> Built:
    """The ledger of the link: the setup, then `entries` entries over the gaming day, `batch` a write_batch call;
    the next batch is made while PostgreSQL appends the last (the writer's own Python runs between)."""
    begin, end = day_ms()
    journal = journal or Journal()
    cache: ledger.HeadCache = {}
    built = Built()
    async with pg.acquire() as conn:
        out = await ledger.write_batch(conn, journal.setup(begin - 3_600_000), cache)
        pending: asyncio.Task[ledger.Appended] | None = None
        with tqdm(total=entries, desc="ledger", unit=" entries", unit_scale=True, disable=None) as bar:
            for first in range(0, entries + batch, batch):
                cpu = time.process_time()
                items = []
                for n in range(first, min(entries, first + batch)):
                    at = begin + n * (end - begin) // entries
                    built.in_period += begin + EDGE_MS <= at < end - EDGE_MS
                    items.append(journal.entry(n, at))
                built.making_s += time.process_time() - cpu
                cpu = time.process_time()
                if pending is not None:
                    out = await pending
                    if out.refused:
                        raise SystemExit(f"the writer refused the ledger: {out.refused}")
                    bar.update(sum(len(w) for w in out.written.values()))
                pending = asyncio.create_task(ledger.write_batch(conn, items, cache)) if items else None
                await asyncio.sleep(0)  # the writer's Python runs up to sending the statement
                built.writing_s += time.process_time() - cpu
    return built


def show(name: str, entries: int, runs: list[Timed]) -> None:
    """One line per run, then min and median: entries, wall s, entries/s, CPU s of this process and PostgreSQL."""
    print(f"{name}: {entries:,} entries")
    print(f"  {'run':>6} {'wall s':>8} {'entries/s':>12} {'CPU s':>7} {'PG CPU s':>9}")
    for i, t in enumerate(runs, 1):
        label = "first" if i == 1 else str(i)
        print(f"  {label:>6} {t.wall_s:>8.3f} {entries / t.wall_s:>12,.0f} {t.cpu_s:>7.3f} {t.pg_cpu_s:>9.3f}")
    walls = [t.wall_s for t in runs]
    print(f"  min {min(walls):.3f} s, median {statistics.median(walls):.3f} s, max {max(walls):.3f} s")


def holds(name: str, view: ReconciliationView, expected: int) -> bool:
    r = view.reconciliation
    ok = r.all_hold and view.entries == expected
    if not ok:
        print(f"  {name}: {'every identity holds' if r.all_hold else 'NOT every identity holds'}; "
              f"{view.entries:,} entries counted, {expected:,} dated in the period")
        for i in r.identities:
            print(f"    {'ok  ' if i.holds else 'FAIL'} {i.name}: {i.expression}")
    return ok


async def no_redis(link_id: str) -> tuple[dict[str, int], int]:
    return {}, 0  # VerifyLedger's view of Redis: not benchmarked


async def run(args: argparse.Namespace) -> int:
    with postgres() as server:
        await ledger.migrate(server.dsn)
        pg = await ledger.connect_pool(server.app_dsn(), size=2)
        assert server.proc is not None  # started
        meter = Meter(server.proc.pid)
        try:
            started = time.perf_counter()
            pg_cpu = meter.pg_cpu()
            built = await build(pg, args.entries, args.batch)
            built_s, pg_cpu, in_period = time.perf_counter() - started, meter.pg_cpu() - pg_cpu, built.in_period
            total = int(await pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", LINK))
            summed = int(await pg.fetchval("SELECT sum(entries) FROM flow_buckets WHERE link_id = $1", LINK))
            postings = int(await pg.fetchval("SELECT count(*) FROM postings WHERE link_id = $1", LINK))
            print(f"built {total:,} entries ({postings:,} postings) in {built_s:.0f} s "
                  f"({args.entries / built_s:,.0f} entries/s); flow_buckets count {summed:,}"
                  f"{'' if summed == total else ' — NOT the entries written'}")
            print(f"  CPU per entry: making the entries {built.making_s / args.entries * 1e6:.0f} µs; appending them: "
                  f"writer (write_batch) {built.writing_s / args.entries * 1e6:.0f} µs, PostgreSQL "
                  f"{pg_cpu / args.entries * 1e6:.0f} µs ({args.entries / (built.writing_s + pg_cpu):,.0f} entries/s)")
            append_rate = args.entries / (built.writing_s + pg_cpu)
            record(Figure("Writer", f"bulk append (write_batch, {args.batch:,} a call)",
                          f"{append_rate:,.0f} entries per CPU-s of writer+PG ({args.entries / built_s:,.0f}/s wall "
                          "with the making)",
                          f"writer {built.writing_s / args.entries * 1e6:.0f} + PG {pg_cpu / args.entries * 1e6:.0f} "
                          "us/entry", f"making the entries {built.making_s / args.entries * 1e6:.0f} us/entry",
                          "at least 20,000 entries/s", append_rate >= 20_000))
            if args.build_only:
                return 0 if summed == total else 1
            ok = summed == total

            queries = ReportQueries(PostgresReports(pg, no_redis), lambda: time.time_ns() // 1_000_000)
            begin, end = day_ms()
            print(f"\ngaming day {DAY} of link {LINK} ({TIME_ZONE}, from {DAY_START}): "
                  f"[{time_of(begin):%Y-%m-%d %H:%M} UTC, {time_of(end):%Y-%m-%d %H:%M} UTC)")
            day_runs: list[Timed] = []
            for _ in range(RUNS):
                view, t = await meter.time(lambda: queries.reconciliation(LINK, DAY.isoformat(), 0, 0))
                day_runs.append(t)
                ok = holds("the day", view, args.entries) and ok
            show("reconciliation of the gaming day", view.entries, day_runs)
            slowest = max(t.wall_s for t in day_runs)
            print(f"  identities hold: {view.reconciliation.all_hold}; wagers {view.reconciliation.link.wagers:,}, "
                  f"sequences {view.first_seq:,}..{view.last_seq:,}; {len(view.chart)} chart points")

            period_runs: list[Timed] = []
            for _ in range(RUNS):
                view, t = await meter.time(lambda: queries.reconciliation(LINK, "", begin + EDGE_MS, end - EDGE_MS))
                period_runs.append(t)
                ok = holds("the unaligned period", view, in_period) and ok
            show(f"\nreconciliation of [day start + {EDGE_MS // 60_000} min, day end − {EDGE_MS // 60_000} min)",
                 view.entries, period_runs)
            print(f"  identities hold: {view.reconciliation.all_hold}")

            first, last = await reports.seq_range(pg, LINK, 0, 0, begin, end)
            read = await meter.time(lambda: read_entries(pg, first, last))
            out = server.data_dir.parent.parent / "export.csv"  # in the temporary directory postgres() removes
            try:
                written = await meter.time(lambda: export_csv(pg, first, last, out))
                size = out.stat().st_size
            finally:
                out.unlink(missing_ok=True)
            print(f"\nexport of the day: sequences {first:,}..{last:,}")
            print(f"  {'':<34} {'entries':>10} {'postings':>10} {'wall s':>8} {'entries/s':>10} {'CPU s':>7} "
                  f"{'PG CPU s':>9}")
            for name, ((n, legs), t) in (("read (reports.entries)", read),
                                         ("protos + CSV (ExportLedger, CSV)", written)):
                print(f"  {name:<34} {n:>10,} {legs:>10,} {t.wall_s:>8.2f} {n / t.wall_s:>10,.0f} {t.cpu_s:>7.2f} "
                      f"{t.pg_cpu_s:>9.2f}")
            print(f"  CSV file: {size:,} bytes ({size / 1e6:,.1f} MB)")

            span = (time_of(begin), time_of(end))
            totals = await pg.fetchval("SELECT count(*) FROM flow_totals WHERE link_id = $1 AND bucket >= $2 "
                                       "AND bucket < $3", LINK, *span)
            buckets = await pg.fetchval("SELECT count(*) FROM flow_buckets WHERE link_id = $1 AND bucket >= $2 "
                                        "AND bucket < $3", LINK, *span)
            print(f"\nsummary rows of the day: flow_totals {totals:,}, flow_buckets {buckets:,} "
                  f"(instead of {args.entries:,} entries)")
            met = slowest < TARGET_S
            print(f"\ntarget: reconciliation of the day under {TARGET_S:.0f} s (slowest of {RUNS} runs: "
                  f"{slowest:.3f} s): {'met' if met else 'NOT met'}; every identity holds: {'yes' if ok else 'NO'}")
            return 0 if met and ok else 1
        finally:
            await pg.close()


async def read_entries(pg: ledger.Pool, first: int, last: int) -> tuple[int, int]:
    """The entries [first, last] as ExportLedger reads them: (entries, postings)."""
    n = legs = 0
    async for page in reports.entries(pg, LINK, first, last):
        n += len(page)
        legs += sum(len(e.postings) for e in page)
    return n, legs


async def export_csv(pg: ledger.Pool, first: int, last: int, path: Path) -> tuple[int, int]:
    """The entries [first, last] as ExportLedger streams them (a LedgerEntry each) written by jackpot-report's CSV
    export: (entries, postings)."""
    n = legs = 0
    seen: dict[str, dict[str, object]] = {}  # as jackpot-report keeps it: a decision's row names its hit's hand
    with path.open("w", encoding=ENCODING, newline="") as f, \
            tqdm(total=last - first + 1, desc="export", unit=" entries", unit_scale=True, disable=None) as bar:
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(EXPORT_COLUMNS)
        async for page in reports.entries(pg, LINK, first, last):
            for e in page:
                entry = report_pb2.LedgerEntry(
                    link_id=LINK, sequence=e.seq, at_ms=e.at_ms, kind=e.kind, request_id=e.request_id,
                    table_id=e.table_id, round_id=e.round_id, hash_hex=e.hash_hex, prev_hash_hex=e.prev_hash_hex,
                    entry_json=e.entry, first_sequence=first, last_sequence=last,
                    postings=[report_pb2.LedgerPosting(account=a, amount_ucents=uc, balance_after_ucents=after)
                              for a, uc, after in e.postings])
                writer.writerows(export_rows(entry, seen))
                legs += len(entry.postings)
            n += len(page)
            bar.update(len(page))
    return n, legs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="ledger entries in the gaming day (default 1,000,000)")
    parser.add_argument("--batch", type=int, default=2_000, help="entries a write_batch call (default 2,000)")
    parser.add_argument("--build-only", action="store_true", help="build the ledger and stop (the writer's figures)")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
