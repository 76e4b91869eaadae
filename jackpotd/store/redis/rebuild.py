"""The Redis adapter's rebuilds and fences: a link's keys replaced by what the ledger holds (recovery.rebuild), in one
transaction on the link's slot, and a link's fence set or lifted."""

from __future__ import annotations

from collections.abc import Mapping

import redis.exceptions

from ...service.errors import Unavailable
from .. import keys
from ..announcements import Rebuilt, encode
from ..ledger import LinkSnapshot
from .connection import RedisConnection
from .errors import DOWN, translated
from .scripts import reply_error


class RedisRebuild(RedisConnection):
    """Rebuilding and fencing links."""

    @translated
    async def set_fence(self, link_id: str, why: str | None) -> None:
        """Fence the link (every step and read refused with `why`), or lift the fence with None."""
        if why is None:
            await self.client.delete(keys.fence(link_id))
        else:
            await self.client.set(keys.fence(link_id), why)

    @translated
    async def replace_link(self, snap: LinkSnapshot) -> None:
        """Replace the link's keys with the state the ledger holds (recovery.rebuild).

        The config key goes first, so every step and read on the link is refused while the rest is replaced
        in one transaction: nothing applied on the old state can survive into the new one.
        """
        link = snap.link_id
        indexes: list[list[str | int]] = [["SET", keys.table(t), link] for t in snap.tables]
        indexes.append(["SADD", keys.LINKS, link])
        if self.cluster:  # outside the link's slot, so outside its transaction, and before the config goes: a
            for command in indexes:  # node of an index that is down must not keep the link itself unserved
                try:
                    await self.client.execute_command(*command)
                except (*DOWN, redis.exceptions.RedisError) as e:
                    self._complain(f"rebuilding link {link}: writing its index failed ({e}); the link goes on")
        await self.client.delete(keys.config(link))
        where = {"target_nodes": self.client.get_node_from_key(keys.config(link))} if self.cluster else {}
        stale = [k async for k in self.client.scan_iter(match=keys.link_pattern(link), count=1000, **where)]
        tx: list[list[str | int]] = [["MULTI"], *([] if self.cluster else indexes)]
        if stale:
            tx.append(["DEL", *stale])
        tx.append(["DEL", keys.seen(link), keys.seen_bits(link)])  # even if made since the scan: filled afresh
        if snap.pool_balances:
            tx.append(["HSET", keys.balances(link), *_flat({k: str(v) for k, v in snap.pool_balances.items()})])
        tx.append(["SET", keys.seq(link), snap.last_seq])
        if snap.last_identity:
            tx.append(["SET", keys.last(link), snap.last_identity])
        tx += [["SET", keys.durable(link), snap.last_seq],
               ["XADD", keys.journal(link), f"0-{snap.last_seq}", "entry", "{}", "balances", "[]", "reply", ""],
               ["XTRIM", keys.journal(link), "MINID", f"0-{snap.last_seq + 1}"]]  # empty; its last id is the head
        for table_id, round_id, state, rev, data in snap.open_rounds:
            tx.append(["HSET", keys.round_(link, table_id, round_id), "state", state, "rev", str(rev), "data", data])
        tx.append(["SET", keys.open_rounds(link), len(snap.open_rounds)])
        if snap.fence is not None:
            tx.append(["SET", keys.fence(link), snap.fence])
        # Announced inside the transaction, before the config lets steps in again: a waiter of an entry this
        # rebuild erased learns it at once, and one of a later step is rarely mistaken for it.
        tx += [["PUBLISH", keys.DURABLE_CHANNEL, encode(Rebuilt(link, snap.last_seq))],
               ["HSET", keys.config(link), "version", str(snap.config_version), "config", snap.config],
               ["EXEC"]]
        replies = await self._resp.execute_on(keys.config(link), tx)
        executed = replies[-1]
        # a command refused while queued aborts the whole transaction (EXECABORT, nothing applied): the first
        # refusal says why (READONLY after a failover, MOVED while a slot moves...), as any Redis error would
        for reply in [*replies[:-1], *(executed if isinstance(executed, list) else [executed])]:
            if isinstance(reply, Exception):
                raise reply_error(str(reply))
        if executed is None:
            raise Unavailable(f"rebuilding link {link}: Redis aborted the transaction; it is retried")


def _flat(mapping: Mapping[str, str]) -> list[str]:
    """A mapping as HSET's field value field value ... arguments."""
    return [item for pair in mapping.items() for item in pair]
