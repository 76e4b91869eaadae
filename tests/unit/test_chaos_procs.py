"""The harness pauses a whole server, not its leader alone: PostgreSQL's backends are session leaders of their own,
so a SIGSTOP of the postmaster's process group left them serving (found by `make chaos`, seed 188: a "paused"
PostgreSQL kept acknowledging)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from chaos.cluster import Proc, descendants


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def _eventually(check: Callable[[], object], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(0.02)


def test_a_signal_reaches_every_process_below_the_server_each_in_its_own_session(tmp_path: Path) -> None:
    leader = subprocess.Popen(["sh", "-c", "setsid sleep 60 & wait"], start_new_session=True)
    try:
        _eventually(lambda: descendants(leader.pid), "the child started")
        child = descendants(leader.pid)[0]
        assert os.getpgid(child) != os.getpgid(leader.pid)  # killpg of the leader's group alone would miss it
        pidfile = tmp_path / "pid"
        pidfile.write_text(f"{leader.pid}\n")
        proc = Proc("server", "role", [], tmp_path / "log", pidfile=pidfile)
        assert proc.signal(signal.SIGSTOP)
        _eventually(lambda: _state(child) == "T" and _state(leader.pid) == "T", "both stopped")
        assert proc.signal(signal.SIGCONT)
        _eventually(lambda: _state(child) != "T" and _state(leader.pid) != "T", "both running again")
    finally:
        for pid in descendants(leader.pid):
            os.kill(pid, signal.SIGKILL)
        leader.kill()
        leader.wait()
