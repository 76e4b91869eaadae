"""Installs come from the locks (scripts/check_lock.py, the Makefile's install): a stale or loose lock is refused."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from .scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


cl = load_script("check_lock")
LOCKS = {cl.RUNTIME_LOCK: (), cl.DEV_LOCK: ("dev",)}


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _locks(**replace: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    texts = {name: (ROOT / name).read_text() for name in LOCKS}
    texts.update({cl.RUNTIME_LOCK if k == "runtime" else cl.DEV_LOCK: v for k, v in replace.items()})
    return {name: (texts[name], extras) for name, extras in LOCKS.items()}


def test_the_committed_locks_match_pyproject() -> None:
    assert cl.findings(_pyproject(), _locks()) == []


def test_every_locked_entry_is_pinned_and_hashed() -> None:
    for name in LOCKS:
        pins, recorded, problems = cl.parse_lock((ROOT / name).read_text())
        assert problems == [] and recorded is not None
        assert len(pins) > 10 and all(pin.hashes >= 1 for pin in pins.values())


def test_the_dev_lock_holds_the_runtime_lock_and_the_generator() -> None:
    runtime, _, _ = cl.parse_lock((ROOT / cl.RUNTIME_LOCK).read_text())
    dev, _, _ = cl.parse_lock((ROOT / cl.DEV_LOCK).read_text())
    assert runtime.keys() <= dev.keys()
    assert "grpcio-tools" in dev and "pytest" in dev and "pytest" not in runtime
    assert dev["grpcio-tools"].version == dev["grpcio"].version == runtime["grpcio"].version


def test_a_new_requirement_makes_the_lock_stale() -> None:
    pyproject = _pyproject()
    pyproject["project"]["dependencies"].append("leftpad-for-tests>=1")
    found = cl.findings(pyproject, _locks())
    assert any("leftpad-for-tests" in f and "is not in the lock" in f for f in found)
    assert any("made from other requirements" in f for f in found)


def test_a_pin_outside_its_range_is_refused() -> None:
    pyproject = _pyproject()
    deps = pyproject["project"]["dependencies"]
    deps[:] = ["orjson>=999" if d.startswith("orjson") else d for d in deps]
    found = cl.findings(pyproject, _locks())
    assert any(f.startswith(f"{cl.RUNTIME_LOCK}: orjson==") and "outside" in f for f in found)


def test_an_unhashed_or_loose_entry_and_disagreeing_locks_are_refused() -> None:
    text = (ROOT / cl.DEV_LOCK).read_text()
    loose = text + "six>=1.16\nattrs==1.0.0\n"
    found = cl.findings(_pyproject(), _locks(dev=loose))
    assert any("'six>=1.16' is not pinned with ==" in f for f in found)
    assert any("attrs==1.0.0 has no hash" in f for f in found)
    runtime = (ROOT / cl.RUNTIME_LOCK).read_text()
    version = cl.parse_lock(runtime)[0]["orjson"].version
    moved = runtime.replace(f"orjson=={version}", "orjson=99.0.0")
    assert any("orjson" in f and "pins" in f for f in cl.findings(_pyproject(), _locks(runtime=moved.replace(
        "orjson=99.0.0", "orjson==99.0.0"))))


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_refuses_a_stale_lock_before_making_anything(tmp_path: Path) -> None:
    """A copy of the checkout whose pyproject.toml gained a dependency: make install stops, no venv is made."""
    for name in ("Makefile", "pyproject.toml", cl.RUNTIME_LOCK, cl.DEV_LOCK):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "check_lock.py", tmp_path / "scripts" / "check_lock.py")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"numpy>=2.0",', '"numpy>=2.0", "leftpad-for-tests>=1",'))
    done = subprocess.run(["make", "install", f"PY={sys.executable}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0
    assert "leftpad-for-tests" in done.stderr and "nothing installed" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_the_image_installs_from_the_lock_alone() -> None:
    """deploy/Dockerfile: the locked set by hash without resolving, then the release wheel without dependencies."""
    installs = [line for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines() if "pip install" in line]
    assert installs and all("--no-deps" in line for line in installs), installs
    assert any(f"--require-hashes --no-deps -r /tmp/install/{cl.RUNTIME_LOCK}" in line for line in installs)
    base = next(line for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines() if line.startswith("FROM"))
    assert re.fullmatch(r"FROM python:\d+\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base), base


def test_generated_code_comes_from_the_locked_generator() -> None:
    """scripts/gen_proto.py refuses to generate or compare with a grpcio-tools other than the locked one."""
    gen = load_script("gen_proto")
    lock = (ROOT / cl.DEV_LOCK).read_text()
    pins = cl.parse_lock(lock)[0]
    locked = {n: pins[n].version for n in gen.GENERATORS}
    assert gen.unlocked_generators(lock, locked) == []
    newer = {**locked, "grpcio-tools": "1.999.0"}
    assert gen.unlocked_generators(lock, newer) == [
        f"grpcio-tools 1.999.0 is installed, {cl.DEV_LOCK} pins {locked['grpcio-tools']}"]


def test_make_help_lists_every_target_and_none_is_declared_without_a_rule() -> None:
    """Every .PHONY target has a rule, and every rule a person can name has its line in `make help`."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    phony = set(re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split())  # type: ignore[union-attr]
    rules = set(re.findall(r"^([a-z][a-z-]*):(?!=)", text, re.M))
    assert phony - rules == set(), "declared .PHONY with no rule"
    assert rules - phony == set(), "a rule missing from .PHONY"
    done = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    listed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("  make ")}
    assert listed == rules
    assert all(len(line.split(None, 2)) == 3 for line in done.stdout.splitlines())  # each with its line of text
