"""What the ledger writer holds a link's head to (issue 19): the head it left, or, until it has seen the link, the
newest anchor kept outside the database. The writer checks the ledger against it before every append, rebuild
and drain, and every half second besides. A head that went back or changed is `Tampered`, and so is a head moved on
past the one this writer left while it holds the link's lease (nobody else may write it then)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from ..checkpoints import MARK_EVERY, Anchor, Checkpoint, Checkpointer
from ..ledger import head_guard
from ..ledger.head_guard import Backed, Verdict

log = logging.getLogger("jackpotd.writer")


class WriterHeads:
    """The heads a writer left, per link, with its checkpointer (None: no anchors are kept)."""

    def __init__(self, checkpoints: Checkpointer | None) -> None:
        self.checkpoints = checkpoints
        self.left: dict[str, Anchor] = {}  # set once this writer has seen the link: then only it moves the head
        self._flushing: asyncio.Task[None] | None = None

    def expected(self, link: str) -> Anchor | None:
        """The head the ledger must hold: the one left here; before this writer has seen the link, the newest
        anchor (which the ledger may have moved on from: the writer before this one wrote after its last line)."""
        if link in self.left:
            return self.left[link]
        return self.checkpoints.newest(link) if self.checkpoints is not None else None

    def lifting(self, link: str) -> tuple[Anchor | None, bool]:
        """After a fence's row went away: what the head must be now, and whether an operator lifted the fence
        (`jackpotd unfence` appended a line that lifts it: restored, or accepted as it is). Without anchors the
        row's deletion is all there is to go by."""
        if self.checkpoints is None:
            return self.left.get(link), True
        line = self.checkpoints.last_line(link)
        if line is None or not line.lifts:
            return self.left.get(link), False
        return line.head, True

    async def check(self, conn: Any, links: Iterable[str], against: dict[str, Anchor | None] | None = None
                    ) -> dict[str, Verdict]:
        """Each link's ledger head judged against what it is held to (`against`: an operator's lifting, which the
        head is adopted from); a backed head is the link's head from now on."""
        links = list(links)
        expected = {link: self.expected(link) for link in links}
        expected.update(against or {})
        if not expected:
            return {}
        verdicts = await head_guard.check(conn, expected)
        for link, verdict in verdicts.items():
            if link in self.left and not (against and link in against):
                verdict = verdicts[link] = head_guard.held_to(self.left[link], verdict)
            if isinstance(verdict, Backed):
                self.left[link] = verdict.head
        return verdicts

    def wrote(self, link: str, head: Anchor, hashes: Sequence[Anchor]) -> None:
        """The writer appended entries (`hashes`: their sequences and hashes) and left `head`: the anchors get the
        head and every MARK_EVERY-th entry."""
        self.left[link] = head
        if self.checkpoints is not None:
            self.checkpoints.note(link, head, [a for a in hashes if a.seq % MARK_EVERY == 0])

    def fenced(self, link: str, kind: str, found: Anchor | None) -> None:
        """The link is fenced: a line saying so at the head this writer left (the one the ledger showed when it
        left none), so the fence outlives a restart even when its row in the database is deleted."""
        head = self.left.get(link) or found
        if self.checkpoints is None or head is None:
            return
        try:
            self.checkpoints.record(link, head, fenced=kind)
        except OSError as e:
            log.error("anchoring link %s's fence at entry %d failed: %s", link, head.seq, e)

    async def flush(self, force: bool = False) -> None:
        """Write the checkpoints due (each link's head at most once every Checkpointer.INTERVAL seconds; forced,
        all) in the background: the writer's loop does not wait for the disk, except when forced (at stop)."""
        if self.checkpoints is None:
            return
        if self._flushing is not None and not self._flushing.done():
            if not force:
                return
            await self._flushing
        due = self.checkpoints.due(force)
        if due:
            self._flushing = asyncio.create_task(self._write(due), name="checkpoints")
            if force:
                await self._flushing

    async def _write(self, due: list[Checkpoint]) -> None:
        """A failure to write is logged: the ledger goes on, and the next flush tries again."""
        assert self.checkpoints is not None
        try:
            await asyncio.to_thread(self.checkpoints.write, due)
        except OSError as e:
            log.error("writing checkpoints to %s failed: %s", self.checkpoints.directory, e)
            self.checkpoints.forget(due)
