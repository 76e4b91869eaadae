"""`make bench`: the quick version of every headline benchmark of the performance campaign, then one table.

Each bench runs in a process of its own (its output kept in a log file), records its headline figures through
bench/summary.py, and the table below gathers them: the result in the reader's units, the CPU it cost, the
baseline measured in the same run, and the goal. Quick runs are shorter and smaller than the full benches
(`make bench-service`, `bench-naive`, ...): their figures are noisier, and a goal set for a bigger ledger is
scaled to the quick size and says so. Figures differ from machine to machine: compare ratios, not rates.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from summary import ENV, Figure, load  # noqa: E402  (bench/summary.py)


@dataclass(frozen=True, slots=True)
class Bench:
    """One quick bench: its name in the table and its command line (the script and its arguments)."""

    name: str
    args: tuple[str, ...]


def benches(ledgers: Path) -> list[Bench]:
    """The quick benches, cheapest first; the rebuild bench builds its ledger once in `ledgers` and reuses it."""
    return [
        Bench("P4 domain", ("bench_domain.py", "--quick")),
        Bench("Admin return check", ("bench_admin_check.py", "--quick")),
        Bench("P1 service", ("bench_service.py", "--rounds", "2", "--seconds", "3")),
        Bench("P2 naive twin", ("bench_naive.py", "--rounds", "1", "--seconds", "3")),
        Bench("P3 big round", ("bench_big_round.py", "--quick")),
        Bench("Writer", ("bench_reports.py", "--entries", "30000", "--build-only")),
        Bench("P7 rebuild", ("bench_rebuild.py", "--entries", "30000", "--runs", "1", "--data",
                             str(ledgers / "rebuild"))),
        Bench("Export", ("bench_export.py", "--quick")),
        Bench("Math sim", ("bench_math_sim.py", "--quick")),
    ]


def run(bench: Bench, summary: Path, logs: Path) -> tuple[int, float, Path]:
    """Run one bench with $BENCH_SUMMARY set: (exit status, wall seconds, its log file)."""
    log = logs / (bench.name.replace(" ", "-").replace("+", "and") + ".log")
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run([sys.executable, str(HERE / bench.args[0]), *bench.args[1:]], stdout=out,
                              stderr=subprocess.STDOUT, env={**os.environ, ENV: str(summary)}, check=False)
    return done.returncode, time.perf_counter() - started, log


def table(figures: list[Figure], statuses: dict[str, tuple[int, float, Path]]) -> str:
    """The figures as one aligned text table, then each bench's status, time and log."""
    head = ("bench", "figure", "result", "CPU", "baseline (same run)", "goal", "met")
    rows = [head] + [(f.bench, f.figure, f.result, f.cpu, f.baseline, f.goal,
                      "-" if f.met is None else "yes" if f.met else "NO") for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    for name, (status, seconds, log) in statuses.items():
        state = "ok" if status == 0 else f"exit {status}"
        lines.append(f"{name:18} {state:8} {seconds:6.0f} s   {log}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only the benches whose name contains NAME (repeatable), e.g. --only export")
    parser.add_argument("--logs", type=Path, default=None, help="where each bench's output goes (default: a new "
                        "temporary directory, kept)")
    parser.add_argument("--ledgers", type=Path, default=Path(tempfile.gettempdir()) / "jackpotd-bench-quick",
                        help="where the rebuild bench keeps the 30,000-entry ledger it builds on first use (kept "
                        "for the next run; the export bench keeps its own in /tmp/jackpotd-export-ledger-quick)")
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="jackpotd-bench-"))
    logs.mkdir(parents=True, exist_ok=True)
    summary = logs / "summary.jsonl"
    summary.unlink(missing_ok=True)
    chosen = [b for b in benches(args.ledgers) if not args.only or any(o.lower() in b.name.lower() for o in args.only)]
    statuses: dict[str, tuple[int, float, Path]] = {}
    started = time.perf_counter()
    with tqdm(chosen, desc="make bench", unit=" bench", disable=None) as bar:
        for bench in bar:
            bar.set_postfix_str(bench.name)
            statuses[bench.name] = run(bench, summary, logs)
    print(table(load(summary), statuses))
    print(f"\n{len(chosen)} benches in {time.perf_counter() - started:,.0f} s; full runs: make bench-service, "
          "bench-naive, bench-big-round, bench-reports, bench-export, bench-rebuild, bench-domain")
    return 0 if all(s == 0 for s, _, _ in statuses.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
