"""Where credentials are found: `make run`'s development credentials, and what the CLIs read from a
credentials directory (a token or a role certificate)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jwt

from .guard import identity_of_certificate
from .identity import Role
from .issue import CREDENTIALS_DIR, DEV_ROLES, DEV_TABLES, DEV_TOKEN_DAYS, IssueOrder, issue_into
from .tokens import issue as issue_token
from .tokens import read_key


def development_credentials(state_dir: str | Path) -> Path:
    """`make run`: the credentials under `<state_dir>/credentials`, issued on first start and renewed when they
    come due: the auth key, tokens for admin:dev, supervisor:floor, display:sign, finance:office and
    console:floor-1 (tokens/console-floor-1.token, for `jackpot-console`) and for the six demo tables (the
    loopback listener takes table tokens), and for trying TLS a CA, a server certificate, role certificates and
    the demo tables' certificates. Returns the directory."""
    root = Path(state_dir).resolve() / CREDENTIALS_DIR
    issue_into(root, IssueOrder(tables=DEV_TABLES, roles=DEV_ROLES, token_days=DEV_TOKEN_DAYS, server=False,
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


TOKEN_FILE_ENV = "JACKPOTD_TOKEN_FILE"  # the configured default of every role CLI's --token-file


class AmbiguousCredential(ValueError):
    """Several credentials of the role would fit and none was chosen: no CLI picks one, it lists them (exit 2)."""


def configured_token_file() -> Path | None:
    """$JACKPOTD_TOKEN_FILE, when set: the token every role CLI presents when no --token-file is given."""
    path = os.environ.get(TOKEN_FILE_ENV)
    return Path(path) if path else None


def token_holder(token: str) -> str:
    """"supervisor:bob": whom a token names, read without checking its signature (jackpotd checks it); "" for a
    token that cannot be read."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return ""
    role, sub = claims.get("role"), claims.get("sub")
    return f"{role}:{sub}" if isinstance(role, str) and isinstance(sub, str) else ""


def _candidates(found: Sequence[Path], what: str, choose: str) -> Path | None:
    """The one candidate, None for none; AmbiguousCredential listing them for more than one."""
    if len(found) > 1:
        listed = "\n".join(f"  {path}" for path in found)
        raise AmbiguousCredential(f"{len(found)} {what} would fit and none is chosen:\n{listed}\n{choose}")
    return found[0] if found else None


def role_token_file(root: str | Path, roles: Sequence[Role]) -> Path | None:
    """The token file (tokens/<role>-*.token) of the first of `roles` that has any in a credentials directory;
    None when none has; AmbiguousCredential when that role has several (never one picked among them)."""
    for role in roles:
        found = sorted((Path(root) / "tokens").glob(f"{role.value}-*.token"))
        if found:
            return _candidates(found, f"{role.value} tokens", f"choose one: --token-file FILE, or export "
                                                              f"{TOKEN_FILE_ENV}=FILE")
    return None


def role_token(root: str | Path, roles: Sequence[Role], minted_name: str = "cli") -> str | None:
    """A bearer token for the first of `roles` found in a credentials directory: its one token file
    (`role_token_file`), else one minted for `minted_name` with its auth.key (a development directory),
    else None."""
    root = Path(root)
    path = role_token_file(root, roles)
    if path is not None:
        return path.read_text().strip()
    if (root / "auth.key").exists() and roles:
        return issue_token(read_key(root / "auth.key"), roles[0], minted_name)
    return None


def role_certificate(root: str | Path, roles: Sequence[Role]) -> tuple[Path, Path] | None:
    """The certificate and key files of the first of `roles` found in a credentials directory (roles/);
    AmbiguousCredential when that role has several."""
    root = Path(root)
    for role in roles:
        found = [cert for cert in sorted((root / "roles").glob(f"{role.value}-*.pem"))
                 if cert.with_suffix(".key").exists()]
        if found:
            cert = _candidates(found, f"{role.value} certificates", "choose one: --cert FILE --key FILE")
            assert cert is not None
            return cert, cert.with_suffix(".key")
    return None


class CredentialsMissing(ValueError):
    """The credential the flags name is not there (yet): a sign waits for it, a one-shot CLI says so."""

    def __init__(self, message: str, directory: Path | None = None) -> None:
        super().__init__(message)
        self.directory = directory  # the credentials directory it was looked for in (None: a file the flags name)


@dataclass(frozen=True)
class RoleCredential:
    """What a role's client presents (`jackpotd pools`, `jackpot-signage`): a bearer token on plain text, or a
    client certificate over TLS (`ca` set)."""

    token: str | None = None
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    who: str = ""  # whom it names ("supervisor:bob"), as acts print it; "" when it cannot be read


@dataclass(frozen=True)
class CredentialFlags:
    """The credential flags every role CLI takes (docs/SECURITY.md)."""

    credentials: str | None = None  # a credentials directory; default default_credentials_dir()
    token_file: str | None = None
    tls: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    certs_dir: str | None = None  # TLS: where role certificates are (default: the directory's roles/)


def role_credential(flags: CredentialFlags, roles: Sequence[Role], minted_name: str) -> RoleCredential:
    """The credential the flags name for the first of `roles`: --ca/--cert/--key or --tls (a role certificate),
    else --token-file, else $JACKPOTD_TOKEN_FILE (when its token is of one of `roles`), else a token minted with
    $JACKPOTD_AUTH_KEY_FILE, else the one of the credentials directory. ValueError for flags that do not go
    together; AmbiguousCredential when the directory holds several of the role; CredentialsMissing when a file
    is not there."""
    root = Path(flags.credentials) if flags.credentials else default_credentials_dir()
    if bool(flags.cert) != bool(flags.key):
        raise ValueError("--cert and --key go together")
    tls = flags.tls or bool(flags.ca)
    # from the credentials directory (what `jackpotd serve` or `jackpotd certs` issues), not from files named
    in_dir = root if not (flags.token_file or flags.cert or flags.ca or flags.certs_dir) else None
    if (flags.cert or flags.certs_dir) and not tls:
        raise ValueError("--cert, --key and --certs-dir are for TLS: give --ca or --tls")
    if tls and flags.token_file:
        raise ValueError("--token-file is for plain text; over TLS a certificate is presented")
    try:
        if tls:
            ca = Path(flags.ca) if flags.ca else root / "ca.pem"
            if flags.cert and flags.key:
                cert, key = Path(flags.cert), Path(flags.key)
            else:
                found = role_certificate(Path(flags.certs_dir) if flags.certs_dir else root, roles)
                if found is None:
                    raise CredentialsMissing(f"no role certificate in {flags.certs_dir or root / 'roles'}: give "
                                             "--cert and --key, or issue one with `jackpotd certs --roles`", in_dir)
                cert, key = found
            named = identity_of_certificate(pem := cert.read_bytes())
            return RoleCredential(ca=ca.read_bytes(), cert=pem, key=key.read_bytes(),
                                  who=named.key if named is not None else "")
        if flags.token_file:
            return _token_credential(Path(flags.token_file).read_text().strip())
        chosen = None if flags.credentials else configured_token_file()
        if chosen is not None:
            given = chosen.read_text().strip()
            if token_holder(given).partition(":")[0] in {r.value for r in roles}:  # another role's: not for us
                return _token_credential(given)
        configured = None if flags.credentials else configured_auth_key()
        if configured is not None:
            in_dir = None  # $JACKPOTD_AUTH_KEY_FILE names the key
            return _token_credential(issue_token(read_key(configured), roles[0], minted_name))
        token = role_token(root, roles, minted_name)
    except OSError as e:
        raise CredentialsMissing(str(e), in_dir) from None
    if token is None:
        raise CredentialsMissing(f"{root} has no tokens/{roles[0].value}-*.token nor auth.key (`jackpotd serve` with "
                                 "embedded stores issues them); give --token-file, --tls, or --ca with --cert/--key",
                                 in_dir)
    return _token_credential(token)


def _token_credential(token: str) -> RoleCredential:
    return RoleCredential(token=token, who=token_holder(token))


def add_credential_flags(p: argparse.ArgumentParser) -> None:
    """The credential flags of a role CLI (read back with `credential_flags`)."""
    g = p.add_argument_group("credentials")
    g.add_argument("--credentials", metavar="DIR", default=None,
                   help="a credentials directory (`jackpotd certs`, or the development one `jackpotd serve` issues "
                        "with embedded stores); default $JACKPOTD_STATE_DIR/credentials or state/credentials")
    g.add_argument("--token-file", help=f"present the bearer token in this file (plain text); default "
                                        f"${TOKEN_FILE_ENV} when set and its token is of a role this command takes. "
                                        "With neither, the credentials directory's one token of the role is used; "
                                        "of several, none is picked: the command lists them and stops (exit 2)")
    g.add_argument("--tls", action="store_true", help="TLS with the credentials directory's ca.pem and a role "
                                                      "certificate from its roles/")
    g.add_argument("--ca", help="TLS: the CA certificate that signed the server's certificate")
    g.add_argument("--cert", help="TLS: the client certificate to present")
    g.add_argument("--key", help="TLS: the client certificate's private key")
    g.add_argument("--certs-dir", metavar="DIR", help="TLS: where the role certificates are (<role>-<name>.pem "
                                                      "and .key; default the credentials directory's roles/)")


def credential_flags(args: argparse.Namespace) -> CredentialFlags:
    return CredentialFlags(args.credentials, args.token_file, args.tls, args.ca, args.cert, args.key, args.certs_dir)
