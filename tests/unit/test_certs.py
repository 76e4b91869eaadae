"""Issued credentials (`jackpotd certs`, development credentials) name their holder as the guard reads it, are
signed by their CA, are kept private, and a credentials directory is reused; the listener refuses settings it
cannot serve."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jackpotd.api.transport import ListenRefused, listener
from jackpotd.auth.credentials import development_credentials, role_certificate, role_token
from jackpotd.auth.guard import identity_of_certificate
from jackpotd.auth.identity import Identity, Role
from jackpotd.auth.issue import DEV_ROLES, DEV_TABLES, Authority, IssueError, IssueOrder, issue_into, parse_roles
from jackpotd.auth.tokens import read_key, verify
from jackpotd.settings import Settings


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_table_and_role_certificates_name_their_holder(tmp_path: Path) -> None:
    done = issue_into(tmp_path / "c", IssueOrder(tables=["t-1"], roles=parse_roles("display:sign-1,admin:ops")))
    root = done.root
    table = load(root / "tables" / "t-1.pem")
    sans = table.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.UniformResourceIdentifier) == ["urn:jackpot:table:t-1"]
    assert table.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "t-1"
    assert ExtendedKeyUsageOID.CLIENT_AUTH in table.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert identity_of_certificate((root / "tables" / "t-1.pem").read_bytes()) == \
        Identity(Role.TABLE, "t-1", "certificate")
    assert identity_of_certificate((root / "roles" / "display-sign-1.pem").read_bytes()) == \
        Identity(Role.DISPLAY, "sign-1", "certificate")
    assert identity_of_certificate((root / "roles" / "admin-ops.pem").read_bytes()) == \
        Identity(Role.ADMIN, "ops", "certificate")
    ca = load(root / "ca.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for cert in ("tables/t-1.pem", "roles/admin-ops.pem", "server.pem"):
        load(root / cert).verify_directly_issued_by(ca)
    # the CA lives ten years, the others one
    assert 3649 <= (ca.not_valid_after_utc - ca.not_valid_before_utc).days <= 3651
    assert 364 <= (table.not_valid_after_utc - table.not_valid_before_utc).days <= 366


def test_the_server_certificate_names_loopback_and_the_hosts_given(tmp_path: Path) -> None:
    root = issue_into(tmp_path, IssueOrder(hosts=["jackpot.floor.example", "10.0.0.5"], days=30)).root
    server = load(root / "server.pem")
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost", "jackpot.floor.example"}
    assert set(sans.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address(a) for a in
                                                             ("127.0.0.1", "::1", "10.0.0.5")}
    assert ExtendedKeyUsageOID.SERVER_AUTH in server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert identity_of_certificate((root / "server.pem").read_bytes()) is None  # it is nobody's client identity
    assert 29 <= (server.not_valid_after_utc - server.not_valid_before_utc).days <= 31


def test_keys_are_private_and_a_directory_is_reused(tmp_path: Path) -> None:
    root = tmp_path / "creds"
    first = issue_into(root, IssueOrder(tables=["t1"], roles=[(Role.FINANCE, "office")]))
    assert mode(root) == mode(root / "tables") == mode(root / "roles") == mode(root / "tokens") == 0o700
    for key in ("ca.key", "server.key", "auth.key", "tables/t1.key", "roles/finance-office.key",
                "tokens/finance-office.token"):
        assert mode(root / key) == 0o600, key
    assert "ca.pem" in first.wrote and "auth.key" in first.wrote
    ca, auth_key, server = ((root / n).read_bytes() for n in ("ca.pem", "auth.key", "server.pem"))
    token = (root / "tokens" / "finance-office.token").read_text().strip()
    assert verify(read_key(root / "auth.key"), token)[0] == Identity(Role.FINANCE, "office", "token")

    second = issue_into(root, IssueOrder(tables=["t2"], server=False))
    assert "ca.pem" in second.kept and "auth.key" in second.kept
    assert sorted(second.wrote) == ["tables/t2.key", "tables/t2.pem"]
    assert (root / "ca.pem").read_bytes() == ca and (root / "auth.key").read_bytes() == auth_key
    assert (root / "server.pem").read_bytes() == server
    load(root / "tables" / "t2.pem").verify_directly_issued_by(load(root / "ca.pem"))
    assert verify(read_key(root / "auth.key"), token)[0].actor == "office"  # earlier tokens stay valid

    (root / "ca.key").unlink()
    with pytest.raises(IssueError, match=r"ca\.key is missing"):
        issue_into(root, IssueOrder())


def test_development_credentials_are_issued_once(tmp_path: Path) -> None:
    root = development_credentials(tmp_path / "state")
    assert root == (tmp_path / "state" / "credentials").resolve()
    key = read_key(root / "auth.key")
    for role, name in DEV_ROLES:
        token = (root / "tokens" / f"{role.value}-{name}.token").read_text().strip()
        assert verify(key, token)[0] == Identity(role, name, "token")
    for table in DEV_TABLES:
        assert identity_of_certificate((root / "tables" / f"{table}.pem").read_bytes()) == \
            Identity(Role.TABLE, table, "certificate")
        token = (root / "tokens" / f"table-{table}.token").read_text().strip()
        assert verify(key, token)[0] == Identity(Role.TABLE, table, "token")
    files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    development_credentials(tmp_path / "state")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == files  # nothing issued again
    (root / "tokens" / "display-sign.token").unlink()
    development_credentials(tmp_path / "state")
    assert verify(key, (root / "tokens" / "display-sign.token").read_text().strip())[0].role is Role.DISPLAY
    # what the CLIs pick up
    assert verify(key, role_token(root, [Role.DISPLAY, Role.ADMIN]) or "")[0].role is Role.DISPLAY
    assert role_certificate(root, [Role.ADMIN]) == (root / "roles" / "admin-dev.pem", root / "roles" / "admin-dev.key")
    minted = role_token(tmp_path / "nowhere", [Role.DISPLAY])
    assert minted is None


def test_names_and_roles_are_checked() -> None:
    assert parse_roles(" admin:ops , display:sign-1 ") == [(Role.ADMIN, "ops"), (Role.DISPLAY, "sign-1")]
    for bad in ("admin", "table:t1", "king:arthur", "admin:has space", "admin:"):
        with pytest.raises(IssueError):
            parse_roles(bad)
    with pytest.raises(IssueError):
        Authority.new().table("no/slash")


def settings(**kw: str) -> Settings:
    return Settings(redis_url="redis://127.0.0.1:1/0", postgres_dsn="postgresql://x@127.0.0.1:1/x", **kw)


def test_the_listener_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    root = issue_into(tmp_path / "c", IssueOrder()).root
    tls = {"tls_cert_file": str(root / "server.pem"), "tls_key_file": str(root / "server.key"),
           "tls_ca_file": str(root / "ca.pem")}
    with pytest.raises(ListenRefused, match="plain text is allowed on loopback only"):
        listener(settings(listen="0.0.0.0:50051"))
    with pytest.raises(ListenRefused, match="plain text is allowed on loopback only"):
        listener(settings(listen="10.1.2.3:50051"))
    for loopback in ("127.0.0.1:50051", "localhost:50051", "[::1]:50051"):
        plain = listener(settings(listen=loopback, auth_key_file=str(root / "auth.key")))
        assert plain.credentials is None and plain.guard.tables_by_token
    with pytest.raises(ListenRefused, match="tls_ca_file not set"):
        listener(settings(listen="0.0.0.0:50051", tls_cert_file=tls["tls_cert_file"],
                          tls_key_file=tls["tls_key_file"]))
    other = issue_into(tmp_path / "other", IssueOrder()).root
    with pytest.raises(ListenRefused, match="is not the key of"):
        listener(settings(listen="0.0.0.0:50051", **{**tls, "tls_key_file": str(other / "server.key")}))
    with pytest.raises(ListenRefused, match="holds no PEM certificate"):
        listener(settings(listen="0.0.0.0:50051", **{**tls, "tls_ca_file": str(root / "auth.key")}))
    with pytest.raises(ListenRefused, match="cannot read it"):
        listener(settings(listen="0.0.0.0:50051", **{**tls, "tls_cert_file": str(root / "missing.pem")}))
    (tmp_path / "short.key").write_bytes(b"too short")
    with pytest.raises(ListenRefused, match="auth_key_file"):
        listener(settings(auth_key_file=str(tmp_path / "short.key")))
    served = listener(settings(listen="0.0.0.0:50051", **tls))
    assert served.credentials is not None and not served.guard.tables_by_token
