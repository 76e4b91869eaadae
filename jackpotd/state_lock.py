"""One jackpotd per state directory: `serve` (and `grpc`, `writer` on embedded stores) holds an flock on
STATE_DIR/jackpotd.lock for its whole life, so a second start on the same directory stops at once."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "jackpotd.lock"


class StateDirBusy(Exception):
    """Another jackpotd holds the state directory's lock."""


def hold(state_dir: str) -> int:
    """Take STATE_DIR/jackpotd.lock for this process's life (the descriptor is returned and never closed; the kernel
    drops the lock when the process ends, however it ends) and write our pid in it; StateDirBusy naming the running
    pid when another process holds it."""
    state = Path(state_dir).resolve()
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StateDirBusy(f"another jackpotd (pid {holder}) is running on the state directory {state}: stop it "
                           "first, or give this one another --state-dir") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
