"""One store of the harness, run inside its role's namespace by `ip netns exec`: the PostgreSQL primary, its
streaming standby, a Valkey or the Sentinel, each on loopback (the role's fault proxy publishes it).

It starts the server as the project does (the embedded servers' code: PostgreSQL as its own system account),
writes the server's pid to `--pidfile` (its process group: a SIGSTOP there pauses every backend), and lives until
the server exits or it is asked to stop (SIGTERM: the server is stopped in order).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import threading
from pathlib import Path

from jackpotd.embedded import EmbeddedPostgres, EmbeddedValkey
from jackpotd.embedded.install import server_install
from jackpotd.embedded.postgres import OWNER_SECRET, _data_dir_for_server, wheel_bin_dir
from jackpotd.embedded.process import child, stop_child, wait_for_port
from jackpotd.embedded.secrets import read_secret
from jackpotd.embedded.valkey import _binary

REPLICATION_HBA = "host    replication  postgres  127.0.0.1/32  scram-sha-256\n"
# WAL kept small on the size-limited disk, so only the full-disk fault fills it (a long run otherwise keeps
# 5 minutes of WAL, filled the disk and left a killed PostgreSQL no room for crash recovery)
WAL = "# chaos harness\nmax_wal_size = '128MB'\nmin_wal_size = '32MB'\ncheckpoint_timeout = '30s'\n"


class ReplicatedPostgres(EmbeddedPostgres):
    """The embedded PostgreSQL, whose pg_hba.conf (rewritten at every start) also lets the standby replicate
    through the fault proxy (which connects from loopback)."""

    def _lock_down(self, bin_dir: Path, pgdata: str, fds: tuple[int, ...], uid: int | None, gid: int | None) -> None:
        """The project's lock-down, then the replication line and the WAL's bounds."""
        super()._lock_down(bin_dir, pgdata, fds, uid, gid)
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(hba.read_text() + REPLICATION_HBA)
        auto = self.data_dir / "postgresql.auto.conf"
        if WAL not in auto.read_text():
            auto.write_text(auto.read_text() + WAL)


def _server_ids() -> tuple[int | None, int | None]:
    """The system account the embedded PostgreSQL runs as under root (account.py), else none."""
    if os.geteuid() != 0:
        return None, None
    from jackpotd.embedded.account import server_account

    account = server_account()
    return account.uid, account.gid


def standby(data_dir: Path, secrets: Path, primary: str, port: int) -> subprocess.Popen[bytes]:
    """A streaming standby of `primary` (host:port) from a base backup on first start, as the project's failover
    test also starts one (tests/integration/test_postgres_failover.py), listening on loopback `port`."""
    bin_dir = server_install(wheel_bin_dir()) if os.geteuid() == 0 else wheel_bin_dir()
    uid, gid = _server_ids()
    if not (data_dir / "PG_VERSION").exists():
        host, _, primary_port = primary.rpartition(":")
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(bin_dir / "pg_basebackup"), "-h", host, "-p", primary_port, "-U", "postgres",
                        "-D", str(data_dir), "-R", "-X", "stream", "-c", "fast"],
                       env={**os.environ, "PGPASSWORD": read_secret(secrets / OWNER_SECRET) or ""}, check=True,
                       capture_output=True, timeout=120)
        if uid is not None and gid is not None:
            for path in [data_dir, *data_dir.rglob("*")]:
                os.lchown(path, uid, gid)
    os.chmod(data_dir, 0o700)
    (data_dir / "postmaster.pid").unlink(missing_ok=True)
    log_path = data_dir.parent / "postgres.log"
    with _data_dir_for_server(data_dir, root=uid is not None) as (pgdata, fds), open(log_path, "ab") as logf:
        if uid is not None and gid is not None:
            os.chown(log_path, uid, gid)
        command, options = child([str(bin_dir / "postgres"), "-D", pgdata, "-p", str(port),
                                  "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                                  "-c", "hot_standby=on", "-c", "max_connections=200"], uid, gid)
        proc = subprocess.Popen(command, stdout=logf, stderr=logf, pass_fds=fds, **options)
    wait_for_port(port, proc, "PostgreSQL standby", log_path)
    return proc


def sentinel(data_dir: Path, bind: str, port: int, master: str, secrets: Path) -> subprocess.Popen[bytes]:
    """A Sentinel on `bind:port` watching `master` (host:port, through its proxy), with a password of its own
    (secrets/sentinel.password) and the Valkeys' one to ask them."""
    data_dir.mkdir(parents=True, exist_ok=True)
    host, _, master_port = master.rpartition(":")
    own = read_secret(secrets / "sentinel.password") or ""
    valkey = read_secret(secrets / "valkey.password") or ""
    conf = data_dir / "sentinel.conf"
    conf.write_text(f"port {port}\nbind {bind}\ndir {data_dir}\nrequirepass {own}\nprotected-mode no\n"
                    f"sentinel monitor jackpot {host} {master_port} 1\nsentinel auth-pass jackpot {valkey}\n"
                    "sentinel down-after-milliseconds jackpot 2000\nsentinel failover-timeout jackpot 10000\n")
    conf.chmod(0o600)
    log = open(data_dir / "sentinel.log", "ab")  # noqa: SIM115 - the child writes to it
    proc = subprocess.Popen([str(_binary("valkey-server", "redis-server")), str(conf), "--sentinel"], stdout=log,
                            stderr=log, start_new_session=True)
    wait_for_port(port, proc, "Sentinel", data_dir / "sentinel.log") if bind == "127.0.0.1" else None
    return proc


