"""`jackpotd serve` with no stores configured: embedded servers, the demo link, and a clean Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from jackpotd.api.gen.jackpot.v1 import display_pb2, display_pb2_grpc
from jackpotd.embedded import free_port

from .harness import authorized_channel, eventually
from .process import ServerProcess


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _children(pid: int) -> list[str]:
    try:
        return [p.name() for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


async def _demo_pools(target: str, seconds: float = 30) -> dict[str, int]:
    """The demo's pools once it is seeded (the demo loads just after the service starts serving)."""
    async with authorized_channel(target) as channel:
        stub = display_pb2_grpc.DisplayServiceStub(channel)

        async def seeded() -> dict[str, int] | None:
            reply = await stub.GetPools(display_pb2.GetPoolsRequest(link_id="demo"), timeout=5)
            pools = {p.pool: p.amount_cents for p in reply.pools}
            return pools if pools.get("MINOR") else None

        return await eventually(seeded, seconds, "the demo link seeded")


async def test_serve_embedded_demo_then_ctrl_c_stops_everything(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = ServerProcess(free_port(), tmp_path / "serve.log", state_dir=str(state), demo=True)
    await asyncio.to_thread(server.start, 120)
    assert server.proc is not None
    pid = server.proc.pid
    names = _children(pid)
    assert any("postgres" in n for n in names) and any("valkey" in n for n in names), names
    assert await _demo_pools(server.target) == {"MAJOR": 1_000_000, "MINOR": 100_000}
    # the CLI a newcomer uses sees the same
    out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "pools", "--link", "demo", "--target", server.target],
                         capture_output=True, text=True, check=True).stdout
    assert "MAJOR" in out and "$10,000.00" in out
    descendants = {p.pid: p.name() for p in psutil.Process(pid).children(recursive=True)}
    assert await asyncio.to_thread(server.interrupt) == 0
    # helpers such as multiprocessing's resource tracker leave a moment after
    await eventually(lambda: not {p: n for p, n in descendants.items() if _running(p)}, 10,
                     f"every process jackpotd started gone (started: {descendants})")
    assert "stopping" in server.log.read_text()
    # a second start on the same state reuses the data: the demo is not seeded twice
    await asyncio.to_thread(server.start, 120)
    assert await _demo_pools(server.target) == {"MAJOR": 1_000_000, "MINOR": 100_000}
    # without noise: the fresh Valkey's rebuild is expected (INFO), a lone worker is "1 worker process", and
    # the embedded PostgreSQL's package is never imported (its import warns when XDG_RUNTIME_DIR is unset)
    lines = server.log.read_text().splitlines()
    assert any(" INFO " in line and "link demo rebuilt from the ledger" in line for line in lines), lines
    assert not [line for line in lines if "rebuilt" in line and (" WARNING " in line or " ERROR " in line)]
    assert any("1 worker process)" in line for line in lines) and not any("1 worker processes" in line
                                                                           for line in lines)
    assert not [line for line in lines if "RuntimeDirWarning" in line]
    audit = subprocess.run([sys.executable, "-m", "jackpotd.cli", "audit", "--state-dir", str(state)],
                           capture_output=True, text=True)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "demo: OK" in audit.stdout and "Redis not compared" not in audit.stdout  # it compared the running one
    # one jackpotd per state directory: a second start stops at once, naming the one that runs
    second = subprocess.run([sys.executable, "-m", "jackpotd.cli", "serve", "--state-dir", str(state), "--listen",
                             f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert second.returncode == 2, second.stdout + second.stderr
    assert f"pid {server.proc.pid}" in second.stderr and str(state.resolve()) in second.stderr, second.stderr
    assert await asyncio.to_thread(server.interrupt) == 0
    # stopped: the ledger, its chain and anchors are checked; the empty embedded Valkey is not taken for a loss
    audit = subprocess.run([sys.executable, "-m", "jackpotd.cli", "audit", "--state-dir", str(state)],
                           capture_output=True, text=True)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "demo: OK" in audit.stdout and "Redis not compared" in audit.stdout, audit.stdout
    assert "chain intact" in audit.stdout and "verified" in audit.stdout, audit.stdout


def test_the_sign_stops_loudly_when_its_port_is_taken() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "jackpot_signage.cli", "--link", "demo", "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in out.stderr and "address already in use" in out.stderr, out.stderr


@pytest.mark.parametrize("args", [[], ["serve"], ["migrate"], ["recover"], ["audit"], ["pools"]])
def test_help_explains_itself(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "jackpotd.cli", *args, "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "120"})
    assert out.returncode == 0
    assert "usage: jackpotd" in out.stdout
    assert len(out.stdout.splitlines()) > 5
