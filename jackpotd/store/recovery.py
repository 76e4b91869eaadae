"""Recovery (ARCHITECTURE.md): make Redis agree with the ledger for every link before it is served.

Redis ahead of the ledger (a crash between the atomic step and the ledger commit): its journal is
written to PostgreSQL. Redis that forgot a link, went back behind the ledger, or forked from it (a
FLUSHALL, a restart without persistence, a failover to a replica that missed writes): the link is
rebuilt from the ledger. The ledger writer runs the same checks online (LedgerWriter.probe), so a link
is repaired within seconds, without a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from ..service.errors import Unavailable
from . import ledger
from .announcements import Fenced
from .checkpoints import MARK_EVERY, Anchor, Checkpoint, Checkpointer
from .ledger import head_guard
from .ledger.fences import FenceKind, kind_of
from .liveness import LeaseExpired
from .redis.journal import Probe
from .redis.pools import RedisPools

log = logging.getLogger("jackpotd.recovery")



class RecoveryState(StrEnum):
    """What Redis holds of a link against the ledger (classify); the value is what logs and metrics say."""

    IN_STEP = "in-step"
    AHEAD = "ahead"  # Redis holds entries the ledger does not yet: they are drained into it
    LOST = "lost"  # Redis forgot the link: rebuilt
    BEHIND = "behind"  # Redis went back behind the ledger: rebuilt
    FORKED = "forked"  # Redis's journal does not continue the ledger: rebuilt


class RecoveryAction(StrEnum):
    """What recovery did for a link (LinkRecovery.action); the value is what `jackpotd recover` prints."""

    IN_STEP = "in-step"  # nothing to do
    DRAINED = "drained"
    REBUILT = "rebuilt"
    FENCED = "fenced"
    NOT_DRAINED = "not drained"  # its ledger head changed while it was checked: the writer drains it later
    FAILED = "failed"  # LinkRecovery.why says why; the ledger writer retries the link


REBUILD = (RecoveryState.LOST, RecoveryState.BEHIND, RecoveryState.FORKED)  # a link in these is rebuilt


def classify(probe: Probe, head: int, head_identity: str) -> RecoveryState:
    """What Redis holds of a link against the ledger's head (its sequence and its last request's identity)."""
    if head == 0:  # a link Redis created that the ledger has not seen yet
        return RecoveryState.AHEAD if probe.seq else RecoveryState.IN_STEP
    if not probe.has_config or probe.seq is None:
        return RecoveryState.LOST
    if probe.seq < head:
        return RecoveryState.BEHIND
    if probe.seq == head:
        return RecoveryState.IN_STEP if probe.last == head_identity else RecoveryState.FORKED
    return RecoveryState.AHEAD


@dataclass(frozen=True, slots=True)
class LinkRecovery:
    """What recovery did for one link."""

    link_id: str
    action: RecoveryAction
    redis_seq: int
    ledger_seq: int
    why: str = ""  # why it FAILED

    @property
    def said(self) -> str:
        """The action as logs and `jackpotd recover` say it: "failed: <why>" for a failure."""
        return f"{self.action}: {self.why}" if self.action is RecoveryAction.FAILED else self.action


async def recover(redis: RedisPools, pg: ledger.Pool, owns: Callable[[str], bool] = lambda _: True,
                  anchors: Checkpointer | None = None, *, fresh_redis: bool = False,
                  epochs: Mapping[int, int] | None = None,
                  check: Callable[[], None] | None = None) -> list[LinkRecovery]:
    """Bring every link's Redis state in line with the ledger (every link this writer `owns`); a link the ledger
    refuses is fenced alone, and so is a link whose ledger head its newest anchor (kept outside the database) does
    not back, a link every row of which was deleted included: nothing is drained onto it or rebuilt from it. With
    `fresh_redis` (an embedded Valkey just started, which keeps nothing) a link it lacks is rebuilt as expected, said
    at INFO; otherwise Redis lost what it should have kept, said at WARNING. A writer taking shards over passes the
    `epochs` it took (its drains carry them) and its lease `check` (raises LeaseExpired: nothing more is done)."""
    out = []
    try:
        announced = set(await redis.links())
    except Unavailable as e:  # (a cluster node that holds the list is down): the ledger's links, and the writer
        log.error("recovery: the list of links cannot be read (%s); recovering the ledger's links", e)
        announced = set()  # follows new ones once the list is back
    anchored = set(anchors.links()) if anchors is not None else set()
    async with pg.acquire() as conn:
        heads = await ledger.heads_of(conn, None)
        links = sorted(link for link in set(heads) | announced | anchored if owns(link))
        lines = {link: anchors.last_line(link) for link in links} if anchors is not None else {}
        newest = {link: None if (line := lines.get(link)) is None else line.head for link in links}
        verdicts = await head_guard.check(conn, newest)
    for link, verdict in sorted(verdicts.items()):
        if isinstance(verdict, head_guard.Tampered):
            await fence(redis, pg, link, verdict.first_seq, verdict.reason, FenceKind(verdict.kind.value))
    await fence_anchored(redis, pg, lines)  # the rest of the fences the anchors hold
    fenced = await ledger.fences(pg)
    probes = await redis.probe(links)
    for link in links:
        head = heads.get(link, ledger.Head(0, b"", {}))
        if link not in probes:  # its cluster node cannot be asked now: the ledger writer's probe will
            log.error("link %s: recovery failed (its Redis node does not answer); the ledger writer will retry it",
                      link)
            out.append(LinkRecovery(link, RecoveryAction.FAILED, 0, heads.get(link, ledger.Head(0, b"", {})).seq,
                                    "its Redis node does not answer"))
            continue
        probe = probes[link]
        state = classify(probe, head.seq, head.identity)
        action, why = RecoveryAction.IN_STEP, ""
        try:
            if link in fenced:
                await redis.set_fence(link, fenced[link].text)
                action = RecoveryAction.FENCED
            elif state is RecoveryState.AHEAD:
                checked = verdicts.get(link)
                drained = await drain(redis, pg, link, head.seq, head if isinstance(checked, head_guard.Backed)
                                      and checked.head == Anchor(head.seq, head.hash) else None, anchors, epochs)
                if drained is RecoveryState.FORKED:
                    await rebuild(redis, pg, link, check=check)
                action = RecoveryAction.REBUILT if drained is RecoveryState.FORKED else drained
            elif state in REBUILD:
                expected = fresh_redis and state is RecoveryState.LOST
                await rebuild(redis, pg, link, level=logging.INFO if expected else logging.WARNING,
                              why="the embedded Valkey starts empty" if expected else f"Redis {state}", check=check)
                action = RecoveryAction.REBUILT
        except (LeaseExpired, ledger.LeaseFenced):  # another writer may hold the shards now: stop recovering them
            raise
        except Exception as e:  # one link's trouble must not keep the others from being written; the ledger
            # writer drains a link Redis holds ahead, and its probe rebuilds one Redis lost, once it can
            log.error("link %s: recovery failed (%s); the ledger writer will retry it", link, e)
            action, why = RecoveryAction.FAILED, str(e)
        if head.seq or probe.seq:
            await redis.add_link(link)  # the ledger writer follows every link that exists
            done = LinkRecovery(link, action, probe.seq or 0, head.seq, why)
            log.info("link %s: %s (Redis seq %s, ledger seq %d)", link, done.said, probe.seq, head.seq)
            out.append(done)
    return out


REMOVED = "its fence's row was removed from the database without `jackpotd unfence`"


async def fence_anchored(redis: RedisPools, pg: ledger.Pool, lines: Mapping[str, Checkpoint | None]) -> list[str]:
    """Fence again each link whose newest anchor line (`lines`) says it is fenced (no operator lifted it since) but
    whose fence row is gone: deleted while no writer ran. Before anything is drained or rebuilt. Returns those."""
    rows = await ledger.fences(pg)
    out = []
    for link, line in lines.items():
        if link not in rows and line is not None and line.fenced:
            log.error("link %s: fenced (%s) at entry %d, and %s: fenced again", link, line.fenced, line.seq, REMOVED)
            await fence(redis, pg, link, line.seq + 1, REMOVED, kind_of(line.fenced))
            out.append(link)
    return out


async def drain(redis: RedisPools, pg: ledger.Pool, link: str, from_seq: int, checked: ledger.Head | None,
                anchors: Checkpointer | None = None,
                epochs: Mapping[int, int] | None = None) -> RecoveryAction | Literal[RecoveryState.FORKED]:
    """Write every journal entry above `from_seq` into the ledger, onto the head just `checked` against its anchors
    (the append refuses any other), anchoring what it wrote: DRAINED; FORKED when the journal does not continue
    the ledger (the link is to be rebuilt); FENCED when the ledger refuses an entry; NOT_DRAINED without a checked
    head."""
    if checked is None:
        log.error("link %s: its ledger head changed while it was being checked: not drained now", link)
        return RecoveryAction.NOT_DRAINED
    cache: ledger.HeadCache = {link: checked}
    head = from_seq
    while True:
        rows = await redis.journal_after(link, head)
        if not rows:
            break
        try:
            async with pg.acquire() as conn:
                appended = await ledger.write_batch(conn, ledger.journal_entries(link, rows), cache, epochs=epochs)
        except Exception as e:
            if not ledger.refuses(e):
                raise
            await fence(redis, pg, link, head + 1, str(e))
            return RecoveryAction.FENCED
        refused = appended.refused.get(link)
        if refused is not None:
            if refused.malformed:  # a fault to stop at, as the running writer does
                await fence(redis, pg, link, refused.seq, refused.reason)
                return RecoveryAction.FENCED
            log.error("link %s: %s", link, refused.reason)
            return RecoveryState.FORKED
        if appended.heads.get(link, head) == head:
            break  # a gap in the journal: what follows cannot be recorded in order
        head = appended.heads[link]
        if anchors is not None and link in cache:
            written = appended.written.get(link, [])
            anchors.note(link, Anchor(cache[link].seq, cache[link].hash),
                         [Anchor(w.seq, w.hash) for w in written if w.seq % MARK_EVERY == 0])
            anchors.write(anchors.due(force=True))
    if head < await redis.seq(link):
        log.error("link %s: the journal ends at %d but Redis is at %d; rebuilding", link, head, await redis.seq(link))
        return RecoveryState.FORKED
    return RecoveryAction.DRAINED


async def fence(redis: RedisPools, pg: ledger.Pool | ledger.Connection, link: str, seq: int, reason: str,
                kind: FenceKind = FenceKind.REFUSED) -> None:
    """Stop one link: the ledger cannot take its entry `seq`, or was changed behind the writer's back (`kind`).
    Recorded in both stores; every call on the link gets UNAVAILABLE saying why, and the other links go on."""
    text = ledger.fence_text(kind, seq, reason)
    log.critical("link %s %s", link, text if text.startswith("fenced") else f"fenced: {text}")
    await ledger.set_fence(pg, link, seq, reason, kind)
    await redis.set_fence(link, text)
    await redis.announce(Fenced(link, seq, text[:200]))


async def rebuild(redis: RedisPools, pg: ledger.Pool, link: str, expect: Anchor | None = None, *,
                  level: int = logging.WARNING, why: str = "", check: Callable[[], None] | None = None) -> int:
    """Replace the link's Redis keys with the state recorded in the ledger; returns the ledger's head. With `expect`,
    only from that very head (the one the writer just checked): a head that moved since is Unavailable.

    The config key goes first, so every step and read on the link is refused while the rest is replaced
    in one transaction: nothing applied on the old state can survive into the new one. A writer's lease `check`
    runs between the reading and the writing: a leader paused in between must not write Redis from a stale reading.
    """
    snap = await ledger.snapshot(pg, link)
    if check is not None:
        check()
    if expect is not None and Anchor(snap.last_seq, snap.last_hash) != expect:
        raise Unavailable(f"link {link}: the ledger's head moved to {snap.last_seq} while it was being checked; "
                          "the rebuild waits for the next check")
    await redis.replace_link(snap)
    log.log(level, "link %s rebuilt from the ledger at sequence %d%s", link, snap.last_seq, f" ({why})" if why else "")
    return snap.last_seq


async def fenced_links(redis: RedisPools, pg: ledger.Pool) -> list[tuple[ledger.Fence, str]]:
    """Each fenced link with a line on the entry the ledger refused (read from the Redis journal)."""
    out = []
    for f in (await ledger.fences(pg)).values():
        rows = await redis.journal_after(f.link_id, f.seq - 1, count=1)
        if rows and rows[0][0] == f.seq:
            body = ledger.journal_entries(f.link_id, rows)[0].body
            entry = f"{body.get('kind')} request {body.get('request_id')!r} at {body.get('ts_ms')} ms"
        else:
            entry = "no longer in Redis"
        out.append((f, entry))
    return out


async def unfence(redis: RedisPools, pg: ledger.Pool, link: str, *, discard: bool) -> str:
    """Lift a link's fence. Without `discard` the ledger writer tries the refused entry again (the cause was
    fixed); with it the link is rebuilt from the ledger first, dropping every entry the ledger does not
    hold (none of them was ever answered: a caller is answered only once its entry is in the ledger)."""
    fences = await ledger.fences(pg)
    if link not in fences:
        return f"link {link} is not fenced"
    if discard:
        head = await rebuild(redis, pg, link)
    await ledger.clear_fence(pg, link)
    await redis.set_fence(link, None)
    if discard:
        return f"link {link}: entries after {head} discarded, Redis rebuilt from the ledger, fence lifted"
    return f"link {link}: fence lifted; the ledger writer tries entry {fences[link].seq} again"
