"""The stored form of a reply, as apply.lua writes it (in Redis, and in the ledger's entries.reply):
read here for both adapters."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from ..service.ports import Reply


def pairs(flat: Sequence[str]) -> dict[str, int]:
    """A flat [k, v, k, v] of integer strings (HGETALL's shape; cjson writes an empty one as {})."""
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


def parse_reply(raw: str | bytes) -> Reply:
    """A stored reply: result, balances and content embedded as JSON (since e98de99; see DECISIONS)."""
    d = orjson.loads(raw)
    return Reply(int(d["seq"]), d["result"], pairs(d["balances"]), d["content"], d["hash"])
