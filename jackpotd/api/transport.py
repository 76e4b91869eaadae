"""How the gRPC server listens and whom it believes (ARCHITECTURE.md, Security): TLS with client
certificates when a certificate is configured, else plain text, and then on loopback only.

On TLS every caller presents a client certificate signed by tls_ca_file: tables their table certificate,
people and devices a role certificate (`jackpotd certs --roles`). gRPC Python offers a server only "require
and verify a client certificate" (require_client_auth=True) or "do not ask for one" (False): with False the
handshake never requests a certificate, so a table's would never reach `auth_context()` (checked with grpcio
1.85: no `x509_pem_cert`, and a certificate from another CA is not refused). Bearer tokens therefore serve
the plain-text loopback listener (development, tests, tools on the host); on TLS a token sent beside the
certificate is ignored, the certificate decides.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..auth.guard import Guard
from ..auth.tokens import read_key
from ..settings import Settings


class ListenRefused(ValueError):
    """The listen address and the TLS and auth settings do not go together, or a file they name cannot be
    used; the message says what to change."""


@dataclass(frozen=True, slots=True)
class Listener:
    """Where to listen, the TLS credentials (None: plain text), and the guard for every call."""

    address: str
    credentials: grpc.ServerCredentials | None
    guard: Guard


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listener(settings: Settings) -> Listener:
    """The listener the settings describe; ListenRefused for plain text off loopback, half a TLS setup, or a
    certificate, key or auth key file that cannot be read or used."""
    tls = (settings.tls_cert_file, settings.tls_key_file, settings.tls_ca_file)
    key = _auth_key(settings.auth_key_file) if settings.auth_key_file else None
    if not any(tls):
        if not is_loopback(settings.listen):
            raise ListenRefused(f"listen={settings.listen!r}: plain text is allowed on loopback only; configure "
                                "tls_cert_file, tls_key_file and tls_ca_file (see `jackpotd certs`), or listen "
                                "on 127.0.0.1")
        return Listener(settings.listen, None, Guard(key, tables_by_token=True,
                                                     max_token_seconds=settings.max_token_days * 86400))
    if not all(tls):
        missing = ", ".join(n for n, v in zip(("tls_cert_file", "tls_key_file", "tls_ca_file"), tls, strict=True)
                            if not v)
        raise ListenRefused(f"TLS needs all of tls_cert_file, tls_key_file and tls_ca_file; {missing} not set")
    cert, private_key, ca = _tls_files(*tls)
    # Every caller presents a certificate signed by our CA: tables prove their table id with it (mTLS).
    credentials = grpc.ssl_server_credentials([(private_key, cert)], root_certificates=ca, require_client_auth=True)
    return Listener(settings.listen, credentials, Guard(key, tables_by_token=False,
                                                        max_token_seconds=settings.max_token_days * 86400))


def _read(setting: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ListenRefused(f"{setting}={path!r}: cannot read it: {e.strerror or e}") from None


def _auth_key(path: str) -> bytes:
    _read("auth_key_file", path)
    try:
        return read_key(path)
    except ValueError as e:
        raise ListenRefused(f"auth_key_file: {e}") from None


def _tls_files(cert_file: str, key_file: str, ca_file: str) -> tuple[bytes, bytes, bytes]:
    """The PEM files, checked here so that a wrong one is named at start rather than failing every handshake."""
    cert, key, ca = _read("tls_cert_file", cert_file), _read("tls_key_file", key_file), _read("tls_ca_file", ca_file)
    try:
        chain = x509.load_pem_x509_certificates(cert)
    except ValueError:
        raise ListenRefused(f"tls_cert_file={cert_file!r} holds no PEM certificate") from None
    try:
        x509.load_pem_x509_certificates(ca)
    except ValueError:
        raise ListenRefused(f"tls_ca_file={ca_file!r} holds no PEM certificate") from None
    try:
        private = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError):
        raise ListenRefused(f"tls_key_file={key_file!r} holds no unencrypted PEM private key") from None
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if private.public_key().public_bytes(*spki) != chain[0].public_key().public_bytes(*spki):
        raise ListenRefused(f"tls_key_file={key_file!r} is not the key of tls_cert_file={cert_file!r}")
    return cert, key, ca
