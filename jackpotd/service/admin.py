"""Admin commands (API.md AdminService): configuration changes and operator funding, each a journaled entry."""

from __future__ import annotations

from dataclasses import replace

from ..clock import Clock
from ..domain.errors import FailedPrecondition, NotFound
from ..domain.ids import parse_hit_id, require_id, require_text
from ..domain.link import LinkConfig
from ..domain.money import require_positive_cents
from ..domain.verification import PAID
from . import results
from .commands import ConfigCommand, CreateLink, DecideHit, Fund, RegisterTable, Restructure, SuspendTable
from .decide.admin import AdminState, decide_config, decide_fund, decide_restructure, require_approval
from .decide.hits import HitPlace, HitState, decide_hit
from .decide.returns import require_returns
from .engine import Gather, WritePath
from .links import Links
from .ports import Ledger, LiveStore, Seen


class AdminCommands:
    """FundPool, CreateLink, RegisterTable, Suspend/ResumeTable, SetRates, SetPaytable, UpdateLink,
    Approve/RejectHit, Combine/SplitPools."""

    def __init__(self, engine: WritePath, links: Links, live: LiveStore, ledger: Ledger, clock: Clock) -> None:
        self.engine = engine
        self.links = links
        self.live = live
        self.ledger = ledger
        self.clock = clock

    async def _now(self, config: LinkConfig, seen: Seen) -> AdminState:
        return AdminState(self.clock())

    def _known(self, link_id: str) -> Gather[AdminState]:
        """A create also asks whether the ledger holds the link, whatever the live store says."""

        async def gather(config: LinkConfig, seen: Seen) -> AdminState:
            return AdminState(self.clock(), await self.ledger.link_known(link_id))

        return gather

    async def fund(self, cmd: Fund) -> results.Answer:
        """NZ 11.6(b): operator funding."""
        require_approval(cmd)
        require_positive_cents("amount_cents", cmd.amount_cents)
        require_id("link_id", cmd.link_id)
        done = await self.engine.execute(cmd.link_id, cmd.request, self._now,
                                         lambda c, v, s: decide_fund(cmd, c, v, s))
        return results.answered(done.reply, done.config)

    async def change(self, cmd: ConfigCommand) -> results.Answer:
        """§9: any configuration change, with who, why and the approval reference."""
        require_approval(cmd)
        match cmd:
            case CreateLink():
                link_id = cmd.config.link_id
            case SuspendTable():
                link_id = await self.links.of_table(cmd.table_id)
            case _:
                link_id = cmd.link_id
        require_id("link_id", link_id)
        gather: Gather[AdminState] = self._now
        if isinstance(cmd, CreateLink):
            if not await self._exists(link_id):  # a retry of a link made before is answered below as it was then
                require_returns(cmd, cmd.config)  # issue 33, before the live store hears of it (decided again below)
            await self.live.add_link(link_id)  # before the step, so the ledger writer reads its journal
            gather = self._known(link_id)
        if isinstance(cmd, RegisterTable):
            current = await self.links.current_link_of(cmd.table.table_id)
            if current is not None and current != link_id:
                raise FailedPrecondition("table_id", cmd.table.table_id, f"already registered on link {current}")
        done = await self.engine.execute(link_id, cmd.request, gather, lambda c, v, s: decide_config(cmd, c, v, s),
                                         create=cmd.config if isinstance(cmd, CreateLink) else None)
        if isinstance(cmd, RegisterTable):
            await self.live.set_table_link(cmd.table.table_id, link_id)
        return results.answered(done.reply, done.config)

    async def _exists(self, link_id: str) -> bool:
        try:
            await self.links.config(link_id)
        except NotFound:
            return False
        return True

    async def decide_hit(self, cmd: DecideHit) -> results.HitDecided:
        """§7: a PENDING hit approved (paid) or rejected (its prize returned)."""
        where = HitPlace(*parse_hit_id(cmd.hit_id))
        if not cmd.approve:
            require_text("reason", cmd.reason, required=True)  # a rejection says why the hit is not paid
        require_approval(cmd)
        try:
            await self.links.config(where.link_id)
        except NotFound:  # the caller named a hit, not a link
            raise NotFound("hit_id", cmd.hit_id, "no such hit: its link does not exist") from None

        async def gather(config: LinkConfig, seen: Seen) -> HitState:
            live = await self.links.read(where.link_id, (where.table_id, where.round_id))
            known = await self.ledger.hit(where.link_id, where.table_id, where.round_id, where.seat)
            return HitState(self.clock(), live.round, None if known is None else known.status)

        done = await self.engine.execute(where.link_id, cmd.request, gather,
                                         lambda c, v, s: decide_hit(cmd, where, c, v, s))
        decided = results.hit_decided(done.reply, done.config)
        if cmd.approve and decided.hit.status == PAID and not decided.hit.approved_by:  # one approval: this call's
            decided = replace(decided, hit=replace(decided.hit, approved_by=(cmd.audit.actor,)))
        return decided

    async def restructure(self, cmd: Restructure) -> results.PoolsChanged:
        """NZ 11.6A/B: the pools split or combined, between rounds."""
        require_approval(cmd)
        require_id("link_id", cmd.link_id)

        async def gather(config: LinkConfig, seen: Seen) -> AdminState:
            return AdminState(self.clock(), balances=(await self.links.read(cmd.link_id)).balances)

        done = await self.engine.execute(cmd.link_id, cmd.request, gather,
                                         lambda c, v, s: decide_restructure(cmd, c, v, s))
        _, now = await self.links.config(cmd.link_id)  # the new pools (the write path dropped the cached config)
        return results.pools_changed(done.reply, now)
