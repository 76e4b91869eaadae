"""How the ledger writers divide the links (issue 13): every link belongs to one of SHARDS writer shards, by a
hash of its id that never changes, and each shard is written by the one writer process holding its lease
(store/leader.py). Independent of Redis Cluster slots, which an operator may move."""

from __future__ import annotations

import zlib

SHARDS = 16  # fixed: every writer must agree on it, whatever its version or settings
ALL = frozenset(range(SHARDS))


def shard_of(link_id: str) -> int:
    """The writer shard of a link."""
    return zlib.crc32(link_id.encode()) % SHARDS


def describe(shards: frozenset[int] | set[int]) -> str:
    """Shards for a log line: "all", or the numbers."""
    return "all" if set(shards) == set(ALL) else ",".join(map(str, sorted(shards))) or "none"
