"""The Redis adapter's journals: each link's stream of entries, read by the ledger writer (on a cluster, polled per
shard), trimmed once the ledger holds them, and each link's state probed against the ledger."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import keys
from .connection import RedisConnection
from .errors import translated

PROBE = ("return {redis.call('EXISTS', KEYS[1], KEYS[4]) == 2 and 1 or 0, "
         "redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or ''}")
Journal = list[tuple[str, list[tuple[int, dict[str, str]]]]]  # [(link, [(seq, fields)])]



@dataclass(frozen=True, slots=True)
class Probe:
    """What Redis holds of a link, read atomically: whether its config is there (with its open-round count),
    its sequence and last entry."""

    has_config: bool
    seq: int | None
    last: str


class RedisJournal(RedisConnection):
    """The journals and the probe: what the ledger writer and recovery read of Redis."""

    POLL_MS = (1, 16)  # a cluster's journals are polled: the first and the longest wait between empty reads
    _poll_ms = POLL_MS[0]  # a cluster's next wait between empty journal reads, kept across reads

    @translated
    async def read_journals(self, after: Mapping[str, int], count: int, block_ms: int | None = None) -> Journal:
        """Journal entries of each link after the given sequence, oldest first: [(link, [(seq, fields)])];
        with `block_ms`, waiting up to that long for the first."""
        if self.cluster:
            return await self._poll_journals(after, count, block_ms)
        names = {keys.journal(link): link for link in after}
        command: list[str | int] = ["XREAD", "COUNT", count]
        if block_ms is not None:
            command += ["BLOCK", block_ms]
        command += ["STREAMS", *names, *(f"0-{seq}" for seq in after.values())]
        (reply,) = await self._journal_reader.execute([command])
        return self._journal_rows(names, [reply])

    async def _poll_journals(self, after: Mapping[str, int], count: int, block_ms: int | None) -> Journal:
        """A cluster refuses one XREAD across slots and cannot block on several: read each link's journal on
        its shard, all in one round trip per shard, and poll while they are empty (a wait that doubles from
        POLL_MS[0] to POLL_MS[1] ms, so a quiet cluster costs little and a lone entry waits at most that)."""
        names = {keys.journal(link): link for link in after}
        each = max(100, count // max(1, len(names)))  # a batch stays near `count` entries, however many links
        commands: list[list[str | int]] = [["XREAD", "COUNT", each, "STREAMS", name, f"0-{seq}"]
                                           for name, seq in zip(names, after.values(), strict=True)]
        deadline = time.monotonic() + (block_ms or 0) / 1000
        while True:
            rows = self._journal_rows(names, await self._journal_reader.execute(commands))
            if rows:
                self._poll_ms = self.POLL_MS[0]  # busy: the next empty read waits little
            if rows or block_ms is None or time.monotonic() >= deadline:
                return rows
            await asyncio.sleep(self._poll_ms / 1000)
            self._poll_ms = min(self._poll_ms * 2, self.POLL_MS[1])  # kept across calls: quiet stays cheap

    def _journal_rows(self, names: Mapping[str, str], replies: Sequence[Any]) -> Journal:
        """XREAD replies as [(link, [(seq, fields)])], the links that had entries only. On a cluster, a link whose
        node failed is read next time (its calls are refused meanwhile); the others go on."""
        rows: Journal = []
        for name, reply in zip(names, replies, strict=False):
            if self._skipped(reply, f"reading the journal of link {names[name]}"):
                continue
            rows += [(names[stream], [(int(entry_id.split("-")[1]), dict(zip(flat[::2], flat[1::2], strict=True)))
                                      for entry_id, flat in entries]) for stream, entries in reply or ()]
        return rows

    @translated
    async def journal_after(self, link_id: str, seq: int, count: int = 1000) -> list[tuple[int, dict[str, str]]]:
        """One link's journal entries with a sequence above `seq`, oldest first."""
        rows = await self.client.xrange(keys.journal(link_id), min=f"0-{seq + 1}", max="+", count=count)
        return [(int(i.split("-")[1]), f) for i, f in rows]

    @translated
    async def trim_journal(self, link_id: str, upto_seq: int) -> None:
        """Drop journal entries that PostgreSQL holds (up to and including `upto_seq`)."""
        await self.client.xtrim(keys.journal(link_id), minid=f"0-{upto_seq + 1}", approximate=False)

    @translated
    async def probe(self, link_ids: Sequence[str]) -> dict[str, Probe]:
        """Each link's config presence (with its open-round count: without one, the link is not whole),
        sequence and last request identity, each link read atomically. On a cluster, a link whose node fails
        now is left out (its calls are refused meanwhile); on one Redis, a failure raises."""
        replies = await self._journal_reader.execute([
            ["EVAL", PROBE, 4, keys.config(link), keys.seq(link), keys.last(link), keys.open_rounds(link)]
            for link in link_ids])
        out = {}
        for link, reply in zip(link_ids, replies, strict=True):
            if self._skipped(reply, f"probing link {link}"):
                continue
            has_config, seq, last = reply
            out[link] = Probe(bool(has_config), int(seq) if seq else None, last)
        return out
