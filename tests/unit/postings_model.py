"""A model of apply.lua's movement of pools, for the domain's property tests: the service moves pools in Lua only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jackpotd.domain.errors import FailedPrecondition
from jackpotd.domain.postings import POOL_PREFIX, Posting


def apply_postings(balances: Mapping[str, int], postings: Iterable[Posting]) -> dict[str, int]:
    """Balances after the postings; a pool may never go below zero (§5.7: a pool pays what it holds)."""
    after = dict(balances)
    for p in postings:
        after[p.account] = after.get(p.account, 0) + p.amount_uc
        if p.account.startswith(POOL_PREFIX) and after[p.account] < 0:
            raise FailedPrecondition(p.account, after[p.account], "a pool cannot go below zero")
    return after
