"""The harness's processes, each in its role's namespace: PostgreSQL and its standby, two Valkeys and a Sentinel
(each store published by a fault proxy in its namespace), two `jackpotd writer`s and two `jackpotd grpc` API
replicas over TLS, and what the faults do to them (pause, kill -9 and restart, a full disk, a clock jump).

Every role reaches every store through the store's proxy, so each (store, role) pair can be faulted alone: the
proxy knows the role by its address. PostgreSQL's data directory is on a size-limited tmpfs the harness mounts
(`disk`), so a file can fill it. A writer and an API replica run under libfaketime (`CLOCK_ROLES`), each with
its offset in a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from jackpotd.store.shards import shard_of

from .net import ADDRESSES, CONTROL, in_ns
from .proxy import ProxyControl

PG_PORT, VK_PORT, SENTINEL_PORT, API_PORT, METRICS_PORT = 5432, 6379, 26379, 50051, 9464
FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")  # Debian's, for threaded processes
DISK_MB = 1024  # PostgreSQL's tmpfs: room for a 10-minute run's ledger and WAL; filled with fallocate at once
STORES = ("pg", "pgs", "vk1", "vk2")
JACKPOTD = ("w1", "w2", "a1", "a2")
CLOCK_ROLES = ("w2", "a2")  # started under libfaketime, each with an offset file of its own
ROOT = Path(__file__).resolve().parents[1]  # the checkout: its chaos package, wherever the run starts
LINKS = ("chaos-1", "chaos-2")  # the tables' links (chaos/tables.py names them so)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc: children, their children ...)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@dataclass
class Proc:
    """One process of the harness, in its role's namespace, its output in `log`."""

    name: str
    role: str
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    pidfile: Path | None = None  # a store helper writes its server's pid here
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        """Start it in its role's namespace, in a session of its own, its output appended to its log."""
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)
        with open(self.log, "ab") as out:
            out.write(f"---- {time.strftime('%H:%M:%S')} start {' '.join(self.argv)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(in_ns(self.role, self.argv), stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1",
                                              "PYTHONPATH": os.pathsep.join(filter(None, [
                                                  str(ROOT), os.environ.get("PYTHONPATH", "")]))},
                                         start_new_session=True)
        return self

    def alive(self) -> bool:
        """Whether the process (a store's helper) still runs."""
        return self.proc is not None and self.proc.poll() is None

    def target_pid(self) -> int | None:
        """The pid a fault signals: a store's server (its process group), else the process itself."""
        if self.pidfile is not None:
            with contextlib.suppress(OSError, ValueError):
                return int(self.pidfile.read_text())
            return None
        return self.proc.pid if self.alive() and self.proc is not None else None

    def signal(self, sig: signal.Signals) -> bool:
        """Send `sig` to the target's process group and every process under it (each PostgreSQL backend makes
        itself a session leader of its own: the group alone would pause the postmaster, not the backends serving
        the writers); False when there is none."""
        pid = self.target_pid()
        if pid is None:
            return False
        sent = False
        for target in [pid, *descendants(pid)]:
            with contextlib.suppress(ProcessLookupError):
                (os.killpg if target == pid else os.kill)(target, sig)
                sent = True
        return sent

    def stop(self, timeout: float = 20) -> None:
        """SIGCONT then SIGTERM (a helper stops its server in order), SIGKILL after `timeout`."""
        if self.proc is None:
            return
        self.signal(signal.SIGCONT)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.signal(signal.SIGKILL)  # a server its helper left behind

    def wait_pid(self, timeout: float = 120) -> None:
        """Wait until a store helper has its server up (its pidfile), or fail with the log's tail."""
        deadline = time.monotonic() + timeout
        while self.target_pid() is None:
            if not self.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start; {self.log}:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.1)


