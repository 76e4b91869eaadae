"""The cost of issue 33's return check on an admin call: CreateLink and SetPaytable decided (the pure decision path,
service/decide/admin.py decide_config) with the check, and the same calls with the check replaced by a no-op, in
the same run; the difference is the check's added cost per call.

Run: `python bench/bench_admin_check.py` (`--quick` for fewer calls). Each figure is the best of several repeats
on one core, with the process's CPU time per call (the best repeat's) beside it. The link has all four games, so
every call prices four paytables at their reset values, hold'em's 7-card counts included (constants: never
counted on a call).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bench_domain import best_of  # bench/bench_domain.py, beside this file
from summary import Figure, record  # bench/summary.py, beside this file

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import PaytableEntry, default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.service import commands as c
from jackpotd.service.decide import admin
from jackpotd.service.decide.admin import AdminState, decide_config
from jackpotd.service.decide.returns import ReturnsVerdict
from jackpotd.service.ports import NEW_LINK

AUDIT = c.Audit("admin:bench", "bench", "BENCH-1")


def no_check(cmd: c.ConfigCommand, config: LinkConfig) -> ReturnsVerdict | None:
    """The call path without the check."""
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5_000, help="admin decisions per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tenth of the calls, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.repeats = args.calls // 10, 3
    config = LinkConfig(
        link_id="bench", mode=SPLIT, wager_cents=100,
        pools=(PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "BENCH-1"),),
        paytables={g: default_paytable(g, SPLIT) for g in h.GAMES})
    state = AdminState(1_700_000_000_000)
    create = c.CreateLink(c.Request("create", {"x": 1}), config, AUDIT, c.RtpOverride("BENCH-1"))
    entries = [PaytableEntry(h.ROYAL_FLUSH, MAJOR, 0, 1_000_000), PaytableEntry(h.FLUSH, MINOR, 5_000)]
    paytable = c.SetPaytable(c.Request("paytable", {"x": 2}), "bench", h.CARIBBEAN_STUD, entries, AUDIT,
                             c.RtpOverride("BENCH-1"))

    def calls(cmd: c.ConfigCommand, version: str) -> Callable[[], int]:
        def run() -> int:
            for _ in range(args.calls):
                decide_config(cmd, config, version, state)
            return args.calls
        return run

    checked = admin.require_returns
    rows: list[tuple[str, float, float, float, float]] = []  # name, with (wall, cpu), without (wall, cpu) us/call
    for name, cmd, version in (("CreateLink, 4 games", create, NEW_LINK), ("SetPaytable, 4 games", paytable, "v1")):
        admin.require_returns = checked
        wall, cpu, n = best_of(args.repeats, calls(cmd, version))
        admin.require_returns = no_check
        wall0, cpu0, _ = best_of(args.repeats, calls(cmd, version))
        admin.require_returns = checked
        rows.append((name, wall / n * 1e6, cpu / n * 1e6, wall0 / n * 1e6, cpu0 / n * 1e6))
    print(f"{'decide_config':24} {'with check':>12} {'without':>12} {'added':>12}   (CPU us per call)")
    for name, _, cpu, _, cpu0 in rows:
        print(f"{name:24} {cpu:>12.1f} {cpu0:>12.1f} {cpu - cpu0:>12.1f}")
    for name, _, cpu, _, cpu0 in rows:
        record(Figure("Admin return check", f"{name}: added by the check", f"{cpu - cpu0:,.1f} us per call",
                      f"{cpu:,.1f} us with, CPU", f"{cpu0:,.1f} us without, same run"))


if __name__ == "__main__":
    main()
