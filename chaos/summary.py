"""What each fault did to the tables, from the clients' log: per fault window, the acknowledgements per link, the
errors per gRPC code and each link's longest time without an acknowledgement; printed after the verdicts so a
person sees which fault stalled what (availability is reported, not judged: the verdicts judge)."""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from pathlib import Path

from .history import Ack, Error, Event, load


@dataclass(frozen=True, slots=True)
class Window:
    """A fault's span in wall-clock ms, and its description."""

    start_ms: int
    end_ms: int
    what: str


def longest_gap_ms(acks: list[int], start: int, end: int) -> int:
    """The longest stretch within [start, end] with no acknowledgement (the ends count as edges)."""
    points = [start, *sorted(t for t in acks if start <= t <= end), end]
    return max(b - a for a, b in itertools.pairwise(points))


def summarize(events: list[Event], windows: list[Window]) -> list[str]:
    """One line per window: acks per link, errors per code, and each link's longest stall in it."""
    acks: dict[str, list[int]] = collections.defaultdict(list)
    for e in events:
        if isinstance(e, Ack):
            acks[e.call.link].append(e.at_ms)
    lines = []
    for w in windows:
        counts = {link: sum(w.start_ms <= t <= w.end_ms for t in ts) for link, ts in sorted(acks.items())}
        errors = collections.Counter(e.code for e in events
                                     if isinstance(e, Error) and w.start_ms <= e.at_ms <= w.end_ms)
        stalls = {link: longest_gap_ms(ts, w.start_ms, w.end_ms) / 1000 for link, ts in sorted(acks.items())}
        lines.append(f"{w.what}: acks {counts}, errors {dict(errors) or 'none'}, longest stall s "
                     f"{ {k: round(v, 1) for k, v in stalls.items()} }")
    return lines


def summarize_file(history: Path, windows: list[Window]) -> list[str]:
    """`summarize` of the log at `history`."""
    events, _ = load(history)
    return summarize(events, windows)
