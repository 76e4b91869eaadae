"""A table load for tests: real table controllers (the jackpot_table library) playing rounds through its
simulator on several tables at once; a call the service could not answer is retried with the same id."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from jackpot_table import ControllerConfig, TableController, simulator
from jackpot_table.simulator import Scenario, TableSettings, play

from jackpotd.auth.identity import Role

from .harness import token

FORCED = [["As", "Ks", "Qs", "Js", "Ts"], ["9h", "8h", "7h", "6h", "5h"], ["2c", "5c", "9c", "Jc", "Kc"],
          ["3d", "3h", "3s", "4c", "4d"]]
HIT_SEATS = (7, 4, 2)
# Every seat takes the jackpot wager; about one round in seven is a misdeal (never a round with forced hits).
SETTINGS = TableSettings(share=1.0, misdeal_rate=1 / 7, absent_rate=0.0)
# Longer than any outage the tests cause: a table that stopped taking wagers would leave rounds uncounted.
SILENCE_LIMIT = 120.0
# The outboxes fsync every saved id: in memory where there is a RAM disk, as the tests need no power-cut safety.
OUTBOX_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None


@dataclass
class Tally(simulator.Tally):
    """The simulator's account of what the tables did and were told (`answers`: every call's sequence),
    plus how many calls the controllers retried: proof that a disruption reached the tables."""

    retries: int = 0


def forced_hits(table: str, rounds: int, seed: int, hit_every: int) -> Scenario:
    """Hits on seats 7, 4 and 2 of every `hit_every`-th round: three of the FORCED hands, drawn by `seed`."""
    rng = random.Random(seed)
    return Scenario({table: {n: dict(zip(HIT_SEATS, rng.sample(FORCED, len(HIT_SEATS)), strict=True))
                             for n in range(0, rounds, hit_every)}})


class _Retries(logging.Handler):
    """Counts retries by table: the controller logs each one on the `jackpot_table` logger at INFO."""

    def __init__(self, counted: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self.counted = counted

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in str(record.msg) and isinstance(record.args, tuple) and record.args:
            self.counted(str(record.args[0]))


@contextlib.contextmanager
def counting_retries(counted: Callable[[str], None]) -> Iterator[None]:
    """While open, `counted(table_id)` is called for each call a table controller retries."""
    logger = logging.getLogger("jackpot_table")
    level = logger.level
    if not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)
    handler = _Retries(counted)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _counting_retries(table: str, tally: Tally) -> contextlib.AbstractContextManager[None]:
    def counted(table_id: str) -> None:
        if table_id == table:
            tally.retries += 1

    return counting_retries(counted)


async def run_table(target: str, table: str, rounds: int, tally: Tally, seed: int, hit_every: int = 5,
                    prefix: str = "r") -> None:
    """Play `rounds` rounds at `table` with a TableController of its own (and an outbox of its own)."""
    with tempfile.TemporaryDirectory(prefix="jackpot-outbox-", dir=OUTBOX_DIR) as outbox, \
            _counting_retries(table, tally):
        config = ControllerConfig(target, table, str(Path(outbox) / "outbox.db"), silence_limit=SILENCE_LIMIT,
                                  token=token(Role.TABLE, table))
        controller = await TableController(config).start()
        try:
            await play(controller, SETTINGS, rounds, tally, random.Random(seed),
                       forced_hits(table, rounds, seed, hit_every), prefix)
            assert await controller.resume() == 0, f"{table}: a saved request was never answered"
        finally:
            await controller.close()
