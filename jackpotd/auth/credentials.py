"""Where credentials are found: `make run`'s development credentials, and what the CLIs read from a
credentials directory (a token or a role certificate)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from .identity import Role
from .issue import CREDENTIALS_DIR, DEV_ROLES, DEV_TABLES, DEV_TOKEN_DAYS, Request, issue_into
from .tokens import issue as issue_token
from .tokens import read_key


def development_credentials(state_dir: str | Path) -> Path:
    """`make run`: the credentials under `<state_dir>/credentials`, issued on first start and renewed when they
    come due: the auth key, tokens for admin:dev, supervisor:floor, display:sign and finance:office and for the
    six demo tables (the loopback listener takes table tokens), and for trying TLS a CA, a server certificate,
    role certificates and the demo tables' certificates. Returns the directory."""
    root = Path(state_dir).resolve() / CREDENTIALS_DIR
    issue_into(root, Request(tables=DEV_TABLES, roles=DEV_ROLES, token_days=DEV_TOKEN_DAYS, server=False,
                             table_tokens=True, only_missing=True))
    return root


def configured_auth_key() -> Path | None:
    """$JACKPOTD_AUTH_KEY_FILE, when set: the key this environment's jackpotd checks tokens with, which a
    client on the host may mint its own tokens with (it wins over the default credentials directory)."""
    path = os.environ.get("JACKPOTD_AUTH_KEY_FILE")
    return Path(path) if path else None


def default_credentials_dir() -> Path:
    """Where the CLIs look for development credentials: $JACKPOTD_STATE_DIR/credentials, else state/credentials."""
    return Path(os.environ.get("JACKPOTD_STATE_DIR") or "state") / CREDENTIALS_DIR


# ---- reading a credentials directory (the CLIs) ---------------------------------------------------------


def role_token(root: str | Path, roles: Sequence[Role], minted_name: str = "cli") -> str | None:
    """A bearer token for the first of `roles` found in a credentials directory: a token file
    (tokens/<role>-*.token), else one minted for `minted_name` with its auth.key (a development directory),
    else None."""
    root = Path(root)
    for role in roles:
        for path in sorted((root / "tokens").glob(f"{role.value}-*.token")):
            with contextlib.suppress(OSError):
                return path.read_text().strip()
    if (root / "auth.key").exists() and roles:
        return issue_token(read_key(root / "auth.key"), roles[0], minted_name)
    return None


def role_certificate(root: str | Path, roles: Sequence[Role]) -> tuple[Path, Path] | None:
    """The certificate and key files of the first of `roles` found in a credentials directory (roles/)."""
    root = Path(root)
    for role in roles:
        for cert in sorted((root / "roles").glob(f"{role.value}-*.pem")):
            key = cert.with_suffix(".key")
            if key.exists():
                return cert, key
    return None
