"""The hot path's pipelined connection (resp.RespPipeline) for a Valkey/Redis Cluster: each command of a batch
goes to the primary that owns its key's slot, one RespPipeline per primary, the primaries' parts of a batch in
flight together. The slot map is redis-py's (its cluster client reads it and refreshes it); a command refused
with MOVED is sent again after the map is read afresh, one refused with ASK is sent to the importing node
after ASKING. Every key of a link shares one hash tag (keys.py), so each script still runs on one primary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import hiredis

from ..backoff import Backoff, exponential
from ..service.errors import Unavailable
from .resp import Command, RespPipeline

log = logging.getLogger("jackpotd.redis")
REDIRECTS = 3  # MOVED/ASK answers followed for one command before it is given back as the reply
REFRESH_EVERY = 0.5  # seconds: the slot map is read at most this often, however many batches fail
NODE_PAUSE = exponential(1.0, 10.0)  # seconds a failed node's commands fail at once: 1, 2, 4 ... 10 while it fails
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
        self._refreshed_at = -1e9
        # a node that failed: until when its commands fail at once, and its failures in a row. A silent host would
        # otherwise hold every batch with a command for it (nearly all) for a whole timeout.
        self._paused: dict[tuple[str, int], tuple[float, Backoff]] = {}

    def _pipe(self, address: tuple[str, int]) -> RespPipeline:
        pipe = self._nodes.get(address)
        if pipe is None:
            pipe = self._nodes[address] = RespPipeline(with_address(self._url, *address))
        return pipe

    def _owner(self, key: str | None) -> tuple[str, int]:
        node = (self._cluster.get_node_from_key(key) if key is not None
                else self._cluster.get_default_node() or self._cluster.get_primaries()[0])
        return node.host, node.port

    async def _ready(self) -> None:
        if not self._cluster.nodes_manager.slots_cache:
            await self._cluster.initialize()

    async def _refresh(self) -> None:
        """Read the slot map again (a failover or a resharding moved slots), at most every REFRESH_EVERY seconds,
        and let go of the connections to nodes that left it. A cluster that cannot answer now keeps the old map:
        the caller's own error says what failed, and a later batch asks again."""
        now = time.monotonic()
        if now - self._refreshed_at < REFRESH_EVERY:
            return
        self._refreshed_at = now
        try:
            await self._cluster.nodes_manager.initialize()
        except Exception as e:
            log.warning("reading the Redis Cluster's slot map failed: %s", e)
            return
        primaries = {(node.host, node.port) for node in self._cluster.get_primaries()}
        for address in set(self._nodes) - primaries:
            await self._nodes.pop(address).close()

    async def execute(self, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        """Replies in the batch's order. A node that fails (lost, silent) fails only its own commands: their
        replies are the exception (Unavailable or ConnectionError), the other nodes' stand; nothing is raised
        for a node's failure, even when every node fails. A command of no key (PUBLISH) goes where the command
        before it went, so a link's announcement leaves from the link's node, in order with its others."""
        await self._ready()
        replies: list[Any] = [None] * len(commands)
        pending = list(range(len(commands)))
        sent_to: dict[int, tuple[str, int]] = {}  # where MOVED or ASK sends a command next
        asking: set[int] = set()
        for attempt in range(REDIRECTS + 1):
            groups: dict[tuple[str, int], list[int]] = {}
            previous: tuple[str, int] | None = None
            for i in pending:
                key = key_of(commands[i])
                address = sent_to.pop(i, None) or (previous if key is None and previous else self._owner(key))
                groups.setdefault(address, []).append(i)
                previous = address
            parts = await asyncio.gather(*(self._send(address, commands, indices, asking, timeout)
                                           for address, indices in groups.items()), return_exceptions=True)
            asking = set()
            failed = [part for part in parts if isinstance(part, BaseException)]
            for error in failed:
                if not isinstance(error, Exception):  # cancelled: not a node's failure
                    raise error
            if failed:
                await self._refresh()  # a node went away, or the map went stale with a failover
            pending = []
            for (_, indices), answered in zip(groups.items(), parts, strict=True):
                for n, i in enumerate(indices):
                    reply = answered if isinstance(answered, BaseException) else answered[n]
                    replies[i] = reply
                    redirect = _redirect(reply)
                    if redirect is None and str(reply).startswith("MOVED"):  # an address we cannot read
                        await self._refresh()
                    if redirect is not None and attempt < REDIRECTS:
                        pending.append(i)
                        sent_to[i] = redirect[1]  # not executed there: safe to send again
                        if redirect[0] == "ASK":
                            asking.add(i)
            if not pending:
                break
            if any(i not in asking for i in pending):
                await self._refresh()  # MOVED: the map is stale
        return replies

    async def _send(self, address: tuple[str, int], commands: Sequence[Command], indices: list[int],
                    asking: set[int], timeout: float | None) -> list[Any]:
        """The replies of commands[indices] sent to one node; an ASK-redirected one goes after ASKING (whose
        OK is not a reply of the batch)."""
        sent: list[Command] = []
        for i in indices:
            if i in asking:
                sent.append(["ASKING"])
            sent.append(commands[i])
        paused = self._paused.get(address)
        if paused is not None and time.monotonic() < paused[0]:
            raise ConnectionError(f"Redis node {address[0]}:{address[1]} failed a moment ago; retry")
        try:
            replies = await self._pipe(address).execute(sent, timeout=timeout)
        except (OSError, Unavailable):  # (ConnectionError is an OSError) lost, refused or silent
            backoff = paused[1] if paused is not None else Backoff(NODE_PAUSE)
            self._paused[address] = (time.monotonic() + backoff.failed(), backoff)
            raise
        self._paused.pop(address, None)
        if not asking:
            return replies
        out, at = [], 0
        for i in indices:
            at += i in asking
            out.append(replies[at])
            at += 1
        return out

    async def execute_on(self, key: str, commands: Sequence[Command], *, timeout: float | None = None) -> list[Any]:
        """The whole batch on the primary of `key`'s slot (a MULTI ... EXEC of one link's keys). A redirect is
        not followed (a transaction cannot be split): it reads the map afresh for the caller's retry."""
        await self._ready()
        try:
            replies = await self._pipe(self._owner(key)).execute(commands, timeout=timeout)
        except Exception:
            await self._refresh()
            raise
        if any(_redirect(r) is not None or str(r).startswith("EXECABORT") for r in replies):
            await self._refresh()
        return replies

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
    if not host or not port.isdigit():  # a form we do not know: the caller gets the reply as it is
        return None
    return kind, (host.strip("[]"), int(port))
