"""The headline figures of a bench, for `make bench`'s one table: each bench records its figures here, and they
are appended as JSON lines to the file named by $BENCH_SUMMARY (nothing is written when it is unset)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "BENCH_SUMMARY"


@dataclass(frozen=True, slots=True)
class Figure:
    """One line of the table: what was measured, its result in the reader's units, the CPU it cost, the baseline
    measured in the same run (if any), the goal, and whether the goal was met (None: no goal at this size)."""

    bench: str
    figure: str
    result: str
    cpu: str = ""
    baseline: str = ""
    goal: str = ""
    met: bool | None = None


def record(figure: Figure) -> None:
    """Append `figure` to $BENCH_SUMMARY's file, if the variable names one."""
    path = os.environ.get(ENV)
    if path:
        with Path(path).open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(figure)) + "\n")


def load(path: Path) -> list[Figure]:
    """The figures recorded in `path`, in order."""
    if not path.exists():
        return []
    return [Figure(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
