"""Seat lists stored as runs (issue 22, a 100,000-seat round): consecutive seats with equal values are one
`[first, last, *values]`, so an online round where every seat wagered alike stores a few runs, not a row per
seat. Rounds of at most RUNS_FROM seats are stored per seat, as they always were (their bytes never change)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

RUNS_FROM = 64  # a round of more seats than any real table stores its seat lists as runs


def as_runs(rows: Iterable[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows of (seat, *values), seats ascending, as runs: a run goes on while the seat is the next one and its
    values are equal."""
    out: list[list[Any]] = []
    last_seat = -2
    last: tuple[Any, ...] = ()
    run: list[Any] = []
    for row in rows:
        seat = row[0]
        if seat == last_seat + 1 and row[1:] == last:
            run[1] = seat
        else:
            last = row[1:]
            run = [seat, seat, *last]
            out.append(run)
        last_seat = seat
    return out


def run_at(runs: Sequence[Sequence[Any]], starts: Sequence[int], seat: int) -> Sequence[Any] | None:
    """The values of `seat` in runs whose first seats are `starts` (ascending), or None when no run holds it."""
    i = bisect_right(starts, seat) - 1
    if i < 0 or seat > runs[i][1]:
        return None
    return runs[i][2:]


def run_seats(runs: Sequence[Sequence[Any]]) -> Iterator[int]:
    """Every seat the runs hold, in order, without a Python step per seat."""
    return chain.from_iterable(range(r[0], r[1] + 1) for r in runs)


def from_runs(runs: Sequence[Sequence[Any]]) -> Iterator[tuple[int, list[Any]]]:
    """Each seat of the runs and its values, in order; ValueError for a run that is not one."""
    for run in runs:
        first, last, *values = run
        if type(first) is not int or type(last) is not int or not 0 < first <= last:
            raise ValueError(f"a seat run must be [first, last, ...] with 0 < first <= last: {list(run)[:4]}")
        for seat in range(first, last + 1):
            yield seat, values
