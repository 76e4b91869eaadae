"""The console's users file: who may log in, as argon2id hashes (never passwords), in one JSON file.

    {"version": 1, "users": {"alice": {"hash": "$argon2id$v=19$...", "changed_ms": 1764633600000}}}

Written atomically (a temporary file beside it, fsynced, then renamed) with mode 0600 in a 0700 directory;
`jackpot-console users add|passwd|remove|list` manage it, and the server reads it at every login, so a change
takes effect without a restart; a person removed from it is logged out at their next request (Roster).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.ids import require_id

log = logging.getLogger("jackpot_console.users")

VERSION = 1
MIN_PASSWORD = 8  # characters: a floor password is typed often, but never this short
HASHER = PasswordHasher()  # argon2id with argon2-cffi's RFC 9106 low-memory defaults
_DUMMY = HASHER.hash("not a password of anyone's")  # hashed against for unknown names (constant-ish time)


class UsersFileError(ValueError):
    """The users file cannot be read or used, or a name or password is refused; the message says why."""


@dataclass(frozen=True)
class User:
    """A person who may log in: their name (the id grammar) and their password's argon2id hash."""

    name: str
    hash: str
    changed_ms: int


def default_users_file() -> Path:
    """$JACKPOTD_STATE_DIR/console/users.json, else state/console/users.json (beside the credentials)."""
    return Path(os.environ.get("JACKPOTD_STATE_DIR") or "state") / "console" / "users.json"


def check_name(name: str) -> str:
    """A user name: the service's id grammar (it becomes `supervisor:<name>` on the audit trail)."""
    try:
        return require_id("name", name)
    except InvalidInput as e:
        raise UsersFileError(str(e)) from None


def check_password(password: str) -> str:
    """A new password: at least MIN_PASSWORD characters."""
    if len(password) < MIN_PASSWORD:
        raise UsersFileError(f"the password must have at least {MIN_PASSWORD} characters")
    return password


# ---- the codec (pure) -----------------------------------------------------------------------------------


def decode(text: str) -> dict[str, User]:
    """The users a file's text holds; UsersFileError when it is not a users file of this version."""
    try:
        doc = json.loads(text)
        if doc.get("version") != VERSION or not isinstance(doc.get("users"), dict):
            raise UsersFileError(f"not a users file of version {VERSION}")
        return {name: User(check_name(name), str(u["hash"]), int(u.get("changed_ms", 0)))
                for name, u in doc["users"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise UsersFileError(f"not a users file: {e}") from None


def encode(users: dict[str, User]) -> str:
    """The file's text for these users (sorted: a diff shows who changed)."""
    return json.dumps({"version": VERSION, "users": {u.name: {"hash": u.hash, "changed_ms": u.changed_ms}
                                                     for u in sorted(users.values(), key=lambda u: u.name)}},
                      indent=2) + "\n"


def verify(users: dict[str, User], name: str, password: str) -> bool:
    """Whether `password` is `name`'s; an unknown name is checked against a dummy hash so that it takes as long."""
    user = users.get(name)
    try:
        return HASHER.verify(user.hash if user else _DUMMY, password) and user is not None
    except (VerificationError, InvalidHashError):
        return False


# ---- the file (I/O) -------------------------------------------------------------------------------------


def load(path: Path) -> dict[str, User]:
    """The users in the file; none when there is no file yet."""
    try:
        return decode(path.read_text())
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UsersFileError(f"{path}: cannot read it: {e.strerror or e}") from None


def save(path: Path, users: dict[str, User]) -> None:
    """Replace the file atomically, mode 0600 (its directory 0700 when made here)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(encode(users))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def add(path: Path, name: str, password: str, *, replace: bool = False) -> User:
    """Add a person (or, `replace`, set an existing person's password); UsersFileError when the name is taken
    (add) or unknown (replace)."""
    check_name(name)
    users = load(path)
    if replace and name not in users:
        raise UsersFileError(f"name={name!r}: no such user in {path}")
    if not replace and name in users:
        raise UsersFileError(f"name={name!r}: already a user in {path} (use `passwd` to change the password)")
    user = User(name, HASHER.hash(check_password(password)), int(time.time() * 1000))
    save(path, {**users, name: user})
    return user


def remove(path: Path, name: str) -> None:
    """Remove a person; UsersFileError when the file does not list them."""
    users = load(path)
    if name not in users:
        raise UsersFileError(f"name={name!r}: no such user in {path}")
    del users[name]
    save(path, users)


class Roster:
    """The names the users file lists, for the check on every request: a stat each time, the file read again only
    when its mtime, size or inode changes (every save replaces it). A file gone or unreadable lists no one."""

    def __init__(self, path: Path) -> None:
        """Nothing read yet."""
        self.path = path
        self._key: tuple[int, int, int] | None = None
        self._names: frozenset[str] = frozenset()

    def names(self) -> frozenset[str]:
        """The names listed now."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._key, self._names = None, frozenset()
            return self._names
        except OSError as e:
            log.error("cannot read the users file %s: %s; no one is logged in meanwhile", self.path, e)
            self._key, self._names = None, frozenset()
            return self._names
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if key != self._key:
            try:
                self._names = frozenset(load(self.path))
            except UsersFileError as e:
                log.error("cannot use the users file %s: %s; no one is logged in meanwhile", self.path, e)
                self._names = frozenset()
            self._key = key
        return self._names

    def lists(self, name: str) -> bool:
        """Whether the users file lists `name` now."""
        return name in self.names()
