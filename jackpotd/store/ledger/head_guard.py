"""The writer never writes onto a head it did not write (ARCHITECTURE.md, Recovery; issue 19).

A link's head in PostgreSQL is judged against an anchor: the head this writer left, or the newest checkpoint kept
outside the database. A head that went back (truncation), an anchored entry whose hash changed (a rewrite, even
one that recomputed every later hash and the head), or a head row that is not the last entry is `Tampered`: the
link is fenced, nothing is appended onto it and nothing rebuilt from it. `judge` is pure; `found_heads` is the one
query it needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..checkpoints import Anchor

NONE = Anchor(0, b"")


@dataclass(frozen=True, slots=True)
class Found:
    """A link's head as PostgreSQL holds it now: its `links` row, its last entry, and the hash of the entry at the
    anchor's sequence (None where there is none)."""

    head: Anchor
    last_entry: Anchor
    at_anchor: bytes | None


class Tamper(Enum):
    """What was done to the ledger behind the writer's back."""

    TRUNCATED = "truncated"  # entries the anchor backs are gone: the ledger ends before it
    REWRITTEN = "rewritten"  # the anchored entry has another hash: it, or an entry before it, was changed
    HEAD_EDITED = "head-edited"  # the link's head row is not its last entry
    EXTENDED = "extended"  # entries appended after the head this writer left, by something else, while it led


@dataclass(frozen=True, slots=True)
class Backed:
    """The head is the anchor, or continues from it (another writer appended after it)."""

    head: Anchor


@dataclass(frozen=True, slots=True)
class Tampered:
    """The ledger is not the one the anchor backs. `first_seq`: the first entry removed (a truncation), the anchored
    entry that differs (a rewrite: the first altered one is at or before it; the audit names it)."""

    kind: Tamper
    anchor: Anchor
    found: Anchor
    first_seq: int

    @property
    def reason(self) -> str:
        """Why the link is fenced, for people: what was found, against what."""
        was = f"entry {self.anchor.seq} (hash {self.anchor.hash.hex()[:16]})"
        if self.kind is Tamper.TRUNCATED:
            return (f"the ledger was truncated outside jackpotd: it ends at entry {self.found.seq}, but the anchored "
                    f"head is {was}; entries {self.found.seq + 1}..{self.anchor.seq} were removed")
        if self.kind is Tamper.REWRITTEN:
            return (f"the ledger was rewritten outside jackpotd: the anchored head {was} has another hash in the "
                    f"ledger now; that entry or one before it was changed (the ledger's head: entry "
                    f"{self.found.seq}, hash {self.found.hash.hex()[:16]})")
        if self.kind is Tamper.EXTENDED:
            return (f"entries {self.anchor.seq + 1}..{self.found.seq} were appended to the ledger after {was}, which "
                    "this writer left, by something other than this writer while it held the link's lease")
        return (f"the ledger's head row of the link (entry {self.found.seq}) is not its last entry: it was edited "
                "outside jackpotd")


Verdict = Backed | Tampered


def judge(anchor: Anchor | None, found: Found) -> Verdict:
    """Whether the ledger's head is backed by `anchor` (None or seq 0: nothing to hold it to)."""
    if found.head != found.last_entry:
        return Tampered(Tamper.HEAD_EDITED, anchor or found.last_entry, found.head,
                        min(found.head.seq, found.last_entry.seq) + 1)
    if anchor is None or anchor.seq == 0:
        return Backed(found.head)
    if found.head.seq < anchor.seq:
        return Tampered(Tamper.TRUNCATED, anchor, found.head, found.head.seq + 1)
    if found.at_anchor != anchor.hash:
        return Tampered(Tamper.REWRITTEN, anchor, found.head, anchor.seq)
    return Backed(found.head)


def held_to(left: Anchor, verdict: Verdict) -> Verdict:
    """A backed verdict against the head this very writer left, which nobody else may move while it holds the
    lease: a head further along was extended behind its back."""
    if isinstance(verdict, Backed) and verdict.head != left:
        return Tampered(Tamper.EXTENDED, left, verdict.head, left.seq + 1)
    return verdict


# One row per link asked: its head row, its last entry (a backward index scan), and the entry at the anchor.
_FOUND = """
SELECT q.link_id, l.last_seq, l.last_hash, m.seq AS last_entry_seq, m.hash AS last_entry_hash,
       (SELECT e.hash FROM entries e WHERE e.link_id = q.link_id AND e.seq = q.seq) AS at_anchor
FROM unnest($1::text[], $2::bigint[]) AS q(link_id, seq)
LEFT JOIN links l ON l.link_id = q.link_id
LEFT JOIN LATERAL (SELECT e.seq, e.hash FROM entries e WHERE e.link_id = q.link_id ORDER BY e.seq DESC LIMIT 1) m
       ON true
"""


async def found_heads(conn: Any, anchors: Mapping[str, Anchor | None]) -> dict[str, Found]:
    """What the ledger holds of each link's head, with the hash at its anchor's sequence."""
    links = sorted(anchors)
    seqs = [(anchors[link] or NONE).seq for link in links]
    out = {}
    for r in await conn.fetch(_FOUND, links, seqs):
        head = NONE if r["last_seq"] is None else Anchor(int(r["last_seq"]), bytes(r["last_hash"]))
        last = NONE if r["last_entry_seq"] is None else Anchor(int(r["last_entry_seq"]), bytes(r["last_entry_hash"]))
        out[r["link_id"]] = Found(head, last, None if r["at_anchor"] is None else bytes(r["at_anchor"]))
    return out


async def check(conn: Any, anchors: Mapping[str, Anchor | None]) -> dict[str, Verdict]:
    """Each link's head judged against its anchor."""
    found = await found_heads(conn, anchors)
    return {link: judge(anchors[link], found[link]) for link in anchors}
