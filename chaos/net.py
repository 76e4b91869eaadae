"""The harness's network: a hub namespace holding a bridge, and one network namespace per role joined to it by a
veth pair, on 10.213.0.0/24, which exists only while the harness runs (root only).

The harness itself reaches the roles through one more veth (`jc-ctl`, 10.213.0.2) for health, metrics and the
checker; a role is cut off by setting its hub-side veth down. Everything is named with the `jc-` prefix, so a
run removes what an earlier, killed run left (`sweep`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

PREFIX = "jc-"
HUB = "jc-hub"
BRIDGE = "br0"
SUBNET = "10.213.0"
CONTROL = f"{SUBNET}.2"  # the harness's own address (root namespace), never partitioned

# role -> its address; each runs in namespace jc-<role>
ADDRESSES: dict[str, str] = {
    "pg": f"{SUBNET}.10", "pgs": f"{SUBNET}.11",
    "vk1": f"{SUBNET}.20", "vk2": f"{SUBNET}.21", "sen": f"{SUBNET}.25",
    "w1": f"{SUBNET}.31", "w2": f"{SUBNET}.32",
    "a1": f"{SUBNET}.41", "a2": f"{SUBNET}.42",
    "cli": f"{SUBNET}.50",
}


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`, raising with its stderr when it fails (unless not `check`)."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def namespace(role: str) -> str:
    """The network namespace of a role."""
    return PREFIX + role


def veth(role: str) -> str:
    """The hub-side end of a role's veth (at most 15 characters)."""
    return f"{PREFIX}{role}-h"


def in_ns(role: str, command: list[str]) -> list[str]:
    """`command` run inside a role's namespace."""
    return ["ip", "netns", "exec", namespace(role), *command]


def reachable(address: str) -> bool:
    """Whether a host answers (a closed port's RST counts) from this namespace within a second."""
    try:
        with socket.create_connection((address, 9), timeout=1):
            return True
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def namespaces() -> list[str]:
    """The harness's namespaces now present."""
    out = _ip("netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def sweep() -> list[str]:
    """Remove what a run left: processes in jc-* namespaces (SIGKILL), the namespaces and the control veth.
    Returns what was removed, for the log."""
    removed = []
    for ns in namespaces():
        pids = _ip("netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGCONT)  # a stopped process must run to die quickly
                os.kill(int(pid), signal.SIGKILL)
        _ip("netns", "del", ns, check=False)
        removed.append(ns)
    if _ip("link", "show", "jc-ctl", check=False).returncode == 0:
        _ip("link", "del", "jc-ctl", check=False)
        removed.append("jc-ctl")
    return removed


@dataclass
class Network:
    """The hub, one namespace per role, and the harness's control link; `partition` cuts a role off."""

    roles: tuple[str, ...] = tuple(ADDRESSES)

    def build(self) -> Network:
        """Create the hub's bridge, each role's namespace and veth, and the control veth; wait until all are up."""
        _ip("netns", "add", HUB)
        _ip("-n", HUB, "link", "add", BRIDGE, "type", "bridge")
        _ip("-n", HUB, "link", "set", BRIDGE, "up")
        _ip("-n", HUB, "link", "set", "lo", "up")
        for role in self.roles:
            ns = namespace(role)
            _ip("netns", "add", ns)
            _ip("link", "add", veth(role), "netns", HUB, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", HUB, "link", "set", veth(role), "master", BRIDGE, "up")
            _ip("-n", ns, "addr", "add", f"{ADDRESSES[role]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", "jc-ctl", "type", "veth", "peer", "name", "jc-ctl-h", "netns", HUB)
        _ip("-n", HUB, "link", "set", "jc-ctl-h", "master", BRIDGE, "up")
        _ip("addr", "add", f"{CONTROL}/24", "dev", "jc-ctl")
        _ip("link", "set", "jc-ctl", "up")
        self.wait_reachable()
        return self

    def wait_reachable(self, timeout: float = 20) -> None:
        """Poll until every role answers from the control address (bridge ports take a moment)."""
        deadline = time.monotonic() + timeout
        for role in self.roles:
            while not reachable(ADDRESSES[role]):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{role} ({ADDRESSES[role]}) is not reachable from the harness")
                time.sleep(0.1)

    def partition(self, role: str) -> None:
        """Cut a role's namespace off from every other (its hub-side veth down)."""
        _ip("-n", HUB, "link", "set", veth(role), "down")

    def heal(self, role: str) -> None:
        """Join a cut-off role again."""
        _ip("-n", HUB, "link", "set", veth(role), "up")

    def destroy(self) -> None:
        """Remove every namespace and link this harness made (and its processes)."""
        sweep()
