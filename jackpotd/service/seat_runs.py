"""Seat lists stored as runs (issue 22, a 100,000-seat round): consecutive seats with equal values are one
`[first, last, *values]`, so an online round where every seat wagered alike stores a few runs, not a row per
seat. Rounds of at most RUNS_FROM seats are stored per seat, as they always were (their bytes never change)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from itertools import chain, compress, repeat
from operator import add, is_not, ne, or_
from typing import Any, TypeVar, cast, overload

T = TypeVar("T")

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


def seat_ranges(seats: Sequence[int]) -> list[tuple[int, int]]:
    """Ascending distinct seats as (first, last) ranges of consecutive seats: one step per seat, no object."""
    out: list[tuple[int, int]] = []
    if not seats:
        return out
    first = prev = seats[0]
    for seat in seats:
        if seat > prev + 1:
            out.append((first, prev))
            first = seat
        prev = seat
    out.append((first, prev))
    return out


def result_runs(seats: Sequence[int], hands: Mapping[int, str], reasons: Mapping[int, Enum | None]
                ) -> list[list[Any]]:
    """A settle's [first, last, hand, no_hand] runs (what `as_runs` makes of its SeatResult rows) over its wagered
    seats, ascending, without a Python step per seat: `hands` the categories evaluated (a few seats), `reasons`
    each seat's NoHand. Where a run starts is found column-wise in C; only the few runs are made in Python."""
    count = len(seats)
    if not count:
        return []
    why = list(map(reasons.get, seats))
    gap = map(ne, seats[1:], map(add, seats, repeat(1)))  # seat i is not seat i-1's next
    starts = {0, *compress(range(1, count), map(or_, gap, map(is_not, why[1:], why)))}
    for seat in hands:  # a seat with a hand starts a run, and so does the next, unless alike
        at = bisect_left(seats, seat)
        if at < count and seats[at] == seat:
            starts |= {i for i in (at, at + 1) if 0 < i < count
                       and hands.get(seats[i], "") != hands.get(seats[i - 1], "")}
    ordered = sorted(starts)
    return [[seats[a], seats[b - 1], hands.get(seats[a], ""), _value(why[a])]
            for a, b in zip(ordered, [*ordered[1:], count], strict=True)]


def _value(reason: Enum | None) -> Any:
    """A reason as stored: its value, "" for none."""
    return "" if reason is None else reason._value_


class RunRows(Sequence[T]):
    """Rows of seats alike held as their runs (`[first, last, *values]`, maximal, as `as_runs` makes them): a
    100,000-seat result is made and stored without a row per seat; a row is made only when one is read."""

    __slots__ = ("row", "runs")

    def __init__(self, runs: list[list[Any]], row: type[T]) -> None:
        self.runs = runs
        self.row = row  # a named tuple of (seat, *values)

    def __iter__(self) -> Iterator[T]:
        # each row a named tuple built in C, no Python step per seat (the values repeat along the run's seats)
        new = cast(Callable[[type[T], tuple[Any, ...]], T], tuple.__new__)
        return chain.from_iterable(map(new, repeat(self.row), zip(range(r[0], r[1] + 1), *map(repeat, r[2:]),
                                                                   strict=False)) for r in self.runs)

    def __len__(self) -> int:
        return sum(r[1] - r[0] + 1 for r in self.runs)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        return tuple(self)[i]  # rare (tests, small reads): a whole round's rows

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self))
