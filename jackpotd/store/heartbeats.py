"""The one codec of the ledger writers' heartbeats (keys.health, keys.HEALTH_BEFORE_SHARDS): a typed `WriterHealth`
and its JSON, which every version writes and reads (a rolling upgrade mixes them), and all live ones merged.

    {"at_ms": 1700000000000, "shards": [0, 2], "problems": {"<link>": "<why>"}, "stalled": "<why>"}

"stalled" is there only while the writer has been failing to append; a writer of a version before shards wrote
no "shards" (it wrote every link)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class WriterHealth:
    """One writer's heartbeat: when, the shards it writes, the links it cannot serve (why), and why it has been
    failing to append for seconds, if it has."""

    at_ms: int
    shards: tuple[int, ...]
    problems: Mapping[str, str] = field(default_factory=dict)
    stalled: str | None = None


@dataclass(frozen=True, slots=True)
class WritersHealth:
    """The live writers' heartbeats as one: the shards written by writers that append, the shards of those that
    have been failing to (why), every problem by link, and `stalled` when none appends."""

    at_ms: int
    shards: tuple[int, ...]
    stalled_shards: Mapping[int, str] = field(default_factory=dict)
    problems: Mapping[str, str] = field(default_factory=dict)
    stalled: str | None = None


def encode(health: WriterHealth) -> str:
    """The heartbeat's JSON, key for key what every version writes."""
    report: dict[str, Any] = {"at_ms": health.at_ms, "shards": list(health.shards), "problems": dict(health.problems)}
    if health.stalled is not None:
        report["stalled"] = health.stalled
    return json.dumps(report)


def decode(raw: str | bytes, *, shards: Iterable[int] = ()) -> WriterHealth:
    """A heartbeat from its JSON; one that names no shards writes `shards` (for the key that writers of versions
    before shards set: every shard). ValueError naming the text if it is not a heartbeat."""
    try:
        report = json.loads(raw)
        stalled = report.get("stalled")
        return WriterHealth(int(report["at_ms"]), tuple(int(s) for s in report.get("shards", shards)),
                            {str(k): str(v) for k, v in (report.get("problems") or {}).items()},
                            str(stalled) if stalled else None)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"malformed writer heartbeat {raw[:300]!r}: {e}") from e


def merged(reports: Sequence[WriterHealth]) -> WritersHealth | None:
    """The heartbeats as one (WritersHealth); None without any. A stalled writer's shards count as unwritten."""
    if not reports:
        return None
    appending = [r for r in reports if not r.stalled]
    return WritersHealth(
        at_ms=max(r.at_ms for r in reports),
        shards=tuple(sorted({s for r in appending for s in r.shards})),
        stalled_shards={s: r.stalled for r in reports if r.stalled for s in r.shards},
        problems={link: why for r in reports for link, why in r.problems.items()},
        stalled=None if appending else reports[0].stalled)
