"""Passwords of the embedded servers: generated at first start, kept in 0600 files in a 0700 directory
under the state directory (`state/secrets`), never on a command line or in a log.

The files hold the passwords themselves (jackpotd needs them to log in); the servers get only what they
need: PostgreSQL a SCRAM verifier (`scram_verifier`), from which the password cannot be computed, and Valkey
its `requirepass` on its standard input.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger(__name__)


def private_dir(path: Path) -> Path:
    """`path`, created 0700 if missing (and made 0700 if it is ours and more open)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def read_secret(path: Path) -> str | None:
    """The password kept in `path`, or None when there is none yet. A file others may read is made 0600."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "r") as f:
        st = os.fstat(f.fileno())
        if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
            log.warning("%s could be read by others; made 0600", path)
            os.fchmod(f.fileno(), 0o600)
        return f.read().strip() or None


def secret(path: Path) -> str:
    """The password kept in `path`, generated (256 random bits, URL-safe) into a new 0600 file if there is none.

    Written under a temporary name and linked into place, so two starts racing agree on one password.
    """
    found = read_secret(path)
    if found is not None:
        return found
    private_dir(path.parent)
    password = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:  # another start got there first: its password it is
            theirs = read_secret(path)
            if theirs is None:
                raise
            return theirs
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    log.info("generated a password in %s", path)
    return password


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """PostgreSQL's SCRAM-SHA-256 verifier of `password` (what `ALTER ROLE ... PASSWORD` stores), with a fresh
    salt: the server is given this, never the password. `password` is ASCII (SASLprep leaves it as is)."""
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(hashlib.sha256(client_key).digest())}:{b64(server_key)}"
