"""Field verification of a release as a laboratory does it: `make dist`'s wheel installed on its own, then
`jackpotd version` and `jackpotd verify-install` on that install; one changed byte is found and named."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".git").exists(),
                                reason="make dist needs make and the git checkout")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The wheel of HEAD installed alone in a new venv (no pip, no dependencies); its dependencies are the project
    venv's, seen through a folder of links to them on PYTHONPATH that leaves out the editable jackpotd's own."""
    tmp = tmp_path_factory.mktemp("release")
    subprocess.run(["make", "-s", "dist", f"DIST_DIR={tmp / 'dist'}"], cwd=ROOT, check=True, capture_output=True,
                   timeout=300)
    wheel = next((tmp / "dist").glob("jackpotd-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", "--no-compile", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    deps = tmp / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("jackpot", "__editable__")):
            (deps / entry.name).symlink_to(entry)
    env = {**os.environ, "PYTHONPATH": str(deps), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("JACKPOTD_TARGET", None)
    yield venv, env


def _jackpotd(release: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    venv, env = release
    return subprocess.run([str(venv / "bin" / "jackpotd"), *args], cwd=venv, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_release_names_its_commit_lock_and_files(release: tuple[Path, dict[str, str]]) -> None:
    done = _jackpotd(release, "version", "--json")
    assert done.returncode == 0, done.stderr
    identity = json.loads(done.stdout)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert identity["commit"] == head
    assert identity["lock_sha256"] == hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()
    assert len(identity["distribution_sha256"]) == 64 and identity["intact"] is True


def test_verify_install_passes_then_names_one_changed_byte(release: tuple[Path, dict[str, str]]) -> None:
    ok = _jackpotd(release, "verify-install")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    one = _jackpotd(release, "verify-install", "--seed", "5a17c0de")
    again = _jackpotd(release, "verify-install", "--seed", "5a17c0de")
    other = _jackpotd(release, "verify-install", "--seed", "5a17c0df")
    assert one.returncode == again.returncode == other.returncode == 0
    assert one.stdout == again.stdout and one.stdout != other.stdout
    venv, _ = release
    module = next(venv.glob("lib/python3*/site-packages/jackpotd/domain/money.py"))
    original = module.read_bytes()
    module.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    try:
        bad = _jackpotd(release, "verify-install")
        assert bad.returncode == 1
        assert "jackpotd/domain/money.py" in bad.stdout + bad.stderr
    finally:
        module.write_bytes(original)
