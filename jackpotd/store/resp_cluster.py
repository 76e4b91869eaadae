"""The hot path's pipelined connection (resp.RespPipeline) for a Valkey/Redis Cluster: each command of a batch
goes to the primary that owns its key's slot, one RespPipeline per primary, the primaries' parts of a batch in
flight together. The slot map is redis-py's (its cluster client reads it and refreshes it); a command refused
with MOVED is sent again after the map is read afresh, one refused with ASK is sent to the importing node
after ASKING. Every key of a link shares one hash tag (keys.py), so each script still runs on one primary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import hiredis

from .resp import Command, RespPipeline

log = logging.getLogger("jackpotd.redis")
REDIRECTS = 3  # MOVED/ASK answers followed for one command before it is given back as the reply
_KEYLESS = frozenset({"PUBLISH", "PING", "SCRIPT", "INFO", "ASKING"})


def with_address(url: str, host: str, port: int) -> str:
    """`url` with its address replaced by host:port (a Unix socket's path dropped): its password, database
    and options kept, so a node named by the cluster or a Sentinel is reached as the URL says."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (userinfo + "@" if userinfo else "") + (f"[{host}]" if ":" in host else host) + f":{port}"
    return urlunsplit(("rediss" if parts.scheme == "rediss" else "redis", netloc,
                       "" if parts.scheme == "unix" else parts.path, parts.query, ""))


def key_of(command: Command) -> str | None:
    """The key a command is routed by (its first), or None for a command of no key (any primary takes it)."""
    name = str(command[0]).upper()
    if name in _KEYLESS:
        return None
    if name in ("EVALSHA", "EVAL", "FCALL"):
        return str(command[3]) if int(command[2]) > 0 else None
    if name == "XREAD":
        words = [str(w).upper() for w in command]
        return str(command[words.index("STREAMS") + 1])
    return str(command[1])


class ClusterResp:
    """Sends batches of commands to a cluster and returns their replies in the batch's order (RespPipeline's
    contract: a command's error is its reply; a lost connection raises ConnectionError, a silent node
    Unavailable). A batch is not atomic across primaries, as it is not on one: each script is."""

    def __init__(self, cluster: Any, url: str) -> None:
        self._cluster = cluster  # redis.asyncio.RedisCluster: the slot map and its refreshes
        self._url = url
        self._nodes: dict[tuple[str, int], RespPipeline] = {}

    def _pipe(self, address: tuple[str, int]) -> RespPipeline:
        pipe = self._nodes.get(address)
        if pipe is None:
            pipe = self._nodes[address] = RespPipeline(with_address(self._url, *address))
        return pipe

    def _owner(self, key: str | None) -> tuple[str, int]:
        node = (self._cluster.get_node_from_key(key) if key is not None
                else self._cluster.get_default_node() or self._cluster.get_primaries()[0])
        return node.host, node.port

    async def _refresh(self) -> None:
        """Read the slot map again (a failover or a resharding moved slots). A cluster that cannot answer now
        keeps the old map: the caller's own error says what failed, and the next batch asks again."""
        try:
            await self._cluster.nodes_manager.initialize()
        except Exception as e:
            log.warning("reading the Redis Cluster's slot map failed: %s", e)

    async def execute(self, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        if not self._cluster.nodes_manager.slots_cache:
            await self._cluster.initialize()
        replies: list[Any] = [None] * len(commands)
        pending = list(range(len(commands)))
        asking: dict[int, tuple[str, int]] = {}
        for attempt in range(REDIRECTS + 1):
            groups: dict[tuple[str, int], list[int]] = {}
            asked = set(asking)
            for i in pending:
                groups.setdefault(asking.pop(i) if i in asking else self._owner(key_of(commands[i])), []).append(i)
            try:
                parts = await asyncio.gather(*(self._send(address, commands, indices, asked, timeout)
                                               for address, indices in groups.items()))
            except ConnectionError:
                await self._refresh()  # a node went away: the next batch asks the new map
                raise
            pending = []
            for (_, indices), part in zip(groups.items(), parts, strict=True):
                for i, reply in zip(indices, part, strict=True):
                    replies[i] = reply
                    redirect = _redirect(reply)
                    if redirect is not None and attempt < REDIRECTS:
                        pending.append(i)
                        if redirect[0] == "ASK":
                            asking[i] = redirect[1]
            if not pending:
                break
            if any(i not in asking for i in pending):
                await self._refresh()
        return replies

    async def _send(self, address: tuple[str, int], commands: Sequence[Command], indices: list[int],
                    asked: set[int], timeout: float | None) -> list[Any]:
        """The replies of commands[indices] sent to one node; an ASK-redirected one goes after ASKING (whose
        OK is not a reply of the batch)."""
        sent: list[Command] = []
        for i in indices:
            if i in asked:
                sent.append(["ASKING"])
            sent.append(commands[i])
        replies = await self._pipe(address).execute(sent, timeout=timeout)
        if not asked:
            return replies
        out, at = [], 0
        for i in indices:
            at += i in asked
            out.append(replies[at])
            at += 1
        return out

    async def execute_on(self, key: str, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        """The whole batch on the primary of `key`'s slot (a MULTI ... EXEC of one link's keys)."""
        if not self._cluster.nodes_manager.slots_cache:
            await self._cluster.initialize()
        try:
            return await self._pipe(self._owner(key)).execute(commands, timeout=timeout)
        except ConnectionError:
            await self._refresh()
            raise

    async def close(self) -> None:
        for pipe in self._nodes.values():
            await pipe.close()
        self._nodes = {}


def _redirect(reply: Any) -> tuple[str, tuple[str, int]] | None:
    """("MOVED" or "ASK", the node's address) when a reply sends the command elsewhere."""
    if not isinstance(reply, hiredis.ReplyError):
        return None
    kind, _, rest = str(reply).partition(" ")
    if kind not in ("MOVED", "ASK"):
        return None
    host, _, port = rest.partition(" ")[2].rpartition(":")
    return kind, (host.strip("[]"), int(port))
