"""What the writer's recent announcements said, per link: the request hash prefix of each of the last entries
announced durable, so a caller that begins to wait after its entry was announced is answered from memory
instead of asking the ledger (issue 22: that race cost a PostgreSQL query per call under load)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

WINDOW = 1024  # entries remembered per link (about 80 KB): more than a worker has in flight at once


class DurableWindow:
    """The hash prefixes of the last `size` entries announced durable on each link (an entry once durable
    never changes: the ledger only appends), looked up by sequence; None when the entry is not remembered."""

    __slots__ = ("_chunks", "_held", "size")

    def __init__(self, size: int = WINDOW) -> None:
        self.size = size
        self._chunks: dict[str, deque[tuple[int, Sequence[str]]]] = {}  # link -> (first seq, hashes), oldest first
        self._held: dict[str, int] = {}  # link -> entries in its chunks

    def add(self, link: str, first: int, hashes: Sequence[str]) -> None:
        """Entries first..first+len(hashes)-1 of the link were announced with these hash prefixes."""
        chunks = self._chunks.get(link)
        if chunks is None:
            chunks = self._chunks[link] = deque()
            self._held[link] = 0
        chunks.append((first, hashes))
        held = self._held[link] + len(hashes)
        while held - len(chunks[0][1]) >= self.size:  # the oldest chunk is not needed to keep `size` entries
            held -= len(chunks.popleft()[1])
        self._held[link] = held

    def prefix(self, link: str, seq: int) -> str | None:
        """The hash prefix announced for entry `seq` of the link, if remembered."""
        for first, hashes in reversed(self._chunks.get(link, ())):
            if seq >= first:
                return hashes[seq - first] if seq - first < len(hashes) else None
        return None

    def forget(self, link: str) -> None:
        """Drop what is remembered of a link (its Redis was rebuilt: later announcements start afresh)."""
        self._chunks.pop(link, None)
        self._held.pop(link, None)
