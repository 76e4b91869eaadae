"""The ledger writer's fallback when PostgreSQL refuses a batch for what it holds: entry by entry, so only the link
whose entry is refused is fenced."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...clock import Clock
from .. import ledger

Fence = Callable[[str, int, str], Awaitable[None]]  # (link, seq, why): stop the link


async def isolate(conn: Any, batch: list[ledger.JournalEntry], heads: ledger.HeadCache, clock: Clock,
                  fence: Fence, epochs: Mapping[int, int] | None = None) -> ledger.Appended:
    """The ledger refused the batch for what it holds: append entry by entry, and fence the link whose entry is
    refused. Every other link, and the fenced link's earlier entries, are appended. A stale lease (LeaseFenced) is
    no link's fault: it is raised."""
    out = ledger.Appended()
    by_link: dict[str, list[ledger.JournalEntry]] = {}
    for e in batch:
        by_link.setdefault(e.link_id, []).append(e)
    for link, entries in by_link.items():
        for e in sorted(entries, key=lambda x: x.seq):
            try:
                one = await ledger.write_batch(conn, [e], heads, clock, epochs)
            except Exception as error:
                if not ledger.refuses(error):
                    raise
                await fence(link, e.seq, str(error))
                break
            if link in one.refused:
                out.refused[link] = one.refused[link]
                break
            out.heads.update(one.heads)
            out.written.setdefault(link, []).extend(one.written.get(link, []))
    return out
