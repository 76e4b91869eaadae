"""The audit's check of a link's chain against the anchors kept outside the database (store/checkpoints.py): where
the ledger stops matching them, named to the entry where the rows tell, else to the range between two anchors
(at most MARK_EVERY entries apart while the writer ran), and the exact point a truncation removed entries from.
Pure: the audit recomputes the chain from the ledger's bytes and hands it here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..checkpoints import Checkpoint


@dataclass(frozen=True, slots=True)
class Point:
    """One anchored (seq, hash), when it was written, and by which checkpoint line (its index)."""

    seq: int
    hash: bytes
    at_ms: int
    line: int


@dataclass
class AnchorFindings:
    """What the anchors say: problems (the audit fails), notes (accepted incidents), and the first entry altered or
    removed (`first_altered`), with `range_end` set when only a range is known."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    first_altered: int | None = None
    range_end: int | None = None


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def compare(recomputed: Mapping[int, bytes], head: int, altered: Mapping[int, list[str]],
            checkpoints: Sequence[Checkpoint]) -> AnchorFindings:
    """Check the chain recomputed from the ledger's bytes (`recomputed`: seq -> hash; the ledger ends at `head`)
    against every anchored point. `altered`: the entries whose stored rows already disagree with one another."""
    out = AnchorFindings()
    for cp in checkpoints:
        a = cp.accepted
        if a is None:
            continue
        lost = f"; entries {a.lost[0]}..{a.lost[1]} recorded as lost" if a.lost else ""
        out.notes.append(f"{_when(cp.at_ms)}: {a.by} accepted the ledger as it was after it was found {a.found} "
                         f"(the anchored head was entry {a.replaced.seq}){lost}; reason: {a.reason}")
    points = [Point(p.seq, p.hash, cp.at_ms, n) for n, cp in enumerate(checkpoints) for p in cp.points()]
    acceptances = [(n, cp) for n, cp in enumerate(checkpoints) if cp.accepted is not None]

    def superseded(p: Point) -> bool:
        """An operator accepted the ledger after this anchor was written (later in the file: the order the lines
        were appended in, not the clocks of the hosts that wrote them) and the acceptance covers its entry: a
        truncation's, from the first entry lost on; a rewrite's, any up to the head accepted."""
        for n, cp in acceptances:
            a = cp.accepted
            if a is None or n <= p.line or p.seq > cp.seq:
                continue
            if a.lost is None or p.seq >= a.lost[0]:
                return True
        return False

    matching = sorted({p.seq for p in points if recomputed.get(p.seq) == p.hash})
    bad = sorted((p for p in points if recomputed.get(p.seq) != p.hash and not superseded(p)), key=lambda p: p.seq)
    if not bad:
        return out
    first = bad[0]
    backed = max((s for s in matching if s < first.seq), default=0)
    beyond = [p for p in bad if p.seq > head]
    if beyond:  # entries the anchors name are gone: removed from the first the ledger no longer holds
        unanchored = (f" (entries {backed + 1}..{head} are not covered by an anchor that matches: they may have "
                      "been altered too)" if backed < min(head, first.seq - 1) else "")
        out.problems.append(f"the ledger was truncated: it ends at entry {head}, but entry {beyond[0].seq} was "
                            f"anchored on {_when(beyond[0].at_ms)}: entries {head + 1}..{max(p.seq for p in beyond)} "
                            f"were removed{unanchored}")
    if first.seq > head:
        out.first_altered = head + 1
        return out
    told = sorted(s for s in altered if backed < s <= first.seq)
    if told:  # the rows name the entry
        out.first_altered = told[0]
        out.problems.append(f"the ledger does not match its anchor at entry {first.seq} ({_when(first.at_ms)}): "
                            f"entries {backed + 1}..{first.seq} were rewritten, first entry {told[0]}")
        return out
    out.first_altered = backed + 1
    if first.seq > backed + 1:
        out.range_end = first.seq
        out.problems.append(f"the ledger does not match its anchor at entry {first.seq} ({_when(first.at_ms)}): the "
                            f"first altered entry is one of {backed + 1}..{first.seq} (the anchor before it matches; "
                            "the altered rows agree with one another, as a rewrite with its projections and "
                            "recomputed hashes leaves them)")
    else:
        out.problems.append(f"the ledger does not match its anchor at entry {first.seq} ({_when(first.at_ms)}): "
                            f"entry {first.seq} was rewritten")
    return out
