"""Starting and stopping an embedded server: its own session, death with the thread that started it
(PR_SET_PDEATHSIG, through util-linux's setpriv when it is there), waiting for its port, and free ports."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _preexec(uid: int | None, gid: int | None) -> Callable[[], None]:
    def setup() -> None:
        os.setsid()  # Ctrl-C in a terminal reaches jackpotd, which stops the servers in order
        if gid is not None and uid is not None:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        # After setuid, which clears it: the server dies with the jackpotd that started it.
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL if uid is None else signal.SIGQUIT)
    return setup


@functools.cache
def setpriv_path() -> str | None:
    """util-linux's setpriv, when it can set the parent-death signal."""
    found = shutil.which("setpriv")
    if found is not None and "--pdeathsig" in subprocess.run([found, "--help"], capture_output=True, text=True).stdout:
        return found
    log.warning("util-linux setpriv (2.33 or newer) is not installed: embedded servers start through a Python "
                "preexec_fn, which can crash a server started while gRPC threads run")
    return None


def child(command: list[str], uid: int | None, gid: int | None) -> tuple[list[str], dict[str, Any]]:
    """The command and Popen arguments that start a server in its own session, as `uid` when given, and
    make it die with the thread that started it (PR_SET_PDEATHSIG).

    With setpriv nothing runs between fork and exec: a preexec_fn (or Popen's own user switch, which
    makes it fork rather than vfork, so that gRPC's fork handlers run) in a process with gRPC's threads
    running can crash the child there (seen: restarted Valkeys and initdb dying of SIGSEGV).
    """
    setpriv = setpriv_path()
    if setpriv is None:
        return command, {"preexec_fn": _preexec(uid, gid)}
    # setpriv changes the user too: asked of Popen, that would make it fork() instead of vfork(), and
    # gRPC's fork handlers then run (and crash, seen: initdb dying of SIGSEGV) in the child.
    who = [] if uid is None or gid is None else [f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    signal_name = "KILL" if uid is None else "QUIT"
    return [setpriv, *who, f"--pdeathsig={signal_name}", "--", *command], {"start_new_session": True}


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see {log_path}:\n{tail(log_path)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout}s; see {log_path}")


def stop_child(proc: subprocess.Popen[bytes] | None, sig: signal.Signals, timeout: float) -> None:
    """Ask a child server to stop with `sig`; kill it if it has not gone after `timeout` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""

