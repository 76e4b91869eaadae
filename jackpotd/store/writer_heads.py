"""What the ledger writer holds a link's head to (issue 19): the head it left, or the newest anchor kept outside the
database, whichever is further along. The writer checks the ledger against it before every append, rebuild and
drain, and every half second besides; a head that went back or changed is `Tampered` and the link is fenced."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from .checkpoints import MARK_EVERY, Anchor, Checkpointer
from .ledger import head_guard
from .ledger.head_guard import Backed, Verdict

log = logging.getLogger("jackpotd.writer")


class WriterHeads:
    """The heads a writer left, per link, with its checkpointer (None: no anchors are kept)."""

    def __init__(self, checkpoints: Checkpointer | None) -> None:
        self.checkpoints = checkpoints
        self.left: dict[str, Anchor] = {}

    def expected(self, link: str) -> Anchor | None:
        """The head the ledger must hold (or continue from): the one left here, or a newer anchor."""
        anchor = self.checkpoints.newest(link) if self.checkpoints is not None else None
        return head_guard.newer(self.left.get(link), anchor)

    def accepted(self, link: str) -> Anchor | None:
        """After `jackpotd unfence`: the newest anchor read afresh, which wins over the head left here when it is
        at or past it (an operator's signed acceptance of the ledger as it is, or a checkpoint of a restored one)."""
        if self.checkpoints is None:
            return self.left.get(link)
        anchor = self.checkpoints.reread(link)
        left = self.left.get(link)
        if anchor is not None and (left is None or anchor.seq >= left.seq):
            return anchor
        return left

    async def check(self, conn: Any, links: Iterable[str], against: dict[str, Anchor | None] | None = None
                    ) -> dict[str, Verdict]:
        """Each link's ledger head judged against what it is held to (`against` overrides); a backed head is
        the link's head from now on."""
        expected = {link: self.expected(link) for link in links}
        expected.update(against or {})
        if not expected:
            return {}
        verdicts = await head_guard.check(conn, expected)
        for link, verdict in verdicts.items():
            if isinstance(verdict, Backed):
                self.left[link] = verdict.head
        return verdicts

    def wrote(self, link: str, head: Anchor, hashes: Sequence[Anchor]) -> None:
        """The writer appended entries (`hashes`: their sequences and hashes) and left `head`: the anchors get the
        head and every MARK_EVERY-th entry."""
        self.left[link] = head
        if self.checkpoints is not None:
            self.checkpoints.note(link, head, [a for a in hashes if a.seq % MARK_EVERY == 0])

    def evidence(self, link: str) -> None:
        """A link is fenced for tampering: anchor the head this writer left now, so the fence outlives a restart
        even if the database's record of it is removed."""
        left = self.left.get(link)
        if self.checkpoints is None or left is None:
            return
        self.checkpoints.note(link, left)
        try:
            self.checkpoints.write(self.checkpoints.due(force=True))
        except OSError as e:
            log.error("anchoring link %s's head at %d failed: %s", link, left.seq, e)

    async def flush(self, force: bool = False) -> None:
        """Write the checkpoints due (each link's head at most once every Checkpointer.INTERVAL seconds; when
        forced, all). A failure to write is logged: the ledger goes on, and the next flush tries again."""
        if self.checkpoints is None:
            return
        due = self.checkpoints.due(force)
        if not due:
            return
        try:
            await asyncio.to_thread(self.checkpoints.write, due)
        except OSError as e:
            log.error("writing checkpoints to %s failed: %s", self.checkpoints.directory, e)
            self.checkpoints.forget(due)
