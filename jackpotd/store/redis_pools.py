"""Redis adapter: the live pools, the link's sequence and journal, idempotency records, round states.

Every key of a link carries the hash tag {link:<id>} so one script touches one Redis Cluster slot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

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


def channel(link_id: str) -> str:
    return f"{tag(link_id)}:events"


def table_key(table_id: str) -> str:
    """Global index from a table to its link (not tagged: it is read before the link is known)."""
    return f"jackpot:table:{table_id}"


LINKS_KEY = "jackpot:links"


def pairs(flat: Sequence[str]) -> dict[str, int]:
    """HGETALL's flat [k, v, k, v] of integer strings as a dict."""
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


@dataclass(frozen=True, slots=True)
class Reply:
    """What the atomic step stored for a request: identical on every retry."""

    seq: int
    result: dict[str, Any]
    balances: dict[str, int]
    content: dict[str, Any]
    hash: str

    @staticmethod
    def parse(raw: str) -> Reply:
        d = json.loads(raw)
        return Reply(int(d["seq"]), json.loads(d["result"]), pairs(json.loads(d["balances"])),
                     json.loads(d["content"]), d["hash"])


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

    def __init__(self, url: str) -> None:
        self.url = url
        # decode_responses=True: every reply is str; typed Any because the stubs cannot express that
        self.client: Any = aioredis.Redis.from_url(url, decode_responses=True,
                                                              max_connections=256)
        self._apply = self.client.register_script(_APPLY)

    async def close(self) -> None:
        await self.client.aclose()

    async def apply(self, step: Step) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes."""
        link = step.link_id
        rkey = round_key(link, *step.round) if step.round else f"{tag(link)}:noround"
        args: list[str | int] = [
            step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
            step.round_data, step.new_config, json.dumps(step.entry, separators=(",", ":"), sort_keys=True),
            json.dumps(step.result, separators=(",", ":"), sort_keys=True), RECORD_TTL_SECONDS, channel(link),
            json.dumps(step.content, separators=(",", ":"), sort_keys=True), len(step.guards)]
        for pool, bal in sorted(step.guards.items()):
            args += [pool, str(bal)]
        args.append(len(step.deltas))
        for pool, delta in step.deltas:
            args += [pool, str(delta)]
        keys = [config_key(link), balances_key(link), seq_key(link), journal_key(link),
                record_key(link, step.request_id), rkey]
        status, payload = await self._apply(keys=keys, args=args)
        if status in ("ok", "dup", "conflict"):
            return Outcome(status, Reply.parse(payload))
        return Outcome(status, None, payload)

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

    async def trim_journal(self, link_id: str, upto_seq: int) -> None:
        """Drop journal entries that PostgreSQL holds (ids below 0-upto_seq+1)."""
        await self.client.xtrim(journal_key(link_id), minid=f"0-{upto_seq + 1}", approximate=False)
