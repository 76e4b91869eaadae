"""Issuing credentials (`jackpotd certs`, and `make run`'s development credentials): a certificate authority,
the server's certificate, client certificates for tables and roles, the token key and role tokens.

EC P-256 keys, SHA-256 signatures. A client certificate names its holder in a URI subject alternative name
(`urn:jackpot:table:<id>`, `urn:jackpot:<role>:<name>`, see identity.py); its common name is the table id or
the name. Keys, tokens and the auth key are written 0600 into 0700 directories, each file atomically.

The layout of a credentials directory:

    ca.pem ca.key                    the CA (kept and reused: later runs issue more credentials under it)
    server.pem server.key            the server's certificate (tls_cert_file, tls_key_file; tls_ca_file=ca.pem)
    tables/<id>.pem tables/<id>.key  a table's client certificate (mTLS)
    roles/<role>-<name>.pem .key     a person's or device's client certificate
    auth.key                         the token signing key (auth_key_file; kept and reused)
    tokens/<role>-<name>.token       a bearer token for a role (signed with auth.key)
    tokens/table-<id>.token          a table's token (asked for; only a plain-text loopback listener takes it)
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..domain.errors import InvalidInput
from ..domain.ids import require_id
from .errors import Unauthenticated
from .identity import Role, uri_of
from .tokens import issue as issue_token
from .tokens import new_key, read_key, verify

CA_DAYS = 3650
DAYS = 365
TOKEN_DAYS = 30
SERVER_HOSTS = ("localhost", "127.0.0.1", "::1")
ORGANIZATION = "jackpotd"

# What `make run` issues itself under <state_dir>/credentials (docs/SECURITY.md)
DEV_ROLES: tuple[tuple[Role, str], ...] = ((Role.ADMIN, "dev"), (Role.SUPERVISOR, "floor"), (Role.DISPLAY, "sign"),
                                           (Role.FINANCE, "office"), (Role.CONSOLE, "floor-1"))
DEV_TABLES = tuple(f"demo-table-{i}" for i in range(1, 7))
DEV_TOKEN_DAYS = 30  # the longest a token may live (max_token_days): renewed at a start within a week of expiry
CREDENTIALS_DIR = "credentials"


class IssueError(ValueError):
    """Credentials cannot be issued as asked (a bad name, half a CA, an unreadable file)."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _public(holder: x509.Certificate | PrivateKeyTypes) -> bytes:
    """The public key of a certificate or private key, to compare them."""
    return holder.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, in PEM."""

    cert: bytes
    key: bytes


@dataclass(frozen=True)
class Authority:
    """A certificate authority that signs the server's and the clients' certificates."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def new(cls, common_name: str = "jackpotd development CA", days: int = CA_DAYS) -> Authority:
        key = _new_key()
        now = _now()
        cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(_key_usage(ca=True), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cls(cert, key)

    @classmethod
    def load(cls, cert_pem: bytes, key_pem: bytes) -> Authority:
        cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise IssueError("the CA key is not an EC key (jackpotd certs issues EC P-256 keys)")
        if _public(key) != _public(cert):
            raise IssueError("the CA key does not belong to the CA certificate")
        return cls(cert, key)

    def pem(self) -> Issued:
        return Issued(_cert_pem(self.cert), _key_pem(self.key))

    def _sign(self, common_name: str, names: Sequence[x509.GeneralName], usage: x509.ObjectIdentifier,
              days: int) -> Issued:
        key = _new_key()
        now = _now()
        not_after = min(now + datetime.timedelta(days=days), self.cert.not_valid_after_utc)
        cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(not_after)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(_key_usage(ca=False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        return Issued(_cert_pem(cert), _key_pem(key))

    def server(self, hosts: Iterable[str] = (), days: int = DAYS) -> Issued:
        """The server's certificate: localhost, 127.0.0.1 and ::1, plus `hosts` (names or IP addresses)."""
        names: list[x509.GeneralName] = []
        for host in dict.fromkeys([*SERVER_HOSTS, *(h.strip() for h in hosts if h.strip())]):
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host.strip("[]"))))
            except ValueError:
                names.append(x509.DNSName(host))
        first = next((h for h in hosts if h.strip()), "localhost").strip()
        return self._sign(first, names, ExtendedKeyUsageOID.SERVER_AUTH, days)

    def client(self, role: Role, name: str, days: int = DAYS) -> Issued:
        """A client certificate naming `name` in `role` (a table's name is its table id)."""
        _check_name(role, name)
        return self._sign(name, [x509.UniformResourceIdentifier(uri_of(role, name))],
                          ExtendedKeyUsageOID.CLIENT_AUTH, days)

    def table(self, table_id: str, days: int = DAYS) -> Issued:
        return self.client(Role.TABLE, table_id, days)


