"""One jackpotd per listen port on a host, and embedded stores on the same ports across restarts (issue 23, items 3
and 4): a second jackpotd on a port in use exits 2 naming the first, whatever host part it gives; the port is free
the moment the first is killed; a `jackpotd writer` pointed at `serve`'s embedded stores serves again after `serve`
restarts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from jackpotd.embedded import free_port
from jackpotd.listen_lock import hold_listen

from ..conftest import Isolated
from .harness import eventually
from .process import ServerProcess


def _second(listen: str, state_dir: Path, isolated: Isolated, command: str) -> subprocess.CompletedProcess[str]:
    """Another jackpotd on `listen` (its own state directory, the same stores), run to its end."""
    env = {**os.environ, "JACKPOTD_REDIS_URL": isolated.redis_url, "JACKPOTD_POSTGRES_DSN": isolated.dsn}
    return subprocess.run([sys.executable, "-m", "jackpotd.cli", command, "--listen", listen, "--metrics-port", "0",
                           "--state-dir", str(state_dir)], env=env, capture_output=True, text=True, timeout=60)


async def test_a_second_jackpotd_on_a_listen_address_in_use_exits_2_naming_the_first(isolated: Isolated,
                                                                                     tmp_path: Path) -> None:
    port = free_port()
    first = ServerProcess(port, tmp_path / "first.log", redis_url=isolated.redis_url, dsn=isolated.dsn,
                          state_dir=str(tmp_path / "first"))
    await asyncio.to_thread(first.start)
    assert first.proc is not None
    try:
        # the kernel would let them share the port (SO_REUSEPORT): the host part does not matter, the port does
        for listen, command in ((f"localhost:{port}", "grpc"), (f"0.0.0.0:{port}", "serve")):
            second = await asyncio.to_thread(_second, listen, tmp_path / "second", isolated, command)
            assert second.returncode == 2, second.stdout + second.stderr
            said = (f"jackpotd: {listen} is served by another jackpotd on 127.0.0.1:{port} (pid {first.proc.pid}, "
                    f"`jackpotd serve`, state dir {(tmp_path / 'first').resolve()}, since ")
            assert said in second.stderr and "stop it or choose another --listen" in second.stderr, second.stderr
            assert not (tmp_path / "second" / "postgres").exists()  # refused before anything started
        first.kill9()
        held = hold_listen(f"[::]:{port}", state_dir=str(tmp_path), command="test")  # free at once
        assert held is not None
        held.release()
        third = ServerProcess(port, tmp_path / "third.log", redis_url=isolated.redis_url, dsn=isolated.dsn,
                              state_dir=str(tmp_path / "third"))
        await asyncio.to_thread(third.start)
        assert await asyncio.to_thread(third.interrupt) == 0
    finally:
        if first.proc.poll() is None:
            first.kill9()


def _postmaster(state: Path) -> int:
    return int((state / "postgres" / "data" / "postmaster.pid").read_text().split()[0])


async def test_embedded_stores_keep_their_ports_and_a_writer_on_them_serves_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    serve = ServerProcess(free_port(), tmp_path / "serve.log", state_dir=str(state))
    await asyncio.to_thread(serve.start, 120)
    writer = None
    try:
        ports = json.loads((state / "ports.json").read_text())
        first_postmaster = _postmaster(state)
        secret = {name: quote((state / "secrets" / name).read_text().strip(), safe="")
                  for name in ("valkey.password", "postgres-app.password")}
        writer = ServerProcess(0, tmp_path / "writer.log", command="writer", metrics_port=free_port(),
                               state_dir=str(tmp_path / "writer"),
                               redis_url=f"redis://:{secret['valkey.password']}@127.0.0.1:{ports['valkey']}/0",
                               dsn=f"postgresql://jackpotd_app:{secret['postgres-app.password']}@127.0.0.1:"
                                   f"{ports['postgres']}/postgres")
        await asyncio.to_thread(writer.start)
        await eventually(writer.shards, 30, "the writer's share of the shards")
        assert await asyncio.to_thread(serve.interrupt) == 0
        await eventually(lambda: not writer.shards(), 30, "the writer losing its leases with the stores")
        await asyncio.to_thread(serve.start, 120)
        assert json.loads((state / "ports.json").read_text()) == ports
        assert _postmaster(state) != first_postmaster  # a new PostgreSQL, on the same port
        await eventually(writer.shards, 60, "the writer holding shards again on the restarted stores")
    finally:
        if writer is not None and writer.proc is not None and writer.proc.poll() is None:
            await asyncio.to_thread(writer.interrupt)
        if serve.proc is not None and serve.proc.poll() is None:
            await asyncio.to_thread(serve.interrupt)
