"""Building a step: the journal entry, the pool movements and the checks one decision hands the live store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...domain.postings import Posting, merge, pool_legs, require_balanced
from ..commands import Request
from ..entries import Detail, Entry
from ..ports import Step
from ..replies import NoResult, Result


def step(link_id: str, req: Request, kind: str, version: str, now_ms: int, *, postings: Sequence[Posting] = (),
         detail: Detail, result: Result | None = None, **checks: Any) -> Step:
    """The step of one request: its legs merged per account and balanced (double entry, §10), its journal
    entry, and the pool deltas the live store applies atomically with `checks` (round, guards, config)."""
    legs = merge(postings)
    require_balanced(legs)  # §10: a movement that does not sum to zero is a bug and must not reach the ledger
    entry = Entry(kind, now_ms, req.key, req.hash, legs, detail)
    return Step(link_id=link_id, request_id=req.key, request_hash=req.hash, identity=req.identity,
                content=req.content, canonical_content=req.canonical, config_version=version, entry=entry,
                result=result or NoResult(), deltas=pool_legs(legs), **checks)
