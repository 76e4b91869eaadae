"""The Lua scripts of the Redis adapter, and the batching that sends them: scripts that arrive while a batch is in
flight travel together in the next one (one write, one read). Their KEYS, ARGV and replies: lua_codec.py."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import hiredis
from redis.exceptions import ResponseError

from ...service.errors import Unavailable
from ..batching import Batcher

APPLY = (Path(__file__).parent / "apply.lua").read_text()
READ = (Path(__file__).parent / "read.lua").read_text()


# Replies of a Redis that cannot take the step now but will (a replica, a failover, a load from disk).
_PASSING = ("READONLY", "LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS")


def reply_error(text: str) -> Exception:
    """A script's error reply: Unavailable when Redis will take it later, else a ResponseError (a bug)."""
    if text.startswith(("MOVED ", "ASK ")):
        return Unavailable(f"Redis sent the step to another node ({text}): a slot is moving, or the server is a "
                           "cluster and redis_cluster is not set; retry with the same request_id")
    if text.startswith(_PASSING):
        return Unavailable(f"Redis cannot take the step now ({text}); retry with the same request_id")
    return ResponseError(text)


Script = tuple[str, list[str], list[str | int]]  # (sha, keys, args)


class ScriptBatcher:
    """EVALSHA calls sent in batches over `execute` (one round trip per batch); each script is still atomic
    on its own. A Redis that forgot the scripts (restarted, flushed) is given them again."""

    def __init__(self, execute: Callable[[Sequence[Sequence[str | int]]], Awaitable[list[Any]]],
                 load: Callable[[str], Awaitable[Any]]) -> None:
        self._execute = execute
        self._load = load
        self._scripts = {hashlib.sha1(text.encode()).hexdigest(): text for text in (APPLY, READ)}
        self.apply_sha, self.read_sha = self._scripts
        self._batcher: Batcher[Script, list[str]] = Batcher(self._send)

    async def run(self, sha: str, keys: list[str], args: list[str | int]) -> list[str]:
        return await self._batcher.call((sha, keys, args))

    async def _send(self, batch: list[Script]) -> list[Any]:
        results = await self._evalsha(batch)
        missing = [i for i, r in enumerate(results) if isinstance(r, Exception) and str(r).startswith("NOSCRIPT")]
        if missing:  # only those went unrun (on a cluster, one node may have restarted): load, and run them again
            for text in self._scripts.values():
                await self._load(text)
            for i, result in zip(missing, await self._evalsha([batch[i] for i in missing]), strict=True):
                results[i] = result
        return results

    async def _evalsha(self, batch: list[Script]) -> list[Any]:
        results = await self._execute([["EVALSHA", sha, len(keys), *keys, *args] for sha, keys, args in batch])
        return [reply_error(str(r)) if isinstance(r, hiredis.ReplyError) else r for r in results]
