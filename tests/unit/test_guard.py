"""The guard's own refusals: a certificate naming two holders, a key file others can read."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from jackpotd.auth.guard import identity_of_certificate
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import new_key, read_key


def certificate(*uris: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now)
               .not_valid_after(now + datetime.timedelta(days=1)))
    if uris:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(u)
                                                                     for u in uris]), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def test_one_holder_per_certificate() -> None:
    found = identity_of_certificate(certificate("https://example.com", "urn:jackpot:table:t-7"))
    assert found is not None and (found.role, found.actor) == (Role.TABLE, "t-7")
    assert identity_of_certificate(certificate("urn:jackpot:display:s", "urn:jackpot:admin:a")) is None
    assert identity_of_certificate(certificate()) is None
    assert identity_of_certificate(b"-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n") is None


def test_an_auth_key_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "auth.key"
    path.write_bytes(new_key())
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        read_key(path)
    os.chmod(path, 0o600)
    assert len(read_key(path)) == 32