def _check_name(role: Role, name: str) -> None:
    try:
        require_id(f"{role.value} name", name)
    except InvalidInput as e:
        raise IssueError(str(e)) from None


def parse_roles(text: str) -> list[tuple[Role, str]]:
    """`admin:ops,display:sign-1` as (role, name) pairs; tables are issued with --tables."""
    found: list[tuple[Role, str]] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        role_name, sep, name = item.partition(":")
        try:
            role = Role(role_name.strip())
        except ValueError:
            role = None
        if not sep or role is None or role is Role.TABLE:
            valid = ", ".join(r.value for r in Role if r is not Role.TABLE)
            raise IssueError(f"--roles {item!r}: expected ROLE:NAME with ROLE one of {valid} (tables: --tables)")
        _check_name(role, name.strip())
        found.append((role, name.strip()))
    return found


def parse_list(text: str | None) -> list[str]:
    return [i.strip() for i in (text or "").split(",") if i.strip()]


# ---- files ----------------------------------------------------------------------------------------------


def private_dir(path: Path) -> bool:
    """Create `path` (and parents) 0700, or tighten it to 0700; True if its mode had to change."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777
    if mode != 0o700:
        path.chmod(0o700)
        return True
    return False


def write_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write atomically (a reader never sees half a key) with `mode`, in a 0700 directory."""
    private_dir(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def role_file(role: Role, name: str) -> str:
    return f"{role.value}-{name}"


@dataclass
class IssuedFiles:
    """What an issue run wrote and what it kept, relative to its directory."""

    root: Path
    wrote: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    tightened: list[str] = field(default_factory=list)


@dataclass
class IssueOrder:
    """What to issue into a directory."""

    tables: Sequence[str] = ()
    roles: Sequence[tuple[Role, str]] = ()
    hosts: Sequence[str] = ()
    days: int = DAYS
    token_days: int = TOKEN_DAYS
    server: bool = True  # (re)issue the server certificate; it is issued anyway when there is none
    table_tokens: bool = False  # tokens for the tables too (only a plain-text loopback listener takes them)
    only_missing: bool = False  # keep what is there and valid for RENEW_DAYS more (development credentials)


RENEW_DAYS = 30
TOKEN_RENEW_DAYS = 7  # a token is issued again at most this many days before it expires
IssueStep = tuple[str, Callable[[], None]]  # what a step writes, and the step


def issue_into(out: str | Path, order: IssueOrder,
               progress: Callable[[list[IssueStep]], Iterable[IssueStep]] | None = None) -> IssuedFiles:
    """Issue `order` into `out`, reusing its CA and auth key when they exist (creating them otherwise).
    `progress` may wrap the list of steps (a progress bar)."""
    root = Path(out)
    if order.days < 1 or order.token_days < 1:
        raise IssueError("validity must be at least one day")
    for t in order.tables:
        _check_name(Role.TABLE, t)
    done = IssuedFiles(root)
    for d in (root, root / "tables", root / "roles", root / "tokens"):
        if d.exists() and private_dir(d):
            done.tightened.append(str(d))
    private_dir(root)
    authority = _authority(root, done)
    auth_key = _auth_key(root, done)
    server_there = (root / "server.pem").exists() and (root / "server.key").exists()
    steps: list[IssueStep] = []
    if order.server or order.hosts or order.only_missing or not server_there:
        steps.append(("server.pem", partial(_certificate, root, "server", order, done, authority,
                                            partial(authority.server, order.hosts, order.days))))
    for t in dict.fromkeys(order.tables):
        steps.append((f"tables/{t}.pem", partial(_certificate, root, f"tables/{t}", order, done, authority,
                                                 partial(authority.table, t, order.days))))
        if order.table_tokens:
            steps.append((f"tokens/table-{t}.token", partial(_token, root, Role.TABLE, t, order, done, auth_key)))
    for role, name in dict.fromkeys(order.roles):
        rel = f"roles/{role_file(role, name)}"
        steps.append((f"{rel}.pem", partial(_certificate, root, rel, order, done, authority,
                                            partial(authority.client, role, name, order.days))))
        steps.append((f"tokens/{role_file(role, name)}.token",
                      partial(_token, root, role, name, order, done, auth_key)))
    for _, run in (progress(steps) if progress else steps):
        run()
    return done


def _certificate(root: Path, rel: str, order: IssueOrder, done: IssuedFiles, authority: Authority,
                 make: Callable[[], Issued]) -> None:
    if order.only_missing and _valid_pair(root / f"{rel}.pem", root / f"{rel}.key", authority):
        done.kept.append(f"{rel}.pem")
        return
    issued = make()
    write_file(root / f"{rel}.key", issued.key, 0o600)
    write_file(root / f"{rel}.pem", issued.cert, 0o644)
    done.wrote += [f"{rel}.pem", f"{rel}.key"]


def _token(root: Path, role: Role, name: str, order: IssueOrder, done: IssuedFiles, auth_key: bytes) -> None:
    rel = f"tokens/{role_file(role, name)}.token"
    if order.only_missing and _valid_token(root / rel, auth_key):
        done.kept.append(rel)
        return
    write_file(root / rel, (issue_token(auth_key, role, name, order.token_days * 86400) + "\n").encode())
    done.wrote.append(rel)


def _valid_token(path: Path, key: bytes) -> bool:
    """A token already there, signed with `key`, one the service takes (with an id, living no longer than the
    default max_token_days), valid for TOKEN_RENEW_DAYS more."""
    try:
        _, expires = verify(key, path.read_text().strip())
    except (OSError, UnicodeDecodeError, Unauthenticated):
        return False
    return expires > _now().timestamp() + TOKEN_RENEW_DAYS * 86400


def _authority(root: Path, done: IssuedFiles) -> Authority:
    cert, key = root / "ca.pem", root / "ca.key"
    if cert.exists() != key.exists():
        missing = key if cert.exists() else cert
        raise IssueError(f"{missing} is missing: a CA needs both ca.pem and ca.key (remove the other to start a "
                         "new CA)")
    if cert.exists():
        try:
            authority = Authority.load(cert.read_bytes(), key.read_bytes())
        except (OSError, ValueError, TypeError) as e:
            raise IssueError(f"cannot use the CA in {root}: {e}") from None
        done.kept.append("ca.pem")
        return authority
    authority = Authority.new()
    issued = authority.pem()
    write_file(key, issued.key, 0o600)
    write_file(cert, issued.cert, 0o644)
    done.wrote += ["ca.pem", "ca.key"]
    return authority


def _auth_key(root: Path, done: IssuedFiles) -> bytes:
    path = root / "auth.key"
    if path.exists():
        try:
            key = read_key(path)
        except (OSError, ValueError) as e:
            raise IssueError(f"cannot use {path}: {e}") from None
        done.kept.append("auth.key")
        return key
    key = new_key()
    while key != key.strip():  # read_key strips white space: a key must read back as it was written
        key = new_key()
    write_file(path, key, 0o600)
    done.wrote.append("auth.key")
    return read_key(path)


def _valid_pair(cert_path: Path, key_path: Path, authority: Authority) -> bool:
    """A certificate and key already there, signed by `authority`, valid for RENEW_DAYS more."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        cert.verify_directly_issued_by(authority.cert)
    except (OSError, ValueError, TypeError, InvalidSignature):
        return False
    return (_public(key) == _public(cert) and
            cert.not_valid_after_utc > _now() + datetime.timedelta(days=RENEW_DAYS))
