"""Soak: Redis memory under a steady load of whole rounds. It must stay flat (issue: bounded Redis).

Run: `make bench-soak` (or `.venv/bin/python bench/bench_soak.py --rounds 100000`). Starts embedded
PostgreSQL and Valkey and jackpotd in its own process, then plays --rounds rounds on --tables tables at
once: a 7-seat commit, then a settle with seven dealt hands (a void every 20th round). Every few
seconds it samples Valkey's used_memory and key count. It prints the samples, the growth per round
over the whole run, and over the steady part of the run (after the first --retention-seconds, when
finished rounds and answered requests have started to leave Redis). Target: under 300 bytes a round.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import redis.asyncio as aioredis
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stack import create_link, start_stack  # noqa: E402  (bench/stack.py)

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2, table_pb2_grpc  # noqa: E402
from jackpotd.domain.cards import card_name  # noqa: E402
from jackpotd.store import keys  # noqa: E402

AUDIT = admin_pb2.Audit(actor="soak", reason="soak", approval_ref="SOAK")
DECK = [card_name(c) for c in range(52)]
TARGET_BYTES_PER_ROUND = 300


@dataclass
class Sample:
    seconds: float
    rounds: int
    used_memory: int
    keys: int


@dataclass
class Soak:
    rounds: int
    done: int = 0
    samples: list[Sample] = field(default_factory=list)
    numbers: itertools.count[int] = field(default_factory=itertools.count)


async def play(stub: table_pb2_grpc.TableServiceStub, table: str, soak: Soak, bar: tqdm[None]) -> None:
    """Whole rounds on one table until the soak has played its rounds."""
    rng = random.Random(table)
    wagers = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)]
    while (n := next(soak.numbers)) < soak.rounds:
        round_id = f"r{n}"
        await stub.CommitWagers(table_pb2.CommitWagersRequest(request_id=str(uuid.uuid4()), table_id=table,
                                                              round_id=round_id, wagers=wagers))
        if n % 20 == 19:
            await stub.VoidRound(table_pb2.VoidRoundRequest(request_id=str(uuid.uuid4()), table_id=table,
                                                            round_id=round_id, reason="misdeal"))
        else:
            deck = rng.sample(DECK, 35)
            await stub.SettleRound(table_pb2.SettleRoundRequest(
                request_id=str(uuid.uuid4()), table_id=table, round_id=round_id,
                hands=[table_pb2.SeatHand(seat=s, cards=deck[5 * (s - 1):5 * s]) for s in range(1, 8)]))
        soak.done += 1
        bar.update(1)


async def sample(redis: aioredis.Redis, soak: Soak, every: float, started: float) -> None:
    while soak.done < soak.rounds:
        info = await redis.info("memory")
        soak.samples.append(Sample(time.monotonic() - started, soak.done, int(info["used_memory"]),
                                   int(await redis.dbsize())))
        await asyncio.sleep(every)


async def rounds_gone(redis: aioredis.Redis, link: str, timeout: float) -> None:
    """Wait until Redis holds no round and no request record of the link (the retention let them all go), at
    most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [k for k in await redis.keys(keys.link_pattern(link)) if b":round:" in k or b":req:" in k]
        if not left:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(left)} rounds and request records of link {link} still in Redis after "
                             f"{timeout:.0f} s (the retention should have let them go)")
        await asyncio.sleep(0.5)


def per_round(a: Sample, b: Sample) -> float:
    return (b.used_memory - a.used_memory) / max(1, b.rounds - a.rounds)


async def run(args: argparse.Namespace) -> int:
    stack = start_stack("jackpotd-soak-", args.workers, "--retention-seconds", str(args.retention_seconds))
    redis = aioredis.Redis.from_url(stack.valkey.url)
    try:
        async with stack.channel() as channel:
            admin = admin_pb2_grpc.AdminServiceStub(channel)
            link = "soak"
            tables = [f"soak-{t}" for t in range(args.tables)]
            await create_link(admin, link, tables, {"MAJOR": 1_000_000, "MINOR": 100_000})
            for pool, cents in (("MAJOR", 1_000_000), ("MINOR", 100_000)):
                await admin.FundPool(admin_pb2.FundPoolRequest(request_id=str(uuid.uuid4()), link_id=link, pool=pool,
                                                               amount_cents=cents, audit=AUDIT))
            stub = table_pb2_grpc.TableServiceStub(channel)
            soak = Soak(args.rounds)
            started = time.monotonic()
            with tqdm(total=args.rounds, desc="rounds", unit="round", disable=None) as bar:
                await asyncio.gather(sample(redis, soak, args.sample_seconds, started),
                                     *(play(stub, t, soak, bar) for t in tables))
            elapsed = time.monotonic() - started
            await rounds_gone(redis, link, args.retention_seconds + 60)  # the last rounds leave too
            info = await redis.info("memory")
            soak.samples.append(Sample(time.monotonic() - started, soak.done, int(info["used_memory"]),
                                       int(await redis.dbsize())))
        print(f"{soak.done:,} rounds on {args.tables} tables in {elapsed:.0f} s ({soak.done / elapsed:,.0f} rounds/s), "
              f"retention {args.retention_seconds} s")
        print(f"{'seconds':>8} {'rounds':>9} {'used_memory':>13} {'keys':>7}")
        for s in soak.samples[:: max(1, len(soak.samples) // 20)] + soak.samples[-1:]:
            print(f"{s.seconds:>8.0f} {s.rounds:>9,} {s.used_memory:>13,} {s.keys:>7,}")
        first, last = soak.samples[0], soak.samples[-1]
        steady = [s for s in soak.samples if s.seconds >= args.retention_seconds + 5]
        whole = per_round(first, last)
        print(f"growth over the whole run: {last.used_memory - first.used_memory:+,} bytes, {whole:+.1f} bytes a round")
        if len(steady) >= 2:
            print(f"growth once steady (from {steady[0].seconds:.0f} s): {per_round(steady[0], last):+.1f} bytes "
                  f"a round; peak {max(s.used_memory for s in soak.samples):,} bytes")
        verdict = "met" if whole < TARGET_BYTES_PER_ROUND else "NOT met"
        print(f"target: under {TARGET_BYTES_PER_ROUND} bytes a round over the whole run: {verdict}")
        return 0 if whole < TARGET_BYTES_PER_ROUND else 1
    finally:
        await redis.aclose()
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100_000, help="whole rounds to play (default 100,000)")
    parser.add_argument("--tables", type=int, default=32, help="tables playing at once (default 32)")
    parser.add_argument("--retention-seconds", type=int, default=60,
                        help="jackpotd's retention of finished rounds and answers in Redis (default 60)")
    parser.add_argument("--sample-seconds", type=float, default=5, help="how often to sample Valkey's memory")
    parser.add_argument("--workers", type=int, default=1, help="jackpotd gRPC worker processes")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
