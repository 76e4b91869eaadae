"""Redis adapter: the live pools, the link's sequence and journal, idempotency records, round states.

Every key of a link carries the hash tag {link:<id>} so one script touches one Redis Cluster slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hiredis
import orjson
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from ..canonical import canonical_json
from .resp import RespPipeline

RECORD_TTL_SECONDS = 7 * 24 * 3600  # idempotency records live days in Redis, forever in PostgreSQL
_APPLY = (Path(__file__).parent / "apply.lua").read_text()


def tag(link_id: str) -> str:
    """The hash tag shared by every key of a link."""
    return "{link:" + link_id + "}"


def config_key(link_id: str) -> str:
    return f"{tag(link_id)}:config"


def balances_key(link_id: str) -> str:
    return f"{tag(link_id)}:balances"


def seq_key(link_id: str) -> str:
    return f"{tag(link_id)}:seq"


def journal_key(link_id: str) -> str:
    return f"{tag(link_id)}:journal"


def record_key(link_id: str, request_id: str) -> str:
    return f"{tag(link_id)}:req:{request_id}"


def round_key(link_id: str, table_id: str, round_id: str) -> str:
    return f"{tag(link_id)}:round:{table_id}:{round_id}"


def durable_key(link_id: str) -> str:
    """The last sequence of the link committed in PostgreSQL, set by the ledger writer."""
    return f"{tag(link_id)}:durable"


def channel(link_id: str) -> str:
    return f"{tag(link_id)}:events"


def table_key(table_id: str) -> str:
    """Global index from a table to its link (not tagged: it is read before the link is known)."""
    return f"jackpot:table:{table_id}"


LINKS_KEY = "jackpot:links"
HEALTH_KEY = "jackpot:health"  # the ledger writer's heartbeat: {"at_ms": ..., "problems": {link: why}}, expires in 3 s


def pairs(flat: Sequence[str]) -> dict[str, int]:
    """HGETALL's flat [k, v, k, v] of integer strings as a dict."""
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


@dataclass(frozen=True, slots=True)
class Reply:
    """What the atomic step stored for a request: identical on every retry."""

    seq: int
    result: Mapping[str, Any]
    balances: dict[str, int]
    content: Mapping[str, Any]  # the request content the id was first used for
    hash: str

    @staticmethod
    def parse(raw: str) -> Reply:
        """A stored reply; its parts are embedded JSON (replies stored before 2026-11 held them as strings)."""
        d = orjson.loads(raw)
        result, balances, content = (orjson.loads(v) if isinstance(v, str) else v
                                     for v in (d["result"], d["balances"], d["content"]))
        return Reply(int(d["seq"]), result, pairs(balances), content, d["hash"])


@dataclass(frozen=True, slots=True)
class Outcome:
    """The script's verdict: ok, dup, conflict, stale_config, round_state, round_moved, moved, negative, exists."""

    status: str
    reply: Reply | None = None
    detail: str = ""


@dataclass
class Step:
    """One atomic step: the checks it makes and the movement it applies (built by the service layer)."""

    link_id: str
    request_id: str
    request_hash: str
    content: Mapping[str, Any]
    canonical_content: str
    config_version: str  # "new" to create the link
    entry: Mapping[str, Any]
    result: Mapping[str, Any]
    round: tuple[str, str] | None = None  # (table_id, round_id)
    round_expect: str = ""
    round_rev: str = ""
    round_new_state: str = ""
    round_data: str = ""
    new_config: str = ""
    guards: Mapping[str, int] = field(default_factory=dict)
    deltas: Sequence[tuple[str, int]] = ()


