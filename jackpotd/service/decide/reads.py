"""Read decisions (ARCHITECTURE.md, Reads; DOMAIN.md §8): what signs and meters are sent, and when. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...domain.link import LinkConfig
from ...domain.money import floor_cents
from ..ports import Reply
from ..results import HitAnnouncement, LinkUpdate, payouts_of, pool_views

METER_INTERVAL = 0.1  # ARCHITECTURE.md, Reads: at most ten updates a second per link
HEARTBEAT = 2.0  # seconds between updates on a quiet link, well inside a table's 10 s silence limit (§8)


def hits_of(reply: Reply) -> tuple[HitAnnouncement, ...]:
    """The hits an applied settle announces, each with its pool's amount after it (other replies: none)."""
    return tuple(HitAnnouncement(str(reply.content.get("table_id", "")), p.seat, p.hand, p.amount_cents, p.pool,
                                 p.hit_id, reply.seq, floor_cents(reply.balances.get(p.pool, 0)))
                 for p in payouts_of(reply))


class Due(Enum):
    NOTHING = "nothing"
    LATEST = "latest"  # pools moved since the last update: send them now
    HEARTBEAT = "heartbeat"  # nothing for HEARTBEAT seconds: send the link's state so tables know we are here


@dataclass
class Pacing:
    """One watcher's pacing: every hit at once, pool movements coalesced, a heartbeat on a quiet link."""

    last_sent: float
    latest: Reply | None = None

    def received(self, reply: Reply, config: LinkConfig, now: float) -> list[LinkUpdate]:
        """A reply was applied: its hits go out now (§8: every hit is announced); its pools wait."""
        updates = [LinkUpdate(reply.seq, pool_views(config, reply.balances), hit) for hit in hits_of(reply)]
        if updates:
            self.last_sent = now
        self.latest = reply
        return updates

    def due(self, now: float) -> Due:
        """What to send when no reply arrived for METER_INTERVAL."""
        if self.latest is not None:
            return Due.LATEST
        if now - self.last_sent >= HEARTBEAT:
            return Due.HEARTBEAT
        return Due.NOTHING

    def latest_update(self, config: LinkConfig, now: float) -> LinkUpdate:
        """The coalesced pools of the last reply, which is then sent."""
        assert self.latest is not None
        reply, self.latest, self.last_sent = self.latest, None, now
        return LinkUpdate(reply.seq, pool_views(config, reply.balances))

    def sent(self, now: float) -> None:
        self.last_sent = now
