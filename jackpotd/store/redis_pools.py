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
from . import keys
from ..service.errors import LinkFenced, LinkLost, Unavailable
from .resp import RespPipeline

SAFETY_TTL_SECONDS = 24 * 3600  # until the writer shortens it to the retention once the entry is durable
_APPLY = (Path(__file__).parent / "apply.lua").read_text()
_READ = (Path(__file__).parent / "read.lua").read_text()


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
    """The script's verdict: ok, dup, conflict, stale_config, round_state, round_moved, moved, negative, exists,
    lost, behind (Redis forgot or went back) or fenced."""

    status: str
    reply: Reply | None = None
    detail: str = ""


@dataclass
class Step:
    """One atomic step: the checks it makes and the movement it applies (built by the service layer)."""

    link_id: str
    request_id: str
    request_hash: str
    identity: str  # canonical.request_identity: what the next journal entry names as the one it follows
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


@dataclass(frozen=True, slots=True)
class LinkRead:
    """A checked read of a link: its sequence, pool balances and (when asked) one round's fields."""

    seq: int
    balances: dict[str, int]
    round: dict[str, str]


@dataclass(frozen=True, slots=True)
class Probe:
    """What Redis holds of a link, read atomically: whether its config is there, its sequence and last entry."""

    has_config: bool
    seq: int | None
    last: str


@dataclass(frozen=True, slots=True)
class Durable:
    """Entries the ledger has just committed for a link: sequences first..first+len(hashes)-1 and the
    request hash of each, so a caller is answered only when the ledger holds its very request."""

    first: int
    hashes: Sequence[str]
    expire: Sequence[str] = ()  # keys (answered records, finished rounds) that may now leave Redis


HASH_PREFIX = 16  # hex digits of a request hash in durability announcements (64 bits)


def lost(link_id: str) -> LinkLost:
    """The error for a link whose keys Redis no longer holds."""
    return LinkLost(f"link {link_id}: Redis has lost its state; it is being rebuilt from the ledger, "
                    "retry with the same request_id")


def refusal(link_id: str, status: str, detail: str) -> LinkLost | LinkFenced | None:
    """The error for a step or read that found the link's Redis state unfit to answer from."""
    if status == "fenced":
        return LinkFenced(f"link {link_id} is fenced: {detail}; an operator must resolve it "
                          "(jackpotd fenced), then retry with the same request_id")
    if status == "lost":
        return lost(link_id)
    if status == "behind":
        return LinkLost(f"link {link_id}: Redis went back to sequence {detail}, behind the ledger; it is being "
                        "rebuilt from the ledger, retry with the same request_id")
    return None


# Replies of a Redis that cannot take the step now but will (a replica, a failover, a load from disk).
_PASSING = ("READONLY", "LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS")


def _reply_error(text: str) -> Exception:
    if text.startswith(_PASSING):
        return Unavailable(f"Redis cannot take the step now ({text}); retry with the same request_id")
    return ResponseError(text)


