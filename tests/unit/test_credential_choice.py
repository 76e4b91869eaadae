"""No silent identity (issue 32): a role CLI never picks among several credentials of its role. One candidate is
used; several and none chosen (no --token-file, no $JACKPOTD_TOKEN_FILE, no certificate flags) is exit 2 with
the candidates listed and how to choose; whom the credential names is what every act prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from jackpot_floor import cli as floor

from jackpotd.auth.credentials import (
    TOKEN_FILE_ENV,
    AmbiguousCredential,
    CredentialFlags,
    role_credential,
    role_token,
)
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import issue, new_key

FLOOR = (Role.SUPERVISOR, Role.ADMIN)


def credentials(root: Path, *holders: tuple[Role, str]) -> Path:
    """A credentials directory holding a token file for each (role, name), as `jackpotd certs` writes them."""
    key = new_key()
    (root / "tokens").mkdir(parents=True)
    for role, name in holders:
        (root / "tokens" / f"{role.value}-{name}.token").write_text(issue(key, role, name) + "\n")
    return root


@pytest.fixture(autouse=True)
def no_configured_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (TOKEN_FILE_ENV, "JACKPOTD_AUTH_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)


def test_one_supervisor_token_is_used_and_named(tmp_path: Path) -> None:
    root = credentials(tmp_path, (Role.SUPERVISOR, "floor"), (Role.ADMIN, "dev"), (Role.DISPLAY, "sign"))
    found = role_credential(CredentialFlags(credentials=str(root)), FLOOR, "floor")
    assert found.who == "supervisor:floor" and found.token


def test_several_supervisor_tokens_are_refused_and_listed(tmp_path: Path) -> None:
    root = credentials(tmp_path, (Role.SUPERVISOR, "floor"), (Role.SUPERVISOR, "bob"), (Role.ADMIN, "dev"))
    with pytest.raises(AmbiguousCredential) as refused:
        role_credential(CredentialFlags(credentials=str(root)), FLOOR, "floor")
    said = str(refused.value)
    assert "supervisor-bob.token" in said and "supervisor-floor.token" in said
    assert "--token-file" in said and TOKEN_FILE_ENV in said
    with pytest.raises(AmbiguousCredential):
        role_token(root, FLOOR)
    # naming one is a choice: --token-file
    chosen = role_credential(CredentialFlags(credentials=str(root),
                                             token_file=str(root / "tokens" / "supervisor-bob.token")), FLOOR, "x")
    assert chosen.who == "supervisor:bob"


def test_the_configured_token_file_chooses_when_its_role_fits(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = credentials(tmp_path, (Role.SUPERVISOR, "floor"), (Role.SUPERVISOR, "bob"), (Role.FINANCE, "office"))
    monkeypatch.setenv("JACKPOTD_STATE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv(TOKEN_FILE_ENV, str(root / "tokens" / "supervisor-bob.token"))
    flags = CredentialFlags(credentials=None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "credentials").symlink_to(root)
    assert role_credential(flags, FLOOR, "floor").who == "supervisor:bob"
    # a finance client is not made to present a supervisor's token: its own one token is used
    assert role_credential(flags, (Role.FINANCE, Role.ADMIN), "finance").who == "finance:office"
    # --token-file still wins over the environment
    given = CredentialFlags(token_file=str(root / "tokens" / "supervisor-floor.token"))
    assert role_credential(given, FLOOR, "floor").who == "supervisor:floor"


def test_a_sign_role_and_a_minted_development_token_are_not_ambiguous(tmp_path: Path) -> None:
    root = credentials(tmp_path, (Role.DISPLAY, "sign"), (Role.SUPERVISOR, "floor"), (Role.SUPERVISOR, "bob"))
    sign = role_credential(CredentialFlags(credentials=str(root)),
                           (Role.DISPLAY, Role.FINANCE, Role.SUPERVISOR, Role.ADMIN), "signage")
    assert sign.who == "display:sign"  # the sign's role comes first and has one token


def test_the_floor_refuses_with_exit_2_and_lists_the_candidates(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = credentials(tmp_path, (Role.SUPERVISOR, "floor"), (Role.SUPERVISOR, "bob"))
    assert floor.main(["approve", "demo:t1:r1:1", "--ref", "SURV-1", "--credentials", str(root),
                       "--target", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jackpot-floor: 2 supervisor tokens would fit and none is chosen:")
    assert all(str(root / "tokens" / f"supervisor-{name}.token") in err for name in ("bob", "floor"))
    assert f"export {TOKEN_FILE_ENV}=FILE" in err
