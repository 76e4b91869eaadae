"""One jackpotd per listen port on a host (issue 23): the workers bind with SO_REUSEPORT, so the kernel would let a
second jackpotd share the port and split the callers between the two. Before anything binds, a process that listens
binds the Linux abstract unix socket `@jackpotd-listen:<port>`: the kernel frees the name when the process dies,
however it dies (kill -9 too), and a second one connects to it to ask the holder who it is (docs/DECISIONS.md,
Faults (issue 23))."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "jackpotd-listen:"
ASK_TIMEOUT = 1.0  # seconds the holder has to say who it is (a stopped one says nothing: its pid is still known)
TRIES = 3  # a holder that exits while we ask frees the name: bind again


class ListenBusy(Exception):
    """Another jackpotd serves this listen address's port: the message names it."""


def listen_port(listen: str) -> int:
    """The TCP port of a `host:port` listen address (`[::]:P`, `0.0.0.0:P`, `localhost:P` ...)."""
    _, _, port = listen.rpartition(":")
    try:
        return int(port)
    except ValueError:
        raise ListenBusy(f"listen={listen!r}: no port after the last ':'") from None


def lock_name(port: int) -> bytes:
    """The abstract socket's name for a port: only the port, whatever the host (the rule in DECISIONS.md)."""
    return f"\0{PREFIX}{port}".encode()


@dataclass
class ListenLock:
    """The held name: a listening abstract socket, and the thread that tells whoever connects who holds it."""

    listen: str
    sock: socket.socket
    thread: threading.Thread

    def release(self) -> None:
        """Free the name now (it is freed anyway when the process ends)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() the thread blocks in
        self.sock.close()
        self.thread.join(timeout=2)


def hold_listen(listen: str, *, state_dir: str, command: str) -> ListenLock | None:
    """Take the port of `listen` for this process (None for port 0, which the kernel makes unique); ListenBusy naming
    the jackpotd that holds it (pid, command, state dir, since when)."""
    port = listen_port(listen)
    if port == 0:
        return None
    about = {"pid": os.getpid(), "listen": listen, "state_dir": str(Path(state_dir).resolve()), "command": command,
             "since": time.time()}
    for _ in range(TRIES):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # not inherited by children (O_CLOEXEC)
        try:
            sock.bind(lock_name(port))
        except OSError as e:
            sock.close()
            if e.errno != errno.EADDRINUSE:
                raise
            holder = who_holds(port)
            if holder is None:  # it went while we asked: the name is free again
                continue
            raise ListenBusy(busy_text(listen, holder)) from None
        sock.listen(16)
        reply = (json.dumps(about) + "\n").encode()
        thread = threading.Thread(target=_answer, args=(sock, reply), name=f"listen-lock-{port}", daemon=True)
        thread.start()
        return ListenLock(listen, sock, thread)
    raise ListenBusy(f"{listen}: port {port} was taken and freed {TRIES} times while jackpotd started; try again")


def _answer(sock: socket.socket, reply: bytes) -> None:
    """Tell each asker who holds the name, until the socket is closed."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn, contextlib.suppress(OSError):
            conn.settimeout(ASK_TIMEOUT)
            conn.sendall(reply)


def who_holds(port: int) -> dict[str, object] | None:
    """What the holder of the port's name says of itself, at least its pid (from the kernel: SO_PEERCRED, so a
    stopped holder is named too); None when nobody holds it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(ASK_TIMEOUT)
        try:
            s.connect(lock_name(port))
        except ConnectionRefusedError:
            return None
        except OSError:  # its backlog is full, say: it is held, by someone busy
            return {}
        pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        said = b""
        with contextlib.suppress(OSError):
            while not said.endswith(b"\n") and len(said) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                said += chunk
    try:
        about: dict[str, object] = json.loads(said)
    except ValueError:  # stopped, or not a jackpotd of this version: what /proc says
        about = {"command": _cmdline(pid), "silent": True}
    about["pid"] = pid
    return about


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def busy_text(listen: str, holder: dict[str, object]) -> str:
    """The refusal: which address, who holds its port (pid, command, state dir, since), and what to do."""
    facts = [f"pid {holder['pid']}"] if "pid" in holder else []
    if holder.get("command"):
        facts.append(f"`jackpotd {holder['command']}`" if "state_dir" in holder else f"command {holder['command']}")
    if holder.get("state_dir"):
        facts.append(f"state dir {holder['state_dir']}")
    if holder.get("silent"):
        facts.append(f"not answering within {ASK_TIMEOUT:g} s: stopped or hung?")
    since = holder.get("since")
    if isinstance(since, int | float):
        facts.append(f"since {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(since))}")
    theirs = holder.get("listen")
    where = f" on {theirs}" if isinstance(theirs, str) and theirs != listen else ""
    return (f"{listen} is served by another jackpotd{where} ({', '.join(facts) or 'it did not say who it is'}); "
            "stop it or choose another --listen")
