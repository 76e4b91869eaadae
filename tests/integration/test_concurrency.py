"""Eight tables settle concurrently with forced hits on several at once; every cent is accounted for."""

from __future__ import annotations

import asyncio

from ..conftest import unique
from .checks import assert_consistent
from .harness import Client
from .load import Tally, run_table


async def test_eight_tables_at_once(client: Client, target: str) -> None:
    link = unique("busy")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.fund(link, "MAJOR", 1_000_000)
    await client.fund(link, "MINOR", 100_000)
    tables = [unique(f"t{i}") for i in range(8)]
    for t in tables:
        await client.register(t, link)
    tally = Tally()
    await asyncio.gather(*(run_table(target, t, 25, tally, seed=i) for i, t in enumerate(tables)))
    # every forced hit was paid: rounds 0, 5, ... 20 on every table, three seats each, several tables at once
    assert sum(tally.hits.values()) >= 8 * 5 * 3, tally.hits
    assert len(tally.answers) == 8 * 25 * 2  # every round: a commit, then a settle or a void
    await assert_consistent(client.pg, client.redis, link, tally)
