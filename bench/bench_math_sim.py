"""jackpot-math's simulation (issue 24, part C): one path-year of the default link, and the default run (20 paths of
365 days, 20 Caribbean Stud tables × 6 seats × 60 hands an hour on the DOMAIN split link) against "a year of a
20-table link in under a minute".

Run: `make bench-math-sim` (or `python bench/bench_math_sim.py`; `--quick`: 30 days, 4 paths). Beside each figure,
its CPU per hit round and per wager, and its ratio to the baseline measured in the same run: the bare engine calls
the simulation cannot avoid (contribute_alike + price_round per hit round, on the same path's rounds and balances).
The workers' CPU is read from the forkserver that reaps them (/proc/<pid>/stat), so it is real, not estimated.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from collections.abc import Mapping
from multiprocessing import forkserver

import numpy as np
from summary import Figure, record  # bench/summary.py, beside this file

from jackpotd.domain import hands as h
from jackpotd.domain.contributions import contribute_alike
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rates import RateSet
from jackpotd.odds.play import play_of
from jackpotd.odds.sampling import draw_hit_rounds
from jackpotd.odds.simulate import path_spec, rounds_of, simulate

CONFIG = LinkConfig(
    "bench", SPLIT, 100, (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
    (RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "BENCH"),),
    {h.CARIBBEAN_STUD: default_paytable(h.CARIBBEAN_STUD, SPLIT)})


def baseline(days: int, repeats: int = 3) -> tuple[float, int]:
    """The best of `repeats` CPU seconds of the bare engine calls of one path (seed 1, path 0), and its hit rounds:
    each hit round's wagers contributed by contribute_alike and the round priced by price_round, nothing else."""
    play = play_of(CONFIG)
    spec = path_spec(CONFIG, play, days, None)
    drawn = draw_hit_rounds(np.random.default_rng(np.random.SeedSequence(1).spawn(1)[0]), spec.samplers,
                            days * 24 * play.hands_per_hour, play.seats_filled)
    cats = spec.samplers[0].draw.categories
    rounds = [(at, tuple(Hit(s, cats[c]) for s, c in zip(drawn.seats[f:f + n].tolist(),
                                                         drawn.categories[f:f + n].tolist(), strict=True)))
              for at, f, n in zip(drawn.round_index.tolist(), drawn.first.tolist(), drawn.count.tolist(), strict=True)]
    rates, pools, table, seats = spec.rates, CONFIG.pools, spec.paytables[0], play.seats_filled
    best = float("inf")
    for _ in range(repeats):
        balances: Mapping[str, int] = dict(spec.start)
        done = 0
        c0 = time.process_time()
        for at, hits in rounds:
            balances = contribute_alike(rates, pools, balances, 100, (at + 1 - done) * seats)[1].balances_after
            done = at + 1
            balances = price_round(table, pools, balances, hits, seats).balances_after
        best = min(best, time.process_time() - c0)
    return best, len(rounds)


def children_cpu() -> float:
    """CPU seconds of the forkserver's reaped children (the pool's workers): cutime + cstime of /proc/<pid>/stat."""
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--paths", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="30 days, 4 paths")
    args = parser.parse_args()
    if args.quick:
        args.days, args.paths = 30, 4
    play = play_of(CONFIG)
    wagers = rounds_of(play, args.days) * play.seats_filled
    base_cpu, hit_rounds = baseline(args.days)
    base_us = base_cpu / hit_rounds * 1e6
    print(f"default play: {play.tables} tables x {play.seats_filled} seats x {play.hands_per_hour} hands an hour, "
          f"{args.days} days: {wagers:,} wagers and {hit_rounds:,} hit rounds a path; {os.cpu_count()} cores")
    print(f"{'benchmark':44} {'wall s':>8} {'CPU s':>8} {'CPU us/hit round':>17} {'ns/wager':>9} {'x base':>7}")
    print(f"{'baseline: bare contribute_alike+price_round':44} {'':>8} {base_cpu:>8.2f} {base_us:>17.2f} "
          f"{base_cpu / wagers * 1e9:>9.2f} {1:>7.2f}")

    t0, c0 = time.perf_counter(), time.process_time()
    one = simulate(CONFIG, play, days=args.days, paths=1, seed=1, workers=1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    one_us = cpu / hit_rounds * 1e6
    print(f"{'one path, in process':44} {wall:>8.2f} {cpu:>8.2f} {one_us:>17.2f} {cpu / wagers * 1e9:>9.2f} "
          f"{one_us / base_us:>7.2f}")

    multiprocessing.set_forkserver_preload([])
    forkserver.ensure_running()
    k0 = children_cpu()
    t0, c0 = time.perf_counter(), time.process_time()
    run = simulate(CONFIG, play, days=args.days, paths=args.paths, seed=1)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0 + children_cpu() - k0
    rounds = hit_rounds * args.paths  # about (within a fraction of a percent): each path draws its own
    run_us = cpu / rounds * 1e6
    name = f"{args.paths} paths x {args.days} days, one worker a core"
    print(f"{name:44} {wall:>8.2f} {cpu:>8.2f} {run_us:>17.2f} {cpu / wagers / args.paths * 1e9:>9.2f} "
          f"{run_us / base_us:>7.2f}")
    print(f"=> rtp {run.rtp:.4%} (95% {run.rtp_ci95[0]:.4%} to {run.rtp_ci95[1]:.4%}); one path {one.rtp:.4%}")
    goal = 60.0 * args.days / 365 * args.paths / 20
    record(Figure("Math sim", "one path-year, in process" if args.days == 365 else f"one path of {args.days} days",
                  f"{one.elapsed_s:,.2f} s wall", f"{one_us:.1f} us/hit round",
                  f"bare engine {base_us:.1f} us/hit round"))
    record(Figure("Math sim", name, f"{wall:,.1f} s wall", f"{cpu:,.1f} CPU s, {run_us:.1f} us/hit round",
                  f"bare engine {base_us:.1f} us/hit round",
                  f"under {goal:,.0f} s" + ("" if goal == 60 else " (a minute, scaled to this size)"), wall < goal))


if __name__ == "__main__":
    main()
