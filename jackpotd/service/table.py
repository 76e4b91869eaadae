"""Table commands (API.md TableService): gather what each decision needs, run it through the write path."""

from __future__ import annotations

from ..clock import Clock
from ..domain.ids import require_id, require_text
from ..domain.link import LinkConfig
from . import results
from .commands import Commit, Settle, Void
from .decide.table import TableState, decide_commit, decide_settle, decide_void
from .engine import Gather, WritePath
from .links import Links
from .ports import Seen


class TableCommands:
    """CommitWagers, SettleRound and VoidRound."""

    def __init__(self, engine: WritePath, links: Links, clock: Clock) -> None:
        self.engine = engine
        self.links = links
        self.clock = clock

    async def commit(self, cmd: Commit) -> results.Committed:
        """§3: the wagers of a round feed the pools."""
        link_id = await self.links.of_table(cmd.table_id)
        require_id("round_id", cmd.round_id)

        async def gather(config: LinkConfig, seen: Seen) -> TableState:
            capped = any(p.cap_cents is not None for p in config.pools)  # only a cap makes balances matter
            balances = (await self.links.read(link_id)).balances if capped else {}
            return TableState(self.clock(), balances, None, seen.round_state)

        done = await self.engine.execute(link_id, cmd.request, gather, lambda c, v, s: decide_commit(cmd, c, v, s),
                                         round_=(cmd.table_id, cmd.round_id))
        return results.committed(done.reply, done.config)

    async def settle(self, cmd: Settle) -> results.Settled:
        """§5: the round's hits priced and paid."""
        link_id = await self.links.of_table(cmd.table_id)
        require_id("round_id", cmd.round_id)
        done = await self.engine.execute(link_id, cmd.request, self._round_state(link_id, cmd.table_id, cmd.round_id),
                                         lambda c, v, s: decide_settle(cmd, c, v, s),
                                         round_=(cmd.table_id, cmd.round_id))
        return results.settled(done.reply, done.config)

    async def void(self, cmd: Void) -> results.Voided:
        """§6: the round (or some seats) refunded, contributions reversed exactly."""
        link_id = await self.links.of_table(cmd.table_id)
        require_id("round_id", cmd.round_id)
        require_text("reason", cmd.reason, required=True)  # a void needs a reason (misdeal, device failure, ...)
        done = await self.engine.execute(link_id, cmd.request, self._round_state(link_id, cmd.table_id, cmd.round_id),
                                         lambda c, v, s: decide_void(cmd, c, v, s),
                                         round_=(cmd.table_id, cmd.round_id))
        return results.voided(done.reply, done.config)

    def _round_state(self, link_id: str, table_id: str, round_id: str) -> Gather[TableState]:
        """Settle and void read the round, and the pools with it."""

        async def gather(config: LinkConfig, seen: Seen) -> TableState:
            state = await self.links.read(link_id, (table_id, round_id))
            return TableState(self.clock(), state.balances, state.round, seen.round_state)

        return gather