class RedisPools:
    """Thin async wrapper around the Redis keys of every link."""

    DURABLE_CHANNEL = "jackpot:durable"

    def __init__(self, url: str) -> None:
        self.url = url
        self._queue: list[tuple[list[str], list[str | int], asyncio.Future[list[str]]]] = []
        self._flusher: asyncio.Future[None] | None = None
        # decode_responses=True: every reply is str; typed Any because the stubs cannot express that
        self.client: Any = aioredis.Redis.from_url(url, decode_responses=True,
                                                              max_connections=256)
        self._apply_sha = hashlib.sha1(_APPLY.encode()).hexdigest()
        self._resp = RespPipeline(url)
        self._journal_reader = RespPipeline(url)  # its own connection: XREAD may block on it

    async def read_journals(self, positions: Mapping[str, str], count: int, block_ms: int | None = None
                            ) -> list[tuple[str, list[tuple[str, dict[str, str]]]]]:
        """XREAD of the journal streams after the given ids, parsed by hiredis: [(stream, [(id, fields)])]."""
        command: list[str | int] = ["XREAD", "COUNT", count]
        if block_ms is not None:
            command += ["BLOCK", block_ms]
        command += ["STREAMS", *positions.keys(), *positions.values()]
        (reply,) = await self._journal_reader.execute([command])
        if isinstance(reply, Exception):
            raise ResponseError(str(reply))
        if not reply:
            return []
        out = []
        for stream, entries in reply:
            out.append((stream, [(entry_id, dict(zip(flat[::2], flat[1::2], strict=True)))
                                 for entry_id, flat in entries]))
        return out

    async def close(self) -> None:
        await self._journal_reader.close()
        await self._resp.close()
        await self.client.aclose()

    async def apply(self, step: Step) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes."""
        link = step.link_id
        rkey = round_key(link, *step.round) if step.round else f"{tag(link)}:noround"
        args: list[str | int] = [
            step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
            step.round_data, step.new_config, canonical_json(step.entry),
            canonical_json(step.result), RECORD_TTL_SECONDS, channel(link), step.canonical_content,
            len(step.guards)]
        for pool, bal in sorted(step.guards.items()):
            args += [pool, str(bal)]
        args.append(len(step.deltas))
        for pool, delta in step.deltas:
            args += [pool, str(delta)]
        keys = [config_key(link), balances_key(link), seq_key(link), journal_key(link),
                record_key(link, step.request_id), rkey]
        status, payload, *fresh = await self._pipelined(keys, args)
        if status == "ok":  # the stored reply is what we sent plus the sequence and balances
            seq, balances = fresh
            return Outcome(status, Reply(int(seq), step.result, pairs(orjson.loads(balances)), step.content,
                                         step.request_hash))
        if status in ("dup", "conflict"):
            return Outcome(status, Reply.parse(payload))
        return Outcome(status, None, payload)

    async def _pipelined(self, keys: list[str], args: list[str | int]) -> list[str]:
        """Steps queue while a batch is in flight and then travel together: one write, one read.

        Each script is still atomic on its own; batching only saves round trips and per-call overhead.
        Batches grow with load: every step that arrives during a round trip joins the next batch.
        """
        fut: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._queue.append((keys, args, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await fut

    async def _flush(self) -> None:
        """Send what has queued, one batch per round trip, until the queue is empty."""
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                results = await self._evalsha_all(batch)
                if any(str(r).startswith("NOSCRIPT") for r in results if isinstance(r, Exception)):
                    # a restarted or flushed Redis has forgotten the script
                    await self.client.script_load(_APPLY)
                    results = await self._evalsha_all(batch)
            except Exception as e:  # the whole pipeline failed: every caller in it sees it
                for _, _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                continue
            for (_, _, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, Exception):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)

    async def _evalsha_all(self, batch: list[tuple[list[str], list[str | int], asyncio.Future[list[str]]]]
                           ) -> list[Any]:
        results = await self._resp.execute(
            [["EVALSHA", self._apply_sha, len(keys), *keys, *args] for keys, args, _ in batch])
        return [ResponseError(str(r)) if isinstance(r, hiredis.ReplyError) else r for r in results]

    async def record(self, link_id: str, request_id: str) -> str | None:
        """The stored reply of a request id, while Redis keeps it."""
        raw: str | None = await self.client.get(record_key(link_id, request_id))
        return raw

    @contextlib.asynccontextmanager
    async def subscribe(self, link_id: str) -> AsyncIterator[Callable[[float], Awaitable[Reply | None]]]:
        """The link's published replies: yields a function that waits up to `timeout` s for the next one."""
        pubsub = self.client.pubsub()
        await pubsub.subscribe(channel(link_id))

        async def next_reply(timeout: float) -> Reply | None:
            msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout)
            return None if msg is None else Reply.parse(msg["data"])

        try:
            yield next_reply
        finally:
            await pubsub.unsubscribe()
            await pubsub.aclose()

    async def config(self, link_id: str) -> tuple[str, dict[str, Any]] | None:
        """(version, config) of a link, or None if unknown."""
        version, raw = await self.client.hmget(config_key(link_id), ["version", "config"])
        if version is None or raw is None:
            return None
        return version, json.loads(raw)

    async def config_version(self, link_id: str) -> str | None:
        v: str | None = await self.client.hget(config_key(link_id), "version")
        return v

    async def balances(self, link_id: str) -> dict[str, int]:
        return {k: int(v) for k, v in (await self.client.hgetall(balances_key(link_id))).items()}

    async def seq(self, link_id: str) -> int:
        return int(await self.client.get(seq_key(link_id)) or 0)

    async def round_state(self, link_id: str, table_id: str, round_id: str) -> dict[str, str]:
        r: dict[str, str] = await self.client.hgetall(round_key(link_id, table_id, round_id))
        return r

    async def link_of_table(self, table_id: str) -> str | None:
        v: str | None = await self.client.get(table_key(table_id))
        return v

    async def set_table_link(self, table_id: str, link_id: str) -> None:
        await self.client.set(table_key(table_id), link_id)
        await self.client.sadd(LINKS_KEY, link_id)

    async def add_link(self, link_id: str) -> None:
        await self.client.sadd(LINKS_KEY, link_id)

    async def links(self) -> list[str]:
        return sorted(await self.client.smembers(LINKS_KEY))

    async def journal_after(self, link_id: str, seq: int, count: int = 1000) -> list[tuple[int, dict[str, str]]]:
        """Journal entries with a sequence above `seq`, oldest first."""
        rows = await self.client.xrange(journal_key(link_id), min=f"0-{seq + 1}", max="+", count=count)
        return [(int(i.split("-")[1]), f) for i, f in rows]

    async def announce_durable(self, heads: Mapping[str, int]) -> None:
        """Record and publish that the ledger holds each link's entries up to its head, in one round trip."""
        commands: list[list[str | int]] = []
        for link_id, seq in heads.items():
            commands += [["SET", durable_key(link_id), seq], ["PUBLISH", self.DURABLE_CHANNEL, f"{link_id} {seq}"]]
        for reply in await self._journal_reader.execute(commands):
            if isinstance(reply, Exception):
                raise ResponseError(str(reply))

    async def writer_health(self) -> dict[str, Any] | None:
        """The ledger writer's last heartbeat, or None when no writer has reported in the last 3 s."""
        raw = await self.client.get(HEALTH_KEY)
        if raw is None:
            return None
        report: dict[str, Any] = json.loads(raw)
        return report

    async def durable_mark(self, link_id: str) -> int:
        return int(await self.client.get(durable_key(link_id)) or 0)

    async def trim_journal(self, link_id: str, upto_seq: int) -> None:
        """Drop journal entries that PostgreSQL holds (ids below 0-upto_seq+1)."""
        await self.client.xtrim(journal_key(link_id), minid=f"0-{upto_seq + 1}", approximate=False)