def main() -> None:
    """Start one store, record its pid, and live until it exits or SIGTERM stops it in order."""
    p = argparse.ArgumentParser(prog="python -m chaos.stores", description=__doc__)
    p.add_argument("kind", choices=["pg", "standby", "valkey", "sentinel"])
    p.add_argument("--dir", type=Path, required=True, help="the server's data directory")
    p.add_argument("--secrets", type=Path, required=True, help="the shared secrets directory (passwords)")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pidfile", type=Path, required=True)
    p.add_argument("--primary", help="standby: the primary's host:port; sentinel: the Valkey primary's")
    p.add_argument("--announce", help="valkey: the address other roles reach it at (its proxy)")
    p.add_argument("--replicaof", help="valkey: host:port of the primary to follow")
    p.add_argument("--bind", default="127.0.0.1", help="sentinel: the address to listen on")
    a = p.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    proc: subprocess.Popen[bytes] | None
    if a.kind == "pg":
        pg = ReplicatedPostgres(a.dir, port=a.port, secrets=a.secrets).start()
        proc, stopper = pg.proc, pg.stop
    elif a.kind == "standby":
        proc = standby(a.dir, a.secrets, a.primary, a.port)
        stopper = lambda: stop_child(proc, signal.SIGINT, 30)  # noqa: E731 - the same shape as the others
    elif a.kind == "valkey":
        options = ["--replica-announce-ip", a.announce, "--replica-announce-port", str(a.port)]
        if a.replicaof:
            host, _, port = a.replicaof.rpartition(":")
            options += ["--replicaof", host, port]
        vk = EmbeddedValkey(a.dir, port=a.port, secrets=a.secrets, options=tuple(options)).start()
        proc, stopper = vk.proc, vk.stop
    else:
        proc = sentinel(a.dir, a.bind, a.port, a.primary, a.secrets)
        stopper = lambda: stop_child(proc, signal.SIGTERM, 10)  # noqa: E731
    assert proc is not None
    a.pidfile.write_text(f"{proc.pid}\n")
    while not stop.is_set() and proc.poll() is None:
        stop.wait(0.2)
    code = proc.poll()
    if code is None:
        stopper()
    raise SystemExit(0 if code is None else 1)


if __name__ == "__main__":
    main()
