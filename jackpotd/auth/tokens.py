"""Bearer tokens for people and devices in a role: JWTs signed with HMAC-SHA256 under a key kept in a file
(`auth_key_file`). A token names its holder (`sub`, an id of the id grammar), its role, its id (`jti`, which
`jackpotd revoke` can revoke), when it was issued and when it expires, at most `max_token_days` later (30 by
default); nothing else is trusted."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

import jwt

from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from .errors import Unauthenticated
from .identity import Identity, Role

ALGORITHM = "HS256"
ISSUER = "jackpotd"
KEY_BYTES = 32
DEFAULT_TTL = 30 * 24 * 3600  # what `jackpotd certs` issues unless told otherwise
MAX_LIFETIME = 30 * 24 * 3600  # a token that lives longer is refused (setting max_token_days)
JTI = re.compile(r"[A-Za-z0-9._-]{1,128}")  # what the revocation list can hold (migration 013)


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
    """A token for `name` in `role`, valid for `ttl_seconds`, with an id of its own (`jti`) to revoke it by."""
    issued = int(now if now is not None else time.time())
    claims = {"iss": ISSUER, "sub": name, "role": role.value, "iat": issued, "exp": issued + ttl_seconds,
              "jti": secrets.token_hex(16)}
    return jwt.encode(claims, key, algorithm=ALGORITHM)


def token_id(token: str) -> str:
    """The `jti` a token names, read without checking its signature (to revoke a token from its file)."""
    try:
        jti = jwt.decode(token, options={"verify_signature": False}).get("jti")
    except jwt.InvalidTokenError as e:
        raise ValueError(f"not a token: {e}") from None
    if not isinstance(jti, str) or not jti:
        raise ValueError("the token names no jti")
    return jti


def verify(key: bytes, token: str, max_lifetime: int = MAX_LIFETIME) -> tuple[Identity, float]:
    """The identity a token proves and when the token expires (epoch seconds); Unauthenticated if it is
    expired, tampered with, not ours, lives longer than `max_lifetime` seconds, names no id or a holder outside
    the id grammar."""
    try:
        claims = jwt.decode(token, key, algorithms=[ALGORITHM], issuer=ISSUER,
                            options={"require": ["exp", "iat", "sub", "iss", "jti"]})
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("the bearer token has expired") from None
    except jwt.InvalidTokenError as e:
        raise Unauthenticated(f"the bearer token is not valid: {e}") from None
    try:
        role = Role(claims.get("role"))
    except ValueError:
        raise Unauthenticated(f"the bearer token names no known role: {claims.get('role')!r}") from None
    try:
        name = require_id("sub", claims["sub"])
    except InvalidInput as e:
        raise Unauthenticated(f"the bearer token's holder is not an id: {e}") from None
    issued, expires, jti = claims["iat"], claims["exp"], claims["jti"]
    if not isinstance(issued, int | float) or not isinstance(jti, str) or not JTI.fullmatch(jti):
        raise Unauthenticated("the bearer token has no valid iat or jti (1-128 of A-Z a-z 0-9 . _ -, so that it "
                              "can be revoked)")
    if expires - issued > max_lifetime:  # (an issue time in the future is refused by jwt.decode: not yet valid)
        raise Unauthenticated(f"the bearer token lives {(expires - issued) / 86400:.0f} days from its issue: more "
                              f"than the {max_lifetime / 86400:g} allowed (max_token_days)")
    return Identity(role, name, "token", f"jti:{jti}", float(expires)), float(expires)
