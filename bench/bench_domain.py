"""Rules-core speed: five-card evaluations per second and the time to price a 7-seat round.

Run: `make bench-domain` (or `python bench/bench_domain.py`; `--quick` for `make bench`). Each figure is
the best of several repeats on one core, with the process's CPU time per operation beside it (the best
repeat's), so a figure taken on a shared machine can be judged. The baseline in the same run is a plain
Python loop that touches the same cards without classifying them, so the numbers can be compared across
machines.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from summary import Figure, record  # bench/summary.py, beside this file

from jackpotd.domain import evaluate_hand
from jackpotd.domain import hands as h
from jackpotd.domain.cards import card_name
from jackpotd.domain.money import UC_PER_CENT
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rounds import SeatHand, evaluate_round


def best_of(repeats: int, fn: Callable[[], int]) -> tuple[float, float, int]:
    """Best wall and best CPU time of `repeats` calls, and the count of operations one call performs."""
    best = cpu = float("inf")
    n = 0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        n = fn()
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return best, cpu, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=200_000, help="random five-card hands per repeat")
    parser.add_argument("--rounds", type=int, default=20_000, help="7-seat rounds priced per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tenth of the hands and rounds, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.hands, args.rounds, args.repeats = args.hands // 10, args.rounds // 10, 3
    rng = random.Random(42)
    hands = [tuple(rng.sample(range(52), 5)) for _ in range(args.hands)]
    texts = [[card_name(c) for c in hand] for hand in hands]
    cat5 = h.category5

    def baseline() -> int:
        total = 0
        for a, b, c, d, e in hands:
            total += a + b + c + d + e
        return len(hands)

    def parsed() -> int:
        for hand in hands:
            cat5(*hand)
        return len(hands)

    def from_text() -> int:
        for t in texts:
            evaluate_hand("caribbean-stud", t)
        return len(texts)

    # A busy 7-seat round: two straight flushes, a royal, a flush and three losing hands.
    pools = (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE))
    balances = {MAJOR: 5_000_000 * UC_PER_CENT, MINOR: 12_000 * UC_PER_CENT, RESERVE: 300_000 * UC_PER_CENT}
    paytable = default_paytable(h.CARIBBEAN_STUD, SPLIT)
    round_hits = [Hit(7, h.FLUSH), Hit(6, h.STRAIGHT_FLUSH), Hit(5, h.PAIR), Hit(4, h.ROYAL_FLUSH),
                  Hit(3, h.HIGH_CARD), Hit(2, h.STRAIGHT_FLUSH), Hit(1, h.TWO_PAIR)]
    seat_hands = [SeatHand(s + 1, tuple(card_name(c) for c in range(s * 5, s * 5 + 5))) for s in range(7)]

    def price() -> int:
        for _ in range(args.rounds):
            price_round(paytable, pools, balances, round_hits, 7)
        return args.rounds

    def evaluate_and_price() -> int:
        for _ in range(args.rounds):
            hits = evaluate_round(h.CARIBBEAN_STUD, 7, range(1, 8), seat_hands)
            price_round(paytable, pools, balances, hits, 7)
        return args.rounds

    rows = [
        ("baseline: loop over the same hands", baseline, "hands/s"),
        ("five-card evaluation, parsed cards", parsed, "hands/s"),
        ("evaluate_hand from card strings", from_text, "hands/s"),
        ("price a 7-seat round (4 hits)", price, "us/round"),
        ("parse+evaluate+price a 7-seat round", evaluate_and_price, "us/round"),
    ]
    print(f"{'benchmark':42} {'result':>14}            {'CPU/op':>9}")
    results: dict[str, tuple[float, float]] = {}  # name -> (value, CPU us per op)
    for name, fn, unit in rows:
        seconds, cpu, n = best_of(args.repeats, fn)
        value = n / seconds if unit == "hands/s" else seconds / n * 1e6
        results[name] = value, cpu / n * 1e6
        print(f"{name:42} {value:>14,.1f} {unit:9}  {cpu / n * 1e6:>9.3f} us")
    ten_k = 10_000 / (args.hands / best_of(args.repeats, parsed)[0]) * 1e3
    print(f"{'=> a 10,000-seat round evaluates in':42} {ten_k:>14,.2f} ms")
    # "On one core": hands per second of this process's CPU, which a busy machine does not lower as it does the wall.
    text, text_cpu = results["evaluate_hand from card strings"]
    record(Figure("P4 domain", "evaluate_hand from card strings",
                  f"{1 / text_cpu:,.2f} M hands per CPU-s ({text / 1e6:,.2f} M/s wall)", f"{text_cpu:.2f} us/hand",
                  f"parsed cards {1 / results['five-card evaluation, parsed cards'][1]:,.2f} M per CPU-s",
                  "at least 1 M hands/s on one core", 1 / text_cpu >= 1.0))
    round_us, round_cpu = results["parse+evaluate+price a 7-seat round"]
    record(Figure("P4 domain", "parse+evaluate+price a 7-seat round", f"{round_us:,.1f} us", f"{round_cpu:.1f} us"))


if __name__ == "__main__":
    main()
