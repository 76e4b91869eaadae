"""Bearer tokens for people and devices in a role: JWTs signed with HMAC-SHA256 under a key kept in a file
(`auth_key_file`). A token names its holder (`sub`), its role and when it expires; nothing else is trusted."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import jwt

from .errors import Unauthenticated
from .identity import Identity, Role

ALGORITHM = "HS256"
ISSUER = "jackpotd"
KEY_BYTES = 32
DEFAULT_TTL = 30 * 24 * 3600  # development credentials; production tokens should live shorter


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def read_key(path: str | Path) -> bytes:
    """The signing key from its file: its raw bytes, as written (at least 32; never stripped, since random
    bytes may begin or end with whitespace)."""
    mode = Path(path).stat().st_mode
    if mode & 0o077:
        raise ValueError(f"{path}: an auth key must be readable by its owner only (mode {mode & 0o777:o}); "
                         "chmod 600 it")
    key = Path(path).read_bytes()
    if len(key) < KEY_BYTES:
        raise ValueError(f"{path}: an auth key needs at least {KEY_BYTES} bytes, it has {len(key)}")
    return key


def issue(key: bytes, role: Role, name: str, ttl_seconds: int = DEFAULT_TTL, now: float | None = None) -> str:
    """A token for `name` in `role`, valid for `ttl_seconds`."""
    issued = int(now if now is not None else time.time())
    claims = {"iss": ISSUER, "sub": name, "role": role.value, "iat": issued, "exp": issued + ttl_seconds}
    return jwt.encode(claims, key, algorithm=ALGORITHM)


def verify(key: bytes, token: str) -> tuple[Identity, float]:
    """The identity a token proves and when the token expires (epoch seconds); Unauthenticated if it is
    expired, tampered with or not ours."""
    try:
        claims = jwt.decode(token, key, algorithms=[ALGORITHM], issuer=ISSUER,
                            options={"require": ["exp", "sub", "iss"]})
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("the bearer token has expired") from None
    except jwt.InvalidTokenError as e:
        raise Unauthenticated(f"the bearer token is not valid: {e}") from None
    try:
        role = Role(claims.get("role"))
    except ValueError:
        raise Unauthenticated(f"the bearer token names no known role: {claims.get('role')!r}") from None
    name = claims["sub"]
    if not isinstance(name, str) or not name:
        raise Unauthenticated("the bearer token names no holder")
    return Identity(role, name, "token"), float(claims["exp"])
