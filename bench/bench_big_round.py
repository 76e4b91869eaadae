"""One online round of 100,000 seats through the real service: CommitWagers, then SettleRound, each durable.

Run: `make bench-big-round`. Starts embedded PostgreSQL and Valkey and jackpotd in its own process, registers one
Caribbean Stud table of --seats seats, and plays --runs rounds: every seat wagers; at settle nine seats hold cards
dealt from one deck (a few forced hits: a royal flush, four of a kind, a flush, a full house, spread over the seat
range) and every other seat is stated FOLDED, as one deck allows. Prints each call's wall time (answered only once
the ledger holds it), the messages' sizes, and the CPU and peak RSS of each process: the client, the jackpotd
supervisor and writer, its workers, Valkey and PostgreSQL. Goals (issue 22, P3): commit and settle at most 300 ms.
The calls use the packed form of a big round (API.md Columns: `wager_columns`, `hand_columns`); `--rows` sends a
message per seat instead, as a server without the packed form needs.
`--py-spy FILE` also records jackpotd's collapsed stacks; `--quick` plays one round (make bench). To measure
another checkout (a base commit caps tables at 10,000 seats), copy this file into its bench/ and run it there with
PYTHONPATH at that checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
from stack import AUDIT, create_link, start_stack  # noqa: E402  (bench/stack.py)
from summary import Figure, record  # noqa: E402  (bench/summary.py)

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2, table_pb2_grpc  # noqa: E402

GOAL_MS = 300.0
GRPC_DEFAULT_MAX = 4 * 1024 * 1024  # gRPC's default largest message received
HITS = {  # seat as a fraction of the table -> cards: hits spread over the seat range (every other seat folds)
    0.0: ["As", "Ks", "Qs", "Js", "Ts"],  # royal flush
    0.25: ["9c", "9d", "9h", "9s", "2c"],  # four of a kind
    0.5: ["2h", "5h", "8h", "Jh", "Kh"],  # flush
    0.75: ["3c", "3d", "3h", "7c", "7d"],  # full house
}
OTHERS = [["4c", "6d", "8s", "Tc", "Qd"], ["4d", "6h", "8c", "Td", "Qh"], ["4h", "6s", "8d", "Th", "Qc"],
          ["4s", "6c", "2d", "Ad", "Kd"], ["5c", "5d", "7h", "7s", "Jc"]]  # nine seats with cards in all
DEALER = ["2s", "3s", "Jd", "Ac", "Kc"]


class Sampler:
    """The CPU seconds and the largest RSS of each process (and, but for the supervisor, its children) while a call
    runs, sampled every 20 ms in a thread so the event loop's timing is not disturbed."""

    def __init__(self, parts: dict[str, tuple[int, bool]]) -> None:
        self.parts = parts
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.own_cpu = 0.0

    def procs(self, name: str) -> list[psutil.Process]:
        pid, children = self.parts[name]
        try:
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)] if children else [root]
        except psutil.NoSuchProcess:
            return []

    def cpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name in self.parts:
            total = 0.0
            for p in self.procs(name):
                try:
                    t = p.cpu_times()
                    total += t.user + t.system
                except psutil.NoSuchProcess:
                    pass
            out[name] = total
        out["jackpotd workers"] -= out["jackpotd supervisor+writer"]
        return out

    def rss(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name in self.parts:
            total = 0
            for p in self.procs(name):
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += p.memory_info().rss
            out[name] = total
        out["jackpotd workers"] -= out["jackpotd supervisor+writer"]
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for k, v in self.rss().items():
                self.peak[k] = max(self.peak.get(k, 0), v)
        self.own_cpu = time.thread_time()  # the sampling itself, taken off the client's CPU

    def __enter__(self) -> Sampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def dealt(seats: int) -> dict[int, list[str]]:
    """Nine seats with cards from one deck (four of them hits); every other seat folds."""
    chosen = {max(1, round(f * seats)): cards for f, cards in HITS.items()}
    spare = [s for s in (2, seats // 3, seats // 2 + 1, seats - 1, seats) if s not in chosen]
    chosen.update(zip(spare, OTHERS, strict=False))
    return chosen


def settle_hands(seats: int) -> list[table_pb2.SeatHand]:
    """The settle's hands in rows (`--rows`): a SeatHand message per seat."""
    chosen = dealt(seats)
    return [table_pb2.SeatHand(seat=s, cards=chosen[s]) if s in chosen else
            table_pb2.SeatHand(seat=s, no_hand=table_pb2.FOLDED) for s in range(1, seats + 1)]


def hand_columns(seats: int) -> table_pb2.HandColumns:
    """The settle's hands in the packed form (API.md Columns): seats, cards joined by spaces, no_hand."""
    chosen = dealt(seats)
    every = range(1, seats + 1)
    return table_pb2.HandColumns(seats=every, cards=[" ".join(chosen.get(s, ())) for s in every],
                                 no_hand=[table_pb2.NO_HAND_UNSPECIFIED if s in chosen else table_pb2.FOLDED
                                          for s in every])


async def timed(sampler_parts: dict[str, tuple[int, bool]], call: Callable[[], Awaitable[Any]]
                ) -> tuple[float, Any, dict[str, float], dict[str, int]]:
    """Wall ms of one call, its answer, the CPU seconds each process spent meanwhile and their peak RSS."""
    sampler = Sampler(sampler_parts)
    before = sampler.cpu()
    with sampler:
        t0 = time.perf_counter()
        answer = await call()
        wall = (time.perf_counter() - t0) * 1000
    used = {k: v - before[k] for k, v in sampler.cpu().items()}
    used["client"] -= sampler.own_cpu
    return wall, answer, used, dict(sampler.peak)


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


async def run(args: argparse.Namespace) -> None:
    stack = start_stack("jackpotd-big-round-", args.workers)
    try:
        channel = stack.channel()
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        table = table_pb2_grpc.TableServiceStub(channel)
        link = "big"
        await create_link(admin, link, [], resets={"MAJOR": 1_000_000, "MINOR": 100_000})
        await admin.RegisterTable(admin_pb2.RegisterTableRequest(
            request_id=str(uuid.uuid4()), table_id="online-1", link_id=link, game="caribbean-stud",
            seats=args.seats, audit=AUDIT))
        await admin.FundPool(admin_pb2.FundPoolRequest(request_id=str(uuid.uuid4()), link_id=link, pool="MAJOR",
                                                       amount_cents=1_000_000, audit=AUDIT))
        assert stack.server.proc is not None and stack.pg.proc is not None and stack.valkey.proc is not None
        parts = {"client": (os.getpid(), False), "jackpotd supervisor+writer": (stack.server.proc.pid, False),
                 "jackpotd workers": (stack.server.proc.pid, True), "valkey": (stack.valkey.proc.pid, True),
                 "postgres": (stack.pg.proc.pid, True)}
        every = range(1, args.seats + 1)
        if args.rows:  # a message per seat, as before the packed form
            wagers: dict[str, Any] = {"wagers": [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True)
                                                 for s in every]}
            hands: dict[str, Any] = {"hands": settle_hands(args.seats)}
        else:
            wagers = {"wager_columns": table_pb2.WagerColumns(seats=every, amount_cents=[100] * args.seats,
                                                              ante_placed=[True] * args.seats)}
            hands = {"hand_columns": hand_columns(args.seats)}
        spy = None
        if args.py_spy:  # py-spy's collapsed stacks of jackpotd (every process) while the rounds run
            spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
                                    str(stack.server.proc.pid), "--subprocesses", "--format", "raw", "--rate", "250",
                                    "--output", args.py_spy], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)  # py-spy attaches
        results: dict[str, list[tuple[float, dict[str, float], dict[str, int]]]] = {"commit": [], "settle": []}
        sizes: dict[str, int] = {}
        for r in range(args.runs):
            commit_req = table_pb2.CommitWagersRequest(request_id=str(uuid.uuid4()), table_id="online-1",
                                                       round_id=f"r{r}", **wagers)
            settle_req = table_pb2.SettleRoundRequest(request_id=str(uuid.uuid4()), table_id="online-1",
                                                      round_id=f"r{r}", dealer_cards=DEALER, **hands)
            wall, committed, cpu, rss = await timed(parts, lambda req=commit_req: table.CommitWagers(req))
            assert len(committed.accepted if args.rows else committed.accepted_columns.seats) == args.seats
            results["commit"].append((wall, cpu, rss))
            wall, settled, cpu, rss = await timed(parts, lambda req=settle_req: table.SettleRound(req))
            assert len(settled.seats if args.rows else settled.seat_columns.seats) == args.seats, args.seats
            assert settled.payouts, settled.payouts
            results["settle"].append((wall, cpu, rss))
            sizes = {"CommitWagersRequest": commit_req.ByteSize(), "CommitWagersResponse": committed.ByteSize(),
                     "SettleRoundRequest": settle_req.ByteSize(), "SettleRoundResponse": settled.ByteSize()}
            print(f"run {r + 1}/{args.runs}: commit {results['commit'][-1][0]:,.0f} ms, "
                  f"settle {wall:,.0f} ms ({len(settled.payouts)} payouts)", flush=True)
        await channel.close()
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        print(f"\n{args.seats:,} seats, {args.runs} runs, {args.workers} worker(s), "
              f"{'rows (a message per seat)' if args.rows else 'columns (packed)'}; messages: "
              + ", ".join(f"{k} {mb(v)}" for k, v in sizes.items())
              + f" (gRPC's default limit {mb(GRPC_DEFAULT_MAX)})")
        print(f"{'call':8} {'best ms':>8} {'spread ms':>12} {'goal':>6}  CPU ms per call by process (mean)")
        for name, runs in results.items():
            walls = [w for w, _, _ in runs]
            cpu = {k: statistics.mean(run[1][k] for run in runs) * 1000 for k in parts}
            print(f"{name:8} {min(walls):>8,.0f} {f'{min(walls):,.0f}-{max(walls):,.0f}':>12} "
                  f"{'ok' if min(walls) <= GOAL_MS else 'MISS':>6}  "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in cpu.items()) + f"; total {sum(cpu.values()):,.0f}")
        peak = {k: max(run[2][k] for runs in results.values() for run in runs) for k in parts}
        print("peak RSS: " + ", ".join(f"{k} {v / 2**20:,.0f} MiB" for k, v in peak.items()))
        rss = ", ".join(f"{k} {v / 2**20:,.0f}" for k, v in peak.items())
        for name, runs in results.items():
            best = min(w for w, _, _ in runs)
            cpu_ms = sum(statistics.mean(run[1][k] for run in runs) for k in parts) * 1000
            form = "rows" if args.rows else "columns"
            record(Figure("P3 big round", f"{name} of {args.seats:,} seats ({form}), durable", f"{best:,.0f} ms",
                          f"{cpu_ms:,.0f} ms (all processes)", f"peak RSS MiB: {rss}" if name == "settle" else "",
                          f"at most {GOAL_MS:,.0f} ms", best <= GOAL_MS))
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seats", type=int, default=100_000, help="seats of the online table (default 100,000)")
    parser.add_argument("--runs", type=int, default=3, help="rounds committed and settled (default 3)")
    parser.add_argument("--py-spy", metavar="FILE", help="also record jackpotd with py-spy, collapsed stacks to FILE")
    parser.add_argument("--workers", type=int, default=1, help="jackpotd gRPC worker processes")
    parser.add_argument("--quick", action="store_true", help="one run (make bench)")
    parser.add_argument("--rows", action="store_true",
                        help="send a message per seat (wagers, hands), as before the packed form (API.md Columns)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
