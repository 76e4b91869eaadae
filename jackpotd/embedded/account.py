"""The system account the embedded PostgreSQL runs as when jackpotd is root (issue 19): `jackpotd-pg`, an identity
no other process on the host shares. Under `nobody`, any process running as `nobody` could write the server's
pg_hba.conf and signal it; under an account of its own, only root can.

It is made once, as a package's install step would (`jackpotd system-account`, which `make run` and `make test`
call as root); jackpotd itself never changes the host's accounts while it serves. Not root: the server runs as
the invoking user, as before.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NAME = "jackpotd-pg"
STEP = "make system-account (or, as root, `jackpotd system-account`)"


class AccountMissing(RuntimeError):
    """Root would run PostgreSQL as an account that does not exist yet."""


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    uid: int
    gid: int


def server_account() -> Account:
    """The account PostgreSQL runs as under root; AccountMissing (naming the install step) when it is not there."""
    try:
        who = pwd.getpwnam(NAME)
    except KeyError:
        raise AccountMissing(f"the embedded PostgreSQL runs as its own system account {NAME!r} when jackpotd is "
                             f"root, and it does not exist on this host: create it once with {STEP}") from None
    if who.pw_uid == 0 or who.pw_gid == 0:
        raise AccountMissing(f"the system account {NAME!r} is root's (uid {who.pw_uid}, gid {who.pw_gid}): it must "
                             "be an account of its own")
    return Account(who.pw_name, who.pw_uid, who.pw_gid)


def ensure() -> tuple[Account, bool]:
    """Create the account (and its group) when it is missing: a system account with no home and no login shell.
    Returns it and whether it was made now. Root only."""
    try:
        return server_account(), False
    except AccountMissing:
        if os.geteuid() != 0:
            raise
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    nologin = next((p for p in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false") if Path(p).exists()), "/bin/false")
    done = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", nologin, "--comment", "jackpotd embedded PostgreSQL", NAME],
                          capture_output=True, text=True)
    if done.returncode not in (0, 9):  # 9: it exists (made meanwhile by another start)
        raise AccountMissing(f"useradd could not create {NAME!r} (exit {done.returncode}): {done.stderr.strip()}")
    return server_account(), done.returncode == 0


def take_over(path: Path, account: Account) -> None:
    """Give `path` (a data directory, a log) and everything under it to the account when it is not its already (a
    state directory from a version that ran the server as `nobody`). Entries are changed through descriptors of their
    directories, never following a link, so a name swapped for a symlink meanwhile cannot redirect the change; and
    the server's own settings file (postgresql.auto.conf, which `nobody` could have written) is emptied, since
    jackpotd never sets anything there."""
    if not path.exists():
        return
    st = path.lstat()
    if (st.st_uid, st.st_gid) == (account.uid, account.gid):
        return
    os.lchown(path, account.uid, account.gid)
    if not path.is_dir() or path.is_symlink():
        return
    for _top, dirs, files, fd in os.fwalk(path, follow_symlinks=False):
        for name in [*dirs, *files]:
            os.chown(name, account.uid, account.gid, dir_fd=fd, follow_symlinks=False)
    auto = path / "postgresql.auto.conf"
    if auto.exists() and not auto.is_symlink():
        auto.write_text("# Emptied by jackpotd when it gave this data directory to its own account: another account "
                        "could write it before.\n")
