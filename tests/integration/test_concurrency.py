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
    assert tally.hits >= 8 * 3  # forced hits landed on several tables at once
    await assert_consistent(client.pg, client.redis, link, tally)