class Cluster:
    """Every process of a run, under `run` (logs/, state/, creds/, pg-disk/...)."""

    def __init__(self, run: Path) -> None:
        """The run's paths and each store proxy's control; nothing starts until asked."""
        self.run = run
        self.logs = run / "logs"
        self.secrets = run / "state" / "secrets"
        self.creds = run / "creds"
        self.disk = run / "pg-disk"
        self.procs: dict[str, Proc] = {}
        self.proxies = {role: ProxyControl(str(run / f"proxy-{role}.sock")) for role in STORES}

    # ---- setup ---------------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Directories, the tmpfs under PostgreSQL, passwords, keys and TLS credentials."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.secrets.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.disk.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0700", "chaos-pgdisk", str(self.disk)],
                       check=True, capture_output=True)
        for name in ("sentinel.password", "checkpoint.key"):
            path = self.secrets / name
            path.write_text(secrets.token_hex(24) + "\n")
            path.chmod(0o600)
        for role in CLOCK_ROLES:
            self.clock_file(role).write_text("+0\n")
        tables = ",".join(f"t{n}" for n in range(1, 7))
        hosts = ",".join(ADDRESSES[r] for r in ("a1", "a2"))
        subprocess.run([sys.executable, "-m", "jackpotd.cli", "certs", "--out", str(self.creds), "--tables", tables,
                        "--hosts", hosts, "--roles", "admin:chaos"], check=True, capture_output=True, timeout=120)

    def _store(self, role: str, kind: str, *extra: str) -> Proc:
        """The helper process of one store (chaos/stores.py) in its namespace."""
        data = self.disk / "pg" / "data" if role == "pg" else self.run / role / "data"
        port = PG_PORT if kind in ("pg", "standby") else VK_PORT
        argv = [sys.executable, "-m", "chaos.stores", kind, "--dir", str(data), "--secrets", str(self.secrets),
                "--port", str(port), "--pidfile", str(self.run / f"{role}.pid"), *extra]
        return Proc(role, role, argv, self.logs / f"{role}.log", pidfile=self.run / f"{role}.pid")

    def _proxy(self, role: str, port: int) -> Proc:
        """The fault proxy publishing a store's loopback port on its namespace's address."""
        route = f"{role}={ADDRESSES[role]}:{port}>127.0.0.1:{port}"
        sock = self.run / f"proxy-{role}.sock"
        sock.unlink(missing_ok=True)
        return Proc(f"proxy-{role}", role, [sys.executable, "-m", "chaos.proxy", "--control", str(sock), "--route",
                                            route], self.logs / f"proxy-{role}.log")

    def start_stores(self) -> None:
        """Proxies first (a store's clients find its address answering), then PostgreSQL, its standby, the
        Valkeys and the Sentinel, each waited for."""
        for role in STORES:
            self._add(self._proxy(role, PG_PORT if role.startswith("pg") else VK_PORT)).start()
        for role in STORES:
            wait_file(self.run / f"proxy-{role}.sock", 30, f"the {role} proxy")
        self._add(self._store("pg", "pg")).start().wait_pid()
        self._add(self._store("pgs", "standby", "--primary", f"{ADDRESSES['pg']}:{PG_PORT}")).start().wait_pid()
        self._add(self._store("vk1", "valkey", "--announce", ADDRESSES["vk1"])).start().wait_pid()
        self._add(self._store("vk2", "valkey", "--announce", ADDRESSES["vk2"],
                              "--replicaof", f"{ADDRESSES['vk1']}:{VK_PORT}")).start().wait_pid()
        sentinel = self._store("sen", "sentinel", "--primary", f"{ADDRESSES['vk1']}:{VK_PORT}",
                               "--bind", ADDRESSES["sen"])
        sentinel.argv[sentinel.argv.index("--port") + 1] = str(SENTINEL_PORT)
        self._add(sentinel).start().wait_pid()

    def _add(self, proc: Proc) -> Proc:
        """Keep a process under its name (to signal, restart and stop it)."""
        self.procs[proc.name] = proc
        return proc

    # ---- jackpotd ------------------------------------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The owner's DSN over both PostgreSQL proxies, read-write only (the primary): migrations, the checker."""
        return self._dsn("postgres", "postgres-owner.password")

    @property
    def app_dsn(self) -> str:
        """The service's DSN (jackpotd_app: read and append only), as OPERATIONS.md has the roles log in."""
        return self._dsn("jackpotd_app", "postgres-app.password")

    def _dsn(self, user: str, secret_name: str) -> str:
        """A DSN over both PostgreSQL proxies as `user`, with its password from the secrets."""
        password = quote((self.secrets / secret_name).read_text().strip(), safe="")
        hosts = ",".join(f"{ADDRESSES[r]}:{PG_PORT}" for r in ("pg", "pgs"))
        return f"postgresql://{user}:{password}@{hosts}/postgres?target_session_attrs=read-write"

    def redis_url(self, host: str | None = None) -> str:
        """The Valkeys' URL (the Sentinel replaces its host with the primary's)."""
        password = quote((self.secrets / "valkey.password").read_text().strip(), safe="")
        return f"redis://:{password}@{host or ADDRESSES['vk1']}:{VK_PORT}/0"

    def _jackpotd_env(self, role: str) -> dict[str, str]:
        """The settings of one jackpotd role (the clock-jumped ones also get libfaketime)."""
        env = {"JACKPOTD_REDIS_URL": self.redis_url(), "JACKPOTD_POSTGRES_DSN": self.app_dsn,
               "JACKPOTD_REDIS_SENTINELS": f"{ADDRESSES['sen']}:{SENTINEL_PORT}",
               "JACKPOTD_REDIS_SENTINEL_PASSWORD_FILE": str(self.secrets / "sentinel.password"),
               "JACKPOTD_CHECKPOINT_KEY_FILE": str(self.secrets / "checkpoint.key"),
               "JACKPOTD_CHECKPOINT_DIR": str(self.run / "state" / "checkpoints"),
               "JACKPOTD_AUTH_KEY_FILE": str(self.creds / "auth.key"),
               "JACKPOTD_STATE_DIR": str(self.run / role / "state")}
        if role in CLOCK_ROLES and FAKETIME.exists():
            env |= {"LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(self.clock_file(role)),
                    "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        return env

    def start_jackpotd(self) -> None:
        """The migrations as the ledger's owner, then two writers and two API replicas (TLS, client certificates
        required) as jackpotd_app; each waited for."""
        migrate = subprocess.run(in_ns("w1", [sys.executable, "-m", "jackpotd.cli", "migrate"]), capture_output=True,
                                 text=True, timeout=120, env={**os.environ, **self._jackpotd_env("w1"),
                                                              "JACKPOTD_POSTGRES_DSN": self.dsn})
        (self.logs / "migrate.log").write_text(migrate.stdout + migrate.stderr)
        if migrate.returncode:
            raise RuntimeError(f"jackpotd migrate exited {migrate.returncode}:\n{migrate.stderr[-2000:]}")
        for role in JACKPOTD:
            (self.run / role / "state").mkdir(parents=True, exist_ok=True)
            address = ADDRESSES[role]
            argv = [sys.executable, "-m", "jackpotd.cli", "writer" if role.startswith("w") else "grpc",
                    "--metrics-port", str(METRICS_PORT), "--metrics-host", address]
            if role.startswith("a"):
                argv += ["--listen", f"{address}:{API_PORT}", "--workers", "0",
                         "--tls-cert-file", str(self.creds / "server.pem"),
                         "--tls-key-file", str(self.creds / "server.key"), "--tls-ca-file", str(self.creds / "ca.pem")]
            self._add(Proc(role, role, argv, self.logs / f"{role}.log", env=self._jackpotd_env(role))).start()
        for role in JACKPOTD:
            self.wait_metrics(role, 120)

    def metrics(self, role: str, timeout: float = 2) -> str:
        """The text of a jackpotd role's /metrics."""
        url = f"http://{ADDRESSES[role]}:{METRICS_PORT}/metrics"
        with urllib.request.urlopen(url, timeout=timeout) as r:
            text: str = r.read().decode()
        return text

    def wait_metrics(self, role: str, timeout: float) -> None:
        """Poll a jackpotd role's /metrics until it answers, or fail with its log's tail."""
        deadline = time.monotonic() + timeout
        while True:
            proc = self.procs[role]
            if not proc.alive():
                raise RuntimeError(f"{role} exited; {proc.log}:\n{proc.log.read_text()[-3000:]}")
            try:
                self.metrics(role)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{role} has no metrics after {timeout}s; see {proc.log}") from None
                time.sleep(0.2)

    def shards(self, role: str) -> set[int]:
        """The writer shards a writer holds (its jackpotd_writer_shard gauges); none when it does not answer."""
        try:
            text = self.metrics(role)
        except OSError:
            return set()
        return {int(line.split('shard="')[1].split('"')[0]) for line in text.splitlines()
                if line.startswith("jackpotd_writer_shard{") and float(line.split()[-1]) == 1}

    def leading_writer(self, links: tuple[str, ...] = LINKS) -> str:
        """The writer holding the shards of most of the tables' links (w1 when neither answers)."""
        wanted = [shard_of(link) for link in links]
        return max(("w1", "w2"), key=lambda w: sum(s in self.shards(w) for s in wanted))

    def valkey_primary(self) -> str:
        """The Valkey role the Sentinel names primary now (vk1 when it cannot be asked)."""
        password = (self.secrets / "sentinel.password").read_text().strip()
        cli = shutil.which("valkey-cli") or str(Path(sys.executable).parent / "valkey-cli")
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([cli, "-h", ADDRESSES["sen"], "-p", str(SENTINEL_PORT), "--no-auth-warning",
                                  "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "jackpot"], capture_output=True, text=True,
                                 timeout=5, env={**os.environ, "REDISCLI_AUTH": password}).stdout.split()
            for role in ("vk1", "vk2"):
                if out and out[0] == ADDRESSES[role]:
                    return role
        return "vk1"

    # ---- faults ----------------------------------------------------------------------------------------------

    def restart(self, name: str) -> None:
        """Start a killed role again, as it was started (a store on its data, a jackpotd on its state)."""
        proc = self.procs[name]
        proc.stop(5)
        proc.start()
        if proc.pidfile is not None:
            proc.wait_pid()

    def kill9(self, name: str) -> None:
        """kill -9 of a role's target (a store's server and its backends, or the jackpotd process)."""
        proc = self.procs[name]
        proc.signal(signal.SIGKILL)
        if proc.pidfile is None and proc.proc is not None:
            proc.proc.wait(10)

    def fill_disk(self) -> int:
        """Fill PostgreSQL's tmpfs with filler files, leaving nothing; again whenever something was freed (a
        checkpoint removing WAL segments). Returns the bytes taken this time."""
        free = os.statvfs(self.disk)
        size = free.f_bavail * free.f_frsize
        if size <= 0:
            return 0
        n = len(list(self.disk.glob("filler-*")))
        with open(self.disk / f"filler-{n}", "wb") as f, contextlib.suppress(OSError):
            os.posix_fallocate(f.fileno(), 0, size)
        return size

    def free_disk(self) -> None:
        """Remove the filler files: PostgreSQL's disk has room again."""
        for filler in self.disk.glob("filler-*"):
            filler.unlink(missing_ok=True)

    def clock_file(self, role: str) -> Path:
        """The libfaketime offset file of a clock-jumped role."""
        return self.run / f"faketime-{role}"

    def jump_clock(self, role: str, seconds: int) -> None:
        """Move a clock-jumped role's wall clock by `seconds` from now on (libfaketime reads the file at each
        call); 0 puts it back."""
        path = self.clock_file(role)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{seconds:+d}\n")
        os.replace(tmp, path)

    # ---- teardown --------------------------------------------------------------------------------------------

    def stop_all(self) -> None:
        """Every process, jackpotd first, then the stores and the proxies; then the tmpfs (its log copied out)."""
        order = [*JACKPOTD, "sen", "vk2", "vk1", "pgs", "pg", *(f"proxy-{r}" for r in STORES)]
        for name in [n for n in order if n in self.procs] + [n for n in self.procs if n not in order]:
            with contextlib.suppress(Exception):
                self.procs[name].stop()
        self.free_disk() if self.disk.is_mount() else None
        log = self.disk / "pg" / "postgres.log"
        with contextlib.suppress(OSError):
            shutil.copy(log, self.logs / "postgres-server.log")
        unmount(self.disk)


def wait_file(path: Path, timeout: float, what: str) -> None:
    """Poll until `path` exists, or fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not appear ({path})")
        time.sleep(0.05)


def unmount(path: Path) -> None:
    """Unmount `path` if it is a mount point (lazily: a process still inside does not keep it)."""
    if path.is_mount():
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def sweep_mounts() -> list[str]:
    """Unmount every tmpfs a killed run left (named chaos-pgdisk)."""
    left = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.startswith("chaos-pgdisk ")]
    for point in left:
        subprocess.run(["umount", "-l", re.sub(r"\\040", " ", point)], capture_output=True)
    return left


__all__ = ["CLOCK_ROLES", "CONTROL", "Cluster", "Proc", "sweep_mounts"]
