"""The embedded servers' ports, kept across restarts (issue 23): chosen once, recorded in STATE_DIR/ports.json, and
reused by every later start, so a `jackpotd writer` or `jackpotd grpc` pointed at them reconnects after `serve`
restarts. A recorded port another process holds is refused by name (PortTaken), never silently moved."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

from .process import free_port

PORTS_FILE = "ports.json"
STORES = ("postgres", "valkey")
FREE_WAIT = 5.0  # seconds a recorded port may take to be let go (our own server of a killed run, exiting)


class PortTaken(Exception):
    """A port recorded for an embedded server is held by another process: the message names the port, the file
    and, when it can be told, the process."""


def ports_file(state_dir: Path) -> Path:
    return state_dir / PORTS_FILE


def recorded(state_dir: Path) -> dict[str, int]:
    """The ports recorded in the state directory ({} before the first start); PortTaken for a file jackpotd cannot
    read, since starting elsewhere would move the stores silently."""
    path = ports_file(state_dir)
    try:
        found = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise PortTaken(f"{path} cannot be read ({e}): fix or remove it (removed, jackpotd chooses new ports)") \
            from None
    ports = {name: found[name] for name in STORES if isinstance(found, dict) and isinstance(found.get(name), int)}
    if len(ports) != len(STORES) or not all(0 < p < 65536 for p in ports.values()):
        raise PortTaken(f"{path} does not name a port for each of {', '.join(STORES)}: {found!r}; fix or remove it "
                        "(removed, jackpotd chooses new ports)")
    return ports


def claim(state_dir: Path) -> dict[str, int]:
    """The ports the embedded servers start on: those recorded, each checked free (waiting up to FREE_WAIT s for
    it), else new free ones (recorded by `record` once the servers listen on them)."""
    ports = recorded(state_dir)
    if not ports:
        return {name: free_port() for name in STORES}
    for name, port in ports.items():
        deadline = time.monotonic() + FREE_WAIT
        while not is_free(port):
            if time.monotonic() > deadline:
                holder = listener_of(port)
                raise PortTaken(f"the embedded {name}'s port {port}, recorded in {ports_file(state_dir)}, is taken by "
                                f"{holder or 'another process'}: stop it, or remove the file to have jackpotd choose "
                                "new ports (and point any `jackpotd writer` or `grpc` at them)")
            time.sleep(0.1)
    return ports


def record(state_dir: Path, ports: dict[str, int]) -> None:
    """Write the ports once (atomically): later starts reuse them."""
    path = ports_file(state_dir)
    if recorded(state_dir) == ports:
        return
    tmp = path.with_name(PORTS_FILE + ".tmp")
    tmp.write_text(json.dumps(ports, sort_keys=True) + "\n")
    os.replace(tmp, path)


def is_free(port: int) -> bool:
    """Whether nothing listens on loopback `port` (SO_REUSEADDR, as the servers bind: a closed connection's
    TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def listener_of(port: int) -> str:
    """'pid N (command)' of a process listening on TCP `port`, from /proc ("" when it cannot be told)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return ""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                return f"pid {proc.name} ({command[:200]})"
    return ""
