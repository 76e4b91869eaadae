"""What the service benchmarks run against: embedded PostgreSQL and Valkey, and jackpotd in its own process."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc  # noqa: E402
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


def start_stores(prefix: str) -> tuple[Path, EmbeddedPostgres, EmbeddedValkey, bytes]:
    """Embedded PostgreSQL and Valkey in a new temporary directory, and the auth key jackpotd processes started
    from here will trust ($JACKPOTD_AUTH_KEY_FILE)."""
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
    return root, pg, valkey, auth_key


def start_stack(prefix: str, workers: int, *serve_args: str) -> Stack:
    """Start the stores and a serving jackpotd (given extra `serve` flags) in a new temporary directory."""
    root, pg, valkey, auth_key = start_stores(prefix)
    server = ServerProcess(free_port(), root / "jackpotd.log", redis_url=valkey.url, dsn=pg.dsn, workers=workers)
    server.args += list(serve_args)
    stack = Stack(pg, valkey, server, auth_key, root)
    try:
        server.start()
    except BaseException:
        stack.stop()
        raise
    return stack


AUDIT = admin_pb2.Audit(actor="bench", reason="bench", approval_ref="BENCH")


async def create_link(admin: admin_pb2_grpc.AdminServiceStub, link_id: str, tables: Sequence[str],
                      resets: Mapping[str, int] | None = None) -> None:
    """The benches' link: SPLIT, a $1 wager feeding 20% MAJOR, 7.5% MINOR, 2.5% RESERVE (70% retained), with
    Caribbean Stud tables of 7 seats; `resets` in cents per pool (default none)."""
    resets = resets or {}
    await admin.CreateLink(admin_pb2.CreateLinkRequest(
        request_id=str(uuid.uuid4()), link_id=link_id, mode="SPLIT", wager_amount_cents=100,
        pools=[admin_pb2.PoolConfig(pool=p, reset_cents=resets.get(p, 0)) for p in ("MAJOR", "MINOR", "RESERVE")],
        rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=p, ppm=ppm) for p, ppm in
                                     (("MAJOR", 200_000), ("MINOR", 75_000), ("RESERVE", 25_000))],
                              retained_ppm=700_000), audit=AUDIT))
    for t in tables:
        await admin.RegisterTable(admin_pb2.RegisterTableRequest(
            request_id=str(uuid.uuid4()), table_id=t, link_id=link_id, game="caribbean-stud", seats=7, audit=AUDIT))