class RedisPools:
    """Thin async wrapper around the Redis keys of every link."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._queue: list[tuple[str, list[str], list[str | int], asyncio.Future[list[str]]]] = []
        self._flusher: asyncio.Future[None] | None = None
        # decode_responses=True: every reply is str; typed Any because the stubs cannot express that
        self.client: Any = aioredis.Redis.from_url(url, decode_responses=True, max_connections=256)
        self._scripts = {hashlib.sha1(text.encode()).hexdigest(): text for text in (_APPLY, _READ)}
        self._apply_sha, self._read_sha = self._scripts
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

    async def apply(self, step: Step, floor: int) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes. `floor` is the ledger's durable
        sequence as the caller knows it: a Redis behind it has gone back and is refused."""
        link = step.link_id
        rkey = keys.round_(link, *step.round) if step.round else keys.no_round(link)
        args: list[str | int] = [
            step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
            step.round_data, step.new_config, canonical_json(step.entry),
            canonical_json(step.result), SAFETY_TTL_SECONDS, keys.events(link), step.canonical_content, floor,
            step.identity, len(step.guards)]
        for pool, bal in sorted(step.guards.items()):
            args += [pool, str(bal)]
        args.append(len(step.deltas))
        for pool, delta in step.deltas:
            args += [pool, str(delta)]
        status, payload, *fresh = await self._pipelined(self._apply_sha, [
            keys.config(link), keys.balances(link), keys.seq(link), keys.journal(link),
            keys.record(link, step.request_id), rkey, keys.last(link), keys.fence(link)], args)
        if status == "ok":  # the stored reply is what we sent plus the sequence and balances
            seq, balances = fresh
            return Outcome(status, Reply(int(seq), step.result, pairs(orjson.loads(balances)), step.content,
                                         step.request_hash))
        if status in ("dup", "conflict"):
            return Outcome(status, Reply.parse(payload))
        return Outcome(status, None, payload)

    async def read(self, link_id: str, floor: int, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and one round, read atomically; LinkLost or LinkFenced when the
        link's Redis state is not fit to answer from."""
        rkey = keys.round_(link_id, *round_) if round_ else keys.no_round(link_id)
        status, *rest = await self._pipelined(self._read_sha, [
            keys.config(link_id), keys.seq(link_id), keys.balances(link_id), rkey, keys.fence(link_id)], [floor])
        error = refusal(link_id, status, rest[0] if rest else "")
        if error is not None:
            raise error
        seq, balances, rnd = rest
        flat = orjson.loads(rnd)
        return LinkRead(int(seq), pairs(orjson.loads(balances)),
                        dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {})

    async def _pipelined(self, sha: str, keys_: list[str], args: list[str | int]) -> list[str]:
        """Scripts queue while a batch is in flight and then travel together: one write, one read.

        Each script is still atomic on its own; batching only saves round trips and per-call overhead.
        Batches grow with load: every script that arrives during a round trip joins the next batch.
        """
        fut: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._queue.append((sha, keys_, args, fut))
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
                    # a restarted or flushed Redis has forgotten the scripts
                    for text in self._scripts.values():
                        await self.client.script_load(text)
                    results = await self._evalsha_all(batch)
            except Exception as e:  # the whole pipeline failed: every caller in it sees it
                for *_, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                continue
            for (*_, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, Exception):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)

    async def _evalsha_all(self, batch: list[tuple[str, list[str], list[str | int], asyncio.Future[list[str]]]]
                           ) -> list[Any]:
        results = await self._resp.execute(
            [["EVALSHA", sha, len(keys_), *keys_, *args] for sha, keys_, args, _ in batch])
        return [_reply_error(str(r)) if isinstance(r, hiredis.ReplyError) else r for r in results]

    async def record(self, link_id: str, request_id: str) -> str | None:
        """The stored reply of a request id, while Redis keeps it."""
        raw: str | None = await self.client.get(keys.record(link_id, request_id))
        return raw

    @contextlib.asynccontextmanager
    async def subscribe(self, link_id: str) -> AsyncIterator[Callable[[float], Awaitable[Reply | None]]]:
        """The link's published replies: yields a function that waits up to `timeout` s for the next one."""
        pubsub = self.client.pubsub()
        await pubsub.subscribe(keys.events(link_id))

        async def next_reply(timeout: float) -> Reply | None:
            msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout)
            return None if msg is None else Reply.parse(msg["data"])

        try:
            yield next_reply
        finally:
            await pubsub.unsubscribe()
            await pubsub.aclose()

    async def config(self, link_id: str) -> tuple[str, dict[str, Any]] | None:
        """(version, config) of a link, or None if Redis does not hold it."""
        version, raw = await self.client.hmget(keys.config(link_id), ["version", "config"])
        if version is None or raw is None:
            return None
        return version, json.loads(raw)

    async def balances(self, link_id: str) -> dict[str, int]:
        """The pools as Redis holds them, unchecked: for audits that compare Redis with the ledger."""
        return {k: int(v) for k, v in (await self.client.hgetall(keys.balances(link_id))).items()}

    async def seq(self, link_id: str) -> int:
        """The link's sequence as Redis holds it, unchecked: for audits and recovery."""
        return int(await self.client.get(keys.seq(link_id)) or 0)

    async def link_of_table(self, table_id: str) -> str | None:
        v: str | None = await self.client.get(keys.table(table_id))
        return v

    async def set_table_link(self, table_id: str, link_id: str) -> None:
        await self.client.set(keys.table(table_id), link_id)
        await self.client.sadd(keys.LINKS, link_id)

    async def add_link(self, link_id: str) -> None:
        await self.client.sadd(keys.LINKS, link_id)

    async def links(self) -> list[str]:
        return sorted(await self.client.smembers(keys.LINKS))

    async def journal_after(self, link_id: str, seq: int, count: int = 1000) -> list[tuple[int, dict[str, str]]]:
        """Journal entries with a sequence above `seq`, oldest first."""
        rows = await self.client.xrange(keys.journal(link_id), min=f"0-{seq + 1}", max="+", count=count)
        return [(int(i.split("-")[1]), f) for i, f in rows]

    async def announce_durable(self, written: Mapping[str, Durable], retention_seconds: int) -> None:
        """Record and publish what the ledger now holds, and let answered records and finished rounds
        leave Redis after the retention: all in one round trip."""
        commands: list[list[str | int]] = []
        ttl_ms = retention_seconds * 1000
        for link_id, d in written.items():
            head = d.first + len(d.hashes) - 1
            commands += [["SET", keys.durable(link_id), head],
                         ["PUBLISH", keys.DURABLE_CHANNEL, f"{link_id} d {d.first} " + " ".join(d.hashes)]]
            commands += [["PEXPIRE", key, ttl_ms] for key in d.expire]
        for reply in await self._journal_reader.execute(commands):
            if isinstance(reply, Exception):
                raise ResponseError(str(reply))

    async def announce(self, link_id: str, kind: str, seq: int, detail: str = "") -> None:
        """Publish a link event to the durability watchers: `rebuilt` at the ledger's head, or `fenced` at
        the entry the ledger refused."""
        await self.client.publish(keys.DURABLE_CHANNEL, f"{link_id} {kind} {seq} {detail}".rstrip())

    async def probe(self, link_ids: Sequence[str]) -> dict[str, Probe]:
        """Each link's config presence, sequence and last request hash, each link read atomically."""
        pipe = self.client.pipeline(transaction=False)
        for link in link_ids:
            pipe.eval("return {redis.call('EXISTS', KEYS[1]), redis.call('GET', KEYS[2]) or '', "
                      "redis.call('GET', KEYS[3]) or ''}", 3, keys.config(link), keys.seq(link), keys.last(link))
        out = {}
        for link, (has_config, seq, last) in zip(link_ids, await pipe.execute(), strict=True):
            out[link] = Probe(bool(has_config), int(seq) if seq else None, last)
        return out

    async def set_health(self, report: Mapping[str, Any]) -> None:
        """The ledger writer's heartbeat (see writer_health); it lapses after 3 s without a writer."""
        await self.client.set(keys.HEALTH, json.dumps(report), px=3000)

    async def writer_health(self) -> dict[str, Any] | None:
        """The ledger writer's last heartbeat, or None when no writer has reported in the last 3 s."""
        raw = await self.client.get(keys.HEALTH)
        if raw is None:
            return None
        report: dict[str, Any] = json.loads(raw)
        return report

    async def set_fence(self, link_id: str, why: str | None) -> None:
        """Fence the link (every step and read refused with `why`), or lift the fence with None."""
        if why is None:
            await self.client.delete(keys.fence(link_id))
        else:
            await self.client.set(keys.fence(link_id), why)

    async def trim_journal(self, link_id: str, upto_seq: int) -> None:
        """Drop journal entries that PostgreSQL holds (ids below 0-upto_seq+1)."""
        await self.client.xtrim(keys.journal(link_id), minid=f"0-{upto_seq + 1}", approximate=False)
