"""What the service benchmarks run against: embedded PostgreSQL and Valkey, and jackpotd in its own process."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port  # noqa: E402
from tests.integration.process import ServerProcess  # noqa: E402


@dataclass
class Stack:
    pg: EmbeddedPostgres
    valkey: EmbeddedValkey
    server: ServerProcess

    def stop(self) -> None:
        if self.server.proc and self.server.proc.poll() is None:
            self.server.interrupt()
        self.valkey.stop()
        self.pg.stop()


def start_stack(prefix: str, workers: int, *serve_args: str) -> Stack:
    """Start the stores and a serving jackpotd (given extra `serve` flags) in a new temporary directory."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(root, 0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
        valkey = EmbeddedValkey(root / "valkey").start()
    server = ServerProcess(free_port(), root / "jackpotd.log", redis_url=valkey.url, dsn=pg.dsn, workers=workers)
    server.args += list(serve_args)
    stack = Stack(pg, valkey, server)
    try:
        server.start()
    except BaseException:
        stack.stop()
        raise
    return stack
