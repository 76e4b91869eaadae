"""What the service benchmarks run against: embedded PostgreSQL and Valkey, and jackpotd in its own process."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from jackpotd.auth.client import TableTokens, open_channel  # noqa: E402
from jackpotd.auth.tokens import new_key  # noqa: E402
from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey, free_port  # noqa: E402
from tests.integration.process import ServerProcess  # noqa: E402


@dataclass
class Stack:
    pg: EmbeddedPostgres
    valkey: EmbeddedValkey
    server: ServerProcess
    auth_key: bytes  # the server trusts bearer tokens signed with it
    root: Path  # the stack's temporary directory, removed at stop

    def channel(self) -> grpc.aio.Channel:
        """A channel whose table calls carry their table's token, and other calls an admin token."""
        return open_channel(self.server.target, interceptors=TableTokens(self.auth_key).interceptors())

    def stop(self) -> None:
        if self.server.proc and self.server.proc.poll() is None:
            self.server.interrupt()
        self.valkey.stop()
        self.pg.stop()
        shutil.rmtree(self.root, ignore_errors=True)  # the stores' data: a soak leaves over 1 GB


def start_stack(prefix: str, workers: int, *serve_args: str) -> Stack:
    """Start the stores and a serving jackpotd (given extra `serve` flags) in a new temporary directory."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(root, 0o755)
    auth_key = new_key()
    (root / "auth.key").touch(mode=0o600)
    (root / "auth.key").write_bytes(auth_key)
    os.environ["JACKPOTD_AUTH_KEY_FILE"] = str(root / "auth.key")  # the server process reads it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg = EmbeddedPostgres(root / "postgres" / "data").start()
        valkey = EmbeddedValkey(root / "valkey").start()
    server = ServerProcess(free_port(), root / "jackpotd.log", redis_url=valkey.url, dsn=pg.dsn, workers=workers)
    server.args += list(serve_args)
    stack = Stack(pg, valkey, server, auth_key, root)
    try:
        server.start()
    except BaseException:
        stack.stop()
        raise
    return stack
