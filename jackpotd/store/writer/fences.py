"""The links a ledger writer has fenced: why (as calls on them are told), of which kind, and anchored outside the
database, so that only an operator's act (`jackpotd unfence`, which appends a line lifting it) lifts a fence;
deleting its row in the database does not. Said at ERROR once a minute while it lasts."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from ...metrics import LINK_FENCED
from .. import ledger, recovery
from ..checkpoints import Anchor
from ..ledger.fences import Fence, FenceKind
from ..ledger.head_guard import Tampered
from ..redis.journal import Probe
from ..redis.pools import RedisPools
from .heads import WriterHeads

log = logging.getLogger("jackpotd.writer")
REMOVED = recovery.REMOVED


class WriterFences:
    """A writer's fenced links, with what it needs to set, restate and lift them."""

    LOG_EVERY = 60.0  # a fenced link is said again at ERROR this often

    def __init__(self, redis: RedisPools, pg: ledger.Pool, heads: WriterHeads) -> None:
        self.redis = redis
        self.pg = pg
        self.heads = heads
        self.why: dict[str, str] = {}  # link -> what calls on it are told
        self.kinds: dict[str, FenceKind] = {}
        self._said: dict[str, float] = {}  # link -> when its fence was last logged

    def load(self, fences: Iterable[Fence]) -> None:
        """The fences the database holds of this writer's links."""
        for f in fences:
            self.why[f.link_id], self.kinds[f.link_id] = f.text, f.kind
            LINK_FENCED.labels(f.link_id).set(1)

    async def fence(self, link: str, seq: int, reason: str, kind: FenceKind = FenceKind.REFUSED,
                    found: Anchor | None = None) -> None:
        """Stop the link at entry `seq`: in both stores, in the metric, and in the anchors."""
        self.why[link] = ledger.fence_text(kind, seq, reason)
        self.kinds[link] = kind
        self._said[link] = time.monotonic()
        LINK_FENCED.labels(link).set(1)
        self.heads.fenced(link, kind.value, found)  # the fence is anchored: only an operator's act lifts it
        await recovery.fence(self.redis, self.pg, link, seq, reason, kind)

    async def restore_anchored(self, links: Iterable[str]) -> None:
        """At start: a link whose anchors say it is fenced, with no fence row (deleted while no writer ran), is
        fenced again."""
        anchors = self.heads.checkpoints
        lines = {link: anchors.last_line(link) for link in links if link not in self.why} if anchors else {}
        for link in await recovery.fence_anchored(self.redis, self.pg, lines):
            self.why[link] = ledger.fence_text(FenceKind.REFUSED, 0, recovery.REMOVED)
            self.kinds[link] = FenceKind.REFUSED
            LINK_FENCED.labels(link).set(1)
        for f in (await ledger.fences(self.pg)).values():  # as recorded: the kind and entry its anchor named
            if f.link_id in self.why:
                self.why[f.link_id], self.kinds[f.link_id] = f.text, f.kind

    async def lift(self, link: str, next_seq: int) -> Anchor | None:
        """The fence's row is gone. Lifted only when an operator lifted it (`jackpotd unfence` appended a line that
        lifts it) and the ledger's head is the one that line backs: returns that head. Otherwise the link is fenced
        again, and None."""
        head, lifted = self.heads.lifting(link)
        if not lifted:
            log.error("link %s: %s: fenced again", link, REMOVED)
            await recovery.fence(self.redis, self.pg, link, next_seq, REMOVED, self.kinds.get(link, FenceKind.REFUSED))
            return None
        verdict = (await self.heads.check(self.pg, [link], {link: head}))[link]
        if isinstance(verdict, Tampered):
            log.error("link %s: its fence was lifted, but the ledger's head is still not the one its anchors back "
                      "(%s): fenced again; lift it with `jackpotd unfence`", link, verdict.reason)
            self.why.pop(link)
            await self.fence(link, verdict.first_seq, verdict.reason, FenceKind(verdict.kind.value), verdict.found)
            return None
        log.warning("link %s: fence lifted", link)
        self.why.pop(link)
        self.kinds.pop(link, None)
        LINK_FENCED.labels(link).set(0)
        await self.redis.set_fence(link, None)
        return verdict.head

    def say(self) -> None:
        """Each fenced link at ERROR, once a minute: a fence waits for a person."""
        now = time.monotonic()
        for link, why in self.why.items():
            if now - self._said.get(link, -1e9) >= self.LOG_EVERY:
                self._said[link] = now
                log.error("link %s is fenced: nothing is written or answered for it until an operator acts "
                          "(`jackpotd fenced`; OPERATIONS.md, A fenced link): %s", link, why)

    async def restate(self, probes: Mapping[str, Probe], durable: Mapping[str, int]) -> None:
        """Redis may have lost a fence with the rest: say it again there, every probe."""
        for link in self.why:
            try:
                if link not in probes:  # its cluster node cannot be asked now: said again at the next probe
                    continue
                if not probes[link].has_config and durable.get(link, 0) > 0:
                    await recovery.rebuild(self.redis, self.pg, link)  # the fence comes back with the link
                await self.redis.set_fence(link, self.why[link])
            except Exception as e:  # one link's trouble must not silence the heartbeat of all
                log.error("link %s: restating its fence failed: %s", link, e)
