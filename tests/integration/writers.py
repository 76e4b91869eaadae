"""Writer processes on a test's own stores, for the tests of leases under faults (issue 23: test_paused_leader.py,
test_writer_cutoff.py, test_chaos_defects.py): links in a chosen shard, two writers sharing the shards, tables at
play."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from jackpotd.embedded import free_port
from jackpotd.store.shards import ALL, SHARDS, shard_of

from ..conftest import Isolated, unique
from .harness import Client, eventually
from .load import Tally, run_table
from .process import ServerProcess

REPLACED_WITHIN = 10.0  # the bound: a silent leader's shards are written by another within this


def link_in(shards: set[int], prefix: str) -> str:
    """A new link id whose writer shard is one of `shards`."""
    while shard_of(link := unique(prefix)) not in shards:
        pass
    return link


async def new_link_in(client: Client, shards: set[int], tables: int) -> tuple[str, list[str]]:
    """A funded link in one of `shards`, with its tables."""
    return await funded_link(client, link_in(shards, "paused"), tables)


async def funded_link(client: Client, link: str, tables: int) -> tuple[str, list[str]]:
    """Link `link` created (MAJOR reset $10,000, MINOR $1,000), funded ($20,000 and $2,000), with `tables` tables."""
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.fund(link, "MAJOR", 2_000_000)
    await client.fund(link, "MINOR", 200_000)
    names = [unique(f"t{i}") for i in range(tables)]
    for t in names:
        await client.register(t, link)
    return link, names


def role(isolated: Isolated, tmp_path: Path, command: str, n: int, dsn: str = "", lease_s: float | None = None,
         workers: int | None = None) -> ServerProcess:
    """A jackpotd process on the test's stores, logged in as the locked-down application role."""
    env = {} if lease_s is None else {"JACKPOTD_WRITER_LEASE_SECONDS": str(lease_s)}
    return ServerProcess(free_port(), tmp_path / f"{command}-{n}.log", redis_url=isolated.redis_url,
                         dsn=dsn or isolated.app_dsn, metrics_port=free_port(), command=command,
                         workers=(0 if command == "grpc" else workers), env=env)


def start_all(processes: list[ServerProcess]) -> None:
    """Start each process, in order."""
    for p in processes:
        p.start()


def end_all(processes: list[ServerProcess]) -> None:
    """kill -9 each process still running (a stopped one is continued first)."""
    for p in processes:
        if p.proc is not None and p.proc.poll() is None:
            p.proc.send_signal(signal.SIGCONT)  # a stopped process does not die of SIGKILL until it runs
            p.kill9()



async def share(first: ServerProcess, second: ServerProcess, *others: ServerProcess,
                first_is: str = "the first writer", both_are: str = "the writers") -> None:
    """Start `first` until it writes every shard, then `second` (and `others`) until the two share them half each."""
    await asyncio.to_thread(start_all, [first])
    await eventually(lambda: first.shards() == ALL, 30, f"{first_is} writes every shard")
    await asyncio.to_thread(start_all, [second, *others])
    await eventually(lambda: halves(first, second), 30, f"{both_are} share the shards")


def halves(a: ServerProcess, b: ServerProcess) -> bool:
    """Whether the two writer processes hold half of the shards each."""
    return len(a.shards()) == len(b.shards()) == SHARDS // 2


def playing(target: str, tables: list[str], rounds: int, tally: Tally) -> list[asyncio.Task[None]]:
    """Each table playing `rounds` rounds against `target`, a hit every fourth, its answers in `tally`."""
    return [asyncio.create_task(run_table(target, t, rounds, tally, seed=n, hit_every=4))
            for n, t in enumerate(tables)]
